// GPU tests of LoRA on the WebGPU model (Dawn in Node): logits and adapter gradients equal
// PyTorch (model/golden/make_lora_golden.py, a GPT-like and a Llama-like tiny model), AdamW
// on the adapter follows PyTorch and leaves the base buffer bit-identical, the reference policy
// (adapter off, sharing the base buffer) equals PyTorch's base logits, KV-cache decoding with
// the adapter equals the full forward, and the column-block kernels equal their references.
// Run: npx vitest run --project gpu model/lora.gpu.test.ts
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { columnsAdd, columnsGather } from "../kernels/columns";
import { columnsAddRef, columnsGatherRef } from "../kernels/reference";
import { Runtime } from "../kernels/runtime";
import { assertClose, gpuRuntime, randn, TOL } from "../kernels/testing";
import type { ScoreBatch } from "./api";
import { goldenLoss, goldenLossGrads, type LoraGolden, readLoraGolden } from "./golden";
import { GpuModel } from "./gpu";
import { loraLayout } from "./lora";

const load = (v: string): LoraGolden =>
  readLoraGolden(new Uint8Array(readFileSync(new URL(`./golden/lora-${v}.bin`, import.meta.url))));
const batchOf = (g: LoraGolden): ScoreBatch => ({ B: g.B, T: g.T, tokens: g.tokens, targets: g.targets });

let device: GPUDevice;
let rt: Runtime;
beforeAll(async () => {
  rt = await gpuRuntime();
  device = rt.device;
});

describe("column-block kernels", () => {
  it("add into and gather from a column block of an odd-width row (45 x 65, block at 17)", async () => {
    const [N, cols, stride, start, scale] = [45, 23, 65, 17, 1.75];
    const out = randn(N * stride, 1);
    const src = randn(N * cols, 2);
    const gOut = rt.tensor(out);
    const gSrc = rt.tensor(src);
    const gDst = rt.tensor(N * cols);
    const enc = device.createCommandEncoder();
    columnsAdd(rt, enc, gOut, gSrc, N, cols, stride, start, scale);
    columnsGather(rt, enc, gDst, gOut, N, cols, stride, start, -0.5);
    rt.submit(enc);
    const dst = new Float32Array(N * cols);
    columnsAddRef(out, src, N, cols, stride, start, scale);
    columnsGatherRef(dst, out, N, cols, stride, start, -0.5);
    assertClose("columns add", await rt.read(gOut), out, TOL.fwd);
    assertClose("columns gather", await rt.read(gDst), dst, TOL.fwd);
  });
});

for (const variant of ["gpt", "llama", "qwen2", "qwen3"]) {
  describe(`LoRA on the GPU model vs PyTorch (${variant})`, () => {
    const g = load(variant);
    const lora = loraLayout(g.config, g.config.lora);

    it("matches logits and every adapter gradient", async () => {
      const m = new GpuModel(rt, g.config, g.weights, 0, { adapter: g.adapter });
      const out = await m.forwardScore(batchOf(g), { logits: true });
      assertClose("logits", out.logits!, g.logits, { atol: 1e-4, rtol: 1e-3 });
      assertClose("logp", out.logp, g.logp, { atol: 1e-4, rtol: 1e-3 });
      m.zeroGrad();
      await m.backward(goldenLossGrads(g));
      const got = await m.getGrads();
      expect(got.length).toBe(lora.total);
      for (const t of lora.tensors) {
        const sl = (a: Float32Array) => a.subarray(t.offset, t.offset + t.size);
        assertClose(`grad ${t.name}`, sl(got), sl(g.adapterGrads), { atol: 1e-5, rtol: 1e-3 });
      }
      m.dispose();
    });

    it("follows PyTorch's AdamW trajectory on the adapter; the base buffer stays bit-identical", async () => {
      const m = new GpuModel(rt, g.config, g.weights, 0, { adapter: g.adapter });
      const losses: number[] = [];
      const norms: number[] = [];
      for (let s = 0; s < g.steps; s++) {
        m.zeroGrad();
        const out = await m.forwardScore(batchOf(g));
        losses.push(goldenLoss(g, out.logp, out.entropy));
        await m.backward(goldenLossGrads(g));
        norms.push((await m.step(g.hparams)).gradNorm);
      }
      assertClose("step losses", losses, g.stepLosses, { atol: 1e-3, rtol: 0 });
      assertClose("step grad norms", norms, g.stepGradNorms, { atol: 1e-3, rtol: 1e-3 });
      const after = await m.getWeights();
      expect(Buffer.from(after.buffer).equals(Buffer.from(g.weights.buffer))).toBe(true);
      m.dispose();
    });

    it("under a small binding and buffer limit (windowed stores) gives the same adapter gradients", async () => {
      const small = new Runtime(device, { maxBindingBytes: 16 * 1024, maxBufferBytes: 40 * 1024 });
      const m = new GpuModel(small, g.config, g.weights, 0, { adapter: g.adapter });
      await m.forwardScore(batchOf(g));
      m.zeroGrad();
      await m.backward(goldenLossGrads(g));
      assertClose("windowed adapter grads", await m.getGrads(), g.adapterGrads, { atol: 1e-5, rtol: 1e-3 });
      const st = await m.step(g.hparams);
      assertClose("windowed grad norm", [st.gradNorm], [g.stepGradNorms[0]], { atol: 1e-4, rtol: 1e-3 });
      m.dispose();
    });

    it("the reference policy is the base alone and shares the base buffer; decoding equals the full forward", async () => {
      const m = new GpuModel(rt, g.config, g.weights, 0, { adapter: g.adapter });
      const ref = (await m.referencePolicy()) as GpuModel;
      expect(ref.paramStore).toBe(m.paramStore);
      const base = await ref.forwardScore(batchOf(g), { logits: true });
      assertClose("base logits", base.logits!, g.baseLogits, { atol: 1e-4, rtol: 1e-3 });
      const T = g.T;
      const V = g.config.vocab;
      const seq = Array.from(g.tokens.subarray(0, T));
      const s = m.startGeneration({ temperature: 0, seed: 1 });
      await s.prefill([seq.slice(0, 2)]);
      await s.append(0, seq.slice(2));
      const last = await s.nextLogits(0);
      assertClose("decoded last logits", last, g.logits.subarray((T - 1) * V, T * V), {
        atol: 1e-4,
        rtol: 1e-3,
      });
      s.finish();
      ref.dispose();
      m.dispose();
    });
  });
}
