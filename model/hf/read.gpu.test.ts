// GPU tests of the Hugging Face families (tiny models of model/golden/make_hf_models.py): the
// WebGPU model loaded tensor by tensor (GpuModel.fromHf) equals PyTorch per family (logits, loss,
// every gradient, 10 AdamW steps), and its KV-cache decoding with grouped-query attention
// equals its full forward across prefill, decode and append.
// Run: npx vitest run --project gpu model/hf/read.gpu.test.ts
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { PLANS, planWith } from "../../kernels/plan";
import { Runtime } from "../../kernels/runtime";
import { assertClose, gpuRuntime } from "../../kernels/testing";
import { goldenLoss, goldenLossGrads, readHfGolden } from "../golden";
import { GpuModel } from "../gpu";
import { nodeModelDir } from "./node";
import { hfTensors, loadHfModel } from "./read";

const HF = new URL("../golden/hf/", import.meta.url).pathname;
const FAMILIES = ["llama", "qwen2", "qwen3"] as const;

let device: GPUDevice;
let rt: Runtime;
beforeAll(async () => {
  rt = await gpuRuntime();
  device = rt.device;
});

describe("GPU model vs PyTorch, per family", () => {
  it.each(FAMILIES)("%s: logits, logp, entropy, loss, every gradient, 10 AdamW steps", async (family) => {
    const dir = nodeModelDir(HF + family);
    const model = await GpuModel.fromHf(rt, dir);
    const config = model.config;
    expect(await model.getWeights()).toEqual((await loadHfModel(dir)).weights);
    const g = readHfGolden(new Uint8Array(readFileSync(`${HF}${family}/golden.bin`)), config);
    const batch = { B: g.B, T: g.T, tokens: g.tokens, targets: g.targets };
    const out = await model.forwardScore(batch, { logits: true });
    assertClose("logits", out.logits!, g.logits, { atol: 1e-4, rtol: 1e-3 });
    assertClose("logp", out.logp, g.logp, { atol: 1e-4, rtol: 1e-3 });
    assertClose("entropy", out.entropy, g.entropy, { atol: 1e-4, rtol: 1e-3 });
    expect(Math.abs(goldenLoss(g, out.logp, out.entropy) - g.loss)).toBeLessThan(1e-4);
    model.zeroGrad();
    await model.backward(goldenLossGrads(g));
    const grads = await model.getGrads();
    for (const t of hfTensors(config)) {
      const sl = (a: Float32Array) => a.subarray(t.offset, t.offset + t.size);
      assertClose(`grad ${t.name}`, sl(grads), sl(g.grads), { atol: 1e-5, rtol: 1e-3 });
    }
    const losses: number[] = [];
    const norms: number[] = [];
    for (let s = 0; s < g.steps; s++) {
      model.zeroGrad();
      const o = await model.forwardScore(batch);
      losses.push(goldenLoss(g, o.logp, o.entropy));
      await model.backward(goldenLossGrads(g));
      norms.push((await model.step(g.hparams)).gradNorm);
    }
    assertClose("step losses", losses, g.stepLosses, { atol: 1e-2, rtol: 0 });
    assertClose("step grad norms", norms, g.stepGradNorms, { atol: 1e-3, rtol: 1e-3 });
    model.dispose();
  });
});

describe("the unrolled kernels (SwiftShader's) on a Hugging Face family", () => {
  it("qwen3: logits and every gradient equal PyTorch's", async () => {
    const unrolled = new Runtime(device, { plan: planWith(PLANS.swiftshader, {}) });
    const model = await GpuModel.fromHf(unrolled, nodeModelDir(`${HF}qwen3`));
    const g = readHfGolden(new Uint8Array(readFileSync(`${HF}qwen3/golden.bin`)), model.config);
    const out = await model.forwardScore(
      { B: g.B, T: g.T, tokens: g.tokens, targets: g.targets },
      { logits: true },
    );
    assertClose("logits", out.logits!, g.logits, { atol: 1e-4, rtol: 1e-3 });
    await model.backward(goldenLossGrads(g));
    assertClose("grads", await model.getGrads(), g.grads, { atol: 1e-5, rtol: 1e-3 });
    model.dispose();
  });
});

describe("GPU KV-cache decoding with grouped-query attention", () => {
  it.each(["qwen3", "qwen2"])(
    "%s: cached logits equal the full forward at every position",
    async (family) => {
      const model = await GpuModel.fromHf(rt, nodeModelDir(HF + family));
      const V = model.config.vocab;
      const seqs = [
        [3, 17, 40, 5, 9, 22, 61, 8, 13],
        [7, 2, 30, 44, 1],
      ];
      const s = model.startGeneration({ temperature: 1, seed: 3 });
      await s.prefill(seqs.map((q) => q.slice(0, 2)));
      for (let b = 0; b < seqs.length; b++) {
        const q = seqs[b];
        const T = q.length;
        const full = await model.forwardScore(
          { B: 1, T, tokens: Int32Array.from(q), targets: new Int32Array(T) },
          { logits: true },
        );
        const at = (t: number) => full.logits!.subarray(t * V, (t + 1) * V);
        assertClose(`seq ${b} pos 1`, await s.nextLogits(b), at(1), { atol: 1e-5, rtol: 1e-4 });
        for (let t = 2; t < T; ) {
          const n = t % 2 === 0 ? 1 : Math.min(3, T - t);
          await s.append(b, q.slice(t, t + n));
          t += n;
          assertClose(`seq ${b} pos ${t - 1}`, await s.nextLogits(b), at(t - 1), { atol: 1e-5, rtol: 1e-4 });
        }
      }
      // and sampling continues from the cache: one decode step for both sequences
      const r = await s.decode([true, true]);
      expect(Array.from(r.tokens).every((t) => t >= 0 && t < V)).toBe(true);
      expect(s.lengths()).toEqual(seqs.map((q) => q.length + 1));
      s.finish();
      model.dispose();
    },
  );
});
