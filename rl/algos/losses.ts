// Per-token losses and their gradients w.r.t. the current log-prob (ALGORITHMS.md §1, §2,
// §10, §12, §13): policy losses (ppo-clip with clip-higher and dual-clip, vanilla-pg, and
// the newer GSPO, GSPO-token, GMPO, CISPO, SAPO, Clip-Cov, KL-Cov), KL estimators k1/k2/k3,
// aggregation modes as per-token weights, PPO's clipped value loss, the entropy term and
// VAPO's positive-example LM loss. The GPU backward starts from these per-token weights on
// logprob: total loss = Σ_t w_t·ℓ_t, so dL/dlp_t = w_t·dℓ_t/dlp_t. Sequence-level losses
// keep that form: each token's ℓ_t carries its sequence's value, the loss fixes its own
// weights (seq-mean-token-mean, or a plain mean over sequences), and `grad` is chosen so that
// w_t·grad_t is the sequence loss's derivative (or its stop-gradient form, as the paper's).
// All functions take flat arrays (concatenate sequences with types.ts `flatten`); the
// sequence-level ones also take the row lengths.
// Tested by rl/algos/losses.test.ts (`npx vitest run rl/algos/`).
import { type Arr, clamp, flatten, maskedMean, sum } from "./types.ts";

// ---------------------------------------------------------------- policy losses

export type PolicyLossInput = {
  logprob: Arr; // (N) current policy lp
  oldLogprob: Arr; // (N) behaviour policy lp_old
  advantages: Arr; // (N)
  mask: Arr; // (N) 1 = policy token
  lengths?: readonly number[]; // (B) row lengths, Σ = N: sequence-level losses group tokens by row
};

export type PolicyLossOptions = {
  epsLow: number; // ratio ≥ 1 − ε_low
  epsHigh: number; // ratio ≤ 1 + ε_high (clip-higher when > ε_low)
  dualClipC: number | null; // c > 1; null = off (ppo-clip only)
  sapo?: { tauPos: number; tauNeg: number }; // SAPO gate temperatures (A > 0 / A ≤ 0)
  clipCov?: { ratio: number; lb: number; ub: number }; // Clip-Cov fraction and covariance band
  klCov?: { ratio: number; coef: number }; // KL-Cov fraction and κ
};

/** verl's defaults for the §13 knobs (core_algos.py at b178a3c; the schema repeats them). */
export const POLICY_LOSS_DEFAULTS = {
  sapo: { tauPos: 1.0, tauNeg: 1.05 },
  clipCov: { ratio: 2e-4, lb: 1.0, ub: 5.0 },
  klCov: { ratio: 2e-4, coef: 1.0 },
} as const;

export type PolicyLossOutput = {
  loss: Float64Array; // (N) ℓ_t, 0 on mask = 0
  grad: Float64Array; // (N) dℓ_t/dlp_t (sequence losses: see the file header)
  gradAdv: Float64Array; // (N) dℓ_t/dA_t (for shaping that makes A depend on entropy)
  clipped: Uint8Array; // (N) ratio-clip indicator (either bound; GMPO: upper side, A > 0)
  clippedLower: Uint8Array; // (N) dual-clip indicator (GMPO: lower side, A < 0)
  selected?: Uint8Array; // (N) Clip-Cov / KL-Cov: the tokens the covariance rule picked
  // The loss fixes its own aggregation (GSPO, GMPO, SAPO): use Σ w·ℓ with these w instead of
  // rl.loss_agg's. The KL, entropy and value terms keep rl.loss_agg.
  weights?: Float64Array; // (N)
  metrics: { "actor/pg_clipfrac": number; "actor/pg_clipfrac_lower": number; "actor/ppo_kl": number };
};

export type PolicyLossFn = (input: PolicyLossInput, opts: PolicyLossOptions) => PolicyLossOutput;

/** ρ = exp(clamp(lp − lp_old, −20, 20)) and dρ/dlp (0 where the clamp is active; verl's clamp). */
export function ratio(lp: number, lpOld: number): { rho: number; drho: number } {
  const d = lp - lpOld;
  const rho = Math.exp(clamp(d, -20, 20));
  return { rho, drho: d < -20 || d > 20 ? 0 : rho };
}

/** actor/ppo_kl: masked mean of lp_old − lp with the log-ratio clamped at ±20, as the loss sees it (verl). */
function ppoKl(input: PolicyLossInput): number {
  const d = new Float64Array(input.mask.length);
  for (let i = 0; i < d.length; i++) d[i] = -clamp(input.logprob[i] - input.oldLogprob[i], -20, 20);
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

// ---------------------------------------------------------------- newer policy losses (§13)

/** Row ranges [start, end) of the flat arrays; a sequence-level loss cannot run without them. */
function rowRanges(input: PolicyLossInput, name: string): [number, number][] {
  const N = input.mask.length;
  if (!input.lengths)
    throw new Error(`policy loss ${name} is sequence-level: it needs the row lengths (input.lengths)`);
  const out: [number, number][] = [];
  let o = 0;
  for (const n of input.lengths) {
    out.push([o, o + n]);
    o += n;
  }
  if (o !== N) throw new Error(`policy loss ${name}: row lengths sum to ${o}, not ${N} tokens`);
  return out;
}

/** Per-token weights (1/|B|)·m_t/Σ_row m: seq-mean-token-mean, |B| = rows with tokens unless given. */
function seqMeanWeights(input: PolicyLossInput, rows: [number, number][], totalSeqs?: number) {
  const masks = rows.map(([s, e]) => Array.from({ length: e - s }, (_, j) => input.mask[s + j]));
  return flatten(AGG["seq-mean-token-mean"](masks, { totalSeqs }));
}

function outputs(N: number) {
  return {
    loss: new Float64Array(N),
    grad: new Float64Array(N),
    gradAdv: new Float64Array(N),
    clipped: new Uint8Array(N),
    clippedLower: new Uint8Array(N),
  };
}

/** verl clamps GSPO's log sequence ratio at 10 above (s ≤ e^10). */
const GSPO_LOG_RATIO_MAX = 10;

/**
 * GSPO (arXiv 2507.18071): sequence ratio s_i = exp(Σ m·δ / Σ m), clipped at the sequence
 * level, loss max(−A·s, −A·clip(s, 1−ε_low, 1+ε_high)) aggregated seq-mean-token-mean always.
 * "sequence": the paper's GSPO, with the sequence advantage Ā_i = Σ m·A / Σ m; its loss is a
 * function of s_i, so dL/dlp_t = w_t·(−Ā·s_i) on unclipped sequences. "token": GSPO-token
 * (verl `gspo`): log s_it = sg[log s_i] + lp_t − sg[lp_t], so each token keeps its own A_t and
 * gets −A_t·s_i. The two agree when A is constant along a row (outcome advantages).
 */
function gspoLoss(level: "sequence" | "token"): PolicyLossFn {
  const name = level === "sequence" ? "gspo" : "gspo-token";
  return (input, opts) => {
    const rows = rowRanges(input, name);
    const N = input.mask.length;
    const out = outputs(N);
    const lo = 1 - opts.epsLow;
    const hi = 1 + opts.epsHigh;
    for (const [s0, e0] of rows) {
      let len = 0;
      let sumD = 0;
      let sumA = 0;
      for (let i = s0; i < e0; i++) {
        const m = input.mask[i];
        if (m === 0) continue;
        len += m;
        sumD += m * (input.logprob[i] - input.oldLogprob[i]);
        sumA += m * input.advantages[i];
      }
      if (len === 0) continue;
      const logS = sumD / len;
      const capped = logS > GSPO_LOG_RATIO_MAX;
      const s = Math.exp(Math.min(logS, GSPO_LOG_RATIO_MAX));
      const sc = clamp(s, lo, hi);
      for (let i = s0; i < e0; i++) {
        if (input.mask[i] === 0) continue;
        const A = level === "sequence" ? sumA / len : input.advantages[i];
        const l1 = -A * s;
        const l2 = -A * sc;
        const useClip = l2 > l1;
        out.loss[i] = useClip ? l2 : l1;
        out.grad[i] = useClip || capped ? 0 : -A * s;
        out.gradAdv[i] = useClip ? -sc : -s;
        out.clipped[i] = useClip ? 1 : 0;
      }
    }
    return {
      ...out,
      weights: seqMeanWeights(input, rows),
      metrics: {
        "actor/pg_clipfrac": maskedMean(out.clipped, input.mask),
        "actor/pg_clipfrac_lower": 0,
        "actor/ppo_kl": ppoKl(input),
      },
    };
  };
}

export const gspo: PolicyLossFn = gspoLoss("sequence");
export const gspoToken: PolicyLossFn = gspoLoss("token");

/**
 * GMPO (arXiv 2507.20673, verl `geo_mean`): token log-ratios clipped sign-aware,
 * δ* = sgn(A)·min(sgn(A)·δ, sgn(A)·clamp(δ, −ε_low, ε_high)); ρ_i = exp(Σ m·δ* / Σ m);
 * Ā_i = Σ m·A / Σ m; loss mean_i(−Ā_i·ρ_i), a plain mean over all rows of the minibatch (a
 * row without policy tokens counts with loss 0, as torch.mean does in verl). δ is clamped at
 * ±20 first (§0) so ρ stays finite; verl leaves that clamp commented out.
 * pg_clipfrac / _lower: tokens with δ outside the clip range and A > 0 / A < 0 (verl's).
 */
export const gmpo: PolicyLossFn = (input, opts) => {
  const rows = rowRanges(input, "gmpo");
  const N = input.mask.length;
  const out = outputs(N);
  const pass = new Uint8Array(N); // dδ*/dlp = 1
  const dStar = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    const raw = input.logprob[i] - input.oldLogprob[i];
    const d = clamp(raw, -20, 20);
    const sg = Math.sign(input.advantages[i]);
    const dc = clamp(d, -opts.epsLow, opts.epsHigh);
    dStar[i] = sg * Math.min(sg * d, sg * dc);
    pass[i] = sg !== 0 && sg * d <= sg * dc && raw === d ? 1 : 0;
    const outside = d !== dc ? 1 : 0;
    out.clipped[i] = outside && input.advantages[i] > 0 ? 1 : 0;
    out.clippedLower[i] = outside && input.advantages[i] < 0 ? 1 : 0;
  }
  for (const [s0, e0] of rows) {
    let len = 0;
    let sumD = 0;
    let sumA = 0;
    for (let i = s0; i < e0; i++) {
      const m = input.mask[i];
      len += m;
      sumD += m * dStar[i];
      sumA += m * input.advantages[i];
    }
    if (len === 0) continue;
    const rho = Math.exp(sumD / len);
    const aBar = sumA / len;
    for (let i = s0; i < e0; i++) {
      if (input.mask[i] === 0) continue;
      out.loss[i] = -aBar * rho;
      out.grad[i] = pass[i] ? -aBar * rho : 0;
      out.gradAdv[i] = -rho;
    }
  }
  return {
    ...out,
    weights: seqMeanWeights(input, rows, rows.length),
    metrics: {
      "actor/pg_clipfrac": maskedMean(out.clipped, input.mask),
      "actor/pg_clipfrac_lower": maskedMean(out.clippedLower, input.mask),
      "actor/ppo_kl": ppoKl(input),
    },
  };
};

/**
 * CISPO (MiniMax-M1, arXiv 2506.13585, verl `cispo`): ℓ = −sg(w)·A·lp with
 * w = clip(ρ, 1−ε_low, 1+ε_high); no token loses its gradient, it is scaled by the clipped
 * weight: dℓ/dlp = −w·A (the value ℓ is a surrogate whose gradient only holds with w frozen).
 * Aggregated by rl.loss_agg. pg_clipfrac: tokens with ρ ≠ w.
 */
export const cispo: PolicyLossFn = (input, opts) => {
  const N = input.mask.length;
  const out = outputs(N);
  const lo = 1 - opts.epsLow;
  const hi = 1 + opts.epsHigh;
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    const A = input.advantages[i];
    const { rho } = ratio(input.logprob[i], input.oldLogprob[i]);
    const w = clamp(rho, lo, hi);
    out.loss[i] = -w * A * input.logprob[i];
    out.grad[i] = -w * A;
    out.gradAdv[i] = -w * input.logprob[i];
    out.clipped[i] = w !== rho ? 1 : 0;
  }
  return {
    ...out,
    metrics: {
      "actor/pg_clipfrac": maskedMean(out.clipped, input.mask),
      "actor/pg_clipfrac_lower": 0,
      "actor/ppo_kl": ppoKl(input),
    },
  };
};

/**
 * SAPO (arXiv 2511.20347, verl `sapo`): a soft gate f(ρ, τ) = sigmoid(τ·(ρ − 1))·4/τ in place
 * of the clip, τ = τ_pos where A > 0 else τ_neg; ℓ = −f·A, aggregated seq-mean-token-mean
 * always. f'(1) = 1, so on-policy it is the plain policy gradient; far from 1 the gate
 * saturates and the gradient fades instead of dropping to 0 at a hard edge.
 */
export const sapo: PolicyLossFn = (input, opts) => {
  const rows = rowRanges(input, "sapo");
  const { tauPos, tauNeg } = opts.sapo ?? POLICY_LOSS_DEFAULTS.sapo;
  if (!(tauPos > 0 && tauNeg > 0)) throw new Error("sapo: tau_pos and tau_neg must be > 0");
  const N = input.mask.length;
  const out = outputs(N);
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    const A = input.advantages[i];
    const tau = A > 0 ? tauPos : tauNeg;
    const { rho, drho } = ratio(input.logprob[i], input.oldLogprob[i]);
    const sig = 1 / (1 + Math.exp(-tau * (rho - 1)));
    const f = (sig * 4) / tau;
    out.loss[i] = -f * A;
    out.grad[i] = -A * 4 * sig * (1 - sig) * drho;
    out.gradAdv[i] = -f;
  }
  return {
    ...out,
    weights: seqMeanWeights(input, rows),
    metrics: { "actor/pg_clipfrac": 0, "actor/pg_clipfrac_lower": 0, "actor/ppo_kl": ppoKl(input) },
  };
};

/**
 * Per-token covariance (A − mean_m(A))·(lp − mean_m(lp)) over tokens with m ≠ 0 (NaN
 * elsewhere); means weighted by m, which is verl's for 0/1 masks (§13 Clip-Cov, KL-Cov).
 */
export function tokenCovariance(input: PolicyLossInput): Float64Array {
  const mA = maskedMean(input.advantages, input.mask);
  const mLp = maskedMean(input.logprob, input.mask);
  return Float64Array.from(input.mask, (m, i) =>
    m === 0 ? Number.NaN : (input.advantages[i] - mA) * (input.logprob[i] - mLp),
  );
}

/** The n candidates with the largest covariance, ties by position: a deterministic top-n. */
function topByCovariance(cov: Float64Array, candidates: number[], n: number): number[] {
  return [...candidates].sort((a, b) => cov[b] - cov[a] || a - b).slice(0, n);
}

/** n = max(1, floor(ratio · #valid)), 0 when there is no valid token. */
function covCount(ratioFrac: number, mask: Arr): number {
  let valid = 0;
  for (let i = 0; i < mask.length; i++) if (mask[i] !== 0) valid++;
  return valid === 0 ? 0 : Math.max(1, Math.floor(ratioFrac * valid));
}

/**
 * Clip-Cov (The Entropy Mechanism of RL for Reasoning LMs, arXiv 2505.22617; verl
 * `clip_cov`): vanilla PPO clip (dual-clip does not apply, as in verl), except that
 * n = max(1, floor(ratio·#valid)) tokens with clip_cov_lb < cov < clip_cov_ub, not already
 * clipped by PPO, lose their loss and gradient. verl draws the n at random among the
 * candidates; here they are the largest covariances first, ties by position, so runs replay
 * (the two agree when there are at most n candidates). pg_clipfrac: the fraction removed
 * (verl's metric); the PPO ratio clip is in `clipped`.
 */
export const clipCov: PolicyLossFn = (input, opts) => {
  const { ratio: frac, lb, ub } = opts.clipCov ?? POLICY_LOSS_DEFAULTS.clipCov;
  if (!(frac > 0)) throw new Error("clip-cov: clip_cov.ratio must be > 0");
  const base = ppoClip(input, { epsLow: opts.epsLow, epsHigh: opts.epsHigh, dualClipC: null });
  const N = input.mask.length;
  const cov = tokenCovariance(input);
  const candidates: number[] = [];
  for (let i = 0; i < N; i++)
    if (input.mask[i] !== 0 && !base.clipped[i] && cov[i] > lb && cov[i] < ub) candidates.push(i);
  const selected = new Uint8Array(N);
  for (const i of topByCovariance(cov, candidates, covCount(frac, input.mask))) {
    selected[i] = 1;
    base.loss[i] = 0;
    base.grad[i] = 0;
    base.gradAdv[i] = 0;
  }
  return {
    ...base,
    selected,
    metrics: {
      "actor/pg_clipfrac": maskedMean(selected, input.mask),
      "actor/pg_clipfrac_lower": 0,
      "actor/ppo_kl": ppoKl(input),
    },
  };
};

/**
 * KL-Cov (same paper, verl `kl_cov`): no clipping at all, ℓ = −A·ρ, plus κ·|δ| on the
 * n = max(1, floor(ratio·#valid)) tokens with the largest covariance (ties by position; no
 * token is excluded). ppo_kl is logged as the masked mean of |δ| (verl's metric).
 */
export const klCov: PolicyLossFn = (input, opts) => {
  const { ratio: frac, coef } = opts.klCov ?? POLICY_LOSS_DEFAULTS.klCov;
  if (!(frac > 0)) throw new Error("kl-cov: kl_cov.ratio must be > 0");
  const N = input.mask.length;
  const out = outputs(N);
  const absD = new Float64Array(N);
  const valid: number[] = [];
  for (let i = 0; i < N; i++) {
    if (input.mask[i] === 0) continue;
    valid.push(i);
    const A = input.advantages[i];
    const { rho, drho } = ratio(input.logprob[i], input.oldLogprob[i]);
    absD[i] = Math.abs(input.logprob[i] - input.oldLogprob[i]);
    out.loss[i] = -A * rho;
    out.grad[i] = -A * drho;
    out.gradAdv[i] = -rho;
  }
  const cov = tokenCovariance(input);
  const selected = new Uint8Array(N);
  for (const i of topByCovariance(cov, valid, covCount(frac, input.mask))) {
    selected[i] = 1;
    out.loss[i] += coef * absD[i];
    out.grad[i] += coef * Math.sign(input.logprob[i] - input.oldLogprob[i]);
  }
  return {
    ...out,
    selected,
    metrics: {
      "actor/pg_clipfrac": 0,
      "actor/pg_clipfrac_lower": 0,
      "actor/ppo_kl": maskedMean(absD, input.mask),
    },
  };
};

export const POLICY_LOSS: Record<string, PolicyLossFn> = {
  "ppo-clip": ppoClip,
  "vanilla-pg": vanillaPg,
  gspo,
  "gspo-token": gspoToken,
  gmpo,
  cispo,
  sapo,
  "clip-cov": clipCov,
  "kl-cov": klCov,
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
      loss -= (s.mask[i] * s.logprob[i]) / n;
      g[i] = -s.mask[i] / n;
    }
    return g;
  });
  return { loss, grad };
}

export const AUX_LOSS = {
  "positive-lm": positiveLm,
};
