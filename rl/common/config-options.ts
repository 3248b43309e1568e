// Where RunConfig's snake_case knobs become the camelCase options of the algorithm registries,
// the optimizer, the LR schedule and the rollout: the one place that maps config names to
// option names. Sections whose names line up one to one (shaping, gigpo) go through camelize();
// the rest say which knob feeds which option. Tested through the trainer tests.
import type { RunConfig } from "../../config";
import type { AdamWHparams, SamplingOptions } from "../../model/api";
import { hash32 } from "../../tasks/rng";
import { type AdvantageOptions, withAdvantageDefaults } from "../algos/advantage";
import type { AggOptions, PolicyLossOptions } from "../algos/losses";
import type { ShapingOptions } from "../algos/shaping";
import type { RolloutLimits } from "../rollout/agent-loop";
import { type LrSchedule, lrAt } from "../update/lr-schedule";

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
export type Camelized<T> = { [K in keyof T as K extends string ? Camel<K> : K]: T[K] };

/** { restrict_to_post_tool: x, q_h: y } -> { restrictToPostTool: x, qH: y } (one level deep). */
export function camelize<T extends object>(o: T): Camelized<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o))
    out[k.replace(/_([a-z0-9])/g, (_, ch: string) => ch.toUpperCase())] = v;
  return out as Camelized<T>;
}

type Rl = RunConfig["rl"];

/** rl.* -> the advantage estimators' options (ADVANTAGE registry). */
export function advantageOptions(r: Rl): AdvantageOptions {
  return withAdvantageDefaults({
    stdEps: r.std_eps,
    std: r.std,
    normByStd: r.advantage === "dr-grpo" ? false : r.norm_adv_by_std,
    singletonGroup: r.singleton_group,
    gamma: r.gamma,
    lambda: r.lambda,
    lambdaCritic: r.lambda_critic,
    lengthAdaptiveAlpha: r.length_adaptive_alpha,
    klCoef: r.kl.in === "reward" ? r.kl.coef : 0,
    klEstimator: r.kl.estimator,
    gigpo: { ...withAdvantageDefaults().gigpo, ...camelize(r.gigpo) },
    history: { window: r.history_window, ema: r.history_ema },
  });
}

/** rl.clip_*, rl.sapo, rl.clip_cov, rl.kl_cov -> the policy losses' options (POLICY_LOSS registry). */
export function policyLossOptions(r: Rl): PolicyLossOptions {
  return {
    epsLow: r.clip_eps_low,
    epsHigh: r.clip_eps_high,
    dualClipC: r.dual_clip_c,
    sapo: camelize(r.sapo),
    clipCov: r.clip_cov,
    klCov: r.kl_cov,
  };
}

/** shaping.* -> the entropy-shaping options (SHAPING registry). */
export function shapingOptions(c: RunConfig): ShapingOptions {
  return camelize(c.shaping);
}

/** rl.l_max (default sampling.max_new_tokens) -> the aggregation options (AGG registry). */
export function aggOptions(c: RunConfig): AggOptions {
  return { lMax: c.rl.l_max ?? c.sampling.max_new_tokens };
}

/** The optimizer knobs shared by sft.* and rl.*. */
type OptimizerKnobs = Pick<Rl, "betas" | "weight_decay" | "grad_clip">;

/** sft.* or rl.* -> AdamW hyperparameters at learning rate `lr` (grad_clip 0 = no clipping). */
export function adamwHparams(s: OptimizerKnobs, lr: number, weightDecay = s.weight_decay): AdamWHparams {
  return {
    lr,
    beta1: s.betas[0],
    beta2: s.betas[1],
    eps: 1e-8,
    weightDecay,
    maxGradNorm: s.grad_clip > 0 ? s.grad_clip : Number.POSITIVE_INFINITY,
  };
}

/** The schedule knobs shared by sft.* and rl.*. */
type ScheduleKnobs = Pick<Rl, "lr" | "warmup_steps" | "schedule" | "min_lr_ratio">;

function schedule(s: ScheduleKnobs, totalSteps: number): LrSchedule {
  return {
    lr: s.lr,
    warmupSteps: s.warmup_steps,
    schedule: s.schedule,
    minLrRatio: s.min_lr_ratio,
    totalSteps,
  };
}

/** The SFT learning rate at 0-based step `step` (over sft.steps). */
export function sftLr(c: RunConfig, step: number): number {
  return lrAt(step, schedule(c.sft, c.sft.steps));
}

/** The RL learning rate at 0-based step `step` (over stop.max_steps). */
export function rlLr(c: RunConfig, step: number): number {
  return lrAt(step, schedule(c.rl, c.stop.max_steps));
}

/** limits.* and sampling.max_new_tokens -> the single-turn rollout's limits. */
export function rolloutLimits(c: RunConfig): RolloutLimits {
  const l = c.limits;
  return {
    maxToolCalls: l.max_tool_calls,
    maxNewTokens: c.sampling.max_new_tokens,
    maxToolResponseChars: l.max_tool_response_chars,
    overLimitNotice: l.notice_on_exceeded ? "Tool-call limit reached; answer now." : "",
  };
}

/** sampling.* -> the generation session's options, seeded by (seed, label); greedy = temperature 0. */
export function samplingOptions(c: RunConfig, label: string, greedy = false): SamplingOptions {
  const s = c.sampling;
  return {
    temperature: greedy ? 0 : s.temperature,
    topK: s.top_k,
    topP: s.top_p,
    seed: hash32(`${c.seed}:${label}`),
  };
}
