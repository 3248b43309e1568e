// Aggregation modes (ALGORITHMS.md §2): the loss's reduction over tokens and sequences as
// per-token weights, so total loss = Σ w·ℓ. Tested by rl/algos/losses.test.ts.
import { type Arr, sum } from "./types.ts";

export type AggMode = "token-mean" | "seq-mean-token-sum" | "seq-mean-token-mean" | "seq-mean-token-sum-norm";

export type AggOptions = {
  lMax?: number; // Dr. GRPO constant normaliser (seq-mean-token-sum-norm)
  // With gradient accumulation, pass the mini-batch totals so micro-batches share denominators.
  totalTokens?: number; // Σ m over the mini-batch (token-mean)
  totalSeqs?: number; // |B| (or |B'| for seq-mean-token-mean) over the mini-batch
};

export type AggFn = (masks: readonly Arr[], opts: AggOptions) => Float64Array[];

/** Σ_{i,t} m·ℓ / Σ m (DAPO token-level). */
const tokenMean: AggFn = (masks, opts) => {
  const n = opts.totalTokens ?? masks.reduce((s, m) => s + sum(m), 0);
  return masks.map((m) => Float64Array.from(m, (x) => (n > 0 ? x / n : 0)));
};

/**
 * (1/|B|) Σ_i Σ_t m·ℓ, |B| = every row of the mini-batch, fully masked rows included (they add
 * 0 to the sum and 1 to |B|), as verl's original `agg_loss` (`torch.mean(seq_losses)`). verl's
 * `agg_loss` since divides by the rows with at least one token (`seq_mask = Σm > 0`) unless
 * given a global batch size, so with rejected rows the lab's policy term is smaller by
 * |B'|/|B| (docs/ALGORITHMS.md "Differences from verl").
 */
const seqMeanTokenSum: AggFn = (masks, opts) => {
  const b = opts.totalSeqs ?? masks.length;
  return masks.map((m) => Float64Array.from(m, (x) => (b > 0 ? x / b : 0)));
};

/** (1/|B'|) Σ_{i∈B'} Σ_t m·ℓ / |o_i|, B' = sequences with |o_i| > 0 (GRPO paper form). */
const seqMeanTokenMean: AggFn = (masks, opts) => {
  const b = opts.totalSeqs ?? masks.filter((m) => sum(m) > 0).length;
  return masks.map((m) => {
    const len = sum(m);
    return Float64Array.from(m, (x) => (len > 0 && b > 0 ? x / (len * b) : 0));
  });
};

/** (1/|B|) Σ_i Σ_t m·ℓ / L_max (Dr. GRPO as in oat; verl omits 1/|B|). */
const seqMeanTokenSumNorm: AggFn = (masks, opts) => {
  if (!(opts.lMax && opts.lMax > 0)) throw new Error("seq-mean-token-sum-norm needs lMax > 0");
  const lMax = opts.lMax;
  for (const m of masks)
    if (sum(m) > lMax) throw new Error(`a sequence has more than lMax=${lMax} policy tokens`);
  const b = opts.totalSeqs ?? masks.length;
  return masks.map((m) => Float64Array.from(m, (x) => (b > 0 ? x / (b * lMax) : 0)));
};

export const AGG: Record<AggMode, AggFn> = {
  "token-mean": tokenMean,
  "seq-mean-token-sum": seqMeanTokenSum,
  "seq-mean-token-mean": seqMeanTokenMean,
  "seq-mean-token-sum-norm": seqMeanTokenSumNorm,
};

/** Σ w·ℓ over flat arrays. */
export function aggregate(loss: Arr, weights: Arr): number {
  let s = 0;
  for (let i = 0; i < loss.length; i++) if (weights[i] !== 0) s += weights[i] * loss[i];
  return s;
}
