# lab_verl_env.py: a lab JavaScript environment as verl's agent loop (verl 0.9.1,
# verl.experimental.agent_loop). agent_loop.yaml registers LabEnvAgentLoop as "lab_env_agent" and
# every row of train.parquet / val.parquet names it (agent_name) with its episode's seed
# (extra_info.seed). One run() is one episode, played as the lab plays it
# (rl/rollout/env-episodes.ts): the environment is reset with the row's seed; each model turn
# goes whole to the lab's step (lab_env.LabEnvEpisode: a Hermes tool call runs the tool, a
# multi-turn environment's step() answers, a plain answer ends a tools-only episode), and the
# observation comes back as a user turn whose tokens are masked from the loss (response_mask 0),
# until the episode ends, its turn limit ends it, or the response budget
# (data.max_response_length, counted over model and observation tokens) runs out, when check()
# scores the episode where it stands. The episode's return, weighted as the reward term `env`, is
# the trajectory's reward_score (verl then calls no reward function); check()'s success goes out
# as reward_extra_info "acc" (verl logs val-core/<data_source>/acc/mean@1: the lab's val/acc) with
# "valid_call" and the environment's error, if any.
# Called directly by export/engines/env-verl.engines.test.ts with a server that replays the
# lab's turns (verl's own rollout needs an inference server).
import json
import os
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

import lab_env

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = json.load(open(os.environ.get("LAB_ENV_JSON", os.path.join(HERE, "env.json")), encoding="utf8"))
WEIGHT = float(SPEC.get("reward_weight", 1.0))


def tool_schemas(spec):
    """The module's tools as the chat template takes them (OpenAI function schemas), or None."""
    tools = spec.get("tools") or []
    if not tools:
        return None
    return [
        {"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}}
        for t in tools
    ]


@register("lab_env_agent")
class LabEnvAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        kwargs.pop("tools", None)  # verl's tool list: the environment brings its own tools
        super().__init__(*args, **kwargs)
        self.response_length = self.rollout_config.response_length
        self.schemas = tool_schemas(SPEC)

    async def _call(self, fn, *args):
        return await self.loop.run_in_executor(None, fn, *args)

    async def run(self, sampling_params, **kwargs):
        extra = kwargs.get("extra_info") or {}
        if "seed" not in extra:
            raise ValueError("lab_env_agent: the row has no extra_info.seed (export the run again: npm run export -- verl)")
        episode = lab_env.LabEnvEpisode(SPEC)
        await self._call(episode.reset, int(extra["seed"]))
        messages = [dict(m) for m in kwargs["raw_prompt"]]
        ids = await self.ct_build_initial_tokens(messages, tools=self.schemas)
        mask, logprobs = [], None
        request_id = uuid4().hex
        turns, error, cut = 0, None, False
        while True:
            out = await self.server_manager.generate(request_id=request_id, prompt_ids=ids, sampling_params=sampling_params)
            merged, mask, lps = await self.ct_merge_assistant_token(
                ids, out.token_ids, mask, logprobs if (logprobs or out.log_probs) else None,
                assistant_logprobs=out.log_probs if out.log_probs else None,
            )
            ids = merged.token_ids
            if lps is not None:
                logprobs = lps
            text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
            observation, _, done, info = await self._call(episode.step, text)
            turns += 1
            error = info.get("error", error)
            if done:
                break
            if len(mask) >= self.response_length:
                cut = True
                break
            messages.append({"role": "assistant", "content": text})
            previous = list(messages)
            messages.append({"role": "user", "content": observation})
            merged, next_mask, lps = await self.ct_merge_context_msg(
                previous, messages, ids, mask, logprobs, tools=self.schemas
            )
            if len(next_mask) >= self.response_length:
                cut = True
                break
            ids, mask = merged.token_ids, next_mask
            if lps is not None:
                logprobs = lps
        if not episode.done:
            error = (await self._call(episode.end)) or error
        calls = episode.view["calls"]
        info = {
            "acc": float(episode.success),
            "env_return": float(episode.total),
            "valid_call": float(any(c["ok"] for c in calls)),
            "turns": turns,
            "cut": cut,
            "error": error or "",
        }
        n = len(mask)
        response = ids[len(ids) - n :] if n else []
        return AgentLoopOutput(
            prompt_ids=ids[: len(ids) - n],
            response_ids=response[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=WEIGHT * float(episode.total),
            num_turns=2 * turns + 1,
            metrics={},
            extra_fields={"turn_scores": [], "tool_rewards": [], "reward_extra_info": info, "lab_episode": episode.view},
        )


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's reward function (reward.custom_reward_function): the episode's return that
    LabEnvAgentLoop recorded (verl calls this only where an agent loop left reward_score unset;
    its extra fields reach here in extra_info)."""
    info = (extra_info or {}).get("reward_extra_info")
    if not isinstance(info, dict) or "env_return" not in info:
        raise ValueError(
            "lab_verl_env.compute_score: the trajectory carries no episode result: its row must name "
            "agent_name lab_env_agent (agent_loop.yaml registers it)"
        )
    return {"score": WEIGHT * info["env_return"], "acc": info["acc"], "valid_call": info["valid_call"]}
