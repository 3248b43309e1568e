// Test helper shared by the micro-batch and recomputation tests (rl/update/microbatch.test.ts,
// model/recompute.gpu.test.ts): five packed rows of different lengths (vocab 13) and the
// gradient of a loss that couples them (token-mean over the minibatch, each row's weight
// depending on the batch mean), back-propagated through the one minibatch loop with or without
// micro-batches.
import type { PolicyModel } from "../model/api";
import { type MinibatchPlan, type SeqRow, trainMinibatches } from "../rl/update/minibatch-loop";

export const COUPLED_ROWS: SeqRow[] = Array.from({ length: 5 }, (_, i) => ({
  prompt: Array.from({ length: 2 + (i % 3) }, (_, j) => (i * 7 + j * 3) % 13),
  response: Array.from({ length: 3 + ((i * 2) % 4) }, (_, j) => (i * 5 + j * 11 + 1) % 13),
}));

/** The trained parameters' gradient (and the loss) of one minibatch of COUPLED_ROWS in micro-batches of `microSize` (0: whole). */
export async function coupledGrads(
  model: PolicyModel,
  microSize: number,
): Promise<{ grads: Float32Array; loss: number }> {
  const rows = COUPLED_ROWS;
  let grads: Float32Array = new Float32Array();
  let lossSeen = Number.NaN;
  const plan: MinibatchPlan = {
    rows,
    size: rows.length,
    microSize,
    temperature: 0.7,
    epochs: 1,
    context: model.config.context,
    order: () => rows.map((_, i) => i),
    loss: (_idx, s) => {
      // token-mean over the minibatch, rows weighted by how far their mean logp is from the batch mean
      const n = s.logp.reduce((a, r) => a + r.length, 0);
      const rowMean = s.logp.map((r) => r.reduce((a, x) => a + x, 0) / r.length);
      const batchMean = rowMean.reduce((a, x) => a + x, 0) / rowMean.length;
      const w = rowMean.map((m) => 1 + 0.5 * Math.tanh(m - batchMean)); // treated as constants (stop-gradient)
      let loss = 0;
      for (let b = 0; b < s.logp.length; b++)
        for (let j = 0; j < s.logp[b].length; j++) loss -= (w[b] * s.logp[b][j] + 0.01 * s.entropy[b][j]) / n;
      lossSeen = loss;
      return {
        loss,
        dlogp: s.logp.map((r, b) => r.map(() => -w[b] / n)),
        dentropy: s.entropy.map((r) => r.map(() => -0.01 / n)),
        metrics: { loss },
      };
    },
    step: async () => {
      grads = await model.getGrads();
      return { gradNorm: 0, skipped: false };
    },
    gradNormKey: "actor/grad_norm",
    where: "test",
  };
  await trainMinibatches(model, plan);
  return { grads, loss: lossSeen };
}
