// Half-precision base weights (ModelConfig.baseDtype "f16", LoRA only): which tensors, the
// rounding both backends apply on load, and the report of what was stored how.
//
// The f16 tensors are each layer's four linear weights (c_attn = q|k|v, c_proj, c_fc = gate|up,
// mlp c_proj: 72% of Qwen2.5-0.5B's parameters); norms, biases, the token and position tables
// and the head stay f32 (the embedding and the chunked head read f32 rows). A tensor with a value
// beyond f16's range (|x| > 65504, or not finite) stays f32, exact, and the report names it.
// Both backends round the same values the same way (kernels/half.ts, round to nearest even), so
// the CPU model, a GPU with shader-f16 (f16 storage, the f16 matmul of kernels/matmul.ts) and a
// GPU without it (f32 storage of the rounded values) compute from identical weights; all math
// is f32. Tested by model/half.test.ts and model/half.gpu.test.ts.
import { F16_MAX, maxAbs, roundHalf } from "../kernels/half";
import type { ModelConfig, ParamLayout, TensorSpec } from "./config";

/** Layout names of the tensors stored as f16 (a layer's linear weights). */
const HALF_NAME = /^h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$/;

/** True when the config asks for an f16 base (which needs LoRA: model/config.ts checks it). */
export function halfBase(c: ModelConfig): boolean {
  return c.baseDtype === "f16" && c.lora.rank > 0;
}

/** The tensors of the layout an f16 base stores as f16 (unless out of range). */
export function halfTensors(layout: ParamLayout): TensorSpec[] {
  return layout.tensors.filter((t) => HALF_NAME.test(t.name));
}

/**
 * Values an f16 base stores in f16 (before any tensor is found beyond range), for the memory
 * plan: the base takes (layout.count - n) * 4 + n * 2 bytes (plus alignment), not count * 2.
 */
export function halfFloats(layout: ParamLayout): number {
  return halfTensors(layout).reduce((a, t) => a + t.size, 0);
}

/** Whether f16 can hold this tensor's values (every |x| <= 65504); else it stays f32. */
export function fitsHalf(values: ArrayLike<number>): boolean {
  return maxAbs(values) <= F16_MAX;
}

/** A tensor an f16 base keeps in f32, and why. */
export interface KeptF32 {
  name: string;
  /** Its largest |value| (Infinity for a NaN or infinite one). */
  maxAbs: number;
}

/** How a model stores its base weights (shown by the CLI and in a run's events). */
export interface BaseStorage {
  /** What ModelConfig.baseDtype asked for. */
  requested: "f32" | "f16";
  /** How the f16 tensors are stored: "f16", or "f32" (holding f16-rounded values when f16 was asked). */
  storage: "f16" | "f32";
  /** Why storage differs from what was asked ("" when it does not). */
  reason: string;
  /** The tensors stored (or rounded) as f16. */
  halfTensors: number;
  /** Tensors kept f32 because a value is beyond f16's range. */
  keptF32: KeptF32[];
  /** Bytes the base weights take as stored. */
  bytes: number;
}

/** The report's one line: "base weights f16: 96 linear weights f16-rounded, 1260.34 MB stored; kept f32 ...". */
export function describeStorage(s: BaseStorage): string {
  const kept =
    s.keptF32.length > 0
      ? `; kept f32 (beyond f16's range 65504): ${s.keptF32.map((k) => `${k.name} (max |x| ${k.maxAbs})`).join(", ")}`
      : "";
  const why = s.reason ? ` (${s.reason})` : "";
  const what = s.requested === "f16" ? `${s.halfTensors} linear weights f16-rounded, ` : "";
  return `base weights ${s.storage}${why}: ${what}${(s.bytes / 1e6).toFixed(2)} MB stored${kept}`;
}

/**
 * The CPU backend's f16 base: rounds, IN PLACE, every f16 tensor of `weights` whose values fit
 * f16 (the rest stay exact); returns the tensors kept f32.
 */
export function roundHalfBase(layout: ParamLayout, weights: Float32Array): KeptF32[] {
  const kept: KeptF32[] = [];
  for (const t of halfTensors(layout)) {
    const w = weights.subarray(t.offset, t.offset + t.size);
    const m = maxAbs(w);
    if (m > F16_MAX) {
      kept.push({ name: t.name, maxAbs: m });
      continue;
    }
    for (let i = 0; i < w.length; i++) w[i] = roundHalf(w[i]);
  }
  return kept;
}
