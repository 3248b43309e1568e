// Unit tests of safetensors checkpoints: exact round trip of weights, optimizer state, config.
import { describe, expect, it } from "vitest";
import { loadCheckpoint, saveCheckpoint } from "./checkpoint";
import { initParams, modelConfig, paramLayout } from "./config";
import { loraLayout, randomLora } from "./lora";

describe("checkpoint", () => {
  it("round-trips a LoRA run: base weights, the adapter and the adapter's moments", () => {
    const config = modelConfig({
      layers: 2,
      dModel: 16,
      heads: 2,
      context: 8,
      lora: { rank: 2, alpha: 4, targets: ["q_proj", "down_proj"] },
    });
    const weights = initParams(config, paramLayout(config), 3);
    const adapter = randomLora(loraLayout(config, config.lora), 4);
    const m = adapter.map((x) => x * 0.5);
    const v = adapter.map((x) => x * x);
    const ck = loadCheckpoint(saveCheckpoint({ config, weights, adapter, optimizer: { m, v, step: 3 } }));
    expect(ck.config.lora).toEqual(config.lora);
    expect(ck.weights).toEqual(weights);
    expect(ck.adapter).toEqual(adapter);
    expect(ck.optimizer?.m).toEqual(m);
    expect(() => saveCheckpoint({ config, weights })).toThrow(/LoRA but no adapter/);
  });

  it("round-trips weights, optimizer state and config exactly", () => {
    const config = modelConfig({
      layers: 2,
      dModel: 16,
      heads: 2,
      context: 8,
      valueHead: true,
      tiedEmbeddings: false,
    });
    const layout = paramLayout(config);
    const weights = initParams(config, layout, 7);
    const m = weights.map((x) => x * 0.5);
    const v = weights.map((x) => x * x);
    const bytes = saveCheckpoint({
      config,
      weights,
      optimizer: { m, v, step: 12 },
      metadata: { run: "abc" },
    });
    const ck = loadCheckpoint(bytes);
    expect(ck.config).toEqual(config);
    expect(ck.weights).toEqual(weights);
    expect(ck.optimizer?.m).toEqual(m);
    expect(ck.optimizer?.v).toEqual(v);
    expect(ck.optimizer?.step).toBe(12);
    expect(ck.metadata).toEqual({ run: "abc" });
  });

  it("writes the safetensors layout: u64 header length, JSON header, 8-aligned data", () => {
    const config = modelConfig({ layers: 1, dModel: 8, heads: 2, context: 4 });
    const weights = initParams(config, paramLayout(config), 1);
    const bytes = saveCheckpoint({ config, weights });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect((8 + n) % 8).toBe(0);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    const wte = header["wte.weight"];
    expect(wte).toEqual({ dtype: "F32", shape: [107, 8], data_offsets: [0, 107 * 8 * 4] });
    expect(JSON.parse(header.__metadata__.config)).toEqual(config);
    const f = new DataView(bytes.buffer, 8 + n).getFloat32(4 * 3, true);
    expect(f).toBe(weights[3]);
    expect(loadCheckpoint(bytes).optimizer).toBeUndefined();
    // Loads from an unaligned view too (a slice of a larger buffer).
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    expect(loadCheckpoint(shifted.subarray(1)).weights).toEqual(weights);
  });

  it("fails clearly on a config mismatch or a truncated file", () => {
    const config = modelConfig({ layers: 1, dModel: 8, heads: 2, context: 4 });
    const bytes = saveCheckpoint({ config, weights: initParams(config, paramLayout(config), 1) });
    expect(() => loadCheckpoint(bytes.subarray(0, 100))).toThrow(/header length|data_offsets/);
    expect(() => saveCheckpoint({ config, weights: new Float32Array(3) })).toThrow(/expected/);
  });
});
