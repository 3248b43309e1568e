// Micro-batches (rl.micro_batch_size): a minibatch back-propagated in pieces gives the
// whole-minibatch gradient, for a loss that couples the rows (token-mean over the minibatch,
// each row's weight depending on the batch mean), on a full model and on a LoRA adapter; and
// per-layer recomputation (model.gradient_checkpointing) on the CPU model gives the same
// gradients bit for bit, micro-batches on.
// Run: npx vitest run --project unit rl/update/microbatch.test.ts
import { describe, expect, it } from "vitest";
import { assertClose } from "../../kernels/testing";
import { modelConfig } from "../../model/config";
import { CpuModel } from "../../model/cpu";
import { forward } from "../../model/cpu-passes";
import { loraLayout, randomLora } from "../../model/lora";
import { coupledGrads as gradsWith } from "../../testing/coupled-minibatch";

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
  for (const lora of [false, true]) {
    it(`per-layer recomputation gives the same gradients bit for bit (${lora ? "LoRA, qwen3-like" : "full model, gpt-like"}), micro-batches of 2`, async () => {
      const c = modelConfig({
        ...tiny,
        layers: 3,
        ...(lora
          ? { norm: "rmsnorm", mlp: "swiglu", positional: "rope", kvHeads: 1, qkNorm: true, qkvBias: false }
          : {}),
        lora: {
          rank: lora ? 2 : 0,
          alpha: 4,
          targets: ["q_proj", "k_proj", "o_proj", "gate_proj", "down_proj"],
        },
      });
      const adapter = lora ? randomLora(loraLayout(c, c.lora), 5) : undefined;
      const plain = await gradsWith(new CpuModel(c, undefined, 2, adapter), 2);
      const m = new CpuModel(c, undefined, 2, adapter);
      m.recompute = true;
      const rec = await gradsWith(m, 2);
      expect(plain.grads.some((x) => x !== 0)).toBe(true);
      expect(rec.loss).toBe(plain.loss);
      expect(Buffer.from(rec.grads.buffer).equals(Buffer.from(plain.grads.buffer))).toBe(true);
      // ...and the forward kept each layer's output only.
      const batch = { B: 1, T: 4, tokens: Int32Array.of(1, 2, 3, 4), targets: Int32Array.of(2, 3, 4, 5) };
      const kept = forward(c, m.views, batch, m.adapter, true).layers;
      expect(kept.map((l) => Object.keys(l))).toEqual([["res3"], ["res3"], ["res3"]]);
    });
  }
});
