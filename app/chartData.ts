// What the chart grid draws, as pure data (tested by app/chartData.test.ts): the chart
// definitions in three labelled rows (UX.md §1), the per-run series of a metric joined on
// one x axis with null gaps, smoothed at full resolution and then min/max downsampled,
// and the markers (edits, skipped updates) each chart shows as labelled vertical lines.
import type { MetricsRow } from "../workers/api";
import { debiasedEma, mergeDuplicateSteps, minMaxIndices, type Y } from "./smoothing";

export type ChartRow = "objective" | "health" | "behaviour";

export interface ChartDef {
  id: string;
  title: string;
  row: ChartRow;
  /** Which rows feed it: RL steps, or the SFT cold start. */
  phase: "rl" | "sft";
  /** `optional` keys are named in the legend only once some run has them (e.g. custom-js errors). */
  keys: { key: string; label: string; optional?: boolean }[];
  /** Rates and fractions: soft minimum at 0. */
  rate?: boolean;
  /** Offer the 5th-95th percentile y range (gradient norm, KL). */
  outliers?: boolean;
  /** Draw the untrained policy's value (this key's first point) as a dashed line. */
  baseline?: string;
}

export const CHART_ROWS: { row: ChartRow; title: string }[] = [
  { row: "objective", title: "Objective" },
  { row: "health", title: "Policy health" },
  { row: "behaviour", title: "Behaviour" },
];

export const CHARTS: ChartDef[] = [
  {
    id: "reward",
    title: "Reward",
    row: "objective",
    phase: "rl",
    baseline: "reward/mean",
    keys: [
      { key: "reward/mean", label: "mean" },
      { key: "reward/std", label: "std" },
      // Share of trajectories the custom JS reward threw on (only when one is set).
      { key: "reward/custom_error_rate", label: "custom-js errors", optional: true },
    ],
  },
  {
    id: "accuracy",
    title: "Accuracy",
    row: "objective",
    phase: "rl",
    rate: true,
    baseline: "val/acc",
    keys: [
      { key: "acc/mean", label: "train" },
      { key: "val/acc", label: "val greedy" },
      { key: "val/acc_sampled", label: "val sampled" },
      { key: "dev/acc", label: "dev greedy" },
    ],
  },
  {
    id: "sft-loss",
    title: "SFT loss",
    row: "objective",
    phase: "sft",
    keys: [{ key: "loss", label: "loss" }],
  },
  {
    id: "entropy",
    title: "Entropy",
    row: "health",
    phase: "rl",
    rate: true,
    keys: [
      { key: "actor/entropy", label: "all" },
      { key: "actor/entropy_post_tool", label: "post-tool" },
    ],
  },
  {
    id: "kl",
    title: "KL to reference",
    row: "health",
    phase: "rl",
    outliers: true,
    keys: [{ key: "actor/kl_ref", label: "kl_ref" }],
  },
  {
    id: "clipfrac",
    title: "Clip fraction",
    row: "health",
    phase: "rl",
    rate: true,
    keys: [
      { key: "actor/pg_clipfrac", label: "clipfrac" },
      { key: "rollout/is_truncated_frac", label: "IS truncated" },
      { key: "rollout/rs_masked_frac", label: "RS masked" },
    ],
  },
  {
    // Sampler vs trainer (rl/mismatch.ts): exp(old − sampler log-prob) over sampled tokens;
    // 1 when the decode path and the training forward agree.
    id: "is-ratio",
    title: "Importance ratio (trainer / sampler)",
    row: "health",
    phase: "rl",
    keys: [
      { key: "rollout/is_ratio_mean", label: "mean" },
      { key: "rollout/is_ratio_min", label: "min" },
      { key: "rollout/is_ratio_max", label: "max" },
    ],
  },
  {
    id: "mismatch",
    title: "Log-prob mismatch |trainer − sampler|",
    row: "health",
    phase: "rl",
    outliers: true,
    keys: [
      { key: "rollout/logprob_diff_mean", label: "mean" },
      { key: "rollout/logprob_diff_max", label: "max" },
    ],
  },
  {
    id: "grad-norm",
    title: "Gradient norm",
    row: "health",
    phase: "rl",
    outliers: true,
    keys: [{ key: "actor/grad_norm", label: "grad_norm" }],
  },
  {
    id: "length",
    title: "Response length",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "response_length/mean", label: "mean" }],
  },
  {
    id: "tool-calls",
    title: "Tool calls",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [
      { key: "tool/call_rate", label: "call rate" },
      { key: "tool/calls_mean", label: "calls/traj" },
    ],
  },
  {
    id: "tool-success",
    title: "Tool success",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "tool/success_rate", label: "success" }],
  },
  {
    id: "kept",
    title: "Filter kept",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "filter/kept_frac", label: "kept" }],
  },
  {
    id: "throughput",
    title: "Tokens / s",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "perf/tokens_per_s", label: "tokens/s" }],
  },
];

/** A chart marker: where an edit took effect, or an update was skipped. */
export interface Marker {
  runId: string;
  step: number;
  phase: string;
  kind: "edit" | "skipped";
  label: string;
  detail: string;
}

/** One run as the charts see it. */
export interface RunSeriesInput {
  id: string;
  color: string;
  current: boolean;
  rows: readonly MetricsRow[];
}

export interface ChartSeries {
  runId: string;
  key: string;
  label: string;
  color: string;
  current: boolean;
  raw: Y[];
  smooth: Y[];
  /** Points of this run and key before downsampling. */
  points: number;
}

export interface ChartData {
  x: number[];
  series: ChartSeries[];
}

function metricValue(row: MetricsRow, key: string): number | null {
  const v = row[key];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/**
 * The joined data of one chart: x is the union of steps of every run that has a value,
 * each (run, key) series smoothed at full resolution on its own points and then placed
 * on the shared x with null gaps; finally min/max downsampled to `buckets` columns.
 */
export function buildChartData(
  def: ChartDef,
  runs: readonly RunSeriesInput[],
  opts: { smoothing: number; buckets: number },
): ChartData {
  const perSeries: { base: Omit<ChartSeries, "raw" | "smooth">; xs: number[]; raw: Y[]; smooth: Y[] }[] = [];
  const allX = new Set<number>();
  for (const run of runs) {
    for (const { key, label } of def.keys) {
      const xs: number[] = [];
      const ys: Y[] = [];
      for (const row of run.rows) {
        if (row.phase !== def.phase) continue;
        const v = metricValue(row, key);
        if (v === null) continue;
        xs.push(row.step);
        ys.push(v);
      }
      if (xs.length === 0) continue;
      const merged = mergeDuplicateSteps(xs, ys);
      for (const x of merged.xs) allX.add(x);
      perSeries.push({
        base: { runId: run.id, key, label, color: run.color, current: run.current, points: merged.xs.length },
        xs: merged.xs,
        raw: merged.ys,
        smooth: debiasedEma(merged.ys, opts.smoothing),
      });
    }
  }
  const x = [...allX].sort((a, b) => a - b);
  const pos = new Map(x.map((v, i) => [v, i]));
  const joined = perSeries.map((s) => {
    const raw: Y[] = new Array(x.length).fill(null);
    const smooth: Y[] = new Array(x.length).fill(null);
    s.xs.forEach((xv, i) => {
      const at = pos.get(xv) as number;
      raw[at] = s.raw[i];
      smooth[at] = s.smooth[i];
    });
    return { ...s.base, raw, smooth };
  });
  const idx = minMaxIndices(
    x,
    joined.map((s) => s.raw),
    opts.buckets,
  );
  if (idx.length === x.length) return { x, series: joined };
  return {
    x: idx.map((i) => x[i]),
    series: joined.map((s) => ({ ...s, raw: idx.map((i) => s.raw[i]), smooth: idx.map((i) => s.smooth[i]) })),
  };
}

/** The markers a chart draws: those of visible runs in the chart's phase. */
export function chartMarkers(
  def: ChartDef,
  markers: readonly Marker[],
  runIds: ReadonlySet<string>,
): Marker[] {
  return markers.filter((m) => runIds.has(m.runId) && (m.phase === def.phase || m.phase === ""));
}

/** Short number text for labels: 0.0003 -> "3e-4", 0.25 -> "0.25". */
export function fmtNum(v: unknown): string {
  if (typeof v !== "number")
    return typeof v === "string" ? (v.length > 16 ? `${v.slice(0, 14)}…` : v) : JSON.stringify(v);
  if (!Number.isFinite(v)) return String(v);
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)) {
    const [m, e] = v.toExponential(2).split("e");
    return `${String(Number(m))}e${Number(e)}`;
  }
  return String(Number(v.toPrecision(4)));
}

/** The label of an edit marker: `kl_coef 0.05→0.1` (the path's last two segments). */
export function editLabel(path: string, from: unknown, to: unknown): string {
  const parts = path.split(".").filter((p) => p !== "rl" && p !== "rewards");
  const name = parts.slice(-2).join("_");
  return `${name} ${fmtNum(from)}→${fmtNum(to)}`;
}

/** The untrained policy's value: the current run's first point of the chart's baseline key. */
export function baselineValue(def: ChartDef, data: ChartData): number | null {
  if (!def.baseline) return null;
  const s = data.series.find((x) => x.current && x.key === def.baseline);
  return s?.raw.find((v): v is number => v !== null) ?? null;
}
