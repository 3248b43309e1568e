// Micro-batches (rl.micro_batch_size): a minibatch back-propagated in pieces gives the
// whole-minibatch gradient, for a loss that couples the rows (token-mean over the minibatch,
// each row's weight depending on the batch mean), on a full model and on a LoRA adapter.
// Run: npx vitest run --project unit rl/microbatch.test.ts
import { describe, expect, it } from "vitest";
import { assertClose } from "../kernels/testing";
import { modelConfig } from "../model/config";
import { CpuModel } from "../model/cpu";
import { loraLayout, randomLora } from "../model/lora";
import { type MinibatchPlan, type SeqRow, trainMinibatches } from "./minibatch";

const rows: SeqRow[] = Array.from({ length: 5 }, (_, i) => ({
  prompt: Array.from({ length: 2 + (i % 3) }, (_, j) => (i * 7 + j * 3) % 13),
  response: Array.from({ length: 3 + ((i * 2) % 4) }, (_, j) => (i * 5 + j * 11 + 1) % 13),
}));

async function gradsWith(model: CpuModel, microSize: number): Promise<{ grads: Float32Array; loss: number }> {
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

describe("micro-batches", () => {
  const tiny = { layers: 2, dModel: 16, heads: 2, context: 16, vocab: 13 };
  for (const lora of [false, true]) {
    it(`equal the whole-minibatch gradient (${lora ? "LoRA adapter" : "full model"}), micro sizes 1, 2 and 3`, async () => {
      const c = modelConfig({
        ...tiny,
        ...(lora ? { norm: "rmsnorm", mlp: "swiglu", positional: "rope" } : {}),
        lora: {
          rank: lora ? 2 : 0,
          alpha: 4,
          targets: ["q_proj", "v_proj", "o_proj", "up_proj", "down_proj"],
        },
      });
      const adapter = lora ? randomLora(loraLayout(c, c.lora), 3) : undefined;
      const whole = await gradsWith(new CpuModel(c, undefined, 1, adapter), 0);
      expect(whole.grads.some((x) => x !== 0)).toBe(true);
      for (const micro of [1, 2, 3]) {
        const got = await gradsWith(new CpuModel(c, undefined, 1, adapter), micro);
        expect(Math.abs(got.loss - whole.loss)).toBeLessThan(1e-6);
        assertClose(`grads, micro ${micro}`, got.grads, whole.grads, { atol: 1e-7, rtol: 1e-4 });
      }
    });
  }
});
