// Series handling for the charts, as pure functions (tested by app/smoothing.test.ts):
// TensorBoard's debiased EMA, duplicate-step merging, and min/max downsampling that keeps
// spikes. Order: merge duplicates, smooth the full series, then downsample.

/** A y value of a chart series; null is a gap (the run has no value at that x). */
export type Y = number | null;

/**
 * TensorBoard's debiased exponential moving average with weight w in [0, 1]: non-finite
 * values and gaps pass through and are not counted; a constant series comes back unchanged.
 */
export function debiasedEma(ys: readonly Y[], weight: number): Y[] {
  const w = Math.min(1, Math.max(0, Number.isFinite(weight) ? weight : 0));
  const out: Y[] = new Array(ys.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || !Number.isFinite(y)) {
      out[i] = y;
      continue;
    }
    last = last * w + (1 - w) * y;
    n++;
    out[i] = w === 1 ? y : last / (1 - w ** n);
  }
  return out;
}

/** Points sorted by x with duplicate x merged (the later value wins, as a rewritten step would). */
export function mergeDuplicateSteps(xs: readonly number[], ys: readonly Y[]): { xs: number[]; ys: Y[] } {
  const byX = new Map<number, Y>();
  for (let i = 0; i < xs.length; i++) {
    const y = ys[i];
    if (y === null && byX.has(xs[i])) continue;
    byX.set(xs[i], y);
  }
  const sorted = [...byX.keys()].sort((a, b) => a - b);
  return { xs: sorted, ys: sorted.map((x) => byX.get(x) ?? null) };
}

/**
 * Indices to keep when drawing `xs` in `buckets` pixel columns: for each bucket, the first
 * and last index and the arg-min and arg-max of every series (never random picks, so
 * spikes survive). Series share the x array, so the same indices keep them aligned.
 * Returns every index when there are at most 4 per bucket anyway.
 */
export function minMaxIndices(
  xs: readonly number[],
  series: readonly (readonly Y[])[],
  buckets: number,
): number[] {
  const n = xs.length;
  if (n === 0) return [];
  if (buckets < 1 || n <= buckets * 4) return xs.map((_, i) => i);
  const x0 = xs[0];
  const span = xs[n - 1] - x0 || 1;
  const keep = new Set<number>();
  let start = 0;
  while (start < n) {
    const b = Math.min(buckets - 1, Math.floor(((xs[start] - x0) / span) * buckets));
    let end = start;
    while (end + 1 < n && Math.min(buckets - 1, Math.floor(((xs[end + 1] - x0) / span) * buckets)) === b)
      end++;
    keep.add(start);
    keep.add(end);
    for (const ys of series) {
      let lo = -1;
      let hi = -1;
      for (let i = start; i <= end; i++) {
        const y = ys[i];
        if (y === null || !Number.isFinite(y)) continue;
        if (lo < 0 || y < (ys[lo] as number)) lo = i;
        if (hi < 0 || y > (ys[hi] as number)) hi = i;
      }
      if (lo >= 0) keep.add(lo);
      if (hi >= 0) keep.add(hi);
    }
    start = end + 1;
  }
  return [...keep].sort((a, b) => a - b);
}

/** Downsamples x and aligned series with min/max buckets (see minMaxIndices). */
export function minMaxDownsample(
  xs: readonly number[],
  series: readonly (readonly Y[])[],
  buckets: number,
): { xs: number[]; series: Y[][] } {
  const idx = minMaxIndices(xs, series, buckets);
  return { xs: idx.map((i) => xs[i]), series: series.map((ys) => idx.map((i) => ys[i])) };
}

/** The 5th-95th percentile range of the finite values (the optional outlier-free y range). */
export function percentileRange(values: readonly Y[], lo = 0.05, hi = 0.95): [number, number] | null {
  const v = values.filter((y): y is number => y !== null && Number.isFinite(y)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const at = (q: number) => v[Math.min(v.length - 1, Math.max(0, Math.round(q * (v.length - 1))))];
  return [at(lo), at(hi)];
}
