// Per-layer activation recomputation on the WebGPU model (model.gradient_checkpointing): the
// backward re-runs each layer's forward from its saved input, and the gradients equal the
// non-recomputed ones bit for bit (the same ops on the same inputs), with and without LoRA,
// micro-batches on, for a gpt-like and a qwen3-like model (GQA, q/k norms, rope, swiglu);
// the training buffers it allocates are fewer, and the memory plan's activation term
// (model/memory-plan.ts) is what the model allocates, on and off; so is its f16 base term.
// Run: npx vitest run --project gpu model/recompute.gpu.test.ts

import { beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../kernels/runtime";
import { gpuRuntime } from "../kernels/testing";
import { coupledGrads } from "../testing/coupled-minibatch";
import { type ModelConfig, modelConfig } from "./config";
import { GpuModel } from "./gpu";
import { loraLayout, randomLora } from "./lora";
import { memoryPlan } from "./memory-plan";

let rt: Runtime;
beforeAll(async () => {
  rt = await gpuRuntime();
});

const tiny = { layers: 3, dModel: 16, heads: 2, context: 16, vocab: 13 };
const QWEN3ISH = {
  norm: "rmsnorm",
  mlp: "swiglu",
  positional: "rope",
  kvHeads: 1,
  headDim: 8,
  qkNorm: true,
  qkvBias: false,
  projBias: false,
  mlpBias: false,
} as const;
const ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"] as const;

const cases: [string, ModelConfig][] = [
  ["gpt-like, full model", modelConfig({ ...tiny, lora: { rank: 0, alpha: 4, targets: [] } })],
  [
    "gpt-like, LoRA",
    modelConfig({
      ...tiny,
      lora: { rank: 2, alpha: 4, targets: ["q_proj", "v_proj", "o_proj", "down_proj"] },
    }),
  ],
  ["qwen3-like, full model", modelConfig({ ...tiny, ...QWEN3ISH, lora: { rank: 0, alpha: 4, targets: [] } })],
  ["qwen3-like, LoRA", modelConfig({ ...tiny, ...QWEN3ISH, lora: { rank: 2, alpha: 4, targets: [...ALL] } })],
];

describe("the memory plan's base weights on the GPU model", () => {
  it("an f16 base takes what the plan's weights term says (f16 storage where the device has shader-f16, else f32)", () => {
    const c = modelConfig({
      ...tiny,
      ...QWEN3ISH,
      lora: { rank: 2, alpha: 4, targets: [...ALL] },
      baseDtype: "f16",
    });
    const m = new GpuModel(rt, c, undefined, 3);
    const s = m.baseStorage();
    const plan = memoryPlan(c, {
      trainRows: 1,
      seqLen: 4,
      decodeRows: 1,
      reference: false,
      halfStorage: s.storage === "f16",
    });
    expect(s.bytes).toBe(plan.terms.find((t) => t.key === "weights")!.bytes);
    m.dispose();
  });
});

describe("per-layer recomputation on the GPU model", () => {
  for (const [name, c] of cases) {
    it(`gives the same gradients bit for bit (${name}), whole minibatch and micro-batches of 2`, async () => {
      const adapter = c.lora.rank > 0 ? randomLora(loraLayout(c, c.lora), 5) : undefined;
      for (const micro of [0, 2]) {
        const plain = new GpuModel(rt, c, undefined, 3, { adapter });
        const want = await coupledGrads(plain, micro);
        const m = new GpuModel(rt, c, undefined, 3, { adapter });
        m.recompute = true;
        const got = await coupledGrads(m, micro);
        expect(want.grads.some((x) => x !== 0)).toBe(true);
        expect(got.loss).toBe(want.loss);
        expect(Buffer.from(got.grads.buffer).equals(Buffer.from(want.grads.buffer)), `micro ${micro}`).toBe(
          true,
        );
        // one shared layer arena instead of one per layer
        expect(m.trainBytes).toBeLessThan(plain.trainBytes);
        plain.dispose();
        m.dispose();
      }
    });

    it(`allocates what the memory plan's activation and scratch terms say, on and off (${name})`, async () => {
      const [B, T] = [3, 11]; // 33 rows: buffers for 64
      const tokens = Int32Array.from({ length: B * T }, (_, i) => (i * 5) % c.vocab);
      const batch = { B, T, tokens, targets: tokens.map((t) => (t + 1) % c.vocab) };
      for (const recompute of [false, true]) {
        const m = new GpuModel(rt, c, undefined, 3);
        m.recompute = recompute;
        await m.forwardScore(batch);
        const plan = memoryPlan(c, { trainRows: B, seqLen: T, decodeRows: 1, reference: false, recompute });
        const planned = plan.terms
          .filter((t) => t.key === "activations" || t.key === "scratch")
          .reduce((a, t) => a + t.bytes, 0);
        expect(m.trainBytes, `recompute ${recompute}`).toBe(planned);
        expect(m.headBytes).toBe(plan.terms.find((t) => t.key === "head-logits")!.bytes);
        if (recompute && c.lora.rank > 0) {
          // The reference (the base, adapter off) shares the weights and scores in the recomputation layout.
          const ref = (await m.referencePolicy()) as GpuModel;
          await ref.forwardScore(batch);
          const kl = memoryPlan(c, { trainRows: B, seqLen: T, decodeRows: 1, reference: true });
          expect(ref.trainBytes + ref.headBytes).toBe(kl.terms.find((t) => t.key === "reference")!.bytes);
          ref.dispose();
        }
        m.dispose();
      }
    });
  }
});
