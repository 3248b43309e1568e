// The minibatch loop every update shares (SFT, the RL update, value pretraining): epochs x
// minibatches of pack -> forward -> per-token loss gradients -> backward -> AdamW, stopping at
// the first non-finite loss or gradient norm (a step's norm is looked at after the next forward,
// so on the GPU it comes back with that forward's readback). A minibatch may be split into
// micro-batches (gradient accumulation, verl's ppo_micro_batch_size_per_gpu): every micro-batch
// is scored first, the loss and its per-token gradients are computed on the whole minibatch,
// then each micro-batch's forward is recomputed and its slice of the gradients is
// back-propagated, adding into the gradient buffer. Also scoring without gradients (old, reference
// and value estimates) and a step that moves only some tensors (value pretraining).
// Tested through rl/run/trainer.test.ts, rl/update/vapo.test.ts and rl/run/registry-run.test.ts.
import type { AdamWHparams, PolicyModel, StepResult } from "../../model/api";
import type { TensorSpec } from "../../model/config";
import { mean } from "../algos/types";
import { type Truncation, truncatedLogprobs, truncates } from "./sampler-mismatch";
import { gatherRows, packSequences, scatterRows } from "./score-batch";

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
  /** Rows per micro-batch (gradient accumulation); 0 or >= size: the whole minibatch at once. */
  microSize?: number;
  epochs: number;
  context: number;
  /** The row order of an epoch (called once per epoch, in order). */
  order(epoch: number): number[];
  /** The loss of rows idx (index: where their response tokens sit in their packed (micro-)batch, -1 past the context). */
  loss(idx: number[], scores: RowScores, index: Int32Array[]): MinibatchGrads;
  /** The optimizer step after backward. */
  step(): PromiseLike<StepResult>;
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
  // With policy.lateStepResults a step's result is awaited after the next forward: its norm
  // rides on that forward's readback (one readback a minibatch), and a non-finite norm was
  // already a no-op on the GPU. Otherwise it is awaited at once.
  let stepping: PromiseLike<StepResult> | undefined;
  const settle = async () => {
    if (!stepping) return;
    const st = await stepping;
    stepping = undefined;
    if (st.skipped) skipped = `non-finite gradient norm at ${plan.where}; update skipped`;
    else push(plan.gradNormKey, st.gradNorm);
  };
  for (let epoch = 0; epoch < plan.epochs && !skipped; epoch++) {
    const order = plan.order(epoch);
    for (let s = 0; s < order.length && !skipped; s += plan.size) {
      const idx = order.slice(s, s + plan.size);
      if (plan.microSize && plan.microSize < idx.length) {
        const r = await microBatched(policy, plan, idx);
        tokens += r.tokens;
        for (const [k, v] of Object.entries(r.metrics)) push(k, v);
        if (r.skipped) {
          skipped = r.skipped;
          break;
        }
        const st = await plan.step();
        if (st.skipped) skipped = `non-finite gradient norm at ${plan.where}; update skipped`;
        else push(plan.gradNormKey, st.gradNorm);
        continue;
      }
      const { batch, index } = packSequences(
        idx.map((i) => plan.rows[i]),
        plan.context,
        plan.temperature,
      );
      const size = batch.B * batch.T;
      policy.zeroGrad();
      const out = await policy.forwardScore(batch);
      await settle();
      if (skipped) break;
      tokens += size;
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
      stepping = plan.step();
      if (!policy.lateStepResults) await settle();
    }
  }
  await settle();
  const metrics: Record<string, number> = {};
  for (const [k, v] of acc) metrics[k] = mean(v);
  return { metrics, skipped, tokens };
}

/** One minibatch as micro-batches: score all, loss on the whole, then recompute + backward each (gradients add). */
async function microBatched(
  policy: PolicyModel,
  plan: MinibatchPlan,
  idx: number[],
): Promise<{ tokens: number; metrics: Record<string, number>; skipped?: string }> {
  const micro = plan.microSize!;
  const packs: ReturnType<typeof packSequences>[] = [];
  for (let i = 0; i < idx.length; i += micro) {
    packs.push(
      packSequences(
        idx.slice(i, i + micro).map((r) => plan.rows[r]),
        plan.context,
        plan.temperature,
      ),
    );
  }
  const scores: RowScores = { logp: [], entropy: [] };
  const index: Int32Array[] = [];
  let tokens = 0;
  for (const p of packs) {
    const sc = scoresOf(await policy.forwardScore(p.batch), p.index);
    scores.logp.push(...sc.logp);
    scores.entropy.push(...sc.entropy);
    if (sc.values) {
      scores.values ??= [];
      scores.values.push(...sc.values);
    }
    index.push(...p.index);
  }
  const g = plan.loss(idx, scores, index);
  if (!Number.isFinite(g.loss))
    return {
      tokens,
      metrics: g.metrics,
      skipped: `non-finite ${plan.lossName ?? "loss"} at ${plan.where}; update skipped`,
    };
  policy.zeroGrad();
  let row = 0;
  for (const p of packs) {
    const n = p.index.length;
    const size = p.batch.B * p.batch.T;
    const part = (x: readonly ArrayLike<number>[] | undefined) =>
      x ? scatterRows(x.slice(row, row + n), p.index, size) : undefined;
    tokens += size;
    await policy.forwardScore(p.batch); // recompute: the model keeps one forward's activations
    await policy.backward({
      dlogp: part(g.dlogp) ?? new Float32Array(size),
      dentropy: part(g.dentropy),
      dvalue: part(g.dvalue),
    });
    row += n;
  }
  return { tokens, metrics: g.metrics };
}

/**
 * Scores rows in chunks of `size` rows (no gradient is kept) at `temperature` (default 1).
 * With `truncation`, also each response token's log-prob under the sampler's top-k/top-p set
 * (rl/update/sampler-mismatch.ts; reads the logits back).
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
