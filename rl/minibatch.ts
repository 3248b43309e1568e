// The minibatch loop every update shares (SFT, the RL update, value pretraining): epochs x
// minibatches of pack -> forward -> per-token loss gradients -> backward -> AdamW, stopping at
// the first non-finite loss or gradient norm. Also scoring without gradients (old, reference
// and value estimates) and a step that moves only some tensors (value pretraining).
// Tested through rl/trainer.test.ts, rl/vapo.test.ts and rl/registry-run.test.ts.
import type { AdamWHparams, PolicyModel, StepResult } from "../model/api";
import type { TensorSpec } from "../model/config";
import { mean } from "./algos/types";
import { gatherRows, packSequences, scatterRows } from "./batch";
import { type Truncation, truncatedLogprobs, truncates } from "./mismatch";

/** A sequence to score: prompt tokens, then the response tokens the loss sees. */
export interface SeqRow {
  prompt: number[];
  response: number[];
}

/** Per row (response positions): log-probs, entropies and, with a value head, values. */
export interface RowScores {
  logp: Float64Array[];
  entropy: Float64Array[];
  values?: Float64Array[];
}

/** A minibatch loss and its gradient w.r.t. each row's log-probs, entropies and values. */
export interface MinibatchGrads {
  loss: number;
  /** absent: no log-prob gradient (value pretraining) */
  dlogp?: readonly ArrayLike<number>[];
  dentropy?: readonly ArrayLike<number>[];
  dvalue?: readonly ArrayLike<number>[];
  /** averaged over minibatches (finite values only) */
  metrics: Record<string, number>;
}

export interface MinibatchPlan {
  rows: SeqRow[];
  /** rows per minibatch */
  size: number;
  epochs: number;
  context: number;
  /** The row order of an epoch (called once per epoch, in order). */
  order(epoch: number): number[];
  /** The loss of rows idx (index: where their response tokens sit in the packed batch). */
  loss(idx: number[], scores: RowScores, index: Int32Array[]): MinibatchGrads;
  /** The optimizer step after backward. */
  step(): Promise<StepResult>;
  /** The metric the gradient norms are averaged into. */
  gradNormKey: string;
  /** Names the step in a skip message ("RL step 3"), and what its loss is ("loss"). */
  where: string;
  lossName?: string;
  /** Score under softmax(logits / temperature) (the RL update: the sampling temperature); default 1. */
  temperature?: number;
}

export interface MinibatchResult {
  /** the mean of each metric over minibatches */
  metrics: Record<string, number>;
  /** set when an update was skipped: the loss or gradient norm was not finite */
  skipped?: string;
  /** B*T summed over minibatches */
  tokens: number;
}

function scoresOf(
  out: { logp: Float32Array; entropy: Float32Array; values?: Float32Array },
  index: Int32Array[],
) {
  const s: RowScores = { logp: gatherRows(out.logp, index), entropy: gatherRows(out.entropy, index) };
  if (out.values) s.values = gatherRows(out.values, index);
  return s;
}

export async function trainMinibatches(policy: PolicyModel, plan: MinibatchPlan): Promise<MinibatchResult> {
  const acc = new Map<string, number[]>();
  const push = (k: string, v: number) => {
    if (Number.isFinite(v)) acc.set(k, [...(acc.get(k) ?? []), v]);
  };
  let skipped: string | undefined;
  let tokens = 0;
  for (let epoch = 0; epoch < plan.epochs && !skipped; epoch++) {
    const order = plan.order(epoch);
    for (let s = 0; s < order.length && !skipped; s += plan.size) {
      const idx = order.slice(s, s + plan.size);
      const { batch, index } = packSequences(
        idx.map((i) => plan.rows[i]),
        plan.context,
        plan.temperature,
      );
      const size = batch.B * batch.T;
      tokens += size;
      policy.zeroGrad();
      const out = await policy.forwardScore(batch);
      const g = plan.loss(idx, scoresOf(out, index), index);
      for (const [k, v] of Object.entries(g.metrics)) push(k, v);
      if (!Number.isFinite(g.loss)) {
        skipped = `non-finite ${plan.lossName ?? "loss"} at ${plan.where}; update skipped`;
        break;
      }
      await policy.backward({
        dlogp: g.dlogp ? scatterRows(g.dlogp, index, size) : new Float32Array(size),
        dentropy: g.dentropy ? scatterRows(g.dentropy, index, size) : undefined,
        dvalue: g.dvalue ? scatterRows(g.dvalue, index, size) : undefined,
      });
      const st = await plan.step();
      if (st.skipped) skipped = `non-finite gradient norm at ${plan.where}; update skipped`;
      else push(plan.gradNormKey, st.gradNorm);
    }
  }
  const metrics: Record<string, number> = {};
  for (const [k, v] of acc) metrics[k] = mean(v);
  return { metrics, skipped, tokens };
}

/**
 * Scores rows in chunks of `size` rows (no gradient is kept) at `temperature` (default 1).
 * With `truncation`, also each response token's log-prob under the sampler's top-k/top-p set
 * (rl/mismatch.ts; reads the logits back).
 */
export async function scoreAll(
  model: PolicyModel,
  rows: SeqRow[],
  size: number,
  context: number,
  opts: { temperature?: number; truncation?: Truncation } = {},
) {
  const all: RowScores & { truncLogp?: Float64Array[] } = { logp: [], entropy: [] };
  const trunc = opts.truncation && truncates(opts.truncation) ? opts.truncation : undefined;
  for (let i = 0; i < rows.length; i += size) {
    const { batch, index } = packSequences(rows.slice(i, i + size), context, opts.temperature);
    const out = await model.forwardScore(batch, { logits: trunc !== undefined });
    const s = scoresOf(out, index);
    if (trunc) {
      all.truncLogp ??= [];
      all.truncLogp.push(
        ...truncatedLogprobs(out.logp, out.logits!, batch.targets, index, model.config.vocab, trunc),
      );
    }
    all.logp.push(...s.logp);
    all.entropy.push(...s.entropy);
    if (s.values) {
      all.values ??= [];
      all.values.push(...s.values);
    }
  }
  return all;
}

/**
 * An AdamW step that moves only `tensors` (and their moments): every other parameter and
 * moment is put back afterwards. The step counter advances.
 */
export async function stepOnly(
  policy: PolicyModel,
  tensors: TensorSpec[],
  h: AdamWHparams,
): Promise<StepResult> {
  const before = await policy.getWeights();
  const beforeOpt = await policy.getOptimizerState();
  const st = await policy.step(h);
  if (st.skipped) return st;
  const after = await policy.getWeights();
  const afterOpt = await policy.getOptimizerState();
  for (const t of tensors) {
    before.set(after.subarray(t.offset, t.offset + t.size), t.offset);
    beforeOpt.m.set(afterOpt.m.subarray(t.offset, t.offset + t.size), t.offset);
    beforeOpt.v.set(afterOpt.v.subarray(t.offset, t.offset + t.size), t.offset);
  }
  await policy.setWeights(before);
  await policy.setOptimizerState({ ...beforeOpt, step: afterOpt.step });
  return st;
}
