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
// This file is the registry of the policy losses (POLICY_LOSS) and holds the small terms; the
// policy losses live by family: policy-loss.ts (their shared contract), policy-clip.ts,
// policy-sequence.ts, policy-covariance.ts, policy-cispo-sapo.ts; aggregation.ts the AGG modes.
// Tested by rl/algos/losses.test.ts (`npx vitest run rl/algos/`).

import { own } from "../../config/own.ts";
import { AGG, type AggFn, type AggMode, type AggOptions, aggregate } from "./aggregation.ts";
import { CISPO, cispo, SAPO, sapo } from "./policy-cispo-sapo.ts";
import { PPO_CLIP, ppoClip, VANILLA_PG, vanillaPg } from "./policy-clip.ts";
import { CLIP_COV, clipCov, KL_COV, klCov, tokenCovariance } from "./policy-covariance.ts";
import {
  POLICY_LOSS_DEFAULTS,
  type PolicyLossEntry,
  type PolicyLossFn,
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossOutput,
  ratio,
} from "./policy-loss.ts";
import { GMPO, GSPO, GSPO_TOKEN, gmpo, gspo, gspoToken } from "./policy-sequence.ts";
import { type Arr, clamp, maskedMean, sum } from "./types.ts";

export {
  AGG,
  type AggFn,
  type AggMode,
  type AggOptions,
  aggregate,
  cispo,
  clipCov,
  gmpo,
  gspo,
  gspoToken,
  klCov,
  POLICY_LOSS_DEFAULTS,
  type PolicyLossEntry,
  type PolicyLossFn,
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossOutput,
  ppoClip,
  ratio,
  sapo,
  tokenCovariance,
  vanillaPg,
};

/**
 * The policy-loss registry: one entry per loss, in the order the page lists them. A new loss is
 * one file (its function and its PolicyLossEntry) and one line here; the schema's enum, the
 * page's help, the loss code's traits and the verl and TRL exports read it from this list.
 */
export const POLICY_LOSSES: readonly PolicyLossEntry[] = [
  PPO_CLIP,
  VANILLA_PG,
  GSPO,
  GSPO_TOKEN,
  GMPO,
  CISPO,
  SAPO,
  CLIP_COV,
  KL_COV,
];

export const POLICY_LOSS: Record<string, PolicyLossFn> = Object.fromEntries(
  POLICY_LOSSES.map((e) => [e.name, e.fn]),
);

/** The registry's entry for a policy loss name; throws naming the known ones. */
export function policyLossEntry(name: string): PolicyLossEntry {
  const e = POLICY_LOSSES.find((x) => x.name === name);
  if (!e)
    throw new Error(
      `rl.policy_loss: unknown policy loss "${name}" (known: ${POLICY_LOSSES.map((x) => x.name).join(", ")})`,
    );
  return e;
}

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
  const fn = own(KL, name);
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
