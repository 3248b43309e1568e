// The seam between single-turn tasks and multi-turn environments. The training phases ask a
// TaskDriver for prompts, demonstrations, rollouts and eval metrics and never branch on the
// task kind. A single-turn task rolls out with tools (rl/rollout/agent-loop.ts) and is judged by its
// verifier on the strict final answer; an environment (frozenlake, sokoban) plays episodes
// (rl/rollout/env-episodes.ts): a prompt is a seed, correct is success, each turn is a GiGPO step row,
// and always renders as chatml turns with the character tokenizer. Tested by rl/run/trainer.test.ts and rl/run/trainer-env.test.ts.
import type { RunConfig } from "../../config";
import { builtinChat, type ChatFormat } from "../../model/chat";
import type { Message } from "../../model/template";
import { CHAR_TOKENIZER } from "../../model/tokenizer";
import { type AnyTask, type EnvTask, isEnvTask, type Problem, type Task } from "../../tasks/types";
import { RETURN } from "../algos/advantage";
import { lastPolicyIndex } from "../algos/types";
import { rolloutLimits } from "../common/config-options";
import type { TaskDriver } from "../common/phase-context";
import { envMetrics } from "../common/step-records";
import { rollout, type Trajectory } from "./agent-loop";
import type { RewardedTrajectory } from "./batch-rewards";
import { envPromptMessages, envRollout, turnTokenRewards } from "./env-episodes";
import { parseAnswer } from "./parse";

export function taskDriver(task: AnyTask): TaskDriver {
  return isEnvTask(task) ? envDriver(task) : singleTurnDriver(task);
}

// ---------------------------------------------------------------------------------------
// Single-turn tasks

function singleTurnDriver(task: Task): TaskDriver {
  return {
    tools: task.tools,
    chat: (run) => run,
    sample: (rng, n) => task.sample(rng, n),
    evalSet: (n) => task.evalSet(n),
    ...(task.devSet ? { devSet: (n: number) => task.devSet?.(n) ?? [] } : {}),
    sftDemos: (rng, n, knobs) => task.sftDemos(rng, n, knobs),
    async rollout(ctx, owners, sampling) {
      const prompts = owners.map((p) => problemPrompt(p, ctx.chat));
      const stats = { toolSeconds: 0 };
      const trajs = await rollout(ctx.policy, prompts, {
        stats,
        chat: ctx.chat,
        sampling,
        limits: rolloutLimits(ctx.config),
        tools: ctx.tools,
      });
      return {
        items: trajs.map((t, i) => ({
          traj: t,
          problem: owners[i],
          groupId: "",
          correct: verify(task, owners[i], t),
        })),
        toolSeconds: stats.toolSeconds,
      };
    },
    evalMetrics: () => ({}),
  };
}

/** Correctness of one trajectory by the task's verifier on its strict final answer. */
function verify(task: Task, problem: Problem, t: Trajectory): boolean {
  const ans = parseAnswer(t.text, { mode: "strict", endMarkers: ["<|im_end|>"] });
  const calls = t.toolCalls
    .filter((c) => !c.call.error)
    .map((c) => ({ name: c.call.name, arguments: c.call.arguments, code: c.call.code }));
  return task.verify(problem, ans.ok ? ans.answer : null, { text: t.text, calls }).correct;
}

// ---------------------------------------------------------------------------------------
// Multi-turn environments

function envDriver(env: EnvTask): TaskDriver {
  return {
    tools: [],
    chat: (run) => {
      if (run.tokenizer.kind !== "char")
        throw new Error(
          `model.tokenizer: multi-turn environments (${env.name}) run with the character tokenizer only; leave it null`,
        );
      return ENV_CHAT;
    },
    sample: (rng, n) => env.sampleSeeds(rng, n).map((seed) => envProblem(env, seed)),
    evalSet: (n) => env.evalSeeds(n).map((seed) => envProblem(env, seed)),
    sftDemos: (rng, n, knobs) => env.sftDemos(rng, n, knobs as { thinkRate?: number }),
    async rollout(ctx, owners, sampling) {
      const stats = { envSeconds: 0 };
      const episodes = await envRollout(
        ctx.policy,
        env,
        owners.map((p) => Number(p.meta.seed)),
        { sampling, maxNewTokensPerTurn: ctx.config.sampling.max_new_tokens, stats },
      );
      return {
        items: episodes.map((e, i) => ({
          traj: e.traj,
          problem: owners[i],
          groupId: "",
          correct: e.success,
          steps: e.steps,
          envReturn: e.envReturn,
        })),
        toolSeconds: stats.envSeconds,
      };
    },
    evalMetrics(items, suffix, prefix = "val") {
      const m = envMetrics(items, "");
      return {
        [`${prefix}/env_steps_mean${suffix}`]: m.steps_mean,
        [`${prefix}/env_return_mean${suffix}`]: m.return_mean,
      };
    },
  };
}

/** An environment seed as a prompt: the instructions and the first observation. */
function envProblem(env: EnvTask, seed: number): Problem {
  const e = env.make();
  const obs = e.reset(seed);
  return {
    id: `${env.name}:seed${seed}`,
    messages: e.messages?.() ?? envPromptMessages(env, obs),
    answer: "",
    bucket: env.buckets[0] ?? "all",
    meta: { seed },
  };
}

/**
 * Per-token rewards of an environment episode for the token-level estimators: each turn's
 * turn-discounted return (rl.turn_gamma, RETURN turn-discount) as in turnTokenRewards, plus
 * whatever the reward adds beyond the episode return (custom JS) on the last policy token.
 * Undefined for single-turn trajectories (the outcome reward sits on the last token).
 */
export function tokenRewardsOf(
  c: RunConfig,
  t: RewardedTrajectory,
  mask: ArrayLike<number>,
): Float64Array | undefined {
  if (!t.steps || t.envReturn === undefined) return undefined;
  const r = turnTokenRewards(t.steps, mask.length, c.rl.turn_gamma, RETURN["turn-discount"]);
  const extra = t.reward - t.envReturn;
  const last = lastPolicyIndex(mask);
  if (extra !== 0 && last >= 0) r[last] += extra;
  return r;
}

const ENV_CHAT = builtinChat("chatml-turns", CHAR_TOKENIZER);

/** The prompt tokens of a problem in a chat format. */
export function problemPrompt(p: Problem, chat: ChatFormat): number[] {
  return chat.promptTokens(p.messages as Message[]);
}
