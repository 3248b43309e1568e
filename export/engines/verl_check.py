# verl_check.py: a verl export taken by verl's own package, without a GPU (the engines test
# layer, export/engines/verl.engines.test.ts; the venv of npm run engines:setup).
#   python verl_check.py JOBS.json   (a list of {"dir", "model"?, "sample"?, "hydra"?: [overrides]})
# Prints one JSON line per job (@@VERL_CHECK@@ {...}): what each step did, or where it stopped
# and with what message. One process for every job: verl is imported once.
#   compose   Hydra composes config.yaml over verl's installed ppo_trainer (its searchpath and
#             defaults, as run.sh's `python -m verl.trainer.main_ppo --config-name config`), with
#             run.sh's own overrides; a missing value (???) is an error when it is read.
#   validate  verl.utils.config.validate_config, as main_ppo's main() calls it.
#   reward    verl's reward loading (verl.trainer.ppo.reward.get_custom_reward_fn) on the
#             composed config, then the loaded function scores a sample.
#   dataset   verl's RLHFDataset over train.parquet with the model's tokenizer and chat template
#             (only with --model: a Hugging Face folder).
#   tools     verl's initialize_tools_from_config on tool_config.yaml.
import json
import os
import sys
import traceback

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("SANDBOX_FUSION_URL", "http://127.0.0.1:9/run_code")

class Job:
    def __init__(self, d):
        self.dir = os.path.abspath(d["dir"])
        self.model = d.get("model")
        self.sample = d.get("sample")
        self.hydra = d.get("hydra", [])
        self.tools = d.get("tools", "sandbox_fusion")


a = None
here = None
out = None


def step(name, fn):
    try:
        out["steps"][name] = {"ok": True, **(fn() or {})}
        return True
    except BaseException as e:  # every failure is reported, with verl's own message
        out["steps"][name] = {
            "ok": False,
            "error": type(e).__name__ + ": " + str(e),
            "where": traceback.format_exc().strip().split("\n")[-14:],
        }
        return False


cfg = None


def compose():
    global cfg
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    overrides = [
        f"data.train_files={here}/train.parquet",
        f"data.val_files={here}/val.parquet",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={here}/"
        + ("tool_config_node.yaml" if a.tools == "node" else "tool_config.yaml"),
        f"reward.custom_reward_function.path={here}/reward.py",
        f"trainer.rollout_data_dir={here}/results/rollouts",
        f"trainer.validation_data_dir={here}/results/validation",
    ]
    if a.model:
        overrides.append(f"actor_rollout_ref.model.path={a.model}")
    overrides += a.hydra
    with initialize_config_dir(config_dir=here, version_base=None):
        cfg = hydra_compose(config_name="config", overrides=overrides)
    # The values a run depends on, read as verl reads them (resolved): a required value that
    # was not given fails here with OmegaConf's message.
    reads = {}
    for key in ("actor_rollout_ref.model.path", "algorithm.adv_estimator", "reward.custom_reward_function.path"):
        try:
            reads[key] = {"value": OmegaConf.select(cfg, key, throw_on_resolution_failure=True)}
        except Exception as e:
            reads[key] = {"error": type(e).__name__ + ": " + str(e).split("\n")[0]}
    return {"config": OmegaConf.to_container(cfg, resolve=False), "reads": reads}


def validate():
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    res = {"use_critic": bool(need_critic(cfg)), "use_reference_policy": bool(need_reference_policy(cfg))}
    try:
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        return res
    except ValueError as e:
        # verl's last check, a LoRA run's rank against vLLM's, imports vLLM, which has no CPU
        # build here: every other check runs with the rollout named sglang (which skips only that
        # one), and the rank is checked against the list verl's own fallback holds.
        if "vllm version None not supported" not in str(e) or cfg.actor_rollout_ref.rollout.name != "vllm":
            raise
    import re
    from copy import deepcopy

    import verl

    other = deepcopy(cfg)
    other.actor_rollout_ref.rollout.name = "sglang"
    validate_config(config=other, use_reference_policy=need_reference_policy(other), use_critic=need_critic(other))
    src = open(os.path.join(os.path.dirname(verl.__file__), "workers/rollout/vllm_rollout/utils.py")).read()
    ranks = [int(x) for x in re.search(r"MaxLoRARanks = Literal\[([0-9, ]+)\]", src).group(1).split(",")]
    rank = cfg.actor_rollout_ref.model.get("lora_rank", 0)
    if rank > max(ranks):
        raise ValueError(f"lora_rank must be less than or equal to {max(ranks)}, but got {rank}")
    res["stopped_at"] = "vLLM's LoRA rank check imports vLLM (not installed: no CPU build); the rest passed"
    res["lora_rank_ok"] = True
    return res


def reward():
    from verl.trainer.ppo.reward import get_custom_reward_fn

    fn = get_custom_reward_fn(cfg)
    if fn is None:
        raise RuntimeError("verl loaded no custom reward function from the config")
    res = {"loaded": getattr(fn, "__name__", str(fn))}
    if a.sample:
        s = a.sample
        res["score"] = fn(
            data_source=s.get("data_source", "lab"),
            solution_str=s["solution_str"],
            ground_truth=s["ground_truth"],
            extra_info=s.get("extra_info"),
        )
    return res


def dataset():
    from verl.utils import hf_processor, hf_tokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tok = hf_tokenizer(a.model)
    ds = RLHFDataset(
        data_files=[f"{here}/train.parquet"],
        tokenizer=tok,
        config=cfg.data,
        processor=hf_processor(a.model),
    )
    row = ds[0]
    raw = row.get("raw_prompt")
    text = tok.apply_chat_template(raw, tools=None, add_generation_prompt=True, tokenize=False) if raw else None
    return {"rows": len(ds), "keys": sorted(row.keys()), "first_prompt_text": text}


def tools():
    import asyncio

    from verl.tools.tool_registry import initialize_tools_from_config

    ts = initialize_tools_from_config(cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path)
    res = {"tools": [[type(t).__name__, t.name, t.config.get("runner")] for t in ts], "calls": []}
    # A code tool's call through verl's own interface (create, execute, release), on its runner.
    for t in ts:
        if type(t).__name__ != "LabCodeTool" or t.config.get("runner") != "node":
            continue
        for code in ("6*7", "(2+3)*4", "1/"):

            async def call():
                iid, _ = await t.create()
                resp, score, _ = await t.execute(iid, {"code": code})
                await t.release(iid)
                return resp.text, score

            text, score = asyncio.run(call())
            res["calls"].append({"code": code, "text": text, "tool_reward": score})
    return res


def run(job):
    global a, here, out, cfg
    a, here, out, cfg = job, job.dir, {"dir": job.dir, "steps": {}}, None
    # Each export has its own lab_tools.py and reward.py: import them fresh from its folder.
    for m in ("lab_tools", "lab_node", "reward"):
        sys.modules.pop(m, None)
    sys.path.insert(0, here)
    try:
        if step("compose", compose):
            step("validate", validate)
            step("reward", reward)
            if a.model:
                step("dataset", dataset)
            step("tools", tools)
    finally:
        sys.path.remove(here)
    print("@@VERL_CHECK@@" + json.dumps(out, default=str), flush=True)


for job in json.load(open(sys.argv[1])):
    run(Job(job))
