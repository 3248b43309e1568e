// Unit tests of LoRA on the CPU reference model: logits and adapter gradients equal PyTorch
// (model/golden/make_lora_golden.py: separate q/k/v/gate/up weights, so the fused mapping is
// checked too) for GPT-, Llama-, Qwen2- (GQA, q/k/v biases) and Qwen3-like (q/k norms, own head size) tiny models; AdamW on the adapter follows
// PyTorch's trajectory and leaves the base bit-identical; trained-parameter count equals the
// formula; the adapter off (reference policy) and a fresh adapter equal the base model; KV-cache
// decoding with the adapter equals the full forward.
// Run: npx vitest run --project unit model/lora.test.ts
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { assertClose } from "../kernels/testing";
import type { ScoreBatch } from "./api";
import { modelConfig } from "./config";
import { CpuModel } from "./cpu";
import { goldenLoss, goldenLossGrads, type LoraGolden, readLoraGolden } from "./golden";
import { initLora, loraLayout, loraParamCount } from "./lora";

const load = (v: string): LoraGolden =>
  readLoraGolden(new Uint8Array(readFileSync(new URL(`./golden/lora-${v}.bin`, import.meta.url))));
const batchOf = (g: LoraGolden): ScoreBatch => ({ B: g.B, T: g.T, tokens: g.tokens, targets: g.targets });

for (const variant of ["gpt", "llama", "qwen2", "qwen3"]) {
  describe(`LoRA on the CPU model vs PyTorch (${variant})`, () => {
    const g = load(variant);
    const lora = loraLayout(g.config, g.config.lora);

    it("matches logits, logp, entropy and loss with the adapter", async () => {
      const m = new CpuModel(g.config, g.weights, 0, g.adapter);
      const out = await m.forwardScore(batchOf(g), { logits: true });
      assertClose("logits", out.logits!, g.logits, { atol: 1e-4, rtol: 1e-3 });
      assertClose("logp", out.logp, g.logp, { atol: 1e-4, rtol: 1e-3 });
      assertClose("entropy", out.entropy, g.entropy, { atol: 1e-4, rtol: 1e-3 });
      expect(Math.abs(goldenLoss(g, out.logp, out.entropy) - g.loss)).toBeLessThan(1e-4);
    });

    it("matches every adapter gradient (the base gets none)", async () => {
      const m = new CpuModel(g.config, g.weights, 0, g.adapter);
      await m.forwardScore(batchOf(g));
      await m.backward(goldenLossGrads(g));
      const got = await m.getGrads();
      expect(got.length).toBe(lora.total);
      for (const t of lora.tensors) {
        const sl = (a: Float32Array) => a.subarray(t.offset, t.offset + t.size);
        assertClose(`grad ${t.name}`, sl(got), sl(g.adapterGrads), { atol: 1e-5, rtol: 1e-3 });
      }
    });

    it("follows PyTorch's AdamW trajectory on the adapter; the base stays bit-identical", async () => {
      const m = new CpuModel(g.config, g.weights, 0, g.adapter);
      const before = await m.getWeights();
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
      expect(Buffer.from(after.buffer).equals(Buffer.from(before.buffer))).toBe(true);
      expect((await m.getAdapter())!.some((x, i) => x !== g.adapter[i])).toBe(true);
    });

    it("the reference policy is the base alone (PyTorch's adapter-off logits), sharing the weights", async () => {
      const m = new CpuModel(g.config, g.weights, 0, g.adapter);
      const ref = (await m.referencePolicy()) as CpuModel;
      expect(ref.params).toBe(m.params); // no second copy of the base
      const out = await ref.forwardScore(batchOf(g), { logits: true });
      assertClose("base logits", out.logits!, g.baseLogits, { atol: 1e-4, rtol: 1e-3 });
      const plain = new CpuModel(
        modelConfig({ ...g.config, lora: { ...g.config.lora, rank: 0 } }),
        g.weights,
      );
      const p = await plain.forwardScore(batchOf(g), { logits: true });
      expect(Array.from(out.logits!)).toEqual(Array.from(p.logits!));
    });

    it("a fresh adapter (B = 0) gives the base model's numbers exactly", async () => {
      const m = new CpuModel(g.config, g.weights, 0, initLora(lora, 5));
      const plain = new CpuModel(
        modelConfig({ ...g.config, lora: { ...g.config.lora, rank: 0 } }),
        g.weights,
      );
      const a = await m.forwardScore(batchOf(g), { logits: true });
      const b = await plain.forwardScore(batchOf(g), { logits: true });
      expect(Array.from(a.logits!)).toEqual(Array.from(b.logits!));
    });

    it("KV-cache decoding with the adapter equals the full forward", async () => {
      const m = new CpuModel(g.config, g.weights, 0, g.adapter);
      const T = g.T;
      const V = g.config.vocab;
      const seq = Array.from(g.tokens.subarray(0, T));
      const full = await m.forwardScore(
        { B: 1, T, tokens: Int32Array.from(seq), targets: new Int32Array(T) },
        { logits: true },
      );
      const s = m.startGeneration({ temperature: 0, seed: 1 });
      await s.prefill([seq.slice(0, 3)]);
      await s.append(0, seq.slice(3));
      assertClose("last logits", s.nextLogits(0), full.logits!.subarray((T - 1) * V), {
        atol: 1e-5,
        rtol: 1e-4,
      });
    });
  });
}

describe("LoRA trained-parameter count", () => {
  it("equals L * r * sum(in + out) over the targets, in the adapter's one buffer", () => {
    const c = modelConfig({
      layers: 3,
      dModel: 16,
      heads: 2,
      mlp: "swiglu",
      norm: "rmsnorm",
      positional: "rope",
      lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj", "gate_proj", "down_proj"] },
    });
    const H = 4 * 16;
    const formula = 3 * 4 * (16 + 16 + (16 + 16) + (16 + H) + (H + 16));
    expect(loraParamCount(c, c.lora)).toBe(formula);
    const l = loraLayout(c, c.lora);
    expect(l.count).toBe(formula);
    const m = new CpuModel(c);
    expect(m.grads.length).toBe(l.total);
  });

  it("refuses a gate_proj target on a gelu MLP, naming the field", () => {
    const c = modelConfig({ lora: { rank: 2, alpha: 4, targets: ["gate_proj"] } });
    expect(() => new CpuModel(c)).toThrow(/model\.lora\.targets: gate_proj needs model\.mlp = swiglu/);
  });
});
