// What the chart grid draws, as pure data (tested by app/chartData.test.ts): the chart
// definitions in three labelled rows (UX.md §1) plus charts added from any key of the rows,
// the per-run series of a metric joined on one x axis (step or wall time) with null gaps,
// smoothed at full resolution and then min/max downsampled; a multi-seed group as its mean
// with a band (sd or min-max, config/aggregate.ts) and its seeds faint; the legend; the
// markers (edits, skipped updates) clustered so that they never overprint; why a chart is
// empty; a chart's data as CSV.
import type { RunConfig } from "../config";
import { aggregateAvailable } from "../config/aggregate";
import type { MetricsRow } from "../workers/api";
import { debiasedEma, mergeDuplicateSteps, minMaxIndices, type Y } from "./smoothing";

export type ChartRow = "pinned" | "objective" | "health" | "behaviour" | "added";
export type XAxis = "step" | "time";
export type BandMode = "sd" | "minmax";

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
  /** The y axis's unit ("nats", "tokens", "fraction"). */
  unit?: string;
  /** Added from the picker (not one of CHARTS). */
  custom?: boolean;
}

export const CHART_ROWS: { row: ChartRow; title: string }[] = [
  { row: "pinned", title: "Pinned" },
  { row: "objective", title: "Objective" },
  { row: "health", title: "Policy health" },
  { row: "behaviour", title: "Behaviour" },
  { row: "added", title: "Added" },
];

export const CHARTS: ChartDef[] = [
  {
    id: "reward",
    unit: "reward",
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
    unit: "fraction",
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
    unit: "nats/token",
    title: "SFT loss",
    row: "objective",
    phase: "sft",
    keys: [{ key: "loss", label: "loss" }],
  },
  {
    id: "entropy",
    unit: "nats/token",
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
    unit: "nats/token",
    title: "KL to reference",
    row: "health",
    phase: "rl",
    outliers: true,
    keys: [{ key: "actor/kl_ref", label: "kl_ref" }],
  },
  {
    id: "clipfrac",
    unit: "fraction",
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
    // Sampler vs trainer (rl/update/sampler-mismatch.ts): exp(old − sampler log-prob) over sampled tokens;
    // 1 when the decode path and the training forward agree.
    id: "is-ratio",
    unit: "ratio",
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
    unit: "nats",
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
    unit: "L2 norm",
    title: "Gradient norm",
    row: "health",
    phase: "rl",
    outliers: true,
    keys: [{ key: "actor/grad_norm", label: "grad_norm" }],
  },
  {
    id: "length",
    unit: "tokens",
    title: "Response length",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "response_length/mean", label: "mean" }],
  },
  {
    id: "tool-calls",
    unit: "per trajectory",
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
    unit: "fraction",
    title: "Tool success",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "tool/success_rate", label: "success" }],
  },
  {
    id: "kept",
    unit: "fraction",
    title: "Filter kept",
    row: "behaviour",
    phase: "rl",
    rate: true,
    keys: [{ key: "filter/kept_frac", label: "kept" }],
  },
  {
    id: "throughput",
    unit: "tokens/s",
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

/** One run as the charts see it; `group` when it is one seed of a multi-seed run. */
export interface RunSeriesInput {
  id: string;
  /** The run's name ("#3 ci-tiny"); the id when absent. */
  name?: string;
  color: string;
  current: boolean;
  rows: readonly MetricsRow[];
  group?: { id: string; name: string; seed: number };
}

export interface ChartSeries {
  /** The run, or `group:<id>` for a group's mean. */
  runId: string;
  runName: string;
  key: string;
  label: string;
  color: string;
  current: boolean;
  /** A run's own line, one faint seed of a group, or a group's mean (with `band`). */
  role: "run" | "seed" | "mean";
  /** The group of a seed or a mean. */
  groupId?: string;
  /** The dash of this key (its index in the chart's keys): the legend draws the same. */
  dash?: number[];
  raw: Y[];
  smooth: Y[];
  /** A group's spread around the mean: mean ± sd or min..max, smoothed like the mean. */
  band?: { lo: Y[]; hi: Y[] };
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

/** Key i of a chart: solid, dashed, dotted, dash-dot. */
export const KEY_DASHES: (number[] | undefined)[] = [undefined, [6, 4], [2, 3], [8, 3, 2, 3]];

export function keyDash(def: ChartDef, key: string): number[] | undefined {
  const i = def.keys.findIndex((k) => k.key === key);
  return KEY_DASHES[Math.max(0, i) % KEY_DASHES.length];
}

/** Seconds since the run's first row (rows carry `time`, seconds since the trainer started). */
function wallTimes(rows: readonly MetricsRow[]): Map<string, number> {
  const out = new Map<string, number>();
  let t0: number | null = null;
  for (const r of rows) {
    if (typeof r.time !== "number" || !Number.isFinite(r.time)) continue;
    if (t0 === null) t0 = r.time;
    out.set(`${r.phase}:${r.step}`, r.time - t0);
  }
  return out;
}

/** The x of a (phase, step) of a run: the step, or its wall time in seconds. */
export function xOf(rows: readonly MetricsRow[], phase: string, step: number, axis: XAxis): number | null {
  if (axis === "step") return step;
  return wallTimes(rows).get(`${phase}:${step}`) ?? null;
}

interface RawSeries {
  base: Omit<ChartSeries, "raw" | "smooth" | "band">;
  xs: number[];
  raw: Y[];
  smooth: Y[];
  band?: { lo: Y[]; hi: Y[] };
}

function runSeries(
  def: ChartDef,
  run: RunSeriesInput,
  key: string,
  label: string,
  axis: XAxis,
): RawSeries | null {
  const times = axis === "time" ? wallTimes(run.rows) : null;
  const xs: number[] = [];
  const ys: Y[] = [];
  for (const row of run.rows) {
    if (row.phase !== def.phase) continue;
    const v = metricValue(row, key);
    if (v === null) continue;
    const x = times ? times.get(`${row.phase}:${row.step}`) : row.step;
    if (x === undefined) continue;
    xs.push(x);
    ys.push(v);
  }
  if (xs.length === 0) return null;
  const merged = mergeDuplicateSteps(xs, ys);
  return {
    base: {
      runId: run.id,
      runName: run.name ?? run.id,
      groupId: run.group?.id,
      key,
      label,
      color: run.color,
      current: run.current,
      role: run.group ? "seed" : "run",
      dash: keyDash(def, key),
      points: merged.xs.length,
    },
    xs: merged.xs,
    raw: merged.ys,
    smooth: [],
  };
}

/** A group's mean and band for one key, over the seeds that reached each step. */
function groupSeries(
  def: ChartDef,
  members: RunSeriesInput[],
  key: string,
  label: string,
  opts: { axis: XAxis; band: BandMode },
): RawSeries | null {
  const g = members[0].group as NonNullable<RunSeriesInput["group"]>;
  const steps = aggregateAvailable(
    members.map((m) => ({
      seed: m.group?.seed ?? 0,
      rows: m.rows.filter((r) => r.phase === def.phase).map((r) => ({ ...r, phase: "rl" })),
    })),
    key,
  );
  if (steps.length === 0) return null;
  const times = opts.axis === "time" ? members.map((m) => wallTimes(m.rows)) : null;
  const xs: number[] = [];
  const mean: Y[] = [];
  const lo: Y[] = [];
  const hi: Y[] = [];
  for (const { step, stat } of steps) {
    let x = step;
    if (times) {
      // The group's wall time at a step: the mean over the seeds that reached it.
      const ts = times.map((t) => t.get(`${def.phase}:${step}`)).filter((t): t is number => t !== undefined);
      if (ts.length === 0) continue;
      x = ts.reduce((a, b) => a + b, 0) / ts.length;
    }
    xs.push(x);
    mean.push(stat.mean);
    lo.push(opts.band === "sd" ? stat.mean - stat.sd : stat.min);
    hi.push(opts.band === "sd" ? stat.mean + stat.sd : stat.max);
  }
  const merged = mergeDuplicateSteps(xs, mean);
  if (merged.xs.length !== xs.length) return null;
  const current = members.some((m) => m.current);
  return {
    base: {
      runId: `group:${g.id}`,
      runName: g.name,
      groupId: g.id,
      key,
      label,
      color: members[0].color,
      current,
      role: "mean",
      dash: keyDash(def, key),
      points: xs.length,
    },
    xs,
    raw: mean,
    smooth: [],
    band: { lo, hi },
  };
}

/**
 * The joined data of one chart: x is the union of steps (or wall-time seconds) of every run
 * that has a value, each series smoothed at full resolution on its own points and then placed
 * on the shared x with null gaps; finally min/max downsampled to `buckets` columns. Runs of one
 * group (two or more seeds shown) become the group's mean with a band, and their seeds faint.
 */
export function buildChartData(
  def: ChartDef,
  runs: readonly RunSeriesInput[],
  opts: { smoothing: number; buckets: number; xAxis?: XAxis; band?: BandMode },
): ChartData {
  const axis = opts.xAxis ?? "step";
  const band = opts.band ?? "sd";
  const groups = new Map<string, RunSeriesInput[]>();
  for (const r of runs) if (r.group) groups.set(r.group.id, [...(groups.get(r.group.id) ?? []), r]);
  const perSeries: RawSeries[] = [];
  const done = new Set<string>();
  for (const run of runs) {
    const members = run.group ? (groups.get(run.group.id) ?? []) : [];
    const asGroup = members.length > 1;
    if (asGroup && !done.has(run.group?.id ?? "")) {
      done.add(run.group?.id ?? "");
      for (const { key, label } of def.keys) {
        const g = groupSeries(def, members, key, label, { axis, band });
        if (g) perSeries.push(g);
      }
    }
    for (const { key, label } of def.keys) {
      const s = runSeries(def, asGroup ? run : { ...run, group: undefined }, key, label, axis);
      if (s) perSeries.push(s);
    }
  }
  const allX = new Set<number>();
  for (const s of perSeries) {
    s.smooth = debiasedEma(s.raw, opts.smoothing);
    if (s.band)
      s.band = { lo: debiasedEma(s.band.lo, opts.smoothing), hi: debiasedEma(s.band.hi, opts.smoothing) };
    for (const x of s.xs) allX.add(x);
  }
  const x = [...allX].sort((a, b) => a - b);
  const pos = new Map(x.map((v, i) => [v, i]));
  const place = (xs: number[], ys: Y[]) => {
    const out: Y[] = new Array(x.length).fill(null);
    xs.forEach((xv, i) => {
      out[pos.get(xv) as number] = ys[i];
    });
    return out;
  };
  const joined: ChartSeries[] = perSeries.map((s) => ({
    ...s.base,
    raw: place(s.xs, s.raw),
    smooth: place(s.xs, s.smooth),
    ...(s.band ? { band: { lo: place(s.xs, s.band.lo), hi: place(s.xs, s.band.hi) } } : {}),
  }));
  const idx = minMaxIndices(
    x,
    joined.map((s) => s.raw),
    opts.buckets,
  );
  if (idx.length === x.length) return { x, series: joined };
  const pick = (ys: Y[]) => idx.map((i) => ys[i]);
  return {
    x: idx.map((i) => x[i]),
    series: joined.map((s) => ({
      ...s,
      raw: pick(s.raw),
      smooth: pick(s.smooth),
      ...(s.band ? { band: { lo: pick(s.band.lo), hi: pick(s.band.hi) } } : {}),
    })),
  };
}

/** What the legend names: each run (or group) in its colour, each key in its dash. */
export interface Legend {
  runs: { id: string; name: string; color: string; current: boolean; seeds?: number }[];
  keys: { key: string; label: string; dash?: number[] }[];
}

export function chartLegend(def: ChartDef, data: ChartData): Legend {
  const runs: Legend["runs"] = [];
  const seen = new Set<string>();
  const seedsOf = new Map<string, Set<string>>();
  for (const s of data.series) {
    if (s.role === "seed" && s.groupId) {
      if (!seedsOf.has(s.groupId)) seedsOf.set(s.groupId, new Set());
      seedsOf.get(s.groupId)?.add(s.runId);
      continue;
    }
    if (seen.has(s.runId)) continue;
    seen.add(s.runId);
    runs.push({ id: s.runId, name: s.runName, color: s.color, current: s.current });
  }
  for (const r of runs) {
    const seeds = r.id.startsWith("group:") ? seedsOf.get(r.id.slice(6))?.size : undefined;
    if (seeds) r.seeds = seeds;
  }
  const present = new Set(data.series.map((s) => s.key));
  const keys = def.keys
    .filter((k) => !k.optional || present.has(k.key))
    .map((k) => ({ key: k.key, label: k.label, dash: keyDash(def, k.key) }));
  return { runs, keys };
}

/** The markers a chart draws: those of visible runs in the chart's phase. */
export function chartMarkers(
  def: ChartDef,
  markers: readonly Marker[],
  runIds: ReadonlySet<string>,
): Marker[] {
  return markers.filter((m) => runIds.has(m.runId) && (m.phase === def.phase || m.phase === ""));
}

/** Markers that would overprint (closer than `minGap` px) drawn as one: "3 edits". */
export interface MarkerCluster {
  left: number;
  markers: Marker[];
  label: string;
  detail: string;
}

export function clusterMarkers(
  placed: readonly { left: number; marker: Marker }[],
  width: number,
  minGap = 48,
): MarkerCluster[] {
  const inside = placed.filter((p) => Number.isFinite(p.left) && p.left >= 0 && p.left <= width);
  const sorted = [...inside].sort((a, b) => a.left - b.left);
  const out: { left: number; items: { left: number; marker: Marker }[] }[] = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last && p.left - last.items[0].left < minGap) last.items.push(p);
    else out.push({ left: p.left, items: [p] });
  }
  return out.map(({ items }) => {
    const markers = items.map((i) => i.marker);
    const left = Math.min(width, Math.max(0, items.reduce((a, i) => a + i.left, 0) / items.length));
    const edits = markers.filter((m) => m.kind === "edit").length;
    const skipped = markers.length - edits;
    const label =
      markers.length === 1
        ? markers[0].label
        : [edits ? `${edits} edit${edits > 1 ? "s" : ""}` : "", skipped ? `${skipped} skipped` : ""]
            .filter(Boolean)
            .join(", ");
    return {
      left,
      markers,
      label,
      detail: markers.map((m) => `step ${m.step}: ${m.label}${m.detail ? ` (${m.detail})` : ""}`).join("\n"),
    };
  });
}

/** Why a chart has nothing to draw, in the words of the config that makes it so. */
export function emptyReason(def: ChartDef, config: RunConfig | undefined, anyRun: boolean): string {
  if (!anyRun || !config) return "No run yet: press Start, or open a stored run.";
  const keys = def.keys.map((k) => k.key);
  if (keys.includes("actor/kl_ref") && config.rl.kl.coef === 0) return "KL is off: rl.kl.coef = 0";
  if (keys.includes("filter/kept_frac") && config.filters.list.length === 0)
    return "No filter: filters.list is empty";
  if (def.phase === "sft" && config.sft.steps === 0) return "No SFT: sft.steps = 0";
  if (keys.every((k) => /^(val|dev)\//.test(k)) && config.task.eval_size === 0)
    return "No evaluation: task.eval_size = 0";
  if (keys.every((k) => k.startsWith("dev/")) && config.task.dev_size === 0)
    return "No dev set: task.dev_size = 0";
  return "No points yet for this run.";
}

/** Every numeric key the rows carry, with the phase it appears in (RL first). */
export function metricKeys(
  rowsOfRuns: readonly (readonly MetricsRow[])[],
): { key: string; phase: "rl" | "sft" }[] {
  const phases = new Map<string, Set<string>>();
  for (const rows of rowsOfRuns)
    for (const r of rows)
      for (const [k, v] of Object.entries(r)) {
        if (k === "step" || k === "time" || k === "phase" || typeof v !== "number") continue;
        if (!phases.has(k)) phases.set(k, new Set());
        phases.get(k)?.add(r.phase);
      }
  return [...phases]
    .filter(([, ps]) => ps.has("rl") || ps.has("sft"))
    .map(([key, ps]) => ({ key, phase: (ps.has("rl") ? "rl" : "sft") as "rl" | "sft" }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

/** A chart for any key of the rows (from the picker). */
export function customChart(key: string, phase: "rl" | "sft"): ChartDef {
  const rate = /rate|frac|acc|success|ratio/.test(key);
  return {
    id: `key:${phase}:${key}`,
    title: key,
    row: "added",
    phase,
    custom: true,
    rate,
    unit: rate ? "fraction" : /length|tokens$/.test(key) ? "tokens" : /_s$/.test(key) ? "s" : undefined,
    keys: [{ key, label: key }],
  };
}

function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? "" : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** A chart's data as CSV, one line per (run, step, key) at full resolution, unsmoothed. */
export function chartCsv(def: ChartDef, runs: readonly RunSeriesInput[]): string {
  const lines = ["run,seed,key,phase,step,wall_s,value"];
  for (const run of runs) {
    const times = wallTimes(run.rows);
    for (const row of run.rows) {
      if (row.phase !== def.phase) continue;
      for (const { key } of def.keys) {
        const v = metricValue(row, key);
        if (v === null) continue;
        const t = times.get(`${row.phase}:${row.step}`);
        lines.push(
          [
            run.name,
            run.group?.seed ?? "",
            key,
            row.phase,
            row.step,
            t === undefined ? "" : Number(t.toFixed(3)),
            v,
          ]
            .map(csvCell)
            .join(","),
        );
      }
    }
  }
  return `${lines.join("\n")}\n`;
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

/**
 * A y axis's tick labels: fmtNum's 4 significant digits, or, where that makes two ticks read
 * the same (an importance ratio's 0.9999, 1, 1.0001 all "1"), fixed decimals enough to tell
 * every tick apart.
 */
export function tickLabels(splits: readonly number[]): string[] {
  const plain = splits.map((v) => fmtNum(v));
  if (new Set(plain).size === plain.length || splits.some((v) => !Number.isFinite(v))) return plain;
  let step = Number.POSITIVE_INFINITY;
  for (let i = 1; i < splits.length; i++) {
    const d = Math.abs(splits[i] - splits[i - 1]);
    if (d > 0) step = Math.min(step, d);
  }
  if (!Number.isFinite(step)) return plain;
  for (let dp = Math.max(0, Math.ceil(-Math.log10(step) - 1e-6)); dp <= 12; dp++) {
    const fixed = splits.map((v) => v.toFixed(dp));
    if (new Set(fixed).size === fixed.length) return fixed;
  }
  return plain;
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
  const s = data.series.find((x) => x.current && x.key === def.baseline && x.role !== "seed");
  return s?.raw.find((v): v is number => v !== null) ?? null;
}
