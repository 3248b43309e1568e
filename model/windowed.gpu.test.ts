// GPU tests of the model under a lowered binding and buffer limit (Dawn in Node): the same tiny
// model on a runtime that binds at most 16 KiB and makes buffers of at most 40 KiB must give the
// CPU reference's numbers and the unwindowed GPU model's (MHA and a GQA/qk-norm variant): the
// parameter buffers split in several, AdamW / zeroing / grad norm / reads in windows, the token
// table in row slices, the head in chunks of rows and vocabulary slices (logp and entropy
// bit-identical), generation through the chunked sampler (the same greedy and seeded tokens).
// Any op that bound more than the limit would throw (Runtime.dispatch). Run: npx vitest run --project gpu model/windowed
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { devicePlan, planWith } from "../kernels/plan";
import { zero } from "../kernels/pointwise";
import { Runtime } from "../kernels/runtime";
import { assertClose, bitEqual } from "../kernels/testing";
import type { ScoreBatch } from "./api";
import { type ModelConfig, modelConfig } from "./config";
import { CpuModel } from "./cpu";
import { GpuModel } from "./gpu";
import { chunkRows, headChunks, headPlan } from "./head";

let device: GPUDevice;
let full: Runtime;
let small: Runtime;
beforeAll(async () => {
  device = (await createGpu(await nodeGpu())).device;
  device.onuncapturederror = (e) => {
    throw new Error(`WebGPU error: ${e.error.message}`);
  };
  // One matmul kernel for every row count, so chunks of a few rows keep the whole batch's bits
  // (matvec.wgsl, which rows <= 8 would use, is tested in kernels/matmul and model/gpu).
  const plan = planWith(devicePlan(device).plan, { smallRows: 0 });
  full = new Runtime(device, { plan });
  small = new Runtime(device, { plan, maxBindingBytes: 16 * 1024, maxBufferBytes: 40 * 1024 });
});
afterAll(() => device?.destroy());

// V=300, C=32: the token table (38.4 KB) and the head's weight need 3 slices of 128 rows, the
// logits of 14 rows (16.8 KB) 2 chunks of 12 and 2 rows, the 124 KB parameter buffer 4 buffers.
const variants: { name: string; c: Partial<ModelConfig> }[] = [
  {
    name: "rmsnorm swiglu rope tied",
    c: { norm: "rmsnorm", mlp: "swiglu", mlpRatio: 2, positional: "rope", tiedEmbeddings: true },
  },
  { name: "layernorm gelu learned untied value", c: { mlpRatio: 2, tiedEmbeddings: false, valueHead: true } },
  {
    name: "qwen3-like: GQA 2/1, q/k norms, no biases",
    c: {
      norm: "rmsnorm",
      mlp: "swiglu",
      mlpRatio: 2,
      positional: "rope",
      kvHeads: 1,
      qkNorm: true,
      qkvBias: false,
      projBias: false,
      mlpBias: false,
    },
  },
];

function batchOf(config: ModelConfig): ScoreBatch {
  const [B, T] = [2, 7];
  return {
    B,
    T,
    tokens: Int32Array.from({ length: B * T }, (_, i) => (i * 97 + 5) % config.vocab),
    targets: Int32Array.from({ length: B * T }, (_, i) => (i * 61 + 250) % config.vocab),
    temperature: 0.9,
  };
}

describe("the model under a lowered binding limit", () => {
  for (const v of variants) {
    it(`forward, backward, a clipped AdamW step and reads equal the unwindowed model and the CPU (${v.name})`, async () => {
      const config = modelConfig({ layers: 2, dModel: 32, heads: 2, context: 16, vocab: 300, ...v.c });
      const cpu = new CpuModel(config, undefined, 5);
      const w = await cpu.getWeights();
      const a = new GpuModel(full, config, w);
      const b = new GpuModel(small, config, w);
      expect(a.paramStore.segments.length).toBe(1);
      expect(b.paramStore.segments.length).toBeGreaterThan(2);
      const plan = headPlan(small, config.vocab, config.dModel);
      expect(plan.sliceV).toBeLessThan(config.vocab);
      expect(headChunks(plan, 14).length).toBe(2);
      expect(chunkRows(headPlan(full, config.vocab, config.dModel), 14)).toBe(14);

      const batch = batchOf(config);
      const N = batch.B * batch.T;
      const [ra, rb, rc] = [
        await a.forwardScore(batch, { logits: true }),
        await b.forwardScore(batch, { logits: true }),
        await cpu.forwardScore(batch, { logits: true }),
      ];
      // Same dot products, same reduction order over the vocabulary: the same bits.
      expect(bitEqual(ra.logits!, rb.logits!)).toBe(true);
      expect(bitEqual(ra.logp, rb.logp)).toBe(true);
      expect(bitEqual(ra.entropy, rb.entropy)).toBe(true);
      assertClose("logits vs CPU", rb.logits!, rc.logits!, { atol: 1e-5, rtol: 1e-3 });
      assertClose("logp vs CPU", rb.logp, rc.logp, { atol: 1e-5, rtol: 1e-3 });
      assertClose("entropy vs CPU", rb.entropy, rc.entropy, { atol: 1e-5, rtol: 1e-3 });
      if (config.valueHead) assertClose("values", rb.values!, ra.values!, { atol: 1e-6, rtol: 1e-4 });

      const grads = {
        dlogp: Float32Array.from({ length: N }, (_, i) => Math.cos(i) / N),
        dentropy: Float32Array.from({ length: N }, (_, i) => (0.1 * Math.sin(i)) / N),
        dvalue: config.valueHead
          ? Float32Array.from({ length: N }, (_, i) => 0.5 * Math.cos(3 * i))
          : undefined,
      };
      for (const m of [a, b]) {
        m.zeroGrad();
        await m.backward(grads);
      }
      await cpu.backward(grads);
      const [ga, gb] = [await a.getGrads(), await b.getGrads()];
      // The head's dW and dx add chunk by chunk and slice by slice: equal within fp32 sums.
      assertClose("grads windowed vs whole", gb, ga, { atol: 1e-6, rtol: 1e-4 });
      assertClose("grads vs CPU", gb, Float32Array.from(await cpu.getGrads()), { atol: 1e-5, rtol: 1e-3 });

      const h = { lr: 1e-2, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.05 };
      const [sa, sb, sc] = [await a.step(h), await b.step(h), await cpu.step(h)];
      expect(Math.abs(sb.gradNorm - sa.gradNorm)).toBeLessThanOrEqual(1e-6 * sa.gradNorm);
      expect(Math.abs(sb.gradNorm - sc.gradNorm)).toBeLessThanOrEqual(1e-4 * sc.gradNorm);
      expect(sc.gradNorm).toBeGreaterThan(h.maxGradNorm); // the clip is exercised
      // Adam's first step is about lr*sign(g): where |g| < 1e-5 the sign is not pinned down by the
      // gradient checks, and those weights may differ by up to 2*lr (see gpu.gpu.test.ts).
      const pinned = (i: number) => Math.abs(ga[i]) >= 1e-5;
      const keep = (x: Float32Array, sel: (i: number) => boolean) => x.filter((_, i) => sel(i));
      const [wa, wb, wc] = [
        await a.getWeights(),
        await b.getWeights(),
        Float32Array.from(await cpu.getWeights()),
      ];
      assertClose("weights after a step", keep(wb, pinned), keep(wa, pinned), {
        atol: 1e-2 * h.lr,
        rtol: 1e-4,
      });
      assertClose("weights vs CPU", keep(wb, pinned), keep(wc, pinned), { atol: 1e-2 * h.lr, rtol: 1e-4 });
      assertClose(
        "weights (|g| < 1e-5)",
        keep(wb, (i) => !pinned(i)),
        keep(wa, (i) => !pinned(i)),
        { atol: 2 * h.lr, rtol: 0 },
      );
      const [oa, ob] = [await a.getOptimizerState(), await b.getOptimizerState()];
      assertClose("adam v", ob.v, oa.v, { atol: 1e-9, rtol: 1e-4 });

      // Writes go window by window too: a round trip through setOptimizerState / setWeights.
      await b.setOptimizerState(oa);
      expect(bitEqual((await b.getOptimizerState()).m, oa.m)).toBe(true);
      await b.setWeights(w);
      expect(bitEqual(await b.getWeights(), w)).toBe(true);
      a.dispose();
      b.dispose();
    });
  }

  it("decodes through the chunked sampler: the same greedy and seeded tokens and next logits", async () => {
    // context 8: the KV caches (15, 8, 32) fit one binding (they are not windowed)
    const config = modelConfig({ layers: 2, dModel: 32, heads: 2, context: 8, vocab: 300, mlpRatio: 2 });
    const w = await new CpuModel(config, undefined, 9).getWeights();
    const out: { tokens: number[][]; logits: Float32Array }[] = [];
    for (const rt of [full, small]) {
      const m = new GpuModel(rt, config, w);
      const tokens: number[][] = [];
      for (const sampling of [
        { temperature: 0, seed: 0 },
        { temperature: 1, topK: 50, topP: 0.9, seed: 4 },
      ]) {
        const s = m.startGeneration(sampling);
        // 15 sequences: 300 logits each, 4096 floats per binding -> chunks of 12 and 3 rows.
        await s.prefill(Array.from({ length: 15 }, (_, b) => [1 + b, 2 + ((b * 7) % 200)]));
        const active = new Array(15).fill(true);
        for (let k = 0; k < 3; k++) tokens.push([...(await s.decode(active)).tokens]);
        s.finish();
      }
      const s = m.startGeneration({ temperature: 0, seed: 0 });
      await s.prefill(Array.from({ length: 15 }, (_, b) => [3 + b]));
      out.push({ tokens, logits: await s.nextLogits(13) });
      s.finish();
      m.dispose();
    }
    expect(headChunks(headPlan(small, 300, 32), 15).map((c) => c.rows)).toEqual([12, 3]);
    expect(out[1].tokens).toEqual(out[0].tokens);
    expect(bitEqual(out[1].logits, out[0].logits)).toBe(true);
  });

  it("refuses a buffer or a binding over the limits, naming it", async () => {
    // wte (300, 128) is 153.6 KB: no buffer under 40 KiB can hold it
    const big = modelConfig({ layers: 1, dModel: 128, heads: 2, context: 16, vocab: 300 });
    expect(() => new GpuModel(small, big)).toThrow(/params: the tensor at float 0 needs 153600 bytes, over/);
    const enc = device.createCommandEncoder();
    expect(() => zero(small, enc, small.tensor(5000))).toThrow(
      /binding 0 of elementwise\/fill is 20000 bytes, over the binding limit of 16384/,
    );
  });
});
