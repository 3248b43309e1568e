// A trained model leaving in Hugging Face formats: the LoRA adapter as PEFT files
// (adapter_config.json + adapter_model.safetensors, PEFT's tensor names) and the model with the
// adapter merged in the transformers layout (config.json + model.safetensors). Also the
// reverse (importGpt2) so a merged export can be read back and scored.
//
// The lab's tiny models have one Hugging Face architecture: pre-LayerNorm + GELU(tanh) +
// learned positions + tied head is GPT-2 (GPT2LMHeadModel, activation "gelu_new"), whose
// linears are Conv1D modules with (in, out) weights: every lab (out, in) weight is transposed.
// Other tiny variants are refused with the field named (gpt2Check).
// LoRA in PEFT terms: GPT-2's c_attn fuses q, k and v, and the lab's q/k/v adapters are
// separate, so on c_attn they are written as ONE adapter of rank k*r (k targets among q, k, v):
// lora_A stacks the k A's (k*r, C), lora_B is block diagonal (3C, k*r) with B_q in q's rows and
// columns, zeros elsewhere; rank_pattern/alpha_pattern give c_attn r' = k*r and alpha' = k*alpha
// so PEFT's scale alpha'/r' stays alpha/r. fan_in_fan_out is true (Conv1D), which changes only
// how PEFT merges (it transposes B A), not the lora_A (r, in) / lora_B (out, r) shapes.
// The rmsnorm + swiglu + rope models (the Llama/Qwen2/Qwen3 families read by model/hf/read.ts, and
// the tiny variant of those options) leave in their family's layout: q/k/v and gate/up are
// un-stacked again (model/hf/read.ts hfTensors), and PEFT's names are
// base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight, ... (one adapter per target,
// fan_in_fan_out false).
// The merged folder also gets the source model's tokenizer and generation files, copied byte
// for byte (tokenizerFiles: from model.tokenizer, else model.pretrained), so transformers'
// AutoTokenizer / generate read it as they read the source.
// Used by cli/export.ts (peft|hf) and the page's download. Tested by model/hf/write.test.ts with a
// PyTorch GPT-2 forward written from the architecture (model/golden/make_gpt2_golden.py).
import type { RunConfig } from "../../config/schema.ts";
import { toHalfBits } from "../../kernels/half";
import type { ModelConfig } from "../config";
import { attnDims, mlpHidden, modelConfig, paramLayout } from "../config";
import { halfBase } from "../half";
import { type LoraLayout, type LoraTarget, loraLayout } from "../lora";
import { safetensorsHead, toFloat32 } from "../safetensors";
import { type HfFamily, hfModelConfig } from "./config";
import { hfTensors } from "./read";

// ---------------------------------------------------------------------------------------
// safetensors (the lab's tensors are f32; an export may store them as bf16 or f16)

export interface NamedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

/** How an export stores its weights: the source model's dtype unless asked otherwise. */
export type HfDtype = "f32" | "bf16" | "f16";
const ST_DTYPE = { f32: "F32", bf16: "BF16", f16: "F16" } as const;
const TORCH_DTYPE = { f32: "float32", bf16: "bfloat16", f16: "float16" } as const;

/** float32 to bfloat16 bits, round to nearest even (NaN stays NaN), as torch's .to(bfloat16). */
function bf16Bits(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

export function writeSafetensors(
  tensors: NamedTensor[],
  metadata: Record<string, string> = {},
  dtype: HfDtype = "f32",
): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  const size = dtype === "f32" ? 4 : 2;
  let bytes = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length)
      throw new Error(`safetensors: ${t.name} has ${t.data.length} values, shape [${t.shape}]`);
    header[t.name] = { dtype: ST_DTYPE[dtype], shape: t.shape, data_offsets: [bytes, bytes + size * n] };
    bytes += size * n;
  }
  const head = safetensorsHead(header);
  const out = new Uint8Array(head.length + bytes);
  const dv = new DataView(out.buffer);
  out.set(head);
  let at = head.length;
  for (const t of tensors) {
    if (dtype === "f32") for (let i = 0; i < t.data.length; i++) dv.setFloat32(at + 4 * i, t.data[i], true);
    else if (dtype === "bf16")
      for (let i = 0; i < t.data.length; i++) dv.setUint16(at + 2 * i, bf16Bits(t.data[i]), true);
    else {
      const h = toHalfBits(t.data);
      for (let i = 0; i < h.length; i++) dv.setUint16(at + 2 * i, h[i], true);
    }
    at += size * t.data.length;
  }
  return out;
}

export function readSafetensors(bytes: Uint8Array, what = "safetensors"): Map<string, NamedTensor> {
  const len = Number(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len))) as Record<string, unknown>;
  const out = new Map<string, NamedTensor>();
  for (const [name, e] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const { dtype, shape, data_offsets } = e as {
      dtype: string;
      shape: number[];
      data_offsets: [number, number];
    };
    if (dtype !== "F32" && dtype !== "BF16" && dtype !== "F16")
      throw new Error(`${what}: tensor ${name} is ${dtype}; this reader takes F32, BF16 and F16`);
    const at = 8 + len;
    out.set(name, {
      name,
      shape,
      data: toFloat32(bytes.subarray(at + data_offsets[0], at + data_offsets[1]), dtype),
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Merging and the GPT-2 mapping

/** W' = W + (alpha/r) B A on every target's rows of its fused weight; the base layout's buffer. */
export function mergeLora(config: ModelConfig, weights: Float32Array, adapter: Float32Array): Float32Array {
  const layout = paramLayout(config);
  const lora = loraLayout(config, config.lora);
  if (adapter.length !== lora.total)
    throw new Error(`merge: adapter has ${adapter.length} floats, layout ${lora.total}`);
  const out = Float32Array.from(weights);
  const r = lora.rank;
  lora.layers.forEach((specs, l) => {
    const lo = layout.layers[l];
    for (const s of specs) {
      const w = lo[s.weight]; // (outStride, inDim)
      for (let i = 0; i < s.rows; i++) {
        for (let c = 0; c < s.inDim; c++) {
          let acc = 0;
          for (let k = 0; k < r; k++) acc += adapter[s.b + i * r + k] * adapter[s.a + k * s.inDim + c];
          out[w + (s.rowStart + i) * s.inDim + c] += lora.scale * acc;
        }
      }
    }
  });
  return out;
}

/** Refuses a tiny variant without a GPT-2 counterpart, naming the RunConfig field. */
export function gpt2Check(c: ModelConfig): void {
  const need: [boolean, string][] = [
    [c.norm === "layernorm", `model.norm is ${c.norm}; GPT-2 has layernorm`],
    [c.mlp === "gelu", `model.mlp is ${c.mlp}; GPT-2 has gelu`],
    [c.positional === "learned", `model.positional is ${c.positional}; GPT-2 has learned positions`],
    [c.tiedEmbeddings, "model.tied_embeddings is false; GPT-2 ties its head to wte"],
    [!c.valueHead, "the value head (rl.advantage gae) has no place in GPT2LMHeadModel"],
  ];
  for (const [ok, why] of need) {
    if (!ok)
      throw new Error(`export: the only Hugging Face architecture of the lab's tiny models is GPT-2: ${why}`);
  }
}

/** (rows, cols) row-major -> (cols, rows): the lab's (out, in) Linear weight as a Conv1D (in, out). */
function transpose(src: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = src[i * cols + j];
  return out;
}

/** config.json of GPT2LMHeadModel for this tiny model. */
export function gpt2ConfigJson(c: ModelConfig): Record<string, unknown> {
  gpt2Check(c);
  return {
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    vocab_size: c.vocab,
    n_positions: c.context,
    n_embd: c.dModel,
    n_layer: c.layers,
    n_head: c.heads,
    n_inner: mlpHidden(c),
    activation_function: "gelu_new",
    layer_norm_epsilon: c.normEps,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    scale_attn_weights: true,
    tie_word_embeddings: true,
    torch_dtype: "float32",
  };
}

/** The model (adapter merged when given) as config.json + model.safetensors in GPT-2's layout. */
export function hfGpt2Files(
  config: ModelConfig,
  weights: Float32Array,
  adapter: Float32Array | null,
): Record<string, Uint8Array> {
  gpt2Check(config);
  const merged = adapter ? mergeLora(config, weights, adapter) : weights;
  const base = modelConfig({ ...config, lora: { ...config.lora, rank: 0 }, baseDtype: "f32" });
  const layout = paramLayout(base);
  const tensors: NamedTensor[] = [];
  for (const t of layout.tensors) {
    const data = merged.subarray(t.offset, t.offset + t.size);
    const linear = t.shape.length === 2 && /\.(c_attn|c_proj|c_fc)\.weight$/.test(t.name);
    tensors.push(
      linear
        ? {
            name: `transformer.${t.name}`,
            shape: [t.shape[1], t.shape[0]],
            data: transpose(data, t.shape[0], t.shape[1]),
          }
        : { name: `transformer.${t.name}`, shape: t.shape, data: Float32Array.from(data) },
    );
  }
  const text = (o: unknown) => new TextEncoder().encode(`${JSON.stringify(o, null, 2)}\n`);
  return {
    "config.json": text(gpt2ConfigJson(base)),
    "model.safetensors": writeSafetensors(tensors, { format: "pt" }),
  };
}

/** Reads a GPT-2 export back into the lab's config and layout (Conv1D weights transposed back). */
export function importGpt2(
  configJson: Record<string, unknown>,
  safetensors: Uint8Array,
): { config: ModelConfig; weights: Float32Array } {
  if (configJson.model_type !== "gpt2")
    throw new Error(`import: model_type ${configJson.model_type}, expected gpt2`);
  const num = (k: string) => {
    const v = configJson[k];
    if (typeof v !== "number") throw new Error(`import: config.json ${k} must be a number`);
    return v;
  };
  const C = num("n_embd");
  const config = modelConfig({
    layers: num("n_layer"),
    dModel: C,
    heads: num("n_head"),
    context: num("n_positions"),
    vocab: num("vocab_size"),
    mlpRatio: (configJson.n_inner as number | null | undefined) ? num("n_inner") / C : 4,
    normEps: num("layer_norm_epsilon"),
  });
  const layout = paramLayout(config);
  const file = readSafetensors(safetensors, "model.safetensors");
  const weights = new Float32Array(layout.total);
  for (const t of layout.tensors) {
    const e = file.get(`transformer.${t.name}`);
    if (!e) throw new Error(`import: model.safetensors lacks transformer.${t.name}`);
    const linear = t.shape.length === 2 && /\.(c_attn|c_proj|c_fc)\.weight$/.test(t.name);
    const want = linear ? [t.shape[1], t.shape[0]] : t.shape;
    if (e.shape.join(",") !== want.join(","))
      throw new Error(`import: transformer.${t.name} has shape [${e.shape}], expected [${want}]`);
    weights.set(linear ? transpose(e.data, want[0], want[1]) : e.data, t.offset);
  }
  return { config, weights };
}

// ---------------------------------------------------------------------------------------
// PEFT

/** GPT-2 module (under transformer.h.N.) of each lab target. */
const GPT2_MODULE: Record<Exclude<LoraTarget, "gate_proj">, string> = {
  q_proj: "attn.c_attn",
  k_proj: "attn.c_attn",
  v_proj: "attn.c_attn",
  o_proj: "attn.c_proj",
  up_proj: "mlp.c_fc",
  down_proj: "mlp.c_proj",
};

/** The adapter as PEFT files for a GPT-2 base (names base_model.model.transformer.h.N.<module>.lora_A.weight). */
export function peftGpt2Files(
  config: ModelConfig,
  adapter: Float32Array,
  baseModel = "the GPT-2 export of this run (npm run export -- hf)",
): Record<string, Uint8Array> {
  gpt2Check(config);
  const lora: LoraLayout = loraLayout(config, config.lora);
  if (lora.rank === 0) throw new Error("export peft: the run has no LoRA adapter (model.lora.rank is 0)");
  if (adapter.length !== lora.total)
    throw new Error(`export peft: adapter has ${adapter.length} floats, layout ${lora.total}`);
  const r = lora.rank;
  const tensors: NamedTensor[] = [];
  const modules = new Set<string>();
  const ranks: Record<string, number> = {};
  lora.layers.forEach((specs, l) => {
    const byModule = new Map<string, typeof specs>();
    for (const s of specs) {
      const m = GPT2_MODULE[s.target as Exclude<LoraTarget, "gate_proj">];
      byModule.set(m, [...(byModule.get(m) ?? []), s]);
    }
    for (const [m, ss] of byModule) {
      modules.add(m);
      const k = ss.length;
      const inDim = ss[0].inDim;
      const outDim = ss[0].outStride;
      const A = new Float32Array(k * r * inDim); // (k r, in)
      const Bm = new Float32Array(outDim * k * r); // (out, k r), block diagonal
      ss.forEach((s, j) => {
        A.set(adapter.subarray(s.a, s.a + r * inDim), j * r * inDim);
        for (let i = 0; i < s.rows; i++)
          for (let q = 0; q < r; q++) Bm[(s.rowStart + i) * k * r + j * r + q] = adapter[s.b + i * r + q];
      });
      if (k > 1) ranks[m] = k;
      const p = `base_model.model.transformer.h.${l}.${m}`;
      tensors.push({ name: `${p}.lora_A.weight`, shape: [k * r, inDim], data: A });
      tensors.push({ name: `${p}.lora_B.weight`, shape: [outDim, k * r], data: Bm });
    }
  });
  const rankPattern: Record<string, number> = {};
  const alphaPattern: Record<string, number> = {};
  for (const [m, k] of Object.entries(ranks)) {
    rankPattern[m] = k * r;
    alphaPattern[m] = k * lora.alpha;
  }
  return peftAdapterFiles(tensors, {
    baseModel,
    r,
    alpha: lora.alpha,
    modules: [...modules],
    fanInFanOut: true,
    patterns: { rank_pattern: rankPattern, alpha_pattern: alphaPattern },
  });
}

/**
 * A PEFT LoRA adapter's two files: adapter_config.json (the fields PEFT reads; rank_pattern and
 * alpha_pattern where a module's rank differs) and adapter_model.safetensors.
 */
function peftAdapterFiles(
  tensors: NamedTensor[],
  o: {
    baseModel: string;
    revision?: string | null;
    r: number;
    alpha: number;
    modules: string[];
    fanInFanOut: boolean;
    patterns?: { rank_pattern: Record<string, number>; alpha_pattern: Record<string, number> };
  },
): Record<string, Uint8Array> {
  const adapterConfig = {
    peft_type: "LORA",
    task_type: "CAUSAL_LM",
    base_model_name_or_path: o.baseModel,
    ...(o.revision ? { revision: o.revision } : {}),
    r: o.r,
    lora_alpha: o.alpha,
    lora_dropout: 0,
    target_modules: [...o.modules].sort(),
    fan_in_fan_out: o.fanInFanOut,
    bias: "none",
    ...o.patterns,
    use_rslora: false,
    use_dora: false,
    modules_to_save: null,
    init_lora_weights: true,
    inference_mode: true,
  };
  return {
    "adapter_config.json": new TextEncoder().encode(`${JSON.stringify(adapterConfig, null, 2)}\n`),
    "adapter_model.safetensors": writeSafetensors(tensors, { format: "pt" }),
  };
}

// ---------------------------------------------------------------------------------------
// The Llama family (llama, qwen2, qwen3)

/** The Hugging Face architecture of a config: gpt2, or the Llama family member whose options it has. */
export function hfArchitecture(c: ModelConfig): "gpt2" | HfFamily {
  if (c.norm === "layernorm" && c.mlp === "gelu" && c.positional === "learned") {
    gpt2Check(c);
    return "gpt2";
  }
  const need: [boolean, string][] = [
    [c.norm === "rmsnorm", `model.norm is ${c.norm}`],
    [c.mlp === "swiglu", `model.mlp is ${c.mlp}`],
    [c.positional === "rope", `model.positional is ${c.positional}`],
    [!c.valueHead, "a value head (rl.advantage gae) has no place in a causal LM"],
  ];
  for (const [ok, why] of need) {
    if (!ok)
      throw new Error(
        `export: ${why}; Hugging Face has GPT-2 (layernorm, gelu, learned) and the Llama family (rmsnorm, swiglu, rope), not this mix`,
      );
  }
  if (c.qkNorm) {
    if (c.qkvBias !== c.projBias || c.mlpBias)
      throw new Error("export: q/k norms (Qwen3) with these biases are no Hugging Face architecture");
    return "qwen3";
  }
  if (c.qkvBias && !c.projBias && !c.mlpBias) return "qwen2";
  if (c.qkvBias !== c.projBias)
    throw new Error(
      "export: biases on q/k/v but not on o_proj (or the reverse) are Qwen2's only without MLP biases",
    );
  return "llama";
}

/** config.json of the family's *ForCausalLM for this config. */
export function llamaConfigJson(c: ModelConfig, family: HfFamily): Record<string, unknown> {
  const { NH, KVH, hs } = attnDims(c);
  const arch = { llama: "LlamaForCausalLM", qwen2: "Qwen2ForCausalLM", qwen3: "Qwen3ForCausalLM" }[family];
  return {
    architectures: [arch],
    model_type: family,
    vocab_size: c.vocab,
    hidden_size: c.dModel,
    intermediate_size: mlpHidden(c),
    num_hidden_layers: c.layers,
    num_attention_heads: NH,
    num_key_value_heads: KVH,
    head_dim: hs,
    hidden_act: "silu",
    max_position_embeddings: c.context,
    rms_norm_eps: c.normEps,
    rope_theta: c.ropeTheta,
    rope_scaling: null,
    tie_word_embeddings: c.tiedEmbeddings,
    attention_dropout: 0,
    ...(family === "qwen2" ? { use_sliding_window: false } : {}),
    ...(family === "llama" ? { attention_bias: c.qkvBias, mlp_bias: c.mlpBias } : {}),
    ...(family === "qwen3" ? { attention_bias: c.qkvBias } : {}),
    torch_dtype: "float32",
  };
}

/** What an export knows of its source model (model.pretrained). */
export interface HfSource {
  /** base_model_name_or_path: a Hub repo id ("owner/name"), a folder path, or a picked folder's name. */
  name: string;
  /** True for a folder picked in the page (local:NAME): `name` is its name, no path PEFT can load. */
  picked?: boolean;
  /**
   * The path the lab's page served the model from (a preset's model, "models/lab-llama"), when
   * `name` is that folder's place in the lab's repository ("public/models/lab-llama").
   */
  served?: string;
  /** The Hub revision the run used (a commit pins it); null for files on disk. */
  revision: string | null;
  /** The source's config.json, parsed: the merged export writes it back (torch_dtype aside). */
  config?: Record<string, unknown>;
}

export interface HfExportOptions {
  source?: HfSource;
  /** The stored dtype; default the source config's torch_dtype (bf16 for most Hub models), else f32. */
  dtype?: HfDtype;
}

/** The dtype a config.json declares (torch_dtype, or transformers' newer dtype); f32 when it names none. */
export function sourceDtype(config: Record<string, unknown>): HfDtype {
  const t = config.torch_dtype ?? config.dtype;
  return t === "bfloat16" ? "bf16" : t === "float16" ? "f16" : "f32";
}

/** The source a run names: hf:owner/name at model.revision, local:<name>, or a folder path; null for the lab's own model. */
export function hfSourceOf(config: RunConfig): HfSource | null {
  const p = config.model.pretrained;
  if (p === null) return null;
  if (p.startsWith("hf:")) return { name: p.slice(3), revision: config.model.revision };
  if (p.startsWith("local:")) return { name: p.slice(6), revision: null, picked: true };
  return { name: p.replace(/\/+$/, ""), revision: null };
}

// The architecture fields a checkpoint and its source's config.json must agree on.
function sameArchitecture(c: ModelConfig, src: Record<string, unknown>): string | null {
  const s = hfModelConfig(src, "the source's config.json", { context: c.context });
  const keys = [
    "layers",
    "dModel",
    "heads",
    "kvHeads",
    "headDim",
    "vocab",
    "mlpSize",
    "tiedEmbeddings",
  ] as const;
  const diff = keys.filter((k) => (c[k] ?? 0) !== (s[k] ?? 0));
  return diff.length === 0
    ? null
    : `the checkpoint's model (${diff.map((k) => `${k} ${c[k]}`).join(", ")}) is not the source's config.json (${diff.map((k) => `${k} ${s[k]}`).join(", ")})`;
}

function llamaFiles(
  config: ModelConfig,
  merged: Float32Array,
  family: HfFamily,
  o: HfExportOptions,
): Record<string, Uint8Array> {
  const base = modelConfig({ ...config, lora: { ...config.lora, rank: 0 }, baseDtype: "f32" });
  const src = o.source?.config;
  const dtype = o.dtype ?? (src ? sourceDtype(src) : "f32");
  let json: Record<string, unknown>;
  if (src) {
    const why = sameArchitecture(base, src);
    if (why) throw new Error(`export hf: ${why}`);
    // Training changed the weights only: the source's config.json, with the dtype if asked for another.
    json = { ...src };
    if (dtype !== sourceDtype(src)) {
      json.torch_dtype = TORCH_DTYPE[dtype];
      if ("dtype" in src) json.dtype = TORCH_DTYPE[dtype];
    }
  } else json = { ...llamaConfigJson(base, family), torch_dtype: TORCH_DTYPE[dtype] };
  const tensors = hfTensors(base).map((t) => ({
    name: t.name,
    shape: t.shape,
    data: merged.slice(t.offset, t.offset + t.size),
  }));
  const files: Record<string, Uint8Array> = {
    "config.json": new TextEncoder().encode(`${JSON.stringify(json, null, 2)}\n`),
    "model.safetensors": writeSafetensors(tensors, { format: "pt" }, dtype),
  };
  if (o.source) files["README.md"] = exportReadme("merged", o.source, dtype, halfBase(config));
  return files;
}

// The Python that rounds a base as an f16 run did (model/half.ts): each layer's linear weights to
// float16, q/k/v together and gate/up together (the lab holds each group as one tensor), a group
// with a value beyond float16's range (or not finite) kept float32; everything else float32.
const ROUND_LIKE_THE_RUN = [
  "for layer in base.model.layers:",
  "    a, m = layer.self_attn, layer.mlp",
  "    for group in ((a.q_proj, a.k_proj, a.v_proj), (a.o_proj,), (m.gate_proj, m.up_proj), (m.down_proj,)):",
  "        if all(bool(p.weight.abs().max() <= 65504) for p in group):",
  "            for p in group:",
  "                p.weight.data = p.weight.data.half().float()",
];

/**
 * README.md of an export: what it is, its base model and revision, how to load it, and (for a run
 * whose base was rounded to f16) which model each export is.
 */
function exportReadme(kind: "merged" | "peft", s: HfSource, dtype?: HfDtype, half = false): Uint8Array {
  const at = s.revision ? ` at revision \`${s.revision}\`` : "";
  const rev = s.revision ? `, revision="${s.revision}"` : "";
  const picked = s.picked
    ? [
        "",
        `\`${s.name}\` is the name of a folder picked in the lab's page, not a path: set base_model_name_or_path in adapter_config.json to where that folder is, and load the base from there.`,
      ]
    : s.served
      ? [
          "",
          `\`${s.name}\` is the folder the lab's page served the model from (\`${s.served}/\` on the page's server), as the lab's repository holds it: load from the repository's root, or copy the folder and set base_model_name_or_path in adapter_config.json to where it is.`,
        ]
      : [];
  const halfMerged = half
    ? [
        "",
        "The run stored its base in float16 (model.dtype f16): each layer's linear weights (q/k/v/o/gate/up/down_proj) rounded to float16, all math in float32. This folder holds that rounded base with the trained adapter merged: the model the run trained and scored, not the source with the adapter applied (which differs slightly unless the source's linear weights are rounded the same way; the adapter export's README shows how).",
      ]
    : [];
  const lines =
    kind === "merged"
      ? [
          `# ${s.name}, fine-tuned in the agentic RL lab`,
          "",
          `The model \`${s.name}\`${at} with the run's trained weights (a LoRA adapter merged in, or full fine-tuning): config.json is the source's${dtype ? `, weights stored as ${TORCH_DTYPE[dtype]}` : ""}; the tokenizer and chat template files are the source's, copied.`,
          ...halfMerged,
          "",
          "```python",
          "from transformers import AutoModelForCausalLM, AutoTokenizer",
          'model = AutoModelForCausalLM.from_pretrained("path/to/this/folder")',
          'tokenizer = AutoTokenizer.from_pretrained("path/to/this/folder")',
          "```",
        ]
      : half
        ? [
            `# A LoRA adapter of ${s.name}, trained in the agentic RL lab`,
            "",
            `base_model_name_or_path: \`${s.name}\`${at}.`,
            ...picked,
            "",
            "The run stored its base in float16 (model.dtype f16): each layer's linear weights (q/k/v/o/gate/up/down_proj) rounded to float16, all math in float32, and the adapter was trained against that rounded base. Applied to the source as it is, the adapter gives a slightly different model from the run's. To get the run's model, load the base in float32, round those weights as the run did, then apply the adapter (the merged export, npm run export -- hf, is that model already):",
            "",
            "```python",
            "import torch",
            "from peft import PeftModel",
            "from transformers import AutoModelForCausalLM",
            `base = AutoModelForCausalLM.from_pretrained("${s.name}"${rev}, dtype=torch.float32)`,
            "# as the run's f16 base: q/k/v and gate/up are one tensor each in the lab, rounded (or kept float32, beyond float16's range) together",
            ...ROUND_LIKE_THE_RUN,
            'model = PeftModel.from_pretrained(base, "path/to/this/folder")',
            "```",
          ]
        : [
            `# A LoRA adapter of ${s.name}, trained in the agentic RL lab`,
            "",
            `base_model_name_or_path: \`${s.name}\`${at}. Apply it to that model (the same revision):`,
            ...picked,
            "",
            "```python",
            "from peft import PeftModel",
            "from transformers import AutoModelForCausalLM",
            `base = AutoModelForCausalLM.from_pretrained("${s.name}"${rev})`,
            'model = PeftModel.from_pretrained(base, "path/to/this/folder")',
            "```",
          ];
  return new TextEncoder().encode(`${lines.join("\n")}\n`);
}

/** HF module (under model.layers.N.) of each target in the Llama family. */
const LLAMA_MODULE: Record<LoraTarget, string> = {
  q_proj: "self_attn.q_proj",
  k_proj: "self_attn.k_proj",
  v_proj: "self_attn.v_proj",
  o_proj: "self_attn.o_proj",
  gate_proj: "mlp.gate_proj",
  up_proj: "mlp.up_proj",
  down_proj: "mlp.down_proj",
};

function peftLlama(config: ModelConfig, adapter: Float32Array, source: HfSource): Record<string, Uint8Array> {
  const lora = loraLayout(config, config.lora);
  const r = lora.rank;
  const tensors: NamedTensor[] = [];
  lora.layers.forEach((specs, l) => {
    for (const s of specs) {
      const p = `base_model.model.model.layers.${l}.${LLAMA_MODULE[s.target]}`;
      tensors.push({
        name: `${p}.lora_A.weight`,
        shape: [r, s.inDim],
        data: adapter.slice(s.a, s.a + r * s.inDim),
      });
      tensors.push({
        name: `${p}.lora_B.weight`,
        shape: [s.rows, r],
        data: adapter.slice(s.b, s.b + s.rows * r),
      });
    }
  });
  return peftAdapterFiles(tensors, {
    baseModel: source.name,
    revision: source.revision,
    r,
    alpha: lora.alpha,
    modules: [...config.lora.targets],
    fanInFanOut: false,
  });
}

/**
 * The model (adapter merged when given) in its Hugging Face architecture's layout. With a
 * source (a pretrained run): the source's config.json, its dtype, and a README.md naming it.
 */
export function hfFiles(
  config: ModelConfig,
  weights: Float32Array,
  adapter: Float32Array | null,
  o: HfExportOptions = {},
) {
  const arch = hfArchitecture(config);
  if (arch === "gpt2") return hfGpt2Files(config, weights, adapter);
  return llamaFiles(config, adapter ? mergeLora(config, weights, adapter) : weights, arch, o);
}

/**
 * The adapter as PEFT files for the config's Hugging Face architecture: base_model_name_or_path
 * is the source (a pretrained run's model, with its revision and a README.md), else the run's
 * own merged export.
 */
export function peftFiles(config: ModelConfig, adapter: Float32Array, source?: HfSource) {
  const arch = hfArchitecture(config);
  if (config.lora.rank === 0)
    throw new Error("export peft: the run has no LoRA adapter (model.lora.rank is 0)");
  if (arch === "gpt2") return peftGpt2Files(config, adapter, source?.name);
  if (!source)
    return peftLlama(config, adapter, {
      name: `the ${arch} export of this run (npm run export -- hf)`,
      revision: null,
    });
  return {
    ...peftLlama(config, adapter, source),
    "README.md": exportReadme("peft", source, undefined, halfBase(config)),
  };
}

// ---------------------------------------------------------------------------------------
// The source model's tokenizer and generation files, copied into the merged folder

/**
 * The files of a Hugging Face folder that describe its tokenizer, chat template and generation
 * defaults (config.json and the weights are the export's own). Those the source has are copied.
 */
export const TOKENIZER_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "added_tokens.json",
  "vocab.json",
  "merges.txt",
  "tokenizer.model",
  "chat_template.jinja",
  "chat_template.json",
  "generation_config.json",
] as const;

/** The folder (or hf:/local: source) whose tokenizer files the run used: model.tokenizer, else model.pretrained; null for the lab's own character tokenizer. */
export function tokenizerSource(config: RunConfig): string | null {
  return config.model.tokenizer ?? config.model.pretrained;
}

/**
 * TOKENIZER_FILES as the source has them, read by `read` (null: the source lacks that file),
 * and a note when it has no tokenizer (tokenizer.json, or a slow tokenizer's vocab): a merged
 * folder without one does not load in transformers' AutoTokenizer (a pretrained folder without
 * tokenizer files ran on the lab's character tokenizer).
 */
export async function tokenizerFiles(
  source: string,
  read: (name: string) => Promise<Uint8Array | null>,
): Promise<{ files: Record<string, Uint8Array>; note: string }> {
  const files: Record<string, Uint8Array> = {};
  for (const name of TOKENIZER_FILES) {
    const bytes = await read(name);
    if (bytes) files[name] = bytes;
  }
  const note =
    files["tokenizer.json"] || files["vocab.json"] || files["tokenizer.model"]
      ? ""
      : `${source} has no tokenizer.json (nor vocab.json or tokenizer.model): the merged folder has no tokenizer`;
  return { files, note };
}
