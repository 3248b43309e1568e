// The clipped-ratio family (ALGORITHMS.md §1, §12): PPO's clipped surrogate with
// clip-higher and dual-clip, and vanilla policy gradient. Per-token, aggregated by rl.loss_agg.
// Tested by rl/algos/losses.test.ts (`npx vitest run rl/algos/`).
import { type PolicyLossEntry, type PolicyLossFn, ppoKl, ratio } from "./policy-loss.ts";
import { clamp, maskedMean } from "./types.ts";

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

export const PPO_CLIP: PolicyLossEntry = {
  name: "ppo-clip",
  summary: "PPO's clipped surrogate, with clip-higher (ε_high) and dual-clip (c) on negative advantages.",
  paper: "PPO arXiv 1707.06347; dual-clip arXiv 1912.09729",
  fn: ppoClip,
  traits: {},
  verl: {
    status: "mapped",
    name: "vanilla",
    how: "verl's vanilla loss is the clipped surrogate with clip-higher and dual clip",
  },
  trl: {
    status: "mapped",
    name: "",
    lossType: null,
    level: "token",
    how: "TRL's clipped surrogate, loss_type from rl.loss_agg",
  },
};

export const VANILLA_PG: PolicyLossEntry = {
  name: "vanilla-pg",
  summary: "Plain policy gradient −A·log π per token: no ratio, no clip.",
  paper: "REINFORCE (Williams 1992); VAPO arXiv 2504.05118 lists it",
  fn: vanillaPg,
  traits: {},
  verl: {
    status: "approx",
    name: "gpg",
    how: "verl's GPG loss is the same -A*log(pi) without ratio or clip",
  },
  trl: {
    status: "unmapped",
    name: "",
    lossType: null,
    level: "token",
    how: "TRL's losses are the clipped surrogate, GSPO's sequence ratio, CISPO and SAPO; the export writes the clipped surrogate",
  },
};
