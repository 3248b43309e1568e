// "What will happen, and about how long": the one line by Start. The plan comes from the
// config (SFT steps, RL steps, rollouts per step, the held-out metric to watch, seeds); the
// time from step times measured
// on this adapter (the median gap between consecutive rows of a run, per rollout for RL and
// per example for SFT), remembered per adapter in localStorage. Tested by app/estimate.test.ts.
import type { RunConfig } from "../config";
import type { MetricsRow } from "../workers/api";

export interface StepTimes {
  /** Seconds per rollout of an RL step (rollout, reward and update together). */
  rlPerRollout?: number;
  /** Seconds per SFT example. */
  sftPerExample?: number;
}

function median(xs: number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function gaps(rows: readonly MetricsRow[], phase: string): number[] {
  const ts = rows
    .filter((r) => r.phase === phase && typeof r.time === "number" && Number.isFinite(r.time))
    .map((r) => r.time);
  const out: number[] = [];
  for (let i = 1; i < ts.length; i++) if (ts[i] > ts[i - 1]) out.push(ts[i] - ts[i - 1]);
  return out;
}

/** Step times of one run from its rows: needs at least two gaps of a phase to say anything. */
export function measureStepTimes(rows: readonly MetricsRow[], config: RunConfig): StepTimes {
  const out: StepTimes = {};
  const rl = gaps(rows, "rl");
  const rollouts = config.rl.prompts_per_step * config.rl.group_size;
  if (rl.length >= 2) out.rlPerRollout = (median(rl) as number) / rollouts;
  const sft = gaps(rows, "sft");
  if (sft.length >= 2) out.sftPerExample = (median(sft) as number) / config.sft.batch;
  return out;
}

export function fmtDuration(s: number): string {
  if (s < 90) return `${Math.max(1, Math.round(s))} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

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
  const need = [config.stop.max_steps > 0 ? times.rlPerRollout : 0, sftSteps > 0 ? times.sftPerExample : 0];
  if (need.some((x) => x === undefined))
    return `${what}. Time on this adapter: measured after the first steps.`;
  const perSeed =
    config.stop.max_steps * rollouts * (times.rlPerRollout ?? 0) +
    sftSteps * config.sft.batch * (times.sftPerExample ?? 0);
  return `${what}: about ${fmtDuration(perSeed * seeds)} on this adapter (measured ${fmtNum3(
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
