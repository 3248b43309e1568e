// Rewards for a batch of rollouts: the configured terms (rl/algos/reward-terms.ts registry),
// weighted, plus the user's JavaScript reward run in the sandbox. A custom reward that throws,
// times out or returns a non-number scores 0 for that trajectory and its error is kept (the
// run goes on; the UI shows the message).
// Tested by rl/run/trainer.test.ts and rl/rollout/batch-rewards.test.ts.
import type { RunConfig } from "../../config";
import { runRewardFunction } from "../../sandbox/tools";
import type { JsonValue, SandboxRunner } from "../../sandbox/types";
import { hash32 } from "../../tasks/rng";
import type { Problem } from "../../tasks/types";
import { combineRewards, type RewardInput, toolrlParts } from "../algos/reward-terms";
import { mean, type StepRow } from "../algos/types";
import type { Trajectory } from "./agent-loop";
import { parseAnswer } from "./parse";

export interface RewardedTrajectory {
  traj: Trajectory;
  problem: Problem;
  groupId: string;
  correct: boolean;
  reward: number;
  terms: Record<string, number>;
  /** Loss-mask multiplier from filters (TAO-RL all-tools-failed); 1 = untouched. */
  lossScale: number;
  /** Error of the custom JS reward for this trajectory, if it failed. */
  customError?: string;
  /** Multi-turn environments: one GiGPO row per turn, and the undiscounted episode return. */
  steps?: StepRow[];
  envReturn?: number;
  /** ReMax: the reward of the greedy rollout of the same prompt. */
  baselineReward?: number;
}

/** What computeRewards scores: a rollout, its prompt and verdict; env episodes bring their return. */
export interface RewardItem {
  traj: Trajectory;
  problem: Problem;
  groupId: string;
  correct: boolean;
  steps?: StepRow[];
  envReturn?: number;
}

/** Builds the registry's view of one trajectory. */
export function rewardInput(
  t: Trajectory,
  problem: Problem,
  correct: boolean,
  ctx: { step: number; totalSteps: number; maxLength: number },
): RewardInput {
  const ans = parseAnswer(t.text, { mode: "lenient" });
  const gt = problem.meta.gtCalls as { name: string; arguments?: Record<string, unknown> }[] | undefined;
  return {
    text: t.text,
    answerText: ans.ok ? ans.answer : null,
    correct,
    toolCalls: t.toolCalls
      .filter((c) => c.executed)
      .map((c) => ({
        name: c.call.name || undefined,
        args: c.call.arguments ?? c.call.code,
        ok: c.outcome.ok,
      })),
    gtCalls: gt?.map((c) => ({ name: c.name, arguments: c.arguments ?? {} })) ?? null,
    responseLength: t.mask.reduce((a, b) => a + b, 0),
    maxLength: ctx.maxLength,
    step: ctx.step,
    totalSteps: ctx.totalSteps,
  };
}

/**
 * ToolRL's two parts at its fixed ranges (format 0 or 1, call match -3..3), averaged over the
 * trajectories whose problem has ground-truth calls (function calling), whatever reward the run
 * trains on, so both arms of the ToolRL claim show which part moved; and the share of them whose
 * first call parsed and ran (`valid`). Undefined when no problem has ground-truth calls.
 */
export function toolrlMeans(
  items: readonly { traj: Trajectory; problem: Problem }[],
): { format: number; call: number; valid: number } | undefined {
  const fc = items.filter((it) => {
    const gt = it.problem.meta.gtCalls;
    return Array.isArray(gt) && gt.length > 0;
  });
  if (fc.length === 0) return undefined;
  const parts = fc.map((it) =>
    toolrlParts(rewardInput(it.traj, it.problem, false, { step: 0, totalSteps: 0, maxLength: 0 }), {}),
  );
  return {
    format: mean(parts.map((p) => p.format)),
    call: mean(parts.map((p) => p.correct)),
    valid: mean(fc.map((it) => Number(it.traj.toolCalls.find((c) => c.executed)?.outcome.ok === true))),
  };
}

/** What a custom reward without a function gets (not the SyntaxError of reading it as an expression). */
export const NO_REWARD_FUNCTION =
  "no function named reward: declare function reward(x) { ... } or give a function expression such as (x) => (x.correct ? 1 : 0)";

/**
 * Runs a user reward in the sandbox. The source is either a declaration of
 * `function reward(x, options)` or a function expression such as `(x) => x.correct ? 1 : 0`.
 * Inside the sandbox the source runs once as statements (a syntax error there is the
 * source's own); without a `reward` it is read as an expression, and when that is not a
 * function either the error is NO_REWARD_FUNCTION.
 */
export async function runCustomReward(
  sandbox: SandboxRunner,
  source: string,
  input: RewardInput,
  limits: { timeoutS: number; memoryMB: number; seed?: number },
): Promise<{ ok: true; value: number } | { ok: false; error: string }> {
  const src = JSON.stringify(source);
  const fn = `(function () {
  var declared = Function(${src} + "\\n;return typeof reward === 'function' ? reward : undefined;")();
  if (declared) return declared;
  var expr;
  try { expr = Function("return (" + ${src} + "\\n);")(); } catch (e) { expr = undefined; }
  if (typeof expr === "function") return expr;
  throw new Error(${JSON.stringify(NO_REWARD_FUNCTION)});
})()`;
  return runRewardFunction(sandbox, fn, input as unknown as JsonValue, {
    run_timeout: limits.timeoutS,
    memory_limit_MB: limits.memoryMB,
    seed: limits.seed,
  });
}

/**
 * Rewards of a batch. A single-turn trajectory gets the weighted reward terms of
 * rewards.terms; an environment episode (envReturn set) gets its episode return as the term
 * `env` instead. The custom JS reward, when set, is added to either.
 */
export async function computeRewards(
  items: RewardItem[],
  config: RunConfig,
  ctx: { step: number; sandbox: SandboxRunner; label?: string },
): Promise<RewardedTrajectory[]> {
  const rc = { step: ctx.step, totalSteps: config.stop.max_steps, maxLength: config.sampling.max_new_tokens };
  const inputs = items.map((it) => rewardInput(it.traj, it.problem, it.correct, rc));
  // OTC-GRPO compares each trajectory with its group.
  const byGroup = new Map<string, number[]>();
  items.forEach((it, i) => {
    byGroup.set(it.groupId, [...(byGroup.get(it.groupId) ?? []), i]);
  });
  for (const idx of byGroup.values()) {
    const group = {
      toolCalls: idx.map((i) => inputs[i].toolCalls.length),
      correct: idx.map((i) => inputs[i].correct),
    };
    for (const i of idx) inputs[i].group = group;
  }
  const custom = config.rewards.custom_js.trim();
  const customResults = custom
    ? await Promise.all(
        inputs.map((x, i) =>
          runCustomReward(ctx.sandbox, custom, x, {
            timeoutS: config.limits.tool_timeout_s,
            memoryMB: config.limits.memory_mb,
            // The sandbox's Math.random: seeded by the run seed and the call's place.
            seed: hash32(`${config.seed}:reward:${ctx.label ?? ctx.step}:${i}`),
          }),
        ),
      )
    : [];
  // custom-js may also be listed in rewards.terms (with its own weight); then it is scored
  // through the registry's check and not added a second time with custom_js_weight.
  const customTerm = config.rewards.terms.some((t) => t.name === "custom-js");
  const envTerm = config.rewards.terms.some((t) => t.name === "env");
  if (envTerm && items.some((it) => it.envReturn === undefined))
    throw new Error(
      `rewards.terms: "env" is an environment episode's return; ${config.task.name} is a single-turn task (use correctness)`,
    );
  if (customTerm && !custom)
    throw new Error('rewards.terms: "custom-js" needs rewards.custom_js (the reward function source)');
  return items.map((it, i) => {
    let customError: string | undefined;
    let customValue = 0;
    if (custom) {
      const r = customResults[i];
      if (r.ok) customValue = r.value;
      else customError = r.error;
    }
    const sandboxValues: Record<string, number> = custom ? { "custom-js": customValue } : {};
    if (it.envReturn !== undefined) sandboxValues.env = it.envReturn;
    // An episode's return is the term `env`: weighted with the others when rewards.terms lists
    // it, else the episode's whole reward.
    const { total, terms } =
      it.envReturn !== undefined && !envTerm
        ? { total: it.envReturn, terms: { env: it.envReturn } as Record<string, number> }
        : combineRewards(inputs[i], config.rewards.terms, sandboxValues);
    let reward = total;
    if (custom && (it.envReturn !== undefined || !customTerm)) {
      terms["custom-js"] = customValue;
      reward += config.rewards.custom_js_weight * customValue;
    }
    return {
      ...it,
      reward,
      terms,
      lossScale: 1,
      ...(customError ? { customError } : {}),
    };
  });
}
