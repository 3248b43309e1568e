# train_trl.py: the lab run as a TRL GRPOTrainer run, written by `npm run export -- trl`
# (agentic-rl-lab). The same data (train.parquet / val.parquet), the same reward (reward.py's
# terms, on the completion rendered in the lab's transcript form) and the same tools (the
# task's JavaScript tools, run by lab_node.py in Sandbox Fusion or a local node).
#   pip install trl==1.16.0 peft datasets   # and a Sandbox Fusion server for the tools
#   SANDBOX_FUSION_URL=http://host:8080/run_code python3 train_trl.py [--model M] [--tools node]
# The GRPOConfig below names the lab field each argument comes from; README.md lists what TRL
# does not have. A value the lab cannot give (a model the cluster can load) is required: the
# script stops and says why. Results land in --output-dir (trl-out beside this file):
# trainer_state.json (the log history), completions/completions_<step>.parquet and
# lab_export.json (this LAB object: the lab's import reads the optimizer steps per lab step).
# Evaluations are greedy, as the lab's val/* are (LabGRPOTrainer); the held-out accuracy and
# valid-call rate are logged as the zero-weight reward functions lab_acc and lab_valid_call
# (eval_rewards/lab_acc/mean, eval_rewards/lab_valid_call/mean: the lab's val/acc and
# val/valid_call_rate).
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# GRPOConfig arguments and the lab fields they come from:
#   run_name: the run's name
#   seed: seed (the first seed: one TRL run per seed)
#   learning_rate: rl.lr
#   lr_scheduler_type: rl.schedule (cosine is cosine_with_min_lr)
#   warmup_steps: rl.warmup_steps x optimizer steps per lab step (TRL moves the rate every optimizer step, the lab every RL step)
#   adam_beta1: rl.betas[0]
#   adam_beta2: rl.betas[1]
#   weight_decay: rl.weight_decay
#   max_grad_norm: rl.grad_clip (0 = off, written as 1e9)
#   max_steps: stop.max_steps x rl.minibatches x rl.epochs: TRL counts optimizer steps, the lab one per minibatch per epoch
#   per_device_train_batch_size: rl.micro_batch_size when it divides a process's share of a minibatch, else that share (--gpus processes)
#   gradient_accumulation_steps: the minibatch (rollouts / rl.minibatches) / (per-device batch x --gpus)
#   steps_per_generation: micro-steps per generation: rl.minibatches x gradient_accumulation_steps, so a generation holds prompts_per_step x group_size completions
#   num_generations: rl.group_size
#   num_iterations: rl.epochs (each generation is trained on this many times)
#   shuffle_dataset: false: the lab's prompt order (train.parquet is in step order)
#   gradient_checkpointing: model.gradient_checkpointing
#   bf16: false: the lab computes in f32 (model.dtype f16 is the frozen base's storage only); TRL's default true also stops a run on a machine without a GPU
#   max_completion_length: sampling.max_new_tokens
#   temperature: sampling.temperature
#   top_p: sampling.top_p
#   beta: rl.kl.coef with rl.kl.in = loss (TRL's KL is k3 in the loss)
#   epsilon: rl.clip_eps_low
#   epsilon_high: rl.clip_eps_high (cispo: 1 + rl.clip_eps_high, TRL's cap on the weight itself)
#   loss_type: rl.policy_loss and rl.loss_agg: gspo grpo, gspo-token grpo, cispo cispo, sapo sapo; else token-mean dapo, seq-mean-token-mean grpo, seq-mean-token-sum-norm dr_grpo
#   importance_sampling_level: rl.policy_loss: sequence for gspo and gspo-token, token otherwise
#   scale_rewards: rl.advantage and rl.norm_adv_by_std: group, none (dr-grpo), batch (liteppo)
#   entropy_coef: rl.entropy_coef, a fixed bonus (TRL's is the mean per-token entropy; the lab aggregates it as rl.loss_agg)
#   use_adaptive_entropy: false: the lab's entropy coefficient is fixed
#   max_tool_calling_iterations: limits.max_tool_calls
#   eval_strategy: steps: the lab evaluates every task.eval_every steps and at the end
#   eval_steps: task.eval_every (0: only at the start and the end) x optimizer steps per lab step
#   eval_on_start: the lab evaluates at RL step 0
#   per_device_eval_batch_size: lab choice (memory only)
#   num_generations_eval: 1: the lab's val/acc is one answer per held-out prompt (TRL samples it)
#   logging_steps: 1: a metrics row per optimizer step
#   log_completions: true: completions/completions_<step>.parquet in the output folder
#   save_steps: checkpoint_every (0: at the end) x optimizer steps per lab step
#   report_to: none (lab choice; trainer_state.json holds the log history)
#   reward_weights: 1 for lab_reward (rewards.terms); 0 for lab_acc and lab_valid_call, logged only (val/acc, val/valid_call_rate)
LAB = json.loads("{\"model\":null,\"model_why\":\"the model is the folder \\\"models/lab-llama\\\" on the machine that ran the lab (a preset's model: public/models/lab-llama in the lab's repository): copy it to the cluster and pass its path\",\"optimizer_steps_per_lab_step\":2,\"lora\":{\"r\":8,\"lora_alpha\":16,\"target_modules\":\"all-linear\"},\"pass_tools\":true,\"env\":false,\"output_dir\":\"trl-out\",\"timeout_s\":1,\"memory_mb\":512,\"grpo_config\":{\"run_name\":\"lab-llama-calculator-seed-3\",\"seed\":3,\"learning_rate\":0.003,\"lr_scheduler_type\":\"constant\",\"warmup_steps\":0,\"adam_beta1\":0.9,\"adam_beta2\":0.99,\"weight_decay\":0,\"max_grad_norm\":1,\"max_steps\":40,\"per_device_train_batch_size\":32,\"gradient_accumulation_steps\":1,\"steps_per_generation\":2,\"num_generations\":8,\"num_iterations\":1,\"shuffle_dataset\":false,\"gradient_checkpointing\":false,\"bf16\":false,\"max_completion_length\":48,\"temperature\":1,\"top_p\":1,\"beta\":0.001,\"epsilon\":0.2,\"epsilon_high\":0.2,\"loss_type\":\"dapo\",\"importance_sampling_level\":\"token\",\"scale_rewards\":\"group\",\"entropy_coef\":0,\"use_adaptive_entropy\":false,\"max_tool_calling_iterations\":2,\"eval_strategy\":\"steps\",\"eval_steps\":10,\"eval_on_start\":true,\"per_device_eval_batch_size\":8,\"num_generations_eval\":1,\"logging_steps\":1,\"log_completions\":true,\"save_steps\":10,\"report_to\":\"none\",\"reward_weights\":[1,0,0]}}")

# A lab JavaScript environment (LAB["env"]) runs through lab_env.py and env.json beside this
# file, as TRL's environment_factory; a task's tools and reward through lab_node.py and reward.py.
if LAB["env"]:
    import lab_env  # noqa: E402
else:
    import lab_node  # noqa: E402
    import reward  # noqa: E402

SANDBOX_FUSION_URL = os.environ.get("SANDBOX_FUSION_URL", "http://localhost:8080/run_code")
TOOL_RUNNER = "sandbox_fusion"  # main() sets it from --tools


class LabToolError(Exception):
    """A failed tool call: TRL shows it to the model as {'error': ...} and counts a failure."""


def run_tool(spec, args):
    if spec["kind"] == "code":
        code = args.get("code", "")
        allowed = spec.get("allowed_chars")
        if allowed and reward.re.fullmatch("[" + allowed + "]*", code) is None:
            raise LabToolError("SyntaxError")
        source = lab_node.node_source(code)
    else:
        source = lab_node.function_source(spec["body"], args)
    text, ok = lab_node.run_program(TOOL_RUNNER, source, LAB["timeout_s"], LAB["memory_mb"], SANDBOX_FUSION_URL)
    if not ok:
        raise LabToolError(text)
    return text


def calculator(code: str) -> str:
    """Evaluates an integer expression with + - * and parentheses.

    Args:
        code: JavaScript to run; the value of its last expression is returned
    """
    return run_tool(TOOL_SPECS["calculator"], {"code": code})


TOOL_SPECS = json.loads("{\"calculator\":{\"kind\":\"code\",\"allowed_chars\":\"0-9+\\\\-*() \"}}")
TOOLS = [calculator]


def _is_failure(content):
    return isinstance(content, str) and content.startswith("{'error': ")


def _call_text(call):
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    return "<tool_call>\n" + json.dumps({"name": fn.get("name"), "arguments": args}) + "\n</tool_call>"


def lab_text(completion):
    """A conversational completion in the lab's chatml-turns form, and each call's status."""
    if isinstance(completion, str):
        return completion, []
    parts, oks, pending = [], [], []

    def flush():
        if pending:
            body = "\n".join("<tool_response>" + c + "</tool_response>" for c in pending)
            parts.append("<|im_end|>\n<|im_start|>user\n" + body + "<|im_end|>\n<|im_start|>assistant\n")
            pending.clear()

    for m in completion:
        if m["role"] == "tool":
            content = m["content"] if isinstance(m["content"], str) else str(m["content"])
            oks.append(not _is_failure(content))
            pending.append(content)
            continue
        flush()
        text = m.get("content") or ""
        # TRL's response parser (Qwen's, Hermes') moves a leading <think> block to
        # reasoning_content, and the blank after it: the reward sees the block again.
        if m.get("reasoning_content"):
            text = "<think>" + m["reasoning_content"] + "</think>\n" + text
        calls = m.get("tool_calls") or []
        if calls and "<tool_call>" not in text:
            text += "".join(_call_text(c) for c in calls)
        parts.append(text)
    flush()
    return "".join(parts), oks


def _scores(completions, reward_model, extra_info):
    out = []
    for completion, rm, info in zip(completions, reward_model, extra_info):
        text, oks = lab_text(completion)
        info = dict(info)
        info["tool_rewards"] = [1.0 if ok else 0.0 for ok in oks]
        res = reward.compute_score(None, text, rm["ground_truth"], info)
        res["valid_call"] = 1.0 if any(oks) else 0.0
        out.append(res)
    return out


def lab_reward(prompts, completions, reward_model, extra_info, **kwargs):
    return [r["score"] for r in _scores(completions, reward_model, extra_info)]


def lab_acc(prompts, completions, reward_model, extra_info, **kwargs):
    """The task's verifier on the final answer (weight 0: logged, not trained on): the lab's acc."""
    return [float(r["acc"]) for r in _scores(completions, reward_model, extra_info)]


def lab_valid_call(prompts, completions, reward_model, extra_info, **kwargs):
    """1 when a tool call ran without error (weight 0): the lab's valid_call_rate."""
    return [r["valid_call"] for r in _scores(completions, reward_model, extra_info)]


def hermes_parsing(tokenizer):
    """The tokenizer with TRL's tool-call parser set: TRL's own for a chat template it knows; for
    another (the lab-made Llama's ChatML), Qwen's, which reads the Hermes calls the lab's tasks
    use (<tool_call>{"name": ..., "arguments": {...}}</tool_call>)."""
    from trl import chat_template_utils as ctu

    try:
        return ctu.add_response_schema(tokenizer)
    except ValueError:
        print("train_trl.py: TRL does not know this chat template; its tool calls are parsed as Hermes calls (Qwen's)")
    if ctu._SUPPORTS_RESPONSE_TEMPLATE:
        tokenizer.response_template = ctu.qwen3_template
    else:
        tokenizer.response_schema = ctu.qwen3_schema
    return tokenizer


def main():
    global TOOL_RUNNER
    p = argparse.ArgumentParser(description="The lab run as a TRL GRPOTrainer run.")
    p.add_argument("--model", default=LAB["model"], help="a Hub id or a Hugging Face model folder")
    p.add_argument("--output-dir", default=os.path.join(HERE, LAB["output_dir"]))
    p.add_argument("--tools", choices=["sandbox_fusion", "node"], default="sandbox_fusion")
    p.add_argument("--max-steps", type=int, default=None, help="optimizer steps (default: the lab run's)")
    p.add_argument(
        "--max-completion-length", type=int, default=None, help="tokens (default: the lab's sampling.max_new_tokens)"
    )
    a = p.parse_args()
    if a.model is None:
        p.error("--model is required: " + LAB["model_why"])
    TOOL_RUNNER = a.tools

    from datasets import load_dataset
    from transformers import AutoTokenizer, GenerationConfig
    from trl import GRPOConfig, GRPOTrainer

    class LabGRPOTrainer(GRPOTrainer):
        """GRPOTrainer whose evaluations decode greedily, as the lab's val/* metrics do."""

        def evaluate(self, *args, **kwargs):
            saved = (self.generation_config, self.generation_kwargs)
            greedy = {k: v for k, v in self.generation_kwargs.items() if k not in ("temperature", "top_p", "top_k", "min_p")}
            greedy["do_sample"] = False
            self.generation_config = GenerationConfig(**greedy, disable_compile=True)
            self.generation_kwargs = greedy
            try:
                return super().evaluate(*args, **kwargs)
            finally:
                self.generation_config, self.generation_kwargs = saved

    os.makedirs(os.path.join(a.output_dir, "completions"), exist_ok=True)
    with open(os.path.join(a.output_dir, "lab_export.json"), "w") as f:
        json.dump({**LAB, "model": a.model, "tools": a.tools}, f, indent=1)
    data = load_dataset(
        "parquet",
        data_files={"train": os.path.join(HERE, "train.parquet"), "test": os.path.join(HERE, "val.parquet")},
    )
    args = dict(LAB["grpo_config"])
    if a.max_steps is not None:
        args["max_steps"] = a.max_steps
    if a.max_completion_length is not None:
        args["max_completion_length"] = a.max_completion_length
    config = GRPOConfig(output_dir=a.output_dir, **args)
    extra = {}
    if LAB["lora"] is not None:
        from peft import LoraConfig

        extra["peft_config"] = LoraConfig(task_type="CAUSAL_LM", **LAB["lora"])
    # A chat template that ignores tools cannot take them (TRL cannot parse its calls): the
    # prompts carry the tool list in their system message instead, as in the lab.
    if LAB["pass_tools"]:
        if not LAB["env"]:
            extra["tools"] = TOOLS
        extra["processing_class"] = hermes_parsing(AutoTokenizer.from_pretrained(a.model))
    if LAB["env"]:
        # One environment instance per rollout; its methods are the tools, its episode the reward.
        extra["environment_factory"] = LabEnvironment
        reward_funcs = [lab_env.lab_reward, lab_env.lab_acc, lab_env.lab_valid_call]
    else:
        reward_funcs = [lab_reward, lab_acc, lab_valid_call]
    trainer = LabGRPOTrainer(
        model=a.model,
        reward_funcs=reward_funcs,
        args=config,
        train_dataset=data["train"],
        eval_dataset=data["test"],
        **extra,
    )
    trainer.train()
    # trainer_state.json in output_dir itself (otherwise only inside checkpoint-<step>/).
    trainer.save_state()


if __name__ == "__main__":
    main()
