// GPU tests of the f16 base (ModelConfig.baseDtype "f16" with LoRA; model/half.ts, model/gpu-base.ts,
// the f16 matmul of kernels/matmul.ts) on the LoRA goldens of model/golden/make_lora_golden.py
// (a GPT-like and a Qwen2-like tiny model): logits within a stated tolerance of the f32 base
// (PyTorch), equal to the CPU model with the same f16 base; the same model on a device requested
// without shader-f16 stores f32 and gives the same logits; adapter gradients close to the f32
// base's and the base bit-identical over AdamW steps; a weight beyond 65504 keeps its tensor
// f32, exact, and the report names it, also when a Hugging Face folder is read in pieces.
// Run: npx vitest run --project gpu model/half.gpu.test.ts
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { Runtime } from "../kernels/runtime";
import { assertClose, bitEqual } from "../kernels/testing";
import type { ScoreBatch } from "./api";
import { type ModelConfig, modelConfig, paramLayout } from "./config";
import { CpuModel } from "./cpu";
import { goldenLossGrads, type LoraGolden, readLoraGolden } from "./golden";
import { GpuModel } from "./gpu";
import { halfTensors } from "./half";
import { blobModelDir } from "./hf/read";
import { loraLayout } from "./lora";
import { blobSource, openSafetensors } from "./safetensors";

const load = (v: string): LoraGolden =>
  readLoraGolden(new Uint8Array(readFileSync(new URL(`./golden/lora-${v}.bin`, import.meta.url))));
const batchOf = (g: LoraGolden): ScoreBatch => ({ B: g.B, T: g.T, tokens: g.tokens, targets: g.targets });
const f16 = (c: ModelConfig) => modelConfig({ ...c, baseDtype: "f16" });

// f16 rounding moves each weight by at most 2^-11 of itself; the tiny goldens' weights reach
// |w| ~1.2 and their logits |x| ~4, which move by up to 0.0099 (qwen2; gpt 0.0016, on the CPU
// model as on the GPU). Stated tolerance against the f32 base: 0.5% of the logits' range.
const F16_VS_F32 = { atol: 2e-2, rtol: 1e-2 };
// Adapter gradients: within 2% of the largest gradient of their tensor (plus 5% of their own);
// measured: at most 0.39% (gpt) and 0.51% (qwen2).
const gradTol = (ref: Float32Array) => ({ atol: 0.02 * Math.max(...ref.map(Math.abs)), rtol: 5e-2 });
// The same f16 weights on the CPU and the GPU: the ordinary CPU-vs-GPU tolerance.
const SAME = { atol: 1e-4, rtol: 1e-3 };

let device: GPUDevice;
let plainDevice: GPUDevice;
let rt: Runtime;
let plain: Runtime;
beforeAll(async () => {
  device = (await createGpu(await nodeGpu())).device;
  plainDevice = (await createGpu(await nodeGpu(), { optionalFeatures: [] })).device;
  rt = new Runtime(device);
  plain = new Runtime(plainDevice);
});
afterAll(() => {
  device?.destroy();
  plainDevice?.destroy();
});

for (const variant of ["gpt", "qwen2"]) {
  describe(`f16 base, LoRA golden ${variant}`, () => {
    const g = load(variant);
    const cfg = f16(g.config);

    it("logits: within tolerance of f32 (PyTorch), equal to the CPU f16 model; the device without shader-f16 agrees", async () => {
      const m = new GpuModel(rt, cfg, g.weights, 0, { adapter: g.adapter });
      const st = m.baseStorage();
      expect(st).toMatchObject({ requested: "f16", storage: "f16", reason: "", keptF32: [] });
      expect(st.halfTensors).toBe(4 * g.config.layers);
      // The four linear weights of each layer in half the bytes; the rest as before.
      const f32 = new GpuModel(rt, g.config, g.weights, 0, { adapter: g.adapter });
      expect(st.bytes).toBeLessThan(f32.baseStorage().bytes);
      const out = await m.forwardScore(batchOf(g), { logits: true });
      const ref32 = await f32.forwardScore(batchOf(g), { logits: true });
      const { maxDiff } = assertClose("f16 vs f32 logits", out.logits!, g.logits, F16_VS_F32);
      // the rounding did happen: the f32 model is much closer to PyTorch than the f16 one
      const d32 = assertClose("f32 logits", ref32.logits!, g.logits, SAME).maxDiff;
      expect(maxDiff).toBeGreaterThan(10 * d32);

      const cpu = new CpuModel(cfg, g.weights, 0, g.adapter);
      expect(bitEqual(await m.getWeights(), cpu.params)).toBe(true); // read back exactly as rounded
      const outCpu = await cpu.forwardScore(batchOf(g), { logits: true });
      assertClose("f16 GPU vs f16 CPU logits", out.logits!, outCpu.logits!, SAME);

      const fb = new GpuModel(plain, cfg, g.weights, 0, { adapter: g.adapter });
      expect(fb.baseStorage()).toMatchObject({ storage: "f32", reason: expect.stringMatching(/shader-f16/) });
      const outFb = await fb.forwardScore(batchOf(g), { logits: true });
      assertClose("fallback vs f16 storage", outFb.logits!, out.logits!, SAME);
      expect(bitEqual(await fb.getWeights(), cpu.params)).toBe(true);
      for (const x of [m, f32, fb]) x.dispose();
    });

    it("adapter gradients close to the f32 base's, equal to the CPU f16 model's; AdamW steps leave the base bit-identical", async () => {
      const lora = loraLayout(g.config, g.config.lora);
      const m = new GpuModel(rt, cfg, g.weights, 0, { adapter: g.adapter });
      const cpu = new CpuModel(cfg, g.weights, 0, g.adapter);
      const before = await m.getWeights();
      for (const x of [m, cpu]) {
        await x.forwardScore(batchOf(g));
        x.zeroGrad();
        await x.backward(goldenLossGrads(g));
      }
      const got = await m.getGrads();
      const cpuGrads = await cpu.getGrads();
      for (const t of lora.tensors) {
        const sl = (a: Float32Array) => a.subarray(t.offset, t.offset + t.size);
        const r = sl(g.adapterGrads);
        assertClose(`f16-base grad ${t.name} vs f32 base`, sl(got), r, gradTol(r));
        assertClose(`f16-base grad ${t.name} GPU vs CPU`, sl(got), sl(cpuGrads), { atol: 1e-5, rtol: 1e-3 });
      }
      for (let s = 0; s < 3; s++) {
        if (s > 0) {
          m.zeroGrad();
          await m.forwardScore(batchOf(g));
          await m.backward(goldenLossGrads(g));
        }
        expect((await m.step(g.hparams)).skipped).toBe(false);
      }
      expect(bitEqual(await m.getWeights(), before)).toBe(true);
      expect(bitEqual((await m.getAdapter())!, g.adapter)).toBe(false);
      m.dispose();
    });
  });
}

describe("an f16 base under a small buffer limit", () => {
  it("its stores are cut into several buffers and give the same logits and weights", async () => {
    const c = modelConfig({
      layers: 2,
      dModel: 64,
      heads: 2,
      context: 16,
      vocab: 40,
      baseDtype: "f16",
      lora: { rank: 2, alpha: 4, targets: ["q_proj", "down_proj"] },
    });
    const w = new CpuModel(c, undefined, 5).params;
    const batch: ScoreBatch = {
      B: 1,
      T: 7,
      tokens: Int32Array.from([1, 5, 9, 3, 7, 2, 11]),
      targets: Int32Array.from([5, 9, 3, 7, 2, 11, 4]),
    };
    const m = new GpuModel(rt, c, w, 0);
    const small = new Runtime(device, { maxBindingBytes: 48 * 1024, maxBufferBytes: 48 * 1024 });
    const win = new GpuModel(small, c, w, 0);
    expect(win.base.bufferCount).toBeGreaterThan(m.base.bufferCount + 2);
    const a = await m.forwardScore(batch, { logits: true });
    const b = await win.forwardScore(batch, { logits: true });
    assertClose("windowed f16 logits", b.logits!, a.logits!, SAME);
    expect(bitEqual(await win.getWeights(), await m.getWeights())).toBe(true);
    for (const x of [m, win]) x.dispose();
  });
});

describe("a weight beyond f16's range", () => {
  const g = load("qwen2");
  const cfg = f16(g.config);
  const big = paramLayout(cfg).byName.get("h.0.mlp.c_fc.weight")!;

  it("keeps its tensor f32 (exact) on both backends and devices, named in the report; logits agree", async () => {
    const w = g.weights.slice();
    w[big.offset + 5] = 70000;
    const m = new GpuModel(rt, cfg, w, 0, { adapter: g.adapter });
    const cpu = new CpuModel(cfg, w, 0, g.adapter);
    const fb = new GpuModel(plain, cfg, w, 0, { adapter: g.adapter });
    for (const st of [m.baseStorage(), cpu.baseStorage(), fb.baseStorage()]) {
      expect(st.keptF32).toEqual([{ name: big.name, maxAbs: 70000 }]);
      expect(st.halfTensors).toBe(halfTensors(paramLayout(cfg)).length - 1);
    }
    const back = await m.getWeights();
    const tensor = (a: Float32Array) => a.subarray(big.offset, big.offset + big.size);
    expect(bitEqual(tensor(back), tensor(w))).toBe(true); // not rounded
    expect(bitEqual(back, cpu.params)).toBe(true);
    expect(bitEqual(await fb.getWeights(), cpu.params)).toBe(true);
    const out = await m.forwardScore(batchOf(g), { logits: true });
    const outCpu = await cpu.forwardScore(batchOf(g), { logits: true });
    const outFb = await fb.forwardScore(batchOf(g), { logits: true });
    assertClose("kept-f32 logits GPU vs CPU", out.logits!, outCpu.logits!, { atol: 1e-3, rtol: 1e-3 });
    assertClose("kept-f32 logits fallback vs f16", outFb.logits!, out.logits!, { atol: 1e-3, rtol: 1e-3 });
    for (const x of [m, fb]) x.dispose();
  });

  it("read tensor by tensor from a Hugging Face folder (up_proj after gate_proj went in rounded): read again in f32", async () => {
    const HF = new URL("./golden/hf/qwen2/", import.meta.url).pathname;
    const bytes = new Uint8Array(readFileSync(`${HF}model.safetensors`));
    const file = await openSafetensors(blobSource(new Blob([bytes]), "model.safetensors"));
    const e = file.tensors.get("model.layers.0.mlp.up_proj.weight")!;
    const dv = new DataView(bytes.buffer, bytes.byteOffset);
    if (e.dtype === "F32") dv.setFloat32(e.begin + 4 * 7, -70000, true);
    else if (e.dtype === "BF16")
      dv.setUint16(e.begin + 2 * 7, 0xc789, true); // -70144 in bf16
    else throw new Error(`unexpected fixture dtype ${e.dtype}`);
    const dir = blobModelDir(
      "qwen2-big",
      new Map([
        ["config.json", new Blob([readFileSync(`${HF}config.json`)])],
        ["model.safetensors", new Blob([bytes])],
      ]),
    );
    const opts = { lora: { rank: 2, alpha: 4 }, baseDtype: "f16" as const };
    const m = await GpuModel.fromHf(rt, dir, opts);
    const cpu = await CpuModel.fromHf(dir, opts);
    const name = "h.0.mlp.c_fc.weight";
    expect(m.baseStorage().keptF32.map((k) => k.name)).toEqual([name]);
    expect(cpu.baseStorage().keptF32.map((k) => k.name)).toEqual([name]);
    expect(bitEqual(await m.getWeights(), cpu.params)).toBe(true);
    m.dispose();
  });

  it("written in pieces: a piece beyond range after rounded ones marks the tensor for a second, exact pass", async () => {
    const m = new GpuModel(rt, cfg, "zeros", 0, { adapter: g.adapter });
    const w = g.weights.slice();
    w[big.offset + big.size - 3] = 1e5; // in the last piece
    const cut = big.offset + Math.floor(big.size / 2) + 1; // odd: a piece ending mid-word
    m.writeWeights(0, w.subarray(0, cut));
    m.writeWeights(cut, w.subarray(cut));
    expect(m.base.hasStale).toBe(true);
    expect(m.base.isStale(big.offset)).toBe(true);
    expect(m.base.isStale(big.offset + big.size)).toBe(false);
    // the first half went in rounded; the second pass writes it exact
    const tensor = (a: Float32Array) => a.subarray(big.offset, big.offset + big.size);
    expect(bitEqual(tensor(await m.getWeights()), tensor(w))).toBe(false);
    m.writeWeights(big.offset, tensor(w));
    m.base.clearStale();
    const back = await m.getWeights();
    expect(bitEqual(tensor(back), tensor(w))).toBe(true);
    expect(bitEqual(back, new CpuModel(cfg, w, 0, g.adapter).params)).toBe(true);
    m.dispose();
  });

  it("pieces that start and end mid-word assemble the same f16 tensor as one write", async () => {
    const whole = new GpuModel(rt, cfg, g.weights, 0, { adapter: g.adapter });
    const parts = new GpuModel(rt, cfg, "zeros", 0, { adapter: g.adapter });
    const n = g.weights.length;
    for (let at = 0; at < n; at += 333) parts.writeWeights(at, g.weights.subarray(at, Math.min(n, at + 333)));
    expect(parts.base.hasStale).toBe(false);
    expect(bitEqual(await parts.getWeights(), await whole.getWeights())).toBe(true);
    for (const x of [whole, parts]) x.dispose();
  });
});
