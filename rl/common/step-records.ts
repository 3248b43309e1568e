// What a training step reports: the metrics row (one line of metrics.jsonl, verl's names),
// the sample records the inspector shows, and the rollout metrics shared by the RL step and
// value pretraining (reward, accuracy, length, tools, environment success).
// Tested through rl/run/trainer.test.ts, rl/run/trainer-env.test.ts and rl/update/vapo.test.ts.
import type { RuntimeCounters } from "../../kernels/runtime";
import type { PolicyModel } from "../../model/api";
import type { Tokenizer } from "../../model/tokenizer";
import { mean, type StepRow, std } from "../algos/types";
import { type RewardedTrajectory, toolrlMeans } from "../rollout/batch-rewards";

/** One line of metrics.jsonl: DESIGN.md's names; absent keys were not computed this step. */
export type MetricsRow = { step: number; phase: "sft" | "value_pretrain" | "rl"; time: number } & Record<
  string,
  number | string
>;

/** A trajectory as the inspector shows it: tokens with their per-token numbers. */
export interface SampleRecord {
  step: number;
  groupId: string;
  problemId: string;
  bucket: string;
  answer: string;
  promptTokens: number[];
  tokens: number[];
  /** The readable text of each prompt and response token (the tokenizer's pieces): the page loads no tokenizer. */
  promptPieces?: string[];
  pieces?: string[];
  /** The tokenizer's pad id, so the inspector can tell padding from text. */
  padId?: number;
  mask: number[];
  postTool: number[];
  logprobs: number[];
  entropy: number[];
  advantages: number[];
  /** Rollout importance ratio exp(old − sampler log-prob) per token (1 where not sampled); [] when not trained. */
  ratio?: number[];
  /** 1 for tokens a selection rule picked (Clip-Cov, KL-Cov, top-entropy); [] when none ran. */
  selected?: number[];
  reward: number;
  rewardTerms: Record<string, number>;
  correct: boolean;
  toolCalls: {
    raw: string;
    response: string;
    ok: boolean;
    status: string;
    executed: boolean;
    responseStart: number;
    responseEnd: number;
  }[];
  finish: string;
  /** The custom JS reward's error for this trajectory (it then scored 0). */
  customError?: string;
  /** How many groups the step had (the records keep at most SAMPLE_GROUPS of them). */
  groupsInStep?: number;
  filter: string;
  /** Multi-turn environments: one row per turn (anchor state, step reward, action token range). */
  steps?: StepRow[];
  /**
   * A completion from a verl or TRL run (results/): text only, no tokens or token masks (the
   * token arrays are empty); `correct` and `advantage` when the engine's file has them.
   */
  text?: { prompt: string; response: string; correct?: boolean; advantage?: number };
}

/** A trajectory with nothing in it (an empty completion that stopped): the base of one built by hand. */
export function emptySample(): SampleRecord {
  return {
    step: 0,
    groupId: "",
    problemId: "",
    bucket: "",
    answer: "",
    promptTokens: [],
    tokens: [],
    mask: [],
    postTool: [],
    logprobs: [],
    entropy: [],
    advantages: [],
    reward: 0,
    rewardTerms: {},
    correct: false,
    toolCalls: [],
    finish: "stop",
    filter: "",
  };
}

export interface StepOutput {
  row: MetricsRow;
  samples: SampleRecord[];
  /** Set when the update was skipped because the loss or gradient norm was not finite. */
  skipped?: string;
}

/** Seconds a step spent generating, in tools (or environments), rewarding and training. */
export interface StepTiming {
  rollout: number;
  tool: number;
  reward: number;
  train: number;
}

/** Groups of a step kept as sample records (the inspector shows a few at a time and lets one pick). */
export const SAMPLE_GROUPS = 8;

export function putFinite(row: Record<string, unknown>, key: string, v: number): void {
  if (Number.isFinite(v)) row[key] = v;
}

/** The phases whose device round trips a step reports (perf/<phase>/*). */
export type PerfPhase = "rollout" | "old_logprobs" | "update" | "eval";

/**
 * Marks phase boundaries on the policy's round-trip counters (absent on the CPU model):
 * `end(phase)` charges what happened since the last mark to that phase.
 */
export function perfMeter(policy: PolicyModel) {
  let last = policy.perf?.();
  const phases: Partial<Record<PerfPhase, RuntimeCounters>> = {};
  return {
    phases,
    end(phase: PerfPhase): void {
      const now = policy.perf?.();
      if (!now || !last) return;
      const prev = phases[phase];
      phases[phase] = {
        submits: now.submits - last.submits + (prev?.submits ?? 0),
        readbacks: now.readbacks - last.readbacks + (prev?.readbacks ?? 0),
        dispatches: now.dispatches - last.dispatches + (prev?.dispatches ?? 0),
        readbackBytes: now.readbackBytes - last.readbackBytes + (prev?.readbackBytes ?? 0),
      };
      last = now;
    },
  };
}

/**
 * perf/submits, perf/readbacks, perf/dispatches, perf/readback_bytes (sums over the phases
 * given) and the same per phase (perf/rollout/submits, ...).
 */
export function putPerf(row: Record<string, unknown>, phases: Partial<Record<PerfPhase, RuntimeCounters>>) {
  const names = Object.keys(phases) as PerfPhase[];
  if (names.length === 0) return;
  const keys = [
    ["submits", "submits"],
    ["readbacks", "readbacks"],
    ["dispatches", "dispatches"],
    ["readbackBytes", "readback_bytes"],
  ] as const;
  for (const [field, key] of keys) {
    let total = 0;
    for (const p of names) {
      const v = phases[p]![field];
      row[`perf/${p}/${key}`] = v;
      total += v;
    }
    row[`perf/${key}`] = total;
  }
}

export function putTiming(row: MetricsRow, t: StepTiming): void {
  row["timing/rollout_s"] = t.rollout;
  row["timing/tool_s"] = t.tool;
  row["timing/reward_s"] = t.reward;
  row["timing/train_s"] = t.train;
}

export function rolloutMetrics(all: RewardedTrajectory[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (all.length === 0) return out;
  const rewards = all.map((t) => t.reward);
  out["reward/mean"] = mean(rewards);
  out["reward/std"] = all.length > 1 ? std(rewards, "sample") : 0;
  const terms = new Set(all.flatMap((t) => Object.keys(t.terms)));
  for (const k of terms) putFinite(out, `reward/${k}/mean`, mean(all.map((t) => t.terms[k] ?? 0)));
  out["acc/mean"] = mean(all.map((t) => Number(t.correct)));
  const lens = all.map((t) => t.traj.tokens.length);
  out["response_length/mean"] = mean(lens);
  out["response_length/clip_ratio"] = mean(all.map((t) => Number(t.traj.finish !== "stop")));
  const executed = all.map((t) => t.traj.toolCalls.filter((x) => x.executed));
  out["tool/call_rate"] = mean(executed.map((x) => Number(x.length > 0)));
  out["tool/calls_mean"] = mean(executed.map((x) => x.length));
  const calls = executed.flat();
  if (calls.length > 0) out["tool/success_rate"] = mean(calls.map((x) => Number(x.outcome.ok)));
  Object.assign(out, callsPerSolved(all, "tool/", ""));
  // Function calling: ToolRL's format and call-match parts and the valid first calls, whatever the reward.
  const toolrl = toolrlMeans(all);
  if (toolrl) {
    out["toolrl/format_mean"] = toolrl.format;
    out["toolrl/call_mean"] = toolrl.call;
    out["tool/valid_call_rate"] = toolrl.valid;
  }
  // The custom JS reward's failures: the share of trajectories it threw on (they scored 0 from
  // it) and the first message, so a broken reward is a curve and a banner, not a silent 0.
  if (all.some((t) => "custom-js" in t.terms)) {
    out["reward/custom_error_rate"] = mean(all.map((t) => Number(t.customError !== undefined)));
  }
  const episodes = all.filter((t) => t.steps !== undefined);
  if (episodes.length > 0) Object.assign(out, envMetrics(episodes, "env/"));
  return out;
}

/**
 * Calls per solved problem on tasks that know each problem's fewest calls (meta.minCalls, the
 * arithmetic task's oneOp variant): `<prefix>calls_per_solved` (executed calls over the solved
 * problems) and `<prefix>excess_calls_per_solved` (calls above the minimum, over the same); none
 * when the task has no minCalls or nothing was solved.
 */
export function callsPerSolved(
  items: readonly {
    correct: boolean;
    traj: { toolCalls: readonly { executed: boolean }[] };
    problem: { meta: Record<string, unknown> };
  }[],
  prefix: string,
  suffix: string,
): Record<string, number> {
  if (!items.some((t) => typeof t.problem.meta.minCalls === "number")) return {};
  const solved = items.filter((t) => t.correct);
  if (solved.length === 0) return {};
  const calls = solved.map((t) => t.traj.toolCalls.filter((x) => x.executed).length);
  const min = solved.map((t) => Number(t.problem.meta.minCalls ?? 0));
  return {
    [`${prefix}calls_per_solved${suffix}`]: mean(calls),
    [`${prefix}excess_calls_per_solved${suffix}`]: mean(calls.map((c, i) => c - min[i])),
  };
}

/** Multi-turn metrics: success rate, turns per episode, invalid-action rate, episode return. */
export function envMetrics(
  episodes: { correct: boolean; steps?: StepRow[]; envReturn?: number }[],
  prefix: string,
): Record<string, number> {
  const steps = episodes.flatMap((t) => t.steps ?? []);
  const out: Record<string, number> = {
    [`${prefix}success_rate`]: mean(episodes.map((t) => Number(t.correct))),
    [`${prefix}steps_mean`]: mean(episodes.map((t) => t.steps?.length ?? 0)),
    [`${prefix}return_mean`]: mean(episodes.map((t) => t.envReturn ?? 0)),
  };
  if (steps.length > 0) out[`${prefix}invalid_rate`] = mean(steps.map((s) => Number(!!s.invalid)));
  return out;
}

/** The first custom-reward error of a step, for the row (`reward/custom_error`). */
export function firstCustomError(all: readonly RewardedTrajectory[]): string | undefined {
  return all.find((t) => t.customError !== undefined)?.customError;
}

/** Adds each token's readable piece, so the page shows BPE tokens without a tokenizer. */
export function withPieces(samples: SampleRecord[], tok: Tokenizer): SampleRecord[] {
  const pieces = (ids: number[]) =>
    ids.map((id) => (id >= 0 && id < tok.vocabSize ? tok.piece(id) : `<${id}>`));
  return samples.map((s) => ({
    ...s,
    promptPieces: pieces(s.promptTokens),
    pieces: pieces(s.tokens),
    padId: tok.padId,
  }));
}

/**
 * A step's groups as inspector records: all of them up to SAMPLE_GROUPS, groups with a
 * learning signal (unequal rewards) first when there are more. Entropy is the per-token
 * entropy of the update's scoring pass (empty for trajectories the batch dropped).
 */
export function sampleRecords(
  step: number,
  all: RewardedTrajectory[],
  decisions: Map<string, string>,
  update?: {
    advantages: Map<RewardedTrajectory, Float64Array>;
    entropies?: Map<RewardedTrajectory, ArrayLike<number>>;
    ratios?: Map<RewardedTrajectory, Float64Array>;
    selected?: Map<RewardedTrajectory, Float64Array>;
  },
): SampleRecord[] {
  const ids = [...new Set(all.map((t) => t.groupId))];
  const signal = (g: string) => {
    const rs = all.filter((t) => t.groupId === g).map((t) => t.reward);
    return rs.some((r) => r !== rs[0]);
  };
  const groups =
    ids.length <= SAMPLE_GROUPS
      ? ids
      : [...ids.filter(signal), ...ids.filter((g) => !signal(g))].slice(0, SAMPLE_GROUPS);
  return all
    .filter((t) => groups.includes(t.groupId))
    .map((t) => ({
      step,
      groupId: t.groupId,
      problemId: t.problem.id,
      bucket: t.problem.bucket,
      answer: t.problem.answer,
      promptTokens: t.traj.promptTokens,
      tokens: t.traj.tokens,
      mask: t.traj.mask,
      postTool: t.traj.postTool,
      logprobs: t.traj.logprobs,
      entropy: Array.from(update?.entropies?.get(t) ?? []),
      advantages: [...(update?.advantages.get(t) ?? [])],
      ratio: [...(update?.ratios?.get(t) ?? [])],
      selected: [...(update?.selected?.get(t) ?? [])],
      reward: t.reward,
      rewardTerms: t.terms,
      correct: t.correct,
      toolCalls: t.traj.toolCalls.map((x) => ({
        raw: x.call.raw,
        response: x.outcome.text,
        ok: x.outcome.ok,
        status: x.outcome.status,
        executed: x.executed,
        responseStart: x.responseStart,
        responseEnd: x.responseEnd,
      })),
      finish: t.traj.finish,
      filter: decisions.get(t.groupId) ?? "kept",
      groupsInStep: ids.length,
      ...(t.customError ? { customError: t.customError } : {}),
      ...(t.steps ? { steps: t.steps } : {}),
    }));
}
