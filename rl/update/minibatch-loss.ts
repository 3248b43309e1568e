// The RL loss of one minibatch and its gradient w.r.t. each token's log-prob, entropy and value
// (the loss lives in TypeScript as per-token weights; the fused log-softmax kernel
// turns them into logit gradients). It composes the registries of rl/algos: policy loss,
// entropy shaping of the advantage, KL in the loss, entropy bonus, VAPO's positive-example LM
// loss and the clipped value loss, aggregated by rl.loss_agg (the policy term by its own weights
// for the sequence-level losses GSPO, GMPO and SAPO, which see the row lengths).
// Tested by rl/update/policy-loss-fd.test.ts (finite differences for every policy loss),
// rl/run/trainer.test.ts (tool tokens get zero gradient through every term), rl/update/vapo.test.ts
// (the positive-example LM term) and rl/run/registry-run.test.ts (every registry entry in a run).
import type { RunConfig } from "../../config";
import {
  AGG,
  aggregate,
  entropyTerm,
  explainedVariance,
  klTerm,
  POLICY_LOSS,
  policyLossEntry,
  positiveLm,
  valueLoss,
} from "../algos/losses";
import { actorMetrics, topEntropyMask } from "../algos/masks";
import { SHAPING } from "../algos/shaping";
import { flatten, maskedMean, unflatten } from "../algos/types";
import { aggOptions, policyLossOptions, shapingOptions } from "../common/config-options";

// Losses whose tokens all carry their row's sequence ratio in value and gradient (the entry's
// traits.rowScale): a token's loss depends on every log-prob of its row, so a per-token factor
// cannot scale one token alone (the gradient would no longer be the loss's). There the row is
// scaled by one constant: GMPO by the geometric mean of its tokens' IS weights (verl
// `geo_mean`), GSPO by their pw-weighted mean (no verl counterpart: verl's `gspo` is the token
// form). GSPO-token has no rowScale: its gradient flows only through each token's own log-prob
// (the stop-gradient form), so each token keeps its own weight, as verl multiplies them.

/** Replaces each row's per-token factors by their pw-weighted mean over the row, in place. */
function rowMeanScale(scale: Float64Array, pw: ArrayLike<number>, lens: readonly number[]): void {
  let at = 0;
  for (const L of lens) {
    let num = 0;
    let den = 0;
    for (let i = at; i < at + L; i++) {
      num += pw[i] * scale[i];
      den += pw[i];
    }
    const m = den > 0 ? num / den : 1;
    for (let i = at; i < at + L; i++) scale[i] = m;
    at += L;
  }
}

/**
 * Replaces each row's IS weights by their mask-weighted geometric mean, in place:
 * exp(Σ m·log(w + 1e-10) / Σ m), verl's `geo_mean` aggregation of rollout IS weights.
 */
function rowGeoMeanScale(w: Float64Array, mask: ArrayLike<number>, lens: readonly number[]): void {
  let at = 0;
  for (const L of lens) {
    let num = 0;
    let den = 0;
    for (let i = at; i < at + L; i++) {
      num += mask[i] * Math.log(w[i] + 1e-10);
      den += mask[i];
    }
    const g = den > 0 ? Math.exp(num / den) : 1;
    for (let i = at; i < at + L; i++) w[i] = g;
    at += L;
  }
}

/** Per-row (response-position) inputs of one minibatch. */
export interface MinibatchInput {
  logprob: ArrayLike<number>[];
  entropy: ArrayLike<number>[];
  /** Loss mask: 1 = trained. */
  mask: ArrayLike<number>[];
  oldLogprob: ArrayLike<number>[];
  advantages: ArrayLike<number>[];
  postTool: ArrayLike<number>[];
  refLogprob?: ArrayLike<number>[];
  values?: ArrayLike<number>[];
  oldValues?: ArrayLike<number>[];
  returns?: ArrayLike<number>[];
  /** Per row: the trajectory was judged correct (VAPO positive-example LM loss). */
  correct?: boolean[];
  /** Rollout-correction IS weights (rl/update/sampler-mismatch.ts): multiply the policy term's per-token loss and gradient. */
  isWeights?: ArrayLike<number>[];
}

/** One minibatch's rows, flattened to token arrays. */
type FlatMinibatch = {
  logprob: Float64Array;
  entropy: Float64Array;
  mask: Float64Array;
  old: Float64Array;
  adv: Float64Array;
  postTool: Float64Array;
};

/**
 * The policy term's per-token factors after the loss. GSPO, GMPO and SAPO fix their own
 * aggregation of the policy term (pl.weights). The rollout correction's IS weights and the
 * top-entropy selection scale the policy term per token after it (per row for the
 * sequence-ratio losses, traits.rowScale: GMPO's IS weights by their geometric mean, as verl);
 * the aggregation's denominator stays (TRL's entropy mask, verl's IS weights). Also returns the
 * tokens a selection rule picked, for the inspector: Clip-Cov / KL-Cov's covariance picks, or
 * the top-entropy tokens that keep their policy loss.
 */
function policyScale(
  r: RunConfig["rl"],
  x: MinibatchInput,
  flat: FlatMinibatch,
  lens: readonly number[],
  plSelected: ArrayLike<number> | undefined,
  pw: ArrayLike<number>,
  metrics: Record<string, number>,
): { scale: Float64Array; selected: Float64Array | undefined } {
  const rowScale = policyLossEntry(r.policy_loss).traits.rowScale;
  const scale = new Float64Array(pw.length).fill(1);
  let isScale: Float64Array | undefined;
  if (x.isWeights) {
    isScale = flatten(x.isWeights);
    if (rowScale === "geometric") rowGeoMeanScale(isScale, flat.mask, lens);
    else for (let i = 0; i < scale.length; i++) scale[i] *= isScale[i];
  }
  let selected: Float64Array | undefined = plSelected ? Float64Array.from(plSelected) : undefined;
  if (r.top_entropy_quantile < 1) {
    const sel = topEntropyMask(flat.entropy, flat.mask, r.top_entropy_quantile);
    for (let i = 0; i < scale.length; i++) scale[i] *= sel[i];
    metrics["actor/entropy_selected_frac"] = maskedMean(sel, flat.mask);
    selected = selected ? selected.map((x, i) => Math.max(x, sel[i])) : sel;
  }
  if (rowScale) rowMeanScale(scale, pw, lens);
  if (isScale && rowScale === "geometric") for (let i = 0; i < scale.length; i++) scale[i] *= isScale[i];
  return { scale, selected };
}

/**
 * Adds the terms beside the policy loss to `loss`, `dlogp` and `dent` (in place): KL in the
 * loss, the entropy bonus, VAPO's positive-example LM loss and the clipped value loss, each
 * aggregated by rl.loss_agg's `weights`. Returns the loss and the value gradient per row.
 */
function addAuxTerms(
  loss: number,
  r: RunConfig["rl"],
  x: MinibatchInput,
  flat: FlatMinibatch,
  ref: Float64Array | undefined,
  weights: ArrayLike<number>,
  grads: { dlogp: Float64Array; dent: Float64Array; lens: readonly number[] },
  metrics: Record<string, number>,
): { loss: number; dvalue: Float64Array[] | undefined } {
  const { dlogp, dent, lens } = grads;
  if (r.kl.in === "loss" && r.kl.coef > 0 && ref) {
    const kl = klTerm(r.kl.estimator, flat.logprob, ref, flat.mask, r.kl.coef);
    loss += aggregate(kl.value, weights);
    for (let i = 0; i < dlogp.length; i++) dlogp[i] += kl.grad[i] * weights[i];
  }
  if (r.entropy_coef > 0) {
    const et = entropyTerm(flat.entropy, weights, r.entropy_coef);
    loss += et.loss;
    for (let i = 0; i < dent.length; i++) dent[i] += et.gradH[i];
  }
  if (r.positive_lm_coef > 0 && x.correct) {
    const correct = x.correct;
    const pos = positiveLm(x.logprob.map((lp, b) => ({ logprob: lp, mask: x.mask[b], correct: correct[b] })));
    const g = flatten(pos.grad);
    loss += r.positive_lm_coef * pos.loss;
    for (let i = 0; i < dlogp.length; i++) dlogp[i] += r.positive_lm_coef * g[i];
    metrics["actor/positive_lm_loss"] = pos.loss;
  }
  let dvalue: Float64Array[] | undefined;
  if (x.values && x.oldValues && x.returns) {
    const values = flatten(x.values);
    const returns = flatten(x.returns);
    const vl = valueLoss({ values, oldValues: flatten(x.oldValues), returns, mask: flat.mask }, r.value_clip);
    const vfLoss = aggregate(vl.loss, weights);
    metrics["critic/vf_loss"] = vfLoss;
    metrics["critic/vf_explained_var"] = explainedVariance(returns, values, flat.mask);
    loss += r.value_coef * vfLoss;
    dvalue = unflatten(
      vl.grad.map((g, i) => g * weights[i] * r.value_coef),
      lens,
    );
  }
  return { loss, dvalue };
}

/**
 * The RL loss of one minibatch and its gradient w.r.t. each token's log-prob, entropy and
 * value, per row: policy loss (with optional entropy shaping of the advantage), KL in the
 * loss, entropy bonus and the clipped value loss, aggregated by rl.loss_agg (or by the policy
 * loss's own weights for its term). Tokens with mask 0 get exactly zero gradient.
 */
export function minibatchLoss(c: RunConfig, x: MinibatchInput) {
  const r = c.rl;
  const lens = x.mask.map((m) => m.length);
  const flat: FlatMinibatch = {
    logprob: flatten(x.logprob),
    entropy: flatten(x.entropy),
    mask: flatten(x.mask),
    old: flatten(x.oldLogprob),
    adv: flatten(x.advantages),
    postTool: flatten(x.postTool),
  };
  const metrics: Record<string, number> = {};
  const weights = flatten(AGG[r.loss_agg](x.mask, aggOptions(c)));
  const shaping = c.shaping.kind !== "none" ? SHAPING[c.shaping.kind] : undefined;
  const shaped = shaping?.(
    { advantages: flat.adv, entropy: flat.entropy, mask: flat.mask, postTool: flat.postTool },
    shapingOptions(c),
  );
  const lossFn = POLICY_LOSS[r.policy_loss];
  if (!lossFn) throw new Error(`rl.policy_loss: unknown loss "${r.policy_loss}"`);
  const pl = lossFn(
    {
      logprob: flat.logprob,
      oldLogprob: flat.old,
      advantages: shaped?.advantages ?? flat.adv,
      mask: flat.mask,
      lengths: lens,
    },
    policyLossOptions(r),
  );
  const pw = pl.weights ?? weights;
  const { scale, selected } = policyScale(r, x, flat, lens, pl.selected, pw, metrics);
  const dlogp = pl.grad.map((g, i) => g * pw[i] * scale[i]);
  const pgLoss = aggregate(
    pl.loss.map((l, i) => l * scale[i]),
    pw,
  );
  metrics["actor/pg_loss"] = pgLoss;
  const dent = new Float64Array(dlogp.length);
  if (shaped) {
    const back = shaped.backward(pl.gradAdv.map((g, i) => g * pw[i] * scale[i]));
    for (let i = 0; i < dent.length; i++) dent[i] += back[i];
  }
  const ref = x.refLogprob ? flatten(x.refLogprob) : undefined;
  const { loss, dvalue } = addAuxTerms(pgLoss, r, x, flat, ref, weights, { dlogp, dent, lens }, metrics);
  Object.assign(
    metrics,
    actorMetrics(
      {
        mask: flat.mask,
        entropy: flat.entropy,
        postTool: flat.postTool,
        logprob: flat.logprob,
        oldLogprob: flat.old,
        refLogprob: ref,
      },
      r.kl.estimator,
    ),
    pl.metrics, // after actorMetrics: a loss may log ppo_kl its own way (KL-Cov: mean |δ|)
  );
  return {
    loss,
    dlogp: unflatten(dlogp, lens),
    dentropy: unflatten(dent, lens),
    dvalue,
    metrics,
    selected: selected ? unflatten(selected, lens) : undefined,
  };
}
