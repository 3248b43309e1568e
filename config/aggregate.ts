// Multi-seed aggregation of headless runs (what `npm run compare` prints): an arm is one or
// more runs of one recipe with different seeds; for each metric and RL step it gives the mean
// and sd (or min-max) over seeds, the paired difference between two arms over the seeds they
// share, and the binomial standard error of an accuracy measured on n held-out problems.
// Pure functions over metrics rows; tested by config/aggregate.test.ts. In config/ so that the page (app/) and the CLI share it.

export interface Row {
  step: number;
  phase: string;
  [key: string]: unknown;
}

export interface SeedRun {
  seed: number;
  rows: Row[];
  /** Held-out problems per evaluation (config task.eval_size), for the binomial SE of val/acc. */
  evalSize?: number;
  /** Dev problems per evaluation (config task.dev_size), for the SE of dev/acc. */
  devSize?: number;
}

export interface Stat {
  n: number;
  mean: number;
  /** Sample standard deviation (n - 1); 0 for a single value. */
  sd: number;
  min: number;
  max: number;
}

export function stat(xs: number[]): Stat {
  const n = xs.length;
  if (n === 0) return { n, mean: Number.NaN, sd: Number.NaN, min: Number.NaN, max: Number.NaN };
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const sd = n > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
  return { n, mean, sd, min: Math.min(...xs), max: Math.max(...xs) };
}

/** The binomial standard error of an accuracy p measured on n independent problems. */
export function binomialSE(p: number, n: number): number {
  return n > 0 ? Math.sqrt((p * (1 - p)) / n) : Number.NaN;
}

/** The RL row of each step that carries `key` (the last one when a step has several). */
export function valuesByStep(rows: Row[], key: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of rows) {
    const v = r[key];
    if (r.phase === "rl" && typeof v === "number" && Number.isFinite(v)) out.set(r.step, v);
  }
  return out;
}

/** The steps at which every seed of the arm has the metric. */
function commonSteps(runs: SeedRun[], key: string): number[] {
  const maps = runs.map((r) => valuesByStep(r.rows, key));
  if (maps.length === 0) return [];
  return [...maps[0].keys()].filter((s) => maps.every((m) => m.has(s))).sort((a, b) => a - b);
}

export interface ArmStep {
  step: number;
  stat: Stat;
  /** Binomial SE at the arm's mean accuracy (accuracy metrics with a known eval size). */
  se?: number;
}

/** Per step: the metric over the arm's seeds. */
export function aggregateArm(runs: SeedRun[], key: string): ArmStep[] {
  const maps = runs.map((r) => valuesByStep(r.rows, key));
  // Whole-set accuracies only: a bucket's (val/acc/hard) size is not recorded in the rows.
  const m = /^(val|dev)\/acc(_sampled)?$/.exec(key);
  const size = m ? (m[1] === "val" ? runs[0]?.evalSize : runs[0]?.devSize) : undefined;
  return commonSteps(runs, key).map((step) => {
    const s = stat(maps.map((m) => m.get(step) as number));
    return { step, stat: s, ...(size ? { se: binomialSE(s.mean, size) } : {}) };
  });
}

/**
 * Per step: the metric over the seeds that have reached it (a group still running has fewer
 * seeds at its later steps; `stat.n` says how many). The page draws this as a group's mean
 * and band while seeds run one after another.
 */
export function aggregateAvailable(runs: SeedRun[], key: string): ArmStep[] {
  const maps = runs.map((r) => valuesByStep(r.rows, key));
  const steps = new Set<number>();
  for (const m of maps) for (const s of m.keys()) steps.add(s);
  return [...steps]
    .sort((a, b) => a - b)
    .map((step) => ({
      step,
      stat: stat(maps.filter((m) => m.has(step)).map((m) => m.get(step) as number)),
    }));
}

export interface PairedStep {
  step: number;
  /** The seeds both arms ran. */
  seeds: number[];
  /** b - a per shared seed, over the seeds. */
  diff: Stat;
}

/** The paired difference b - a at each step both arms have, over the seeds they share. */
export function pairedDifference(a: SeedRun[], b: SeedRun[], key: string): PairedStep[] {
  const bySeed = new Map(b.map((r) => [r.seed, r]));
  const pairs = a.filter((r) => bySeed.has(r.seed)).map((r) => [r, bySeed.get(r.seed) as SeedRun] as const);
  if (pairs.length === 0) return [];
  const ma = pairs.map(([x]) => valuesByStep(x.rows, key));
  const mb = pairs.map(([, y]) => valuesByStep(y.rows, key));
  const steps = [...ma[0].keys()]
    .filter((s) => ma.every((m) => m.has(s)) && mb.every((m) => m.has(s)))
    .sort((x, y) => x - y);
  return steps.map((step) => ({
    step,
    seeds: pairs.map(([x]) => x.seed),
    diff: stat(pairs.map((_, i) => (mb[i].get(step) as number) - (ma[i].get(step) as number))),
  }));
}

/** Over-the-run summary of a per-step training metric (e.g. grad norm): mean and max per seed. */
export function runSummary(runs: SeedRun[], key: string): { mean: Stat; max: Stat } {
  const per = runs.map((r) => [...valuesByStep(r.rows, key).values()]).filter((xs) => xs.length > 0);
  return { mean: stat(per.map((xs) => stat(xs).mean)), max: stat(per.map((xs) => Math.max(...xs))) };
}
