// Per-token losses and their gradients w.r.t. the current log-prob (ALGORITHMS.md §1, §2,
// §10, §12): policy losses (ppo-clip with clip-higher and dual-clip, vanilla-pg), KL
// estimators k1/k2/k3, aggregation modes as per-token weights, PPO's clipped value loss,
// the entropy term and VAPO's positive-example LM loss. The GPU backward starts from these
// per-token weights on logprob: total loss = Σ_t w_t·ℓ_t, so dL/dlp_t = w_t·dℓ_t/dlp_t.
// All functions take flat arrays (concatenate sequences with types.ts `flatten`).
// Tested by rl/algos/losses.test.ts (`npx vitest run rl/algos/`).
import { type Arr, clamp, maskedMean, sum } from "./types.ts";

// ---------------------------------------------------------------- policy losses

export type PolicyLossInput = {
  logprob: Arr; // (N) current policy lp
  oldLogprob: Arr; // (N) behaviour policy lp_old
  advantages: Arr; // (N)
  mask: Arr; // (N) 1 = policy token
};

export type PolicyLossOptions = {
  epsLow: number; // ratio ≥ 1 − ε_low
  epsHigh: number; // ratio ≤ 1 + ε_high (clip-higher when > ε_low)
  dualClipC: number | null; // c > 1; null = off
};

export type PolicyLossOutput = {
  loss: Float64Array; // (N) ℓ_t, 0 on mask = 0
  grad: Float64Array; // (N) dℓ_t/dlp_t
  gradAdv: Float64Array; // (N) dℓ_t/dA_t (for shaping that makes A depend on entropy)
  clipped: Uint8Array; // (N) ratio-clip indicator (either bound)
  clippedLower: Uint8Array; // (N) dual-clip indicator
  metrics: { "actor/pg_clipfrac": number; "actor/pg_clipfrac_lower": number; "actor/ppo_kl": number };
};

export type PolicyLossFn = (input: PolicyLossInput, opts: PolicyLossOptions) => PolicyLossOutput;

/** ρ = exp(clamp(lp − lp_old, −20, 20)) and dρ/dlp (0 where the clamp is active; verl's clamp). */
export function ratio(lp: number, lpOld: number): { rho: number; drho: number } {
  const d = lp - lpOld;
  const rho = Math.exp(clamp(d, -20, 20));
  return { rho, drho: d < -20 || d > 20 ? 0 : rho };
}

function ppoKl(input: PolicyLossInput): number {
  const d = new Float64Array(input.mask.length);
  for (let i = 0; i < d.length; i++) d[i] = input.oldLogprob[i] - input.logprob[i];
  return maskedMean(d, input.mask);
}

/** PPO clipped surrogate (§1) with clip-higher (DAPO §4) and dual-clip (Ye et al.). */
export const ppoClip: PolicyLossFn = (input, opts) => {
  if (opts.dualClipC !== null && !(opts.dualClipC > 1)) throw new Error("dual-clip c must be > 1");
  const N = input.mask.length;
  const loss = new Float64Array(N);
  const grad = new Float64Array(N);
  const gradAdv = new Float64Array(N);
  const clipped = new Uint8Array(N);
  const clippedLower = new Uint8Array(N);
  const lo = 1 - opts.epsLow;
  const hi = 1 + opts.epsHigh;
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    const A = input.advantages[i];
    const { rho, drho } = ratio(input.logprob[i], input.oldLogprob[i]);
    const rc = clamp(rho, lo, hi);
    const l1 = -A * rho;
    const l2 = -A * rc;
    // The clipped branch wins only when strictly larger; at a tie both branches agree.
    const useClip = l2 > l1;
    let l = useClip ? l2 : l1;
    let g = useClip ? (rho < lo || rho > hi ? 0 : -A * drho) : -A * drho;
    let gA = useClip ? -rc : -rho;
    clipped[i] = useClip ? 1 : 0;
    if (opts.dualClipC !== null && A < 0) {
      const l3 = -opts.dualClipC * A;
      if (l > l3) {
        l = l3;
        g = 0;
        gA = -opts.dualClipC;
        clippedLower[i] = 1;
      }
    }
    loss[i] = l;
    grad[i] = g;
    gradAdv[i] = gA;
  }
  return {
    loss,
    grad,
    gradAdv,
    clipped,
    clippedLower,
    metrics: {
      "actor/pg_clipfrac": maskedMean(clipped, input.mask),
      "actor/pg_clipfrac_lower": maskedMean(clippedLower, input.mask),
      "actor/ppo_kl": ppoKl(input),
    },
  };
};

/** Vanilla policy gradient (§12, GPG form): ℓ = −A·lp, no ratio, no clipping. */
export const vanillaPg: PolicyLossFn = (input) => {
  const N = input.mask.length;
  const loss = new Float64Array(N);
  const grad = new Float64Array(N);
  const gradAdv = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    loss[i] = -input.advantages[i] * input.logprob[i];
    grad[i] = -input.advantages[i];
    gradAdv[i] = -input.logprob[i];
  }
  const zeros = new Uint8Array(N);
  return {
    loss,
    grad,
    gradAdv,
    clipped: zeros,
    clippedLower: zeros,
    metrics: { "actor/pg_clipfrac": 0, "actor/pg_clipfrac_lower": 0, "actor/ppo_kl": ppoKl(input) },
  };
};

export const POLICY_LOSS: Record<string, PolicyLossFn> = {
  "ppo-clip": ppoClip,
  "vanilla-pg": vanillaPg,
};

// ---------------------------------------------------------------- KL estimators

export type KlFn = (lp: number, lpRef: number) => { value: number; grad: number };

/** k1 = lp − lp_ref. */
export const k1: KlFn = (lp, lpRef) => ({ value: lp - lpRef, grad: 1 });
/** k2 = ½(lp − lp_ref)². */
export const k2: KlFn = (lp, lpRef) => ({ value: 0.5 * (lp - lpRef) ** 2, grad: lp - lpRef });
/** k3 = e^x − x − 1, x = lp_ref − lp, with verl's clamps (x to ±20, k3 to ±10; gradient 0 where clamped). */
export const k3: KlFn = (lp, lpRef) => {
  const raw = lpRef - lp;
  const x = clamp(raw, -20, 20);
  // expm1 keeps precision for small x; the max guards the last ulp so k3 is never below 0.
  const v = Math.max(0, Math.expm1(x) - x);
  if (raw !== x || v > 10) return { value: clamp(v, -10, 10), grad: 0 };
  return { value: v, grad: -Math.expm1(x) };
};

export const KL: Record<string, KlFn> = { k1, k2, k3 };

/** Per-token KL term coef·k(lp, lp_ref) and its gradient, 0 on env tokens (§10). */
export function klTerm(name: string, lp: Arr, lpRef: Arr, mask: Arr, coef: number) {
  const fn = KL[name];
  if (!fn) throw new Error(`unknown KL estimator "${name}"`);
  const value = new Float64Array(mask.length);
  const grad = new Float64Array(mask.length);
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 0) continue;
    const k = fn(lp[i], lpRef[i]);
    value[i] = coef * k.value;
    grad[i] = coef * k.grad;
  }
  return { value, grad };
}

// ---------------------------------------------------------------- aggregation

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

/** (1/|B|) Σ_i Σ_t m·ℓ. */
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

// ---------------------------------------------------------------- value loss

export type ValueLossInput = {
  values: Arr; // (N) V_new, the critic's current prediction
  oldValues: Arr; // (N) V_old at rollout
  returns: Arr; // (N) value targets R
  mask: Arr; // (N)
};

/** PPO clipped value loss (§1): ½·max((V−R)², (clip(V, V_old±ε_v)−R)²), gradient w.r.t. V. */
export function valueLoss(input: ValueLossInput, clipRange: number) {
  const N = input.mask.length;
  const loss = new Float64Array(N);
  const grad = new Float64Array(N);
  const clipped = new Uint8Array(N);
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    const v = input.values[i];
    const vo = input.oldValues[i];
    const R = input.returns[i];
    const vc = clamp(v, vo - clipRange, vo + clipRange);
    const a = (v - R) ** 2;
    const b = (vc - R) ** 2;
    if (b > a) {
      loss[i] = 0.5 * b;
      grad[i] = vc === v ? vc - R : 0;
      clipped[i] = 1;
    } else {
      loss[i] = 0.5 * a;
      grad[i] = v - R;
    }
  }
  return { loss, grad, clipped, clipfrac: maskedMean(clipped, input.mask) };
}

/** 1 − Var(R − V)/Var(R) over masked tokens (critic/vf_explained_var); NaN if Var(R) = 0 or no tokens. */
export function explainedVariance(returns: Arr, values: Arr, mask: Arr): number {
  const res = new Float64Array(mask.length);
  for (let i = 0; i < res.length; i++) res[i] = returns[i] - values[i];
  const varOf = (x: Arr) => {
    const m = maskedMean(x, mask);
    const d = new Float64Array(mask.length);
    for (let i = 0; i < d.length; i++) d[i] = (x[i] - m) ** 2;
    return maskedMean(d, mask);
  };
  const vr = varOf(returns);
  return vr > 0 ? 1 - varOf(res) / vr : Number.NaN;
}

/**
 * VAPO value-pretraining stop rule (§12): stop after `steps`, or earlier once the explained
 * variance reaches `stopExplainedVar` (when set).
 */
export function valuePretrainDone(
  step: number,
  explainedVar: number,
  cfg: { steps: number; stopExplainedVar: number | null },
): boolean {
  if (step >= cfg.steps) return true;
  return (
    cfg.stopExplainedVar !== null && Number.isFinite(explainedVar) && explainedVar >= cfg.stopExplainedVar
  );
}

// ---------------------------------------------------------------- entropy and aux losses

/**
 * Entropy regulariser: loss −= coef·Σ w·H (same weights as the policy loss), so dL/dH_t = −coef·w_t.
 */
export function entropyTerm(entropy: Arr, weights: Arr, coef: number) {
  const gradH = new Float64Array(weights.length);
  for (let i = 0; i < gradH.length; i++) gradH[i] = -coef * weights[i];
  return { loss: -coef * aggregate(entropy, weights), gradH };
}

/**
 * VAPO positive-example LM loss (§12): −(1/Σ_{o∈T}|o|) Σ_{o∈T} Σ_t m·lp over correct
 * trajectories T. Returns the unscaled loss and per-sequence dL/dlp; the trainer multiplies by μ.
 * Empty T gives loss 0 and zero gradient.
 */
export function positiveLm(seqs: readonly { logprob: Arr; mask: Arr; correct: boolean }[]) {
  let n = 0;
  for (const s of seqs) if (s.correct) n += sum(s.mask);
  let loss = 0;
  const grad = seqs.map((s) => {
    const g = new Float64Array(s.mask.length);
    if (!s.correct || n === 0) return g;
    for (let i = 0; i < g.length; i++) {
      if (s.mask[i] === 0) continue;
      loss -= s.logprob[i] / n;
      g[i] = -s.mask[i] / n;
    }
    return g;
  });
  return { loss, grad };
}

export const AUX_LOSS = {
  "positive-lm": positiveLm,
};
