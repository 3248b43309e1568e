// "What will happen, and about how long": the one line by Start. The plan comes from the
// config (SFT steps, RL steps, rollouts per step, the held-out metric to watch, seeds); the
// time counts everything a run does, each part measured on this adapter from a run's rows: the
// start (files, weights, kernel compiles), an RL step per rollout, an SFT step per example and a
// held-out evaluation per problem, remembered per adapter in localStorage. Tested by
// app/estimate.test.ts.
import type { RunConfig } from "../config";
import type { MetricsRow } from "../workers/api";

export interface StepTimes {
  /** Seconds per rollout of an RL step (rollout, reward and update together). */
  rlPerRollout?: number;
  /** Seconds per SFT example. */
  sftPerExample?: number;
  /** Seconds per held-out problem of one evaluation (greedy and sampled together). */
  evalPerProblem?: number;
  /** Seconds from Start to training: files, weights, the GPU kernels' compiles, the first step's warm-up. */
  startS?: number;
}

function median(xs: number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const timed = (r: MetricsRow) => typeof r.time === "number" && Number.isFinite(r.time);
const hasEval = (r: MetricsRow) => Object.keys(r).some((k) => /^(val|dev)\//.test(k));
// A row of an RL step (an update ran); the final held-out evaluation is a row of its own without one.
const isStep = (r: MetricsRow) => typeof r["reward/mean"] === "number" || typeof r["actor/lr"] === "number";

/**
 * The parts of a run's time from its rows (each row's `time` is seconds on the trainer's clock,
 * the gap before it the work of its step): an RL step is the median gap before rows without an
 * evaluation (two at least); an evaluation is what a row with one took beyond a step (the final
 * one is all evaluation); the start is the first row's time beyond its step and evaluation, plus
 * `loadS` (fetching and loading before the trainer's clock started).
 */
export function measureStepTimes(rows: readonly MetricsRow[], config: RunConfig, loadS?: number): StepTimes {
  const out: StepTimes = {};
  const rlRows = rows.filter((r) => r.phase === "rl" && timed(r));
  const rollouts = config.rl.prompts_per_step * config.rl.group_size;
  const plain: number[] = [];
  for (let i = 1; i < rlRows.length; i++) {
    const gap = rlRows[i].time - rlRows[i - 1].time;
    if (gap > 0 && isStep(rlRows[i]) && !hasEval(rlRows[i])) plain.push(gap);
  }
  const step = plain.length >= 2 ? (median(plain) as number) : undefined;
  if (step !== undefined) out.rlPerRollout = step / rollouts;
  const sftRows = rows.filter((r) => r.phase === "sft" && timed(r));
  const sft: number[] = [];
  for (let i = 1; i < sftRows.length; i++) {
    const gap = sftRows[i].time - sftRows[i - 1].time;
    if (gap > 0) sft.push(gap);
  }
  if (sft.length >= 2) out.sftPerExample = (median(sft) as number) / config.sft.batch;
  const size = config.task.eval_size;
  if (step !== undefined && size > 0) {
    const evals: number[] = [];
    for (let i = 1; i < rlRows.length; i++) {
      if (!hasEval(rlRows[i])) continue;
      const gap = rlRows[i].time - rlRows[i - 1].time;
      const e = isStep(rlRows[i]) ? gap - step : gap;
      if (e > 0) evals.push(e / size);
    }
    if (evals.length) out.evalPerProblem = median(evals);
  }
  // The start: what the first timed row (and, for a run with SFT, the first SFT row) took beyond its work.
  const first = rows.find(timed);
  if (first && step !== undefined && (first.phase === "rl" || out.sftPerExample !== undefined)) {
    const work =
      first.phase === "rl"
        ? step + (hasEval(first) ? (out.evalPerProblem ?? 0) * size : 0)
        : (out.sftPerExample ?? 0) * config.sft.batch;
    out.startS = Math.max(0, first.time - work) + (loadS ?? 0);
  }
  return out;
}

export function fmtDuration(s: number): string {
  if (s < 90) return `${Math.max(1, Math.round(s))} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** Held-out evaluations a run makes: at step 0, every eval_every steps, and of the final policy. */
export function evaluationsOf(config: RunConfig): number {
  if (config.task.eval_size <= 0) return 0;
  const n = config.stop.max_steps;
  const every = config.task.eval_every;
  const during = n <= 0 ? 0 : every > 0 ? Math.floor((n - 1) / every) + 1 : 1;
  return during + 1;
}

/**
 * Seconds a run of `config` takes on the measured adapter, counting everything it does: the
 * start (files, weights, compiles), SFT, the RL steps and every held-out evaluation; undefined
 * while a part it needs is not measured yet.
 */
export function estimateSeconds(config: RunConfig, times: StepTimes): number | undefined {
  const sftSteps = config.sft.init_checkpoint ? 0 : config.sft.steps;
  const rollouts = config.rl.prompts_per_step * config.rl.group_size;
  const evals = evaluationsOf(config);
  const need = [
    config.stop.max_steps > 0 ? times.rlPerRollout : 0,
    sftSteps > 0 ? times.sftPerExample : 0,
    evals > 0 ? times.evalPerProblem : 0,
  ];
  if (need.some((x) => x === undefined)) return undefined;
  const perSeed =
    config.stop.max_steps * rollouts * (times.rlPerRollout ?? 0) +
    sftSteps * config.sft.batch * (times.sftPerExample ?? 0) +
    evals * config.task.eval_size * (times.evalPerProblem ?? 0) +
    (times.startS ?? 0);
  return perSeed * (config.seeds ?? 1);
}

/** What the time by Start counts (the line's title). */
export const PLAN_TITLE =
  "The time counts the whole run as measured on this adapter: loading the files and weights, compiling, every held-out evaluation and the steps.";

/** The line by Start: what the run does and, where measured, about how long it takes. */
export function planText(config: RunConfig, times: StepTimes): string {
  const sftSteps = config.sft.init_checkpoint ? 0 : config.sft.steps;
  const rollouts = config.rl.prompts_per_step * config.rl.group_size;
  const seeds = config.seeds ?? 1;
  const parts: string[] = [];
  if (config.sft.init_checkpoint) parts.push(`loads ${config.sft.init_checkpoint.split("/").pop()}`);
  else if (sftSteps > 0) parts.push(`${sftSteps} SFT steps`);
  parts.push(
    `${config.stop.max_steps} ${config.rl.advantage.toUpperCase()} steps of ${config.rl.prompts_per_step} prompts × ${config.rl.group_size} samples`,
  );
  if (config.task.eval_size > 0)
    parts.push(
      config.task.eval_every > 0
        ? `evaluates ${config.task.eval_size} held-out problems every ${config.task.eval_every} steps (watch val/acc)`
        : `evaluates ${config.task.eval_size} held-out problems at step 0 (val/acc)`,
    );
  let what = `Start ${parts.join(", then ")}`;
  if (seeds > 1) what += `, for ${seeds} seeds (${config.seed}–${config.seed + seeds - 1}) one after another`;
  const total = estimateSeconds(config, times);
  if (total === undefined)
    return `${what}. Time on this adapter: measured after the first steps${
      evaluationsOf(config) > 0 && times.rlPerRollout !== undefined ? " and evaluation" : ""
    }.`;
  // As long as the line before it was measured, so the top bar keeps its height when a run
  // ends; what the time counts is the line's title (PLAN_TITLE).
  return `${what}. Time on this adapter: about ${fmtDuration(total)} (${fmtNum3(
    (times.rlPerRollout ?? 0) * rollouts,
  )} s per RL step).`;
}

function fmtNum3(v: number): string {
  return String(Number(v.toPrecision(3)));
}

const KEY = "lab:step-times:";

export function loadStepTimes(adapter: string): StepTimes {
  try {
    const v = JSON.parse(localStorage.getItem(KEY + adapter) ?? "{}");
    return typeof v === "object" && v ? (v as StepTimes) : {};
  } catch {
    return {};
  }
}

export function saveStepTimes(adapter: string, times: StepTimes): void {
  try {
    localStorage.setItem(KEY + adapter, JSON.stringify(times));
  } catch {}
}
