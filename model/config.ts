// The model's configuration (one typed object with commented defaults, overridden by a
// partial) and its parameter layout: ONE flat Float32 buffer with named offsets and a size
// table (llm.c ParameterTensors). Every tensor starts at a multiple of 64 floats (256 bytes)
// so a GPU storage binding can point straight at it. Gradients and the Adam moments use the
// same layout in buffers of the same size; the gaps between tensors stay zero.
// The same object describes the lab's tiny GPT-style models and the Llama family read from a
// Hugging Face config.json (model/hf/read.ts): grouped-query attention, a head size of its own,
// per-head q/k norms and which linears carry biases are options of the one network.
// Also the GPT-2 style seeded initialisation and the seeded PRNG it uses.
// Tested by model/config.test.ts (layout) and through every model test.

import type { RunConfig } from "../config";
import type { LORA_TARGET_NAMES } from "../config/schema";
import { VOCAB_SIZE } from "./tokenizer";

/** A LoRA target module, by its Hugging Face name (model/lora.ts places each on the layout). */
export type LoraTarget = (typeof LORA_TARGET_NAMES)[number];

/** The adapters on a frozen base (model/lora.ts); here because ModelConfig holds one. */
export interface LoraConfig {
  /** Rank r of every adapter; 0: no adapter (full fine-tuning). */
  rank: number;
  /** Scale numerator: the adapter's output is multiplied by alpha/rank (PEFT lora_alpha). */
  alpha: number;
  /** Hugging Face module names the adapter is on. */
  targets: LoraTarget[];
}

export interface ModelConfig {
  /** Transformer blocks. Demo: 3. */
  layers: number;
  /** Width of the residual stream (C). Demo: 128. */
  dModel: number;
  /** Attention (query) heads (NH); with headDim 0, dModel must divide by it. Demo: 4 (head size 32). */
  heads: number;
  /** Key/value heads (KVH) of grouped-query attention; heads must divide by it. 0: one per head. */
  kvHeads: number;
  /** Head size (hs); q is NH*hs wide, k and v KVH*hs. 0: dModel/heads (Qwen3 sets 128 at width 1024). */
  headDim: number;
  /** Longest sequence the model sees (positions 0..context-1). Demo: 128. */
  context: number;
  /** Vocabulary size (V). Demo: the tokenizer's 107. */
  vocab: number;
  /** "layernorm" (GPT-2: weight and bias) or "rmsnorm" (weight only). Demo: layernorm. */
  norm: "layernorm" | "rmsnorm";
  /** "gelu" (GPT-2: fc -> GELU(tanh) -> proj) or "swiglu" (silu(gate) * up -> proj). Demo: gelu. */
  mlp: "gelu" | "swiglu";
  /** Hidden width of the MLP as a multiple of dModel (used when mlpSize is 0). Demo: 4. */
  mlpRatio: number;
  /** Hidden width of the MLP (H) in units, overriding mlpRatio (HF intermediate_size). 0: mlpRatio*dModel. */
  mlpSize: number;
  /** Biases on the q, k and v projections (GPT-2 and Qwen2: yes; Llama, Qwen3: no). Demo: true. */
  qkvBias: boolean;
  /** A bias on the attention output projection. Demo: true. */
  projBias: boolean;
  /** Biases on the MLP's linears (fc and its projection). Demo: true. */
  mlpBias: boolean;
  /** RMSNorm over the head dimension of q and k, before RoPE, weights (hs) per part (Qwen3). Demo: false. */
  qkNorm: boolean;
  /** "learned" (a wpe table, GPT-2) or "rope" (rotary on q and k, no table). Demo: learned. */
  positional: "learned" | "rope";
  /** The LM head reuses the token embedding (wte). Demo: true. */
  tiedEmbeddings: boolean;
  /** A scalar per token from a separate linear on the final hidden state (PPO's critic). Demo: false. */
  valueHead: boolean;
  /** Epsilon of the norms. */
  normEps: number;
  /** Base of the rotary frequencies (only with positional "rope"). */
  ropeTheta: number;
  /** LoRA adapters on the frozen base (model/lora.ts); rank 0: full fine-tuning. Demo: off. */
  lora: LoraConfig;
  /**
   * Storage of the frozen base's linear weights (model/half.ts): "f16" (LoRA only) rounds them
   * to f16 on load and stores them so where the device has shader-f16; math stays f32. Demo: f32.
   */
  baseDtype: "f32" | "f16";
  /** Std of the normal initialisation (GPT-2: 0.02); the residual projections get initStd/sqrt(2L). */
  initStd: number;
}

export const DEFAULT_MODEL_CONFIG: ModelConfig = {
  layers: 3,
  dModel: 128,
  heads: 4,
  kvHeads: 0,
  headDim: 0,
  context: 128,
  vocab: VOCAB_SIZE,
  norm: "layernorm",
  mlp: "gelu",
  mlpRatio: 4,
  mlpSize: 0,
  qkvBias: true,
  projBias: true,
  mlpBias: true,
  qkNorm: false,
  positional: "learned",
  tiedEmbeddings: true,
  valueHead: false,
  normEps: 1e-5,
  ropeTheta: 10000,
  lora: {
    rank: 0,
    alpha: 16,
    targets: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
  },
  baseDtype: "f32",
  initStd: 0.02,
};

/** A run's model: RunConfig.model, the tokenizer's vocabulary (the character tokenizer's 107 by default) and a value head for GAE. */
export function modelConfigOf(c: RunConfig, vocab = VOCAB_SIZE): ModelConfig {
  return modelConfig({
    layers: c.model.layers,
    dModel: c.model.d_model,
    heads: c.model.heads,
    context: c.model.context,
    vocab,
    norm: c.model.norm,
    mlp: c.model.mlp,
    positional: c.model.positional,
    tiedEmbeddings: c.model.tied_embeddings,
    valueHead: c.rl.advantage === "gae",
    initStd: c.model.init_std,
    lora: loraConfigOf(c, c.model.mlp),
    baseDtype: c.model.dtype,
  });
}

/** RunConfig.model.lora for a model with this MLP ("all-linear": every projection it has; gelu has no gate). */
export function loraConfigOf(c: RunConfig, mlp: ModelConfig["mlp"]): LoraConfig {
  const l = c.model.lora;
  return {
    rank: l.rank,
    alpha: l.alpha,
    targets:
      l.targets === "all-linear"
        ? DEFAULT_MODEL_CONFIG.lora.targets.filter((t) => t !== "gate_proj" || mlp === "swiglu")
        : [...l.targets],
  };
}

export function modelConfig(overrides: Partial<ModelConfig> = {}): ModelConfig {
  const c = { ...DEFAULT_MODEL_CONFIG, ...overrides };
  c.lora = { ...DEFAULT_MODEL_CONFIG.lora, ...overrides.lora };
  const positive = ["layers", "dModel", "heads", "context", "vocab", "mlpRatio"] as const;
  for (const k of positive) {
    if (!Number.isInteger(c[k]) || c[k] <= 0)
      throw new Error(`ModelConfig.${k} must be a positive integer, got ${c[k]}`);
  }
  for (const k of ["kvHeads", "headDim", "mlpSize"] as const) {
    if (!Number.isInteger(c[k]) || c[k] < 0)
      throw new Error(`ModelConfig.${k} must be a non-negative integer (0: the default), got ${c[k]}`);
  }
  if (c.baseDtype !== "f32" && c.baseDtype !== "f16")
    throw new Error(`ModelConfig.baseDtype must be "f32" or "f16", got ${JSON.stringify(c.baseDtype)}`);
  if (c.baseDtype === "f16" && c.lora.rank === 0)
    throw new Error(
      "ModelConfig.baseDtype f16 stores a frozen base and needs LoRA (lora.rank > 0): full fine-tuning trains f32 weights",
    );
  if (c.headDim === 0 && c.dModel % c.heads !== 0)
    throw new Error(`ModelConfig.dModel (${c.dModel}) must divide by heads (${c.heads})`);
  const { NH, KVH, hs } = attnDims(c);
  if (NH % KVH !== 0) throw new Error(`ModelConfig.heads (${NH}) must divide by kvHeads (${KVH})`);
  if (c.positional === "rope" && hs % 2 !== 0) {
    throw new Error(`rope needs an even head size, got ${hs}`);
  }
  return c;
}

/** Hidden width of the MLP (H); swiglu's fc holds gate and up stacked, 2H rows. */
export function mlpHidden(c: ModelConfig): number {
  return c.mlpSize > 0 ? c.mlpSize : c.dModel * c.mlpRatio;
}

/** Attention sizes: NH query heads, KVH key/value heads, hs head size; Q = NH*hs, KV = KVH*hs, QKV = Q + 2KV. */
export interface AttnDims {
  NH: number;
  KVH: number;
  hs: number;
  Q: number;
  KV: number;
  QKV: number;
}

export function attnDims(c: ModelConfig): AttnDims {
  const NH = c.heads;
  const KVH = c.kvHeads > 0 ? c.kvHeads : NH;
  const hs = c.headDim > 0 ? c.headDim : c.dModel / NH;
  return { NH, KVH, hs, Q: NH * hs, KV: KVH * hs, QKV: (NH + 2 * KVH) * hs };
}

export const ALIGN_FLOATS = 64; // 256 bytes: minStorageBufferOffsetAlignment

export interface TensorSpec {
  name: string;
  shape: number[];
  /** Offset in floats into the flat buffer, a multiple of ALIGN_FLOATS. */
  offset: number;
  size: number;
}

// -1 marks a tensor the config does not have.
export interface LayerOffsets {
  ln1w: number;
  ln1b: number; // -1 with rmsnorm
  qkvw: number; // (QKV, C): rows [0,Q) q, [Q,Q+KV) k, [Q+KV,QKV) v
  qkvb: number; // (QKV) or -1
  qnormw: number; // (hs) or -1 (qkNorm)
  knormw: number; // (hs) or -1
  projw: number; // (C, Q)
  projb: number; // (C) or -1
  ln2w: number;
  ln2b: number;
  fcw: number; // (H, C) gelu, (2H, C) swiglu: rows [0,H) gate, [H,2H) up
  fcb: number; // or -1
  fcprojw: number; // (C, H)
  fcprojb: number; // (C) or -1
}

export interface ParamLayout {
  tensors: TensorSpec[];
  byName: Map<string, TensorSpec>;
  /** Floats in the flat buffer (a multiple of ALIGN_FLOATS). */
  total: number;
  /** Floats that are parameters (total minus alignment gaps). */
  count: number;
  wte: number; // (V, C)
  wpe: number; // (T, C) or -1 with rope
  layers: LayerOffsets[];
  lnfw: number;
  lnfb: number;
  lmHead: number; // (V, C); equals wte when tied
  valuew: number; // (C) or -1
  valueb: number; // (1) or -1
}

/** One layer's tensors as views of type T (null where the config has none: rmsnorm or linear biases, q/k norms). */
export interface LayerTensors<T> {
  ln1w: T;
  ln1b: T | null;
  qkvw: T;
  qkvb: T | null;
  qnormw: T | null;
  knormw: T | null;
  projw: T;
  projb: T | null;
  ln2w: T;
  ln2b: T | null;
  fcw: T;
  fcb: T | null;
  fcprojw: T;
  fcprojb: T | null;
}

/** Every tensor of the layout as a view of type T: the CPU model's subarrays, the GPU model's buffer views. */
export interface ParamTensors<T> {
  wte: T;
  wpe: T | null;
  layers: LayerTensors<T>[];
  lnfw: T;
  lnfb: T | null;
  lmHead: T;
  valuew: T | null;
  valueb: T | null;
}

/** Named views of a flat parameter (or gradient) buffer: `at(offset, size)` makes one view. */
export function paramTensors<T>(
  layout: ParamLayout,
  at: (offset: number, size: number) => T,
): ParamTensors<T> {
  const sizeAt = new Map(layout.tensors.map((t) => [t.offset, t.size]));
  const opt = (off: number): T | null => (off < 0 ? null : at(off, sizeAt.get(off) as number));
  const req = (off: number): T => {
    const v = opt(off);
    if (v === null) throw new Error(`paramTensors: no tensor at offset ${off}`);
    return v;
  };
  return {
    wte: req(layout.wte),
    wpe: opt(layout.wpe),
    layers: layout.layers.map((o) => ({
      ln1w: req(o.ln1w),
      ln1b: opt(o.ln1b),
      qkvw: req(o.qkvw),
      qkvb: opt(o.qkvb),
      qnormw: opt(o.qnormw),
      knormw: opt(o.knormw),
      projw: req(o.projw),
      projb: opt(o.projb),
      ln2w: req(o.ln2w),
      ln2b: opt(o.ln2b),
      fcw: req(o.fcw),
      fcb: opt(o.fcb),
      fcprojw: req(o.fcprojw),
      fcprojb: opt(o.fcprojb),
    })),
    lnfw: req(layout.lnfw),
    lnfb: opt(layout.lnfb),
    lmHead: req(layout.lmHead),
    valuew: opt(layout.valuew),
    valueb: opt(layout.valueb),
  };
}

// Names follow nanoGPT's state dict so checkpoints read naturally next to PyTorch's; model/hf/read.ts
// maps Hugging Face names onto them (q, k, v stacked into c_attn, gate and up into c_fc).
export function paramLayout(c: ModelConfig): ParamLayout {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { hs, Q, QKV } = attnDims(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const tensors: TensorSpec[] = [];
  let offset = 0;
  const add = (name: string, shape: number[]): number => {
    const size = shape.reduce((a, b) => a * b, 1);
    tensors.push({ name, shape, offset, size });
    const at = offset;
    offset += Math.ceil(size / ALIGN_FLOATS) * ALIGN_FLOATS;
    return at;
  };
  const hasBias = c.norm === "layernorm";
  const wte = add("wte.weight", [c.vocab, C]);
  const wpe = c.positional === "learned" ? add("wpe.weight", [c.context, C]) : -1;
  const layers: LayerOffsets[] = [];
  for (let l = 0; l < c.layers; l++) {
    const p = `h.${l}.`;
    layers.push({
      ln1w: add(`${p}ln_1.weight`, [C]),
      ln1b: hasBias ? add(`${p}ln_1.bias`, [C]) : -1,
      qkvw: add(`${p}attn.c_attn.weight`, [QKV, C]),
      qkvb: c.qkvBias ? add(`${p}attn.c_attn.bias`, [QKV]) : -1,
      qnormw: c.qkNorm ? add(`${p}attn.q_norm.weight`, [hs]) : -1,
      knormw: c.qkNorm ? add(`${p}attn.k_norm.weight`, [hs]) : -1,
      projw: add(`${p}attn.c_proj.weight`, [C, Q]),
      projb: c.projBias ? add(`${p}attn.c_proj.bias`, [C]) : -1,
      ln2w: add(`${p}ln_2.weight`, [C]),
      ln2b: hasBias ? add(`${p}ln_2.bias`, [C]) : -1,
      fcw: add(`${p}mlp.c_fc.weight`, [fcRows, C]),
      fcb: c.mlpBias ? add(`${p}mlp.c_fc.bias`, [fcRows]) : -1,
      fcprojw: add(`${p}mlp.c_proj.weight`, [C, H]),
      fcprojb: c.mlpBias ? add(`${p}mlp.c_proj.bias`, [C]) : -1,
    });
  }
  const lnfw = add("ln_f.weight", [C]);
  const lnfb = hasBias ? add("ln_f.bias", [C]) : -1;
  const lmHead = c.tiedEmbeddings ? wte : add("lm_head.weight", [c.vocab, C]);
  const valuew = c.valueHead ? add("value_head.weight", [C]) : -1;
  const valueb = c.valueHead ? add("value_head.bias", [1]) : -1;
  return {
    tensors,
    byName: new Map(tensors.map((t) => [t.name, t])),
    total: offset,
    count: tensors.reduce((a, t) => a + t.size, 0),
    wte,
    wpe,
    layers,
    lnfw,
    lnfb,
    lmHead,
    valuew,
    valueb,
  };
}

/** mulberry32: a small seeded PRNG; uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal samples from a uniform source (Box-Muller). */
export function gaussian(uniform: () => number): () => number {
  return () => {
    const u1 = Math.max(uniform(), 1e-12);
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * uniform());
  };
}

/**
 * GPT-2 initialisation: weights N(0, initStd) (GPT-2: 0.02, model.init_std), the two residual
 * projections per block N(0, initStd/sqrt(2L)) so the residual stream's variance does not grow with depth,
 * biases 0, norm weights 1. The value head starts at 0 (value 0 everywhere).
 */
export function initParams(c: ModelConfig, layout: ParamLayout, seed: number): Float32Array {
  const p = new Float32Array(layout.total);
  const randn = gaussian(mulberry32(seed));
  const residStd = c.initStd / Math.sqrt(2 * c.layers);
  for (const t of layout.tensors) {
    const leaf = t.name.split(".").slice(-2).join(".");
    if (t.name.startsWith("value_head")) continue;
    if (t.name.endsWith(".bias")) continue;
    if (/^(ln_1|ln_2|ln_f|q_norm|k_norm)\.weight$/.test(leaf) || t.name === "ln_f.weight") {
      p.fill(1, t.offset, t.offset + t.size);
      continue;
    }
    const std = t.name.endsWith("c_proj.weight") ? residStd : c.initStd;
    for (let i = 0; i < t.size; i++) p[t.offset + i] = std * randn();
  }
  return p;
}
