// Sampler-trainer mismatch (ALGORITHMS.md §13, truncated / masked importance sampling): the
// rollout samples each token with the KV-cache decode path, the trainer scores it with the
// full training forward, and the two disagree by float rounding (and by f16 weights or a
// bug). Both sides are compared under the same distribution: softmax(logits / temperature)
// renormalized over the sampler's top-k / top-p set (kernels/reference.ts sampleDistribution),
// so the metric measures the numerics, not the truncation. The trainer's truncated log-prob is
// its full log-prob minus the log of the mass its own logits keep (keptLogMass). A token the
// trainer's truncation drops has trainer log-prob -Infinity (weight 0).
//
// Metrics (every RL step): rollout/logprob_diff_mean, _max (|old − lp_s| over sampled tokens),
// rollout/is_ratio_mean, _min, _max (exp(old − lp_s)). The correction (rl.rollout_correction,
// verl's algorithm.rollout_correction names): IS weights (token: exp(old − lp_s); sequence:
// exp(Σ_t m·(old − lp_s)), the product, unnormalized as verl), truncated at rollout_is_threshold,
// multiply the per-token policy loss; rejection sampling (token, sequence product, or
// geometric: exp(mean_t)) masks tokens/sequences whose ratio lies outside
// [rollout_rs_threshold_lower, rollout_rs_threshold] (defaults: the IS threshold and its
// reciprocal) out of the loss mask, so they leave the aggregation's denominator too.
// Tested by rl/update/sampler-mismatch.test.ts (worked numbers at the thresholds' edges, the truncated
// log-prob against sampleDistribution, decode vs training forward on the CPU backend).
import { orderedKey, type SampleParams } from "../../kernels/reference";

/** The sampler's truncation, as the kernels take it (topK 0 = off, topP 1 = off). */
export type Truncation = Pick<SampleParams, "temperature" | "topK" | "topP">;

export const truncates = (s: Truncation) => s.topK > 0 || s.topP < 1;

/**
 * log(Σ_{kept} p_v) for p = softmax(row / temperature), and the kept set's threshold key:
 * the same kept set as sampleDistribution (keys >= the k-th largest for top-k; the largest key
 * whose "keys >= it" mass reaches topP for top-p; the larger threshold of the two), found with
 * one sort instead of its quadratic scan. Float64 throughout.
 */
export function keptLogMass(
  row: ArrayLike<number>,
  V: number,
  s: Truncation,
): { logMass: number; thr: number } {
  let mx = -Infinity;
  for (let v = 0; v < V; v++) mx = Math.max(mx, row[v]);
  const inv = 1 / s.temperature;
  const p = new Float64Array(V);
  const keys = new Float64Array(V);
  let total = 0;
  for (let v = 0; v < V; v++) {
    total += p[v] = Math.exp((row[v] - mx) * inv);
    keys[v] = orderedKey(row[v]);
  }
  const order = Array.from({ length: V }, (_, v) => v).sort((a, b) => keys[b] - keys[a]);
  let thr = 0;
  if (s.topK > 0 && s.topK < V) thr = keys[order[s.topK - 1]];
  if (s.topP < 1) {
    let mass = 0;
    for (let i = 0; i < V; i++) {
      mass += p[order[i]];
      if (i + 1 < V && keys[order[i + 1]] === keys[order[i]]) continue; // a tie joins as one
      if (mass >= s.topP * total) {
        thr = Math.max(thr, keys[order[i]]);
        break;
      }
    }
  }
  let kept = 0;
  for (let v = 0; v < V; v++) if (keys[v] >= thr) kept += p[v];
  return { logMass: Math.log(kept / total), thr };
}

/**
 * The trainer's log-prob of each response token under the sampler's truncation, per row:
 * `logp` (N) the full tempered log-probs, `logits` (N,V) the raw logits, `targets` (N), `index`
 * each row's flat positions (rl/update/score-batch.ts; -1 where cut off: 0). -Infinity where the target
 * falls outside the kept set of its position.
 */
export function truncatedLogprobs(
  logp: ArrayLike<number>,
  logits: Float32Array,
  targets: ArrayLike<number>,
  index: readonly Int32Array[],
  V: number,
  s: Truncation,
): Float64Array[] {
  return index.map((idx) =>
    Float64Array.from(idx, (n) => {
      if (n < 0) return 0;
      const row = logits.subarray(n * V, (n + 1) * V);
      const { logMass, thr } = keptLogMass(row, V, s);
      return orderedKey(row[targets[n]]) >= thr ? logp[n] - logMass : Number.NEGATIVE_INFINITY;
    }),
  );
}

/**
 * Mismatch metrics over the sampled tokens (mask 1) of a batch: `old` the trainer's log-probs
 * (under the sampler's truncation), `sampler` the log-probs the rollout recorded. Tokens the
 * trainer's truncation dropped (old = -Infinity) count in rollout/trunc_dropped_frac and
 * in the ratio stats (ratio 0), not in the diff stats.
 */
export function mismatchMetrics(
  old: readonly ArrayLike<number>[],
  sampler: readonly ArrayLike<number>[],
  mask: readonly ArrayLike<number>[],
): Record<string, number> {
  let n = 0;
  let finite = 0;
  let diffSum = 0;
  let diffMax = 0;
  let ratioSum = 0;
  let ratioMin = Number.POSITIVE_INFINITY;
  let ratioMax = 0;
  old.forEach((o, b) => {
    for (let t = 0; t < o.length; t++) {
      if (!mask[b][t]) continue;
      const d = o[t] - sampler[b][t];
      const ratio = Math.exp(d);
      n++;
      ratioSum += ratio;
      ratioMin = Math.min(ratioMin, ratio);
      ratioMax = Math.max(ratioMax, ratio);
      if (Number.isFinite(d)) {
        finite++;
        diffSum += Math.abs(d);
        diffMax = Math.max(diffMax, Math.abs(d));
      }
    }
  });
  if (n === 0) return {};
  return {
    "rollout/logprob_diff_mean": finite ? diffSum / finite : Number.NaN,
    "rollout/logprob_diff_max": finite ? diffMax : Number.NaN,
    "rollout/is_ratio_mean": ratioSum / n,
    "rollout/is_ratio_min": ratioMin,
    "rollout/is_ratio_max": ratioMax,
    "rollout/trunc_dropped_frac": (n - finite) / n,
  };
}

/** rl.rollout_correction (verl algorithm.rollout_correction names). */
export interface RolloutCorrection {
  rollout_is: "none" | "token" | "sequence";
  rollout_is_threshold: number;
  rollout_rs: "none" | "token" | "sequence" | "geometric";
  rollout_rs_threshold: number | null;
  rollout_rs_threshold_lower: number | null;
}

/** verl's safety bound on a log-ratio before exp (token, sequence and geometric alike). */
const LOG_BOUND = 20;
const bounded = (x: number) => Math.min(LOG_BOUND, Math.max(-LOG_BOUND, x));

/**
 * The IS weights (per row, per token) and the rejection-sampling keep mask (1 kept, 0 rejected)
 * of a batch, over its sampled tokens (mask 1); tokens the sampler did not draw (mask 0: tool
 * output, padding) get weight 1 and keep 1 (nothing to correct; the loss mask decides them).
 * Also the fractions of sampled tokens truncated (IS weight above the threshold) and rejected.
 */
export function rolloutCorrection(
  old: readonly ArrayLike<number>[],
  sampler: readonly ArrayLike<number>[],
  mask: readonly ArrayLike<number>[],
  c: RolloutCorrection,
): { weights?: Float64Array[]; keep?: Float64Array[]; metrics: Record<string, number> } {
  const delta = old.map((o, b) => Float64Array.from(o, (x, t) => (mask[b][t] ? x - sampler[b][t] : 0)));
  const rowSum = delta.map((d) => d.reduce((s, x) => s + x, 0));
  const rowLen = mask.map((m) => Array.from(m).reduce((s: number, x) => s + (x ? 1 : 0), 0));
  const metrics: Record<string, number> = {};
  const total = rowLen.reduce((s, x) => s + x, 0);
  let weights: Float64Array[] | undefined;
  if (c.rollout_is !== "none") {
    let truncated = 0;
    weights = delta.map((d, b) =>
      Float64Array.from(d, (x, t) => {
        if (!mask[b][t]) return 1;
        const w = Math.exp(bounded(c.rollout_is === "token" ? x : rowSum[b]));
        if (w > c.rollout_is_threshold) truncated++;
        return Math.min(w, c.rollout_is_threshold);
      }),
    );
    metrics["rollout/is_truncated_frac"] = total ? truncated / total : Number.NaN;
  }
  let keep: Float64Array[] | undefined;
  if (c.rollout_rs !== "none") {
    const hi = c.rollout_rs_threshold ?? c.rollout_is_threshold;
    const lo = c.rollout_rs_threshold_lower ?? 1 / hi;
    let rejected = 0;
    keep = delta.map((d, b) =>
      Float64Array.from(d, (x, t) => {
        if (!mask[b][t]) return 1;
        const logR =
          c.rollout_rs === "token" ? x : c.rollout_rs === "sequence" ? rowSum[b] : rowSum[b] / rowLen[b];
        const r = Math.exp(bounded(logR));
        const ok = r >= lo && r <= hi;
        if (!ok) rejected++;
        return ok ? 1 : 0;
      }),
    );
    metrics["rollout/rs_masked_frac"] = total ? rejected / total : Number.NaN;
  }
  return { weights, keep, metrics };
}
