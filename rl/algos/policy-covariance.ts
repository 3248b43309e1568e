// The covariance methods (The Entropy Mechanism of RL for Reasoning LMs, ALGORITHMS.md
// §13): Clip-Cov and KL-Cov, with a deterministic top-n selection so runs replay.
// Tested by rl/algos/losses.test.ts and policy-losses.test.ts (`npx vitest run rl/algos/`).
import { ppoClip } from "./policy-clip.ts";
import {
  outputs,
  POLICY_LOSS_DEFAULTS,
  type PolicyLossEntry,
  type PolicyLossFn,
  type PolicyLossInput,
  ppoKl,
  ratio,
} from "./policy-loss.ts";
import { type Arr, maskedMean } from "./types.ts";

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
 * (verl's metric); the PPO ratio clip is in `clipped`. The ratio is ppo-clip's, clamped at
 * |δ| ≤ 20; verl's `clip_cov` takes exp(δ) unclamped, so with A < 0 and δ > 20 its loss is
 * −A·e^δ with that gradient, the lab's −A·e^20 with none (the lab's choice; docs/ALGORITHMS.md
 * "Differences from verl").
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
 * token is excluded). ppo_kl is logged as the masked mean of |δ| (verl's metric). ρ is clamped
 * at |δ| ≤ 20 (gradient 0 beyond); verl's `kl_cov` takes exp(δ) unclamped, so a token with
 * δ > 20 gives it a loss −A·e^δ (e^30 ≈ 1e13) and that gradient (the lab's choice;
 * docs/ALGORITHMS.md "Differences from verl").
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

const TRL_NONE =
  "TRL's losses are the clipped surrogate, GSPO's sequence ratio, CISPO and SAPO; the export writes the clipped surrogate";

export const CLIP_COV: PolicyLossEntry = {
  name: "clip-cov",
  summary:
    "Clip-Cov: the PPO clip, with the gradient removed from a few tokens of high advantage-log-prob covariance.",
  paper: "The Entropy Mechanism of RL for Reasoning LMs arXiv 2505.22617",
  fn: clipCov,
  params: [
    {
      path: "rl.clip_cov.ratio",
      default: 2e-4,
      min: 0,
      max: 1,
      help: "fraction of tokens whose gradient is removed",
    },
    { path: "rl.clip_cov.lb", default: 1, help: "candidates have covariance above this" },
    { path: "rl.clip_cov.ub", default: 5, help: "candidates have covariance below this" },
  ],
  traits: {},
  verl: {
    status: "approx",
    name: "clip_cov",
    how: "verl draws the tokens to exclude at random among the candidates and per micro-batch; the lab takes the largest covariances (ties by position) per minibatch so runs replay; they agree when there are at most n candidates",
  },
  trl: { status: "unmapped", name: "", lossType: null, level: "token", how: TRL_NONE },
};

export const KL_COV: PolicyLossEntry = {
  name: "kl-cov",
  summary: "KL-Cov: −A·ρ with a κ·|log ρ| penalty on the tokens of highest covariance, no clip.",
  paper: "The Entropy Mechanism of RL for Reasoning LMs arXiv 2505.22617",
  fn: klCov,
  params: [
    { path: "rl.kl_cov.ratio", default: 2e-4, min: 0, max: 1, help: "fraction of tokens penalised" },
    { path: "rl.kl_cov.coef", default: 1, min: 0, help: "κ, the penalty's weight" },
  ],
  traits: {},
  verl: {
    status: "approx",
    name: "kl_cov",
    how: "the same top covariances get kappa*|log-ratio|; verl selects per micro-batch (and torch.topk breaks ties its own way), the lab per minibatch with ties by position",
  },
  trl: { status: "unmapped", name: "", lossType: null, level: "token", how: TRL_NONE },
};
