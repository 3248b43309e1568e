// Unit tests of the Hugging Face reader: config.json of the target models -> ModelConfig and
// parameter counts, unsupported values as errors naming the field, the safetensors reader
// (bf16/f16/f32, single and sharded, one tensor per read), and bad files (truncated, missing
// tensor, wrong shape or dtype, missing shard) as errors naming the file and the tensor.
// The CPU model of each family against its PyTorch golden (logits, loss, every gradient, a
// 10-step AdamW trajectory). The tiny models are written by model/golden/make_hf_models.py.
// Run: npx vitest run --project unit model/hf/read.test.ts
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { assertClose } from "../../kernels/testing";
import { loadCheckpoint, saveCheckpoint } from "../checkpoint";
import { attnDims, paramLayout } from "../config";
import { CpuModel } from "../cpu";
import { goldenLoss, goldenLossGrads, readHfGolden } from "../golden";
import { bytesSource, toFloat32 } from "../safetensors";
import { QWEN3_06B, QWEN25_05B, SMOLLM2_135M } from "./configs";
import { nodeModelDir } from "./node";
import {
  blobModelDir,
  hfModelConfig,
  hfTensors,
  loadHfModel,
  loadHfWeights,
  type ModelDir,
  readHfConfig,
} from "./read";

const HF = new URL("../golden/hf/", import.meta.url).pathname;
const FAMILIES = ["llama", "qwen2", "qwen3"] as const;

describe("config.json -> ModelConfig", () => {
  it("SmolLM2-135M: GQA 9/3, head size 64, tied, 134,515,008 parameters", () => {
    const c = hfModelConfig(SMOLLM2_135M);
    expect(attnDims(c)).toEqual({ NH: 9, KVH: 3, hs: 64, Q: 576, KV: 192, QKV: 960 });
    expect(c).toMatchObject({ norm: "rmsnorm", mlp: "swiglu", positional: "rope", tiedEmbeddings: true });
    expect(c).toMatchObject({ qkvBias: false, projBias: false, mlpBias: false, qkNorm: false });
    expect(c).toMatchObject({ normEps: 1e-5, ropeTheta: 100000, mlpSize: 1536, context: 2048 });
    expect(paramLayout(c).count).toBe(134_515_008);
  });

  it("Qwen2.5-0.5B: q/k/v biases only, 494,032,768 parameters", () => {
    const c = hfModelConfig(QWEN25_05B, "config.json", { context: 512 });
    expect(c).toMatchObject({ qkvBias: true, projBias: false, mlpBias: false, normEps: 1e-6, context: 512 });
    expect(attnDims(c)).toMatchObject({ NH: 14, KVH: 2, hs: 64 });
    expect(paramLayout(c).count).toBe(494_032_768);
  });

  it("Qwen3-0.6B: head_dim 128 at width 1024, q/k norms, 440,467,456 non-embedding parameters", () => {
    const c = hfModelConfig(QWEN3_06B);
    expect(attnDims(c)).toEqual({ NH: 16, KVH: 8, hs: 128, Q: 2048, KV: 1024, QKV: 4096 });
    expect(c.qkNorm).toBe(true);
    expect(paramLayout(c).count - c.vocab * c.dModel).toBe(440_467_456);
    const names = hfTensors(c).map((t) => t.name);
    expect(names).toContain("model.layers.27.self_attn.k_norm.weight");
    expect(names).not.toContain("lm_head.weight");
  });

  it("maps every HF tensor onto a disjoint range of the layout", () => {
    const llamaBiases = { ...SMOLLM2_135M, attention_bias: true, mlp_bias: true, tie_word_embeddings: false };
    for (const cfg of [SMOLLM2_135M, QWEN25_05B, { ...QWEN3_06B, tie_word_embeddings: false }, llamaBiases]) {
      const c = hfModelConfig({ ...cfg, num_hidden_layers: 2, vocab_size: 100, intermediate_size: 64 });
      const layout = paramLayout(c);
      const covered = new Uint8Array(layout.total);
      for (const t of hfTensors(c, layout)) for (let i = 0; i < t.size; i++) covered[t.offset + i]++;
      let sum = 0;
      let overlaps = 0;
      for (const x of covered) {
        if (x > 1) overlaps++;
        sum += x;
      }
      expect(overlaps).toBe(0);
      expect(sum).toBe(layout.count);
      if (cfg === llamaBiases) {
        expect(c).toMatchObject({ qkvBias: true, projBias: true, mlpBias: true });
        expect(hfTensors(c, layout).map((t) => t.name)).toContain("model.layers.1.mlp.down_proj.bias");
      }
    }
  });

  it("ignores fields that do not change the computation, rejects those that would", () => {
    const ok = { ...QWEN3_06B, some_future_flag: true, pretraining_tp: 4, layer_types: ["full_attention"] };
    expect(() => hfModelConfig(ok)).not.toThrow();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ model_type: "mistral" }, /config\.json: model_type is "mistral"; supported are llama, qwen2, qwen3/],
      [{ use_sliding_window: true }, /config\.json: use_sliding_window is true/],
      [{ rope_scaling: { rope_type: "yarn", factor: 4 } }, /config\.json: rope_scaling is .*yarn/],
      [{ hidden_act: "gelu" }, /config\.json: hidden_act is "gelu"/],
      [{ num_key_value_heads: 5 }, /num_key_value_heads \(5\) must divide num_attention_heads \(16\)/],
      [{ head_dim: 0 }, /head_dim must be a positive integer/],
      [{ rope_parameters: { rope_type: "llama3", factor: 8 } }, /rope_parameters is .*llama3/],
      [{ layer_types: ["full_attention", "sliding_attention"] }, /layer_types is/],
      [{ vocab_size: undefined }, /vocab_size is missing/],
      [
        { quantization_config: { quant_method: "awq", bits: 4 } },
        /quantization_config is .*awq.*; only none/,
      ],
    ];
    for (const [patch, err] of cases) expect(() => hfModelConfig({ ...QWEN3_06B, ...patch })).toThrow(err);
    expect(() => hfModelConfig({ ...SMOLLM2_135M, rope_interleaved: true })).toThrow(/rope_interleaved/);
    expect(() => hfModelConfig(QWEN3_06B, "config.json", { context: 50000 })).toThrow(
      /context 50000 must be .*max_position_embeddings \(40960\)/,
    );
    // transformers 5 keeps rope_theta inside rope_parameters
    const v5 = {
      ...QWEN3_06B,
      rope_theta: undefined,
      rope_parameters: { rope_type: "default", rope_theta: 5e5 },
    };
    expect(hfModelConfig(v5).ropeTheta).toBe(5e5);
  });
});

describe("safetensors", () => {
  it("widens bf16, f16 and f32 exactly", () => {
    const u16 = (xs: number[]) => new Uint8Array(new Uint16Array(xs).buffer);
    expect(Array.from(toFloat32(u16([0x3f80, 0xc000, 0x3e80, 0x0000, 0x7f80]), "BF16"))).toEqual([
      1,
      -2,
      0.25,
      0,
      Number.POSITIVE_INFINITY,
    ]);
    expect(Array.from(toFloat32(u16([0x3c00, 0xc000, 0x3400, 0x0001, 0x7bff]), "F16"))).toEqual([
      1,
      -2,
      0.25,
      2 ** -24,
      65504,
    ]);
    const f = new Float32Array([1.5, -3.25e-7]);
    expect(Array.from(toFloat32(new Uint8Array(f.buffer), "F32"))).toEqual(Array.from(f));
  });
});

/** A directory whose files are the fixture's, with some replaced (bytes) or removed (null). */
function patchedDir(family: string, patch: Record<string, Uint8Array | null>): ModelDir {
  const disk = nodeModelDir(HF + family);
  return {
    name: `${family}*`,
    open: async (path) => {
      if (path in patch) {
        const b = patch[path];
        return b ? bytesSource(b, `${family}*/${path}`) : null;
      }
      return disk.open(path);
    },
  };
}

function fixtureBytes(family: string, file: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(readFileSync(`${HF}${family}/${file}`));
}

/** The same safetensors bytes with the header JSON edited. */
function editHeader(
  bytes: Uint8Array,
  edit: (h: Record<string, Record<string, unknown>>) => void,
): Uint8Array {
  const len = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len)));
  edit(header);
  const js = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + js.length + bytes.length - 8 - len);
  new DataView(out.buffer).setBigUint64(0, BigInt(js.length), true);
  out.set(js, 8);
  out.set(bytes.subarray(8 + len), 8 + js.length);
  return out;
}

describe("tiny HF models (make_hf_models.py)", () => {
  it.each(FAMILIES)("%s: loads config and bf16 weights equal to the fixture's", async (family) => {
    const dir = nodeModelDir(HF + family);
    const { config, weights } = await loadHfModel(dir);
    const golden = readHfGolden(fixtureBytes(family, "golden.bin"), config);
    expect(golden.family).toBe(family);
    expect(weights).toEqual(golden.weights);
    expect(config.context).toBe(32);
  });

  it("reads one tensor per read, never the whole file (sharded llama and single-file qwen3)", async () => {
    for (const family of ["llama", "qwen3"]) {
      const disk = nodeModelDir(HF + family);
      let biggest = 0;
      let files = 0;
      const dir: ModelDir = {
        name: family,
        open: async (path) => {
          const src = await disk.open(path);
          if (!src || !path.endsWith(".safetensors")) return src;
          files++;
          const read = (o: number, n: number) => {
            biggest = Math.max(biggest, n);
            return src.read(o, n);
          };
          return { ...src, read };
        },
      };
      const config = await readHfConfig(dir);
      await loadHfModel(dir);
      const largest = Math.max(...hfTensors(config).map((t) => t.size * 2)); // bf16
      expect(biggest).toBe(largest);
      expect(files).toBeGreaterThan(0);
    }
  });

  it("reads large tensors in bounded pieces with the same result", async () => {
    const disk = nodeModelDir(`${HF}qwen2`);
    let biggest = 0;
    const dir: ModelDir = {
      name: "qwen2",
      open: async (path) => {
        const src = await disk.open(path);
        if (!src || !path.endsWith(".safetensors")) return src;
        const read = (o: number, n: number) => {
          if (o > 8) biggest = Math.max(biggest, n); // data reads, not the 8-byte length or the header
          return src.read(o, n);
        };
        return { ...src, read };
      },
    };
    const config = await readHfConfig(dir);
    const pieces = new Float32Array(paramLayout(config).total);
    await loadHfWeights(dir, config, (off, data) => pieces.set(data, off), 100);
    expect(biggest).toBe(200); // 100 bf16 values
    expect(pieces).toEqual((await loadHfModel(disk)).weights);
  });

  it("a loaded model round-trips through the lab's own checkpoint format", async () => {
    const { config, weights } = await loadHfModel(nodeModelDir(`${HF}qwen3`));
    const back = loadCheckpoint(saveCheckpoint({ config, weights }));
    expect(back.config).toEqual(config);
    expect(back.weights).toEqual(weights);
  });

  it("a model from Blobs (the browser's files) loads the same", async () => {
    const names = ["config.json", "model.safetensors"];
    const files = new Map(names.map((n) => [n, new Blob([fixtureBytes("qwen3", n)])]));
    const a = await loadHfModel(blobModelDir("picked", files));
    const b = await loadHfModel(nodeModelDir(HF + "qwen3"));
    expect(a.weights).toEqual(b.weights);
  });
});

describe("bad files name the file and the tensor or field", () => {
  const st = "model.safetensors";
  it("truncated safetensors", async () => {
    const bytes = fixtureBytes("qwen3", st);
    const dir = patchedDir("qwen3", { [st]: bytes.subarray(0, bytes.length - 100) });
    await expect(loadHfModel(dir)).rejects.toThrow(
      /qwen3\*\/model\.safetensors is truncated: tensor \S+ needs bytes up to \d+, the file has \d+/,
    );
    const dir2 = patchedDir("qwen3", { [st]: bytes.subarray(0, 50) });
    await expect(loadHfModel(dir2)).rejects.toThrow(
      /model\.safetensors: truncated or not a safetensors file/,
    );
  });

  it("missing tensor", async () => {
    const bytes = editHeader(fixtureBytes("qwen3", st), (h) => {
      delete h["model.layers.1.mlp.up_proj.weight"];
    });
    await expect(loadHfModel(patchedDir("qwen3", { [st]: bytes }))).rejects.toThrow(
      "qwen3*/model.safetensors: missing tensor model.layers.1.mlp.up_proj.weight",
    );
  });

  it("wrong shape", async () => {
    const bytes = editHeader(fixtureBytes("qwen3", st), (h) => {
      h["model.layers.0.self_attn.o_proj.weight"].shape = [64, 32];
    });
    await expect(loadHfModel(patchedDir("qwen3", { [st]: bytes }))).rejects.toThrow(
      "qwen3*/model.safetensors: tensor model.layers.0.self_attn.o_proj.weight has shape [64,32], config.json needs [32,64]",
    );
  });

  it("wrong dtype", async () => {
    const bytes = editHeader(fixtureBytes("qwen2", st), (h) => {
      h["model.layers.0.self_attn.k_proj.bias"].dtype = "I16";
    });
    await expect(loadHfModel(patchedDir("qwen2", { [st]: bytes }))).rejects.toThrow(
      "qwen2*/model.safetensors: tensor model.layers.0.self_attn.k_proj.bias has dtype I16; supported are BF16, F16 and F32",
    );
    // a tensor the model does not use may have any dtype (int buffers some exports keep)
    const extra = editHeader(fixtureBytes("qwen2", st), (h) => {
      h["model.rotary_emb.inv_freq"] = { dtype: "I64", shape: [0], data_offsets: [0, 0] };
    });
    await expect(loadHfModel(patchedDir("qwen2", { [st]: extra }))).resolves.toBeTruthy();
    const sized = editHeader(fixtureBytes("qwen2", st), (h) => {
      h["model.norm.weight"].dtype = "F32"; // the bytes of a bf16 tensor cannot hold it
    });
    await expect(loadHfModel(patchedDir("qwen2", { [st]: sized }))).rejects.toThrow(
      /tensor model\.norm\.weight: data_offsets \[\d+, \d+\) do not hold 32 F32 values/,
    );
  });

  it("unsupported config value", async () => {
    const cfg = JSON.parse(new TextDecoder().decode(fixtureBytes("qwen2", "config.json")));
    const bad = new TextEncoder().encode(JSON.stringify({ ...cfg, use_sliding_window: true }));
    await expect(loadHfModel(patchedDir("qwen2", { "config.json": bad }))).rejects.toThrow(
      "qwen2*/config.json: use_sliding_window is true; only false (full attention in every layer) is supported",
    );
  });

  it("sharded: a shard missing, a tensor the index does not map", async () => {
    await expect(
      loadHfModel(patchedDir("llama", { "model-00002-of-00002.safetensors": null })),
    ).rejects.toThrow("llama*: no model-00002-of-00002.safetensors (named by model.safetensors.index.json)");
    const index = JSON.parse(new TextDecoder().decode(fixtureBytes("llama", "model.safetensors.index.json")));
    delete index.weight_map["model.norm.weight"];
    const patched = new TextEncoder().encode(JSON.stringify(index));
    await expect(
      loadHfModel(patchedDir("llama", { "model.safetensors.index.json": patched })),
    ).rejects.toThrow(
      "llama*/model.safetensors.index.json: weight_map names no file for tensor model.norm.weight",
    );
    await expect(loadHfModel(patchedDir("llama", { "model.safetensors.index.json": null }))).rejects.toThrow(
      "llama*: neither model.safetensors nor model.safetensors.index.json",
    );
  });
});

describe("CPU model vs PyTorch, per family (make_hf_models.py)", () => {
  it.each(FAMILIES)("%s: logits, logp, entropy, loss, every gradient, 10 AdamW steps", async (family) => {
    const model = await CpuModel.fromHf(nodeModelDir(HF + family));
    const { config, params: weights } = model;
    const g = readHfGolden(fixtureBytes(family, "golden.bin"), config);
    const batch = { B: g.B, T: g.T, tokens: g.tokens, targets: g.targets };
    const out = await model.forwardScore(batch, { logits: true });
    assertClose("logits", out.logits!, g.logits, { atol: 1e-4, rtol: 1e-3 });
    assertClose("logp", out.logp, g.logp, { atol: 1e-4, rtol: 1e-3 });
    assertClose("entropy", out.entropy, g.entropy, { atol: 1e-4, rtol: 1e-3 });
    expect(Math.abs(goldenLoss(g, out.logp, out.entropy) - g.loss)).toBeLessThan(1e-4);
    await model.backward(goldenLossGrads(g));
    for (const t of hfTensors(config)) {
      const sl = (a: Float32Array) => a.subarray(t.offset, t.offset + t.size);
      assertClose(`grad ${t.name}`, sl(model.grads), sl(g.grads), { atol: 1e-5, rtol: 1e-3 });
    }
    const losses: number[] = [];
    const norms: number[] = [];
    const m2 = new CpuModel(config, weights);
    for (let s = 0; s < g.steps; s++) {
      m2.zeroGrad();
      const o = await m2.forwardScore(batch);
      losses.push(goldenLoss(g, o.logp, o.entropy));
      await m2.backward(goldenLossGrads(g));
      norms.push((await m2.step(g.hparams)).gradNorm);
    }
    assertClose("step losses", losses, g.stepLosses, { atol: 1e-2, rtol: 0 });
    assertClose("step grad norms", norms, g.stepGradNorms, { atol: 1e-3, rtol: 1e-3 });
  });
});
