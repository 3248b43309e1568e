// CISPO and SAPO (ALGORITHMS.md §13): the clipped importance weight as a stop-gradient
// scale (CISPO) and the soft sigmoid gate in place of the clip (SAPO).
// Tested by rl/algos/losses.test.ts and policy-losses.test.ts (`npx vitest run rl/algos/`).
import {
  outputs,
  POLICY_LOSS_DEFAULTS,
  type PolicyLossEntry,
  type PolicyLossFn,
  ppoKl,
  ratio,
  rowRanges,
  seqMeanWeights,
} from "./policy-loss.ts";
import { clamp, maskedMean } from "./types.ts";

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

export const CISPO: PolicyLossEntry = {
  name: "cispo",
  summary: "CISPO: −sg(clip(ρ))·A·log π, every token keeps a gradient scaled by its clipped weight.",
  paper: "MiniMax-M1 (CISPO) arXiv 2506.13585",
  fn: cispo,
  traits: {},
  verl: { status: "mapped", name: "cispo", how: "the same clipped stop-gradient weight on -A*log(pi)" },
  trl: {
    status: "mapped",
    name: "cispo",
    lossType: "cispo",
    level: "token",
    how: "TRL's cispo caps the weight from above only (epsilon_high = 1 + rl.clip_eps_high)",
  },
};

export const SAPO: PolicyLossEntry = {
  name: "sapo",
  summary: "SAPO: a soft sigmoid gate on the ratio in place of the clip, seq-mean-token-mean.",
  paper: "SAPO arXiv 2511.20347",
  fn: sapo,
  params: [
    { path: "rl.sapo.tau_pos", default: 1.0, min: 0, help: "gate temperature where A > 0" },
    { path: "rl.sapo.tau_neg", default: 1.05, min: 0, help: "gate temperature where A <= 0" },
  ],
  traits: { ownAggregation: true },
  verl: { status: "mapped", name: "sapo", how: "the same soft gate; tau_pos/tau_neg from rl.sapo" },
  trl: {
    status: "mapped",
    name: "sapo",
    lossType: "sapo",
    level: "token",
    how: "TRL's sapo loss with the same temperatures",
  },
};
