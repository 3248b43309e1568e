// LoRA adapters on the frozen base weights (Hu et al. 2021, as PEFT implements them): for a
// target linear y = x W^T (+ b), the adapter adds (alpha/rank) * (x A^T) B^T with A (r, in)
// and B (out, r). Dropout is 0; B starts at zero, so a fresh adapter changes nothing; A starts
// kaiming-uniform(a = sqrt(5)) as PEFT's default (uniform in +-1/sqrt(in)).
//
// The adapter has its own flat buffer with named offsets and a size table (the base layout's
// habits, model/config.ts), so "all trainable parameters in one buffer" holds: with LoRA the
// gradients and the Adam moments are of this layout and the base buffer is only read.
//
// Targets use the Hugging Face module names. The lab fuses some of them, so a target is a
// block of rows of one fused base weight:
//   q_proj  attn.c_attn rows [0, Q)      (in C)     k_proj  rows [Q, Q+KV)   v_proj  rows [Q+KV, QKV)
//   o_proj  attn.c_proj  (C, Q)          (in Q)     (Q = NH*hs, KV = KVH*hs: grouped-query attention)
//   gate_proj mlp.c_fc rows [0, H) (swiglu only)     up_proj mlp.c_fc rows [H, 2H) (swiglu) or
//   the whole c_fc (gelu: GPT-2's fc is the "up" projection)
//   down_proj mlp.c_proj (C, H)          (in H)
// Each target has its own A and B. On the fused matrix this is the same as one LoRA of rank
// k*r whose A stacks the k A's and whose B is block diagonal (B_q, B_k, B_v): the fused output
// columns of q only see B_q. That is how the GPT-2 export writes it (model/hf/write.ts).
// Tested by model/lora.test.ts (PyTorch golden, base bit-identical, counts, adapter off).
import { LORA_TARGET_NAMES } from "../config/schema";
import {
  attnDims,
  gaussian,
  type LoraConfig,
  type LoraTarget,
  type ModelConfig,
  mlpHidden,
  mulberry32,
} from "./config";

export type { LoraConfig, LoraTarget };

/** The target modules, in adapter order: RunConfig's list (`model.lora.targets`). */
export const LORA_TARGETS = LORA_TARGET_NAMES;

export const NO_LORA: LoraConfig = { rank: 0, alpha: 16, targets: [...LORA_TARGETS] };

/** Which base weight a target is part of (the LayerTensors key) and where. */
export type LoraBaseWeight = "qkvw" | "projw" | "fcw" | "fcprojw";

export interface LoraTargetSpec {
  target: LoraTarget;
  weight: LoraBaseWeight;
  /** First row of the block inside the fused weight (= first column of the fused output). */
  rowStart: number;
  /** Rows of the block (the target's output width). */
  rows: number;
  /** Width of the fused output (its row stride in the activations). */
  outStride: number;
  /** Input width. */
  inDim: number;
  /** Offsets (floats) into the adapter buffer of A (r, inDim) and B (rows, r). */
  a: number;
  b: number;
}

export interface LoraLayout {
  rank: number;
  alpha: number;
  scale: number;
  tensors: { name: string; shape: number[]; offset: number; size: number }[];
  /** Per layer, the adapters in LORA_TARGETS order. */
  layers: LoraTargetSpec[][];
  total: number;
  /** Trained floats: sum over layers and targets of r * (in + out). */
  count: number;
}

/** The fused-row block each target is, for this model (throws naming the field when it has none). */
export function targetBlock(c: ModelConfig, t: LoraTarget): Omit<LoraTargetSpec, "target" | "a" | "b"> {
  const C = c.dModel;
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const { Q, KV, QKV } = attnDims(c);
  switch (t) {
    case "q_proj":
      return { weight: "qkvw", rowStart: 0, rows: Q, outStride: QKV, inDim: C };
    case "k_proj":
      return { weight: "qkvw", rowStart: Q, rows: KV, outStride: QKV, inDim: C };
    case "v_proj":
      return { weight: "qkvw", rowStart: Q + KV, rows: KV, outStride: QKV, inDim: C };
    case "o_proj":
      return { weight: "projw", rowStart: 0, rows: C, outStride: C, inDim: Q };
    case "gate_proj":
      if (c.mlp !== "swiglu")
        throw new Error("model.lora.targets: gate_proj needs model.mlp = swiglu (a gelu MLP has no gate)");
      return { weight: "fcw", rowStart: 0, rows: H, outStride: fcRows, inDim: C };
    case "up_proj":
      return { weight: "fcw", rowStart: c.mlp === "swiglu" ? H : 0, rows: H, outStride: fcRows, inDim: C };
    case "down_proj":
      return { weight: "fcprojw", rowStart: 0, rows: C, outStride: C, inDim: H };
  }
}

export function checkLora(c: ModelConfig, lora: LoraConfig): void {
  if (!Number.isInteger(lora.rank) || lora.rank < 0)
    throw new Error(`model.lora.rank must be a non-negative integer, got ${lora.rank}`);
  if (lora.rank === 0) return;
  if (!(lora.alpha > 0)) throw new Error(`model.lora.alpha must be > 0, got ${lora.alpha}`);
  if (lora.targets.length === 0) throw new Error("model.lora.targets: name at least one module");
  for (const t of lora.targets) {
    if (!LORA_TARGETS.includes(t))
      throw new Error(`model.lora.targets: unknown module ${t} (known: ${LORA_TARGETS.join(", ")})`);
    targetBlock(c, t);
  }
  if (c.valueHead)
    throw new Error("model.lora: a value head (PPO critic) is not trained with LoRA here; use rank 0");
}

/** Adapter layout: per layer, per target (LORA_TARGETS order), A then B, 64-float aligned. */
export function loraLayout(c: ModelConfig, lora: LoraConfig): LoraLayout {
  checkLora(c, lora);
  const r = lora.rank;
  const tensors: LoraLayout["tensors"] = [];
  let offset = 0;
  const add = (name: string, shape: number[]): number => {
    const size = shape[0] * shape[1];
    tensors.push({ name, shape, offset, size });
    const at = offset;
    offset += Math.ceil(size / 64) * 64;
    return at;
  };
  const layers: LoraTargetSpec[][] = [];
  for (let l = 0; l < (r > 0 ? c.layers : 0); l++) {
    const specs: LoraTargetSpec[] = [];
    for (const t of LORA_TARGETS) {
      if (!lora.targets.includes(t)) continue;
      const blk = targetBlock(c, t);
      const a = add(`h.${l}.${t}.lora_A.weight`, [r, blk.inDim]);
      const b = add(`h.${l}.${t}.lora_B.weight`, [blk.rows, r]);
      specs.push({ target: t, ...blk, a, b });
    }
    layers.push(specs);
  }
  return {
    rank: r,
    alpha: lora.alpha,
    scale: r > 0 ? lora.alpha / r : 0,
    tensors,
    layers,
    total: offset,
    count: tensors.reduce((s, t) => s + t.size, 0),
  };
}

/** The trained-parameter formula: L * r * sum over targets of (in + out). */
export function loraParamCount(c: ModelConfig, lora: LoraConfig): number {
  if (lora.rank === 0) return 0;
  let per = 0;
  for (const t of new Set(lora.targets)) {
    const b = targetBlock(c, t);
    per += lora.rank * (b.inDim + b.rows);
  }
  return c.layers * per;
}

/** A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's kaiming_uniform(a=sqrt(5))), B = 0. */
export function initLora(layout: LoraLayout, seed: number): Float32Array {
  const p = new Float32Array(layout.total);
  const u = mulberry32(seed ^ 0x10ba);
  for (const specs of layout.layers) {
    for (const s of specs) {
      const bound = 1 / Math.sqrt(s.inDim);
      for (let i = 0; i < layout.rank * s.inDim; i++) p[s.a + i] = (2 * u() - 1) * bound;
    }
  }
  return p;
}

/** A random non-zero B too (tests: a fresh adapter's B = 0 would hide every B path). */
export function randomLora(layout: LoraLayout, seed: number, std = 0.1): Float32Array {
  const p = new Float32Array(layout.total);
  const randn = gaussian(mulberry32(seed));
  for (const t of layout.tensors) for (let i = 0; i < t.size; i++) p[t.offset + i] = std * randn();
  return p;
}
