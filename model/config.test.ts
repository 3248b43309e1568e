// Unit tests of the config and the flat parameter layout.
import { describe, expect, it } from "vitest";
import { ALIGN_FLOATS, DEFAULT_MODEL_CONFIG, initParams, modelConfig, paramLayout } from "./config";
import { VOCAB_SIZE } from "./tokenizer";

describe("config and layout", () => {
  it("defaults to the character tokenizer's vocabulary (config.ts holds no tokenizer)", () => {
    expect(DEFAULT_MODEL_CONFIG.vocab).toBe(VOCAB_SIZE);
  });

  it("aligns every tensor to 64 floats without overlap and counts the demo's parameters", () => {
    const layout = paramLayout(DEFAULT_MODEL_CONFIG);
    let end = 0;
    for (const t of layout.tensors) {
      expect(t.offset % ALIGN_FLOATS).toBe(0);
      expect(t.offset).toBeGreaterThanOrEqual(end);
      end = t.offset + t.size;
    }
    expect(layout.total % ALIGN_FLOATS).toBe(0);
    expect(layout.total).toBeGreaterThanOrEqual(end);
    // wte 107x128 + wpe 128x128 + 3 x 198,272 per block + ln_f 256.
    expect(layout.count).toBe(107 * 128 + 128 * 128 + 3 * 198272 + 256);
    expect(layout.lmHead).toBe(layout.wte);
  });

  it("lays out the variants (rmsnorm has no biases, swiglu a double fc, rope no wpe)", () => {
    const c = modelConfig({
      norm: "rmsnorm",
      mlp: "swiglu",
      positional: "rope",
      tiedEmbeddings: false,
      valueHead: true,
    });
    const l = paramLayout(c);
    expect(l.wpe).toBe(-1);
    expect(l.layers[0].ln1b).toBe(-1);
    expect(l.byName.get("h.0.mlp.c_fc.weight")?.shape).toEqual([2 * 512, 128]);
    expect(l.lmHead).not.toBe(l.wte);
    expect(l.byName.get("value_head.bias")?.size).toBe(1);
  });

  it("initialises GPT-2 style, reproducibly", () => {
    const c = modelConfig({ layers: 2, dModel: 64, heads: 2, context: 16 });
    const l = paramLayout(c);
    const a = initParams(c, l, 3);
    expect(initParams(c, l, 3)).toEqual(a);
    expect(initParams(c, l, 4)).not.toEqual(a);
    const std = (name: string) => {
      const t = l.byName.get(name)!;
      const x = a.subarray(t.offset, t.offset + t.size);
      return Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
    };
    expect(std("h.0.mlp.c_fc.weight")).toBeCloseTo(0.02, 2);
    expect(std("h.0.mlp.c_proj.weight")).toBeCloseTo(0.02 / 2, 2);
    const ln = l.byName.get("h.1.ln_2.weight")!;
    expect(a[ln.offset]).toBe(1);
    expect(a[l.byName.get("h.1.attn.c_attn.bias")!.offset]).toBe(0);
  });

  it("rejects bad configs with the field's name", () => {
    expect(() => modelConfig({ dModel: 130, heads: 4 })).toThrow(/heads/);
    expect(() => modelConfig({ layers: 0 })).toThrow(/layers/);
  });
});
