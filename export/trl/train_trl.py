# train_trl.py: the lab run as a TRL GRPOTrainer run, written by `npm run export -- trl`
# (agentic-rl-lab). The same data (train.parquet / val.parquet), the same reward (reward.py's
# terms, on the completion rendered in the lab's transcript form) and the same tools (the
# task's JavaScript tools, run in Sandbox Fusion by lab_node.py).
#   pip install trl peft datasets   # and a Sandbox Fusion server for the tools
#   SANDBOX_FUSION_URL=http://host:8080/run_code python3 train_trl.py [--model Qwen/Qwen2.5-0.5B-Instruct]
# The GRPOConfig below names the lab field each argument comes from; README.md lists what TRL
# does not have. Results land in --output-dir (trl-out beside this file): trainer_state.json
# (the log history) and completions/completions_<step>.parquet.
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import lab_node  # noqa: E402
import reward  # noqa: E402

LAB = None  # @LAB_TRL@ (filled in by the exporter: GRPOConfig arguments, tools, limits)

SANDBOX_FUSION_URL = os.environ.get("SANDBOX_FUSION_URL", "http://localhost:8080/run_code")


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
    text, ok = lab_node.run_sandbox_fusion(SANDBOX_FUSION_URL, source, LAB["timeout_s"], LAB["memory_mb"])
    if not ok:
        raise LabToolError(text)
    return text


# @LAB_TOOLS@ (the task's tools as typed Python functions with docstrings, for TRL)


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
        calls = m.get("tool_calls") or []
        if calls and "<tool_call>" not in text:
            text += "".join(_call_text(c) for c in calls)
        parts.append(text)
    flush()
    return "".join(parts), oks


def lab_reward(prompts, completions, reward_model, extra_info, **kwargs):
    scores = []
    for completion, rm, info in zip(completions, reward_model, extra_info):
        text, oks = lab_text(completion)
        info = dict(info)
        info["tool_rewards"] = [1.0 if ok else 0.0 for ok in oks]
        scores.append(reward.compute_score(None, text, rm["ground_truth"], info)["score"])
    return scores


def main():
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    p = argparse.ArgumentParser()
    p.add_argument("--model", default=LAB["model"], required=LAB["model"] is None)
    p.add_argument("--output-dir", default=os.path.join(HERE, LAB["output_dir"]))
    a = p.parse_args()
    os.makedirs(os.path.join(a.output_dir, "completions"), exist_ok=True)
    data = load_dataset(
        "parquet",
        data_files={"train": os.path.join(HERE, "train.parquet"), "test": os.path.join(HERE, "val.parquet")},
    )
    config = GRPOConfig(output_dir=a.output_dir, **LAB["grpo_config"])
    extra = {}
    if LAB["lora"] is not None:
        from peft import LoraConfig

        extra["peft_config"] = LoraConfig(task_type="CAUSAL_LM", **LAB["lora"])
    # A chat template that ignores tools cannot take them (TRL cannot parse its calls): the
    # prompts carry the tool list in their system message instead, as in the lab.
    if LAB["pass_tools"]:
        extra["tools"] = TOOLS
    trainer = GRPOTrainer(
        model=a.model,
        reward_funcs=lab_reward,
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
