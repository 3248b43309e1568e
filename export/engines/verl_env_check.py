# verl_env_check.py: the verl export of a lab JavaScript environment taken by verl's own package,
# without a GPU or an inference server (the engines layer, export/engines/env-verl.engines.test.ts).
#   python verl_env_check.py JOBS.json
#   JOBS: a list of {"dir", "model", "hydra": [overrides], "episodes": [{"split", "index", "texts": [turn, ...]}]}
# One process for every job (verl is imported once); each export's modules are imported fresh.
# 1. Hydra composes config.yaml over verl's ppo_trainer with run.sh's overrides and verl's
#    validate_config takes it; verl's get_custom_reward_fn loads the reward function.
# 2. verl's RLHFDataset reads train.parquet / val.parquet with the model's tokenizer.
# 3. The agent loop is made as verl's AgentLoopWorker makes it (agent_loop.yaml into the
#    registry, hydra.utils.instantiate with the trainer config, the tokenizer, the dataset
#    class) and run() on each episode's dataset row, with a server that answers each generate
#    call with the next of the episode's recorded model turns (its tokens and the EOS).
# Prints one JSON line per job (@@VERL_ENV_CHECK@@ {...}): per episode the reward_score, the extra
# fields' reward_extra_info, the response's model and observation segments decoded, and the
# reward function's score of the same trajectory.
import asyncio
import json
import os
import sys

os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import hydra  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402
from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: E402
from verl.utils import hf_tokenizer  # noqa: E402
from verl.utils.config import validate_config  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402


def run_job(job):
    here = os.path.abspath(job["dir"])

    overrides = [
        f"data.train_files={here}/train.parquet",
        f"data.val_files={here}/val.parquet",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={here}/agent_loop.yaml",
        f"reward.custom_reward_function.path={here}/lab_verl_env.py",
        f"trainer.rollout_data_dir={here}/results/rollouts",
        f"trainer.validation_data_dir={here}/results/validation",
        f"actor_rollout_ref.model.path={job['model']}",
        *job.get("hydra", []),
    ]
    with initialize_config_dir(config_dir=here, version_base=None):
        cfg = compose(config_name="config", overrides=overrides)

    out = {"validated": None}
    try:
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        out["validated"] = True
    except ValueError as e:
        # verl's last check (a LoRA rank against vLLM's) imports vLLM, which has no CPU build: as
        # verl_check.py, the rest is checked with the rollout named sglang.
        if "vllm version None not supported" not in str(e):
            raise
        other = cfg.copy()
        other.actor_rollout_ref.rollout.name = "sglang"
        validate_config(config=other, use_reference_policy=need_reference_policy(other), use_critic=need_critic(other))
        out["validated"] = "without vLLM's LoRA rank check"
    reward_fn = get_custom_reward_fn(cfg)
    out["reward_fn"] = str(reward_fn)  # verl wraps the loaded function in a partial
    out["agent_loop_config_path"] = cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path
    out["default_agent_loop"] = cfg.actor_rollout_ref.rollout.agent.default_agent_loop

    for entry in OmegaConf.load(cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path):
        _agent_loop_registry[entry.name] = entry
    tok = hf_tokenizer(job["model"])
    sets = {
        "train": RLHFDataset(data_files=[f"{here}/train.parquet"], tokenizer=tok, config=cfg.data, processor=None),
        "test": RLHFDataset(data_files=[f"{here}/val.parquet"], tokenizer=tok, config=cfg.data, processor=None),
    }
    out["rows"] = {k: len(v) for k, v in sets.items()}


    class ReplayServer:
        """Answers each generate call with the next recorded model turn: its tokens, then the EOS."""

        def __init__(self, texts):
            self.texts = list(texts)
            self.calls = 0

        async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
            if self.calls >= len(self.texts):
                raise RuntimeError(f"the agent loop asked for turn {self.calls + 1} of an episode of {len(self.texts)}")
            text = self.texts[self.calls]
            self.calls += 1
            ids = tok.encode(text, add_special_tokens=False) + [tok.eos_token_id]
            return TokenOutput(token_ids=ids, log_probs=None)


    def segments(ids, mask):
        """The response as runs of (mask, decoded text)."""
        runs = []
        for t, m in zip(ids, mask):
            if runs and runs[-1][0] == m:
                runs[-1][1].append(t)
            else:
                runs.append([m, [t]])
        return [{"mask": m, "text": tok.decode(ts, skip_special_tokens=True)} for m, ts in runs]


    episodes = []
    for e in job["episodes"]:
        row = sets[e["split"]][e["index"]]
        server = ReplayServer(e["texts"])
        cfgwrap = _agent_loop_registry[row["agent_name"]]
        kwargs = {k: v for k, v in row.items() if k in ("raw_prompt", "extra_info", "agent_name", "data_source", "index", "tools_kwargs")}

        async def play():
            # made inside the running event loop, as AgentLoopWorker._run_agent_loop makes it
            loop = hydra.utils.instantiate(
                config=cfgwrap,
                trainer_config=DictConfigWrap(config=cfg),
                server_manager=server,
                tokenizer=tok,
                processor=None,
                hf_model_type="llama",
                dataset_cls=RLHFDataset,
                data_config=DictConfigWrap(cfg.data),
                tools=ToolListWrap([]),
            )
            return await loop.run({"temperature": 1.0}, **kwargs)

        o = asyncio.run(play())
        info = o.extra_fields["reward_extra_info"]
        fallback = reward_fn(
            data_source=row["data_source"],
            solution_str=tok.decode(o.response_ids, skip_special_tokens=True),
            ground_truth="",
            extra_info={**row["extra_info"], **o.extra_fields},
        )
        episodes.append(
            {
                "seed": int(row["extra_info"]["seed"]),
                "agent_name": row["agent_name"],
                "generate_calls": server.calls,
                "reward_score": o.reward_score,
                "info": info,
                "fallback": fallback,
                "segments": segments(o.response_ids, o.response_mask),
                "response_tokens": len(o.response_ids),
                "num_turns": o.num_turns,
            }
        )
    out["episodes"] = episodes
    return out


for job in json.load(open(sys.argv[1])):
    # each export has its own lab_env / lab_verl_env (and env.json): import them fresh from its folder
    for m in ("lab_env", "lab_verl_env"):
        sys.modules.pop(m, None)
    here = os.path.abspath(job["dir"])
    sys.path.insert(0, here)
    try:
        result = run_job(job)
    finally:
        sys.path.remove(here)
    print("@@VERL_ENV_CHECK@@" + json.dumps(result, default=str), flush=True)
