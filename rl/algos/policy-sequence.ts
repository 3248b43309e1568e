// Sequence-level policy losses (ALGORITHMS.md §13): GSPO, GSPO-token and GMPO. Each sees
// the row lengths, gives each token its sequence's loss value and returns its own
// aggregation weights (see losses.ts's header for the per-token form).
// Tested by rl/algos/losses.test.ts and policy-losses.test.ts (`npx vitest run rl/algos/`).
import {
  outputs,
  type PolicyLossEntry,
  type PolicyLossFn,
  ppoKl,
  rowRanges,
  seqMeanWeights,
} from "./policy-loss.ts";
import { clamp, maskedMean } from "./types.ts";

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
 * ±20 first (§0) so ρ stays finite; verl leaves that clamp commented out, so a token with
 * |δ| > 20 on the unclipped side (δ < −20 with A > 0, δ > 20 with A < 0) moves verl's row ratio
 * by δ/|row| unbounded and the lab's by at most 20/|row|, with no gradient through that token
 * (the lab's choice: one stale token cannot swing its row; docs/ALGORITHMS.md "Differences
 * from verl").
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

export const GSPO: PolicyLossEntry = {
  name: "gspo",
  summary:
    "GSPO: the PPO clip on each response's sequence ratio (geometric mean of token ratios), seq-mean-token-mean.",
  paper: "GSPO arXiv 2507.18071",
  fn: gspo,
  traits: { rowScale: "mean", ownAggregation: true },
  verl: {
    status: "approx",
    name: "gspo",
    how: "verl's gspo is GSPO-token (each token keeps its own advantage under the sequence ratio); the same as the lab's sequence-level GSPO when the advantage is constant along a response (the outcome estimators: grpo, rloo, ...), not with GAE or shaping",
  },
  trl: {
    status: "mapped",
    name: "grpo",
    lossType: "grpo",
    level: "sequence",
    how: "GSPO's objective is per sequence, averaged over responses: TRL's grpo aggregation with importance_sampling_level sequence",
  },
};

export const GSPO_TOKEN: PolicyLossEntry = {
  name: "gspo-token",
  summary:
    "GSPO-token: the sequence ratio with each token's own advantage and gradient (stop-gradient form).",
  paper: "GSPO arXiv 2507.18071",
  fn: gspoToken,
  traits: { ownAggregation: true },
  verl: {
    status: "mapped",
    name: "gspo",
    how: "the same token form sg[s_i]*pi/sg[pi], sequence clip, log-ratio capped at 10, seq-mean-token-mean",
  },
  trl: {
    status: "mapped",
    name: "grpo",
    lossType: "grpo",
    level: "sequence",
    how: "TRL's grpo aggregation with importance_sampling_level sequence",
  },
};

export const GMPO: PolicyLossEntry = {
  name: "gmpo",
  summary:
    "GMPO: the geometric mean of sign-aware clipped token ratios per response, a plain mean over responses.",
  paper: "GMPO arXiv 2507.20673",
  fn: gmpo,
  traits: { rowScale: "geometric", ownAggregation: true },
  verl: {
    status: "mapped",
    name: "geo_mean",
    how: "the same sign-aware token clip, geometric-mean ratio and mean over responses (the lab clamps log-ratios at +-20 first, which binds only beyond e^20)",
  },
  trl: {
    status: "unmapped",
    name: "",
    lossType: null,
    level: "token",
    how: "TRL's losses are the clipped surrogate, GSPO's sequence ratio, CISPO and SAPO; the export writes the clipped surrogate",
  },
};
