// The f16 base on the CPU model (model/half.ts): which tensors are rounded, a tensor beyond f16's
// range kept exact and reported, a shared base not rounded twice, setWeights rounding too, and the
// refusals of an f16 base without LoRA (ModelConfig and RunConfig's model.dtype).
// Run: npx vitest run --project unit model/half.test.ts
import { describe, expect, it } from "vitest";
import { parseRunConfig } from "../config";
import { roundHalf } from "../kernels/half";
import { bitEqual, randn } from "../kernels/testing";
import { modelConfig, paramLayout } from "./config";
import { CpuModel } from "./cpu";
import { describeStorage, halfFloats, halfTensors } from "./half";
import { QWEN25_05B } from "./hf/configs";
import { hfModelConfig } from "./hf/read";
import type { LoraConfig } from "./lora";

const lora = { rank: 2, alpha: 4, targets: ["q_proj", "v_proj", "down_proj"] as LoraConfig["targets"] };
const cfg = modelConfig({ layers: 2, dModel: 16, heads: 2, context: 16, vocab: 11, lora, baseDtype: "f16" });
const layout = paramLayout(cfg);

describe("f16 base on the CPU model", () => {
  it("rounds each layer's four linear weights to f16 and leaves every other tensor exact", () => {
    const w = randn(layout.total, 1, 0.3);
    const m = new CpuModel(cfg, w, 0);
    const half = new Set(halfTensors(layout).map((t) => t.name));
    expect([...half].sort()).toEqual(
      [0, 1]
        .flatMap((l) =>
          ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"].map((n) => `h.${l}.${n}.weight`),
        )
        .sort(),
    );
    for (const t of layout.tensors) {
      const got = m.params.subarray(t.offset, t.offset + t.size);
      const src = w.subarray(t.offset, t.offset + t.size);
      expect(bitEqual(got, half.has(t.name) ? src.map(roundHalf) : src), t.name).toBe(true);
    }
    expect(m.baseStorage()).toMatchObject({ requested: "f16", storage: "f32", halfTensors: 8, keptF32: [] });
  });

  it("at Qwen2.5-0.5B's shape the f16 tensors are 72% of the base's values", () => {
    const q = paramLayout(hfModelConfig(QWEN25_05B, "config.json", { lora: { rank: 16 }, baseDtype: "f16" }));
    expect(halfFloats(q)).toBe(24 * (1152 * 896 + 896 * 896 + 2 * 4864 * 896 + 896 * 4864));
    expect(halfFloats(q) / q.count).toBeCloseTo(0.724, 3);
  });

  it("keeps a tensor with a value beyond 65504 (or not finite) exact and names it; setWeights decides again", async () => {
    const w = randn(layout.total, 2, 0.3);
    const fc = layout.byName.get("h.1.mlp.c_fc.weight")!;
    const proj = layout.byName.get("h.0.attn.c_proj.weight")!;
    w[fc.offset + 3] = -65505;
    w[proj.offset] = Number.POSITIVE_INFINITY;
    const m = new CpuModel(cfg, w, 0);
    const st = m.baseStorage();
    expect(st.keptF32).toEqual([
      { name: proj.name, maxAbs: Number.POSITIVE_INFINITY },
      { name: fc.name, maxAbs: 65505 },
    ]);
    expect(st.halfTensors).toBe(6);
    expect(describeStorage(st)).toMatch(
      /kept f32 .*h\.0\.attn\.c_proj\.weight \(max \|x\| Infinity\), h\.1\.mlp\.c_fc\.weight/,
    );
    expect(
      bitEqual(m.params.subarray(fc.offset, fc.offset + fc.size), w.subarray(fc.offset, fc.offset + fc.size)),
    ).toBe(true);
    w[fc.offset + 3] = 65504; // the largest f16: fits
    w[proj.offset] = 0;
    await m.setWeights(w);
    expect(m.baseStorage().keptF32).toEqual([]);
    expect(m.params[fc.offset + 3]).toBe(65504);
    expect(m.params[fc.offset + 4]).toBe(roundHalf(w[fc.offset + 4]));
  });

  it("the reference policy shares the rounded base (no second copy, no second rounding)", async () => {
    const m = new CpuModel(cfg, randn(layout.total, 3, 0.3), 0);
    const ref = (await m.referencePolicy()) as CpuModel;
    expect(ref.params).toBe(m.params);
    expect(ref.baseStorage().halfTensors).toBe(8);
  });

  it("an f32 base is untouched", () => {
    const w = randn(layout.total, 4, 0.3);
    const m = new CpuModel(modelConfig({ ...cfg, baseDtype: "f32" }), w, 0);
    expect(bitEqual(m.params, w)).toBe(true);
    expect(m.baseStorage()).toMatchObject({ requested: "f32", storage: "f32", reason: "", halfTensors: 0 });
  });

  it("refuses an f16 base without LoRA, naming the field", () => {
    expect(() => modelConfig({ ...cfg, lora: { ...cfg.lora, rank: 0 } })).toThrow(
      /baseDtype f16 .*needs LoRA/,
    );
    const bad = parseRunConfig({ model: { dtype: "f16" } });
    expect(bad.ok).toBe(false);
    expect(bad.ok ? [] : bad.errors).toContainEqual({
      path: "model.dtype",
      message: expect.stringMatching(/needs LoRA/),
    });
    const good = parseRunConfig({ model: { dtype: "f16", lora: { rank: 8 } } });
    expect(good.ok && good.config.model.dtype).toBe("f16");
  });
});
