// The policy-loss contract shared by every family (ALGORITHMS.md §1, §13): input, options,
// output, verl's defaults for the §13 knobs, the clamped ratio, actor/ppo_kl, and the row
// helpers of the sequence-level losses. The losses themselves: policy-clip.ts (PPO clip,
// vanilla PG), policy-sequence.ts (GSPO, GSPO-token, GMPO), policy-covariance.ts (Clip-Cov,
// KL-Cov), policy-cispo-sapo.ts (CISPO, SAPO); the registry is POLICY_LOSSES in losses.ts.
// Each loss is one PolicyLossEntry: its function and what the rest of the lab reads about it
// (the schema's enum, the page's help, the loss code's traits, the verl and TRL exports).
// Tested by rl/algos/losses.test.ts and policy-losses.test.ts (`npx vitest run rl/algos/`).
import { AGG } from "./aggregation.ts";
import { type Arr, clamp, flatten, maskedMean } from "./types.ts";

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

/** How an entry maps onto another engine: the same, approximately, or not at all. */
export interface EngineMapping {
  status: "mapped" | "approx" | "unmapped";
  /** The engine's name for it ("" when it has none). */
  name: string;
  /** How it maps, or why it does not. */
  how: string;
}

/** A knob the loss reads: its config path, default and range (the schema holds the same). */
export interface LossParam {
  path: string;
  default: number;
  min?: number;
  max?: number;
  help: string;
}

/** One policy loss as the registry describes it. */
export interface PolicyLossEntry {
  name: string;
  /** One line for the page's help. */
  summary: string;
  /** The paper, as "Title arXiv id" (docs/ALGORITHMS.md has its section). */
  paper: string;
  fn: PolicyLossFn;
  params?: readonly LossParam[];
  traits: {
    /**
     * The loss value of every token depends on its whole row (a sequence ratio), so per-token
     * factors (the rollout IS weights) scale the row by one constant: "mean" the mean of its
     * tokens' weights, "geometric" their geometric mean (verl `geo_mean`). Absent: per token.
     */
    rowScale?: "mean" | "geometric";
    /** It returns its own aggregation weights and ignores rl.loss_agg. */
    ownAggregation?: boolean;
  };
  verl: EngineMapping;
  /**
   * TRL's GRPOConfig loss_type and importance_sampling_level; loss_type null = TRL's name for
   * the run's rl.loss_agg (TRL's aggregations are loss types).
   */
  trl: EngineMapping & { lossType: string | null; level: "token" | "sequence" };
}

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

/**
 * ρ = exp(clamp(lp − lp_old, −20, 20)) and dρ/dlp (0 where the clamp is active). verl clamps so
 * in `vanilla` (ppo-clip), `cispo` and `sapo`; the lab uses the same ratio in Clip-Cov and KL-Cov
 * too, where verl does not clamp (docs/ALGORITHMS.md "Differences from verl").
 */
export function ratio(lp: number, lpOld: number): { rho: number; drho: number } {
  const d = lp - lpOld;
  const rho = Math.exp(clamp(d, -20, 20));
  return { rho, drho: d < -20 || d > 20 ? 0 : rho };
}

/** actor/ppo_kl: masked mean of lp_old − lp with the log-ratio clamped at ±20, as the loss sees it (verl). */
export function ppoKl(input: PolicyLossInput): number {
  const d = new Float64Array(input.mask.length);
  for (let i = 0; i < d.length; i++) d[i] = -clamp(input.logprob[i] - input.oldLogprob[i], -20, 20);
  return maskedMean(d, input.mask);
}

/** Row ranges [start, end) of the flat arrays; a sequence-level loss cannot run without them. */
export function rowRanges(input: PolicyLossInput, name: string): [number, number][] {
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
export function seqMeanWeights(input: PolicyLossInput, rows: [number, number][], totalSeqs?: number) {
  const masks = rows.map(([s, e]) => Array.from({ length: e - s }, (_, j) => input.mask[s + j]));
  return flatten(AGG["seq-mean-token-mean"](masks, { totalSeqs }));
}

export function outputs(N: number) {
  return {
    loss: new Float64Array(N),
    grad: new Float64Array(N),
    gradAdv: new Float64Array(N),
    clipped: new Uint8Array(N),
    clippedLower: new Uint8Array(N),
  };
}
