// Reader of the PyTorch golden fixture written by model/golden/make_golden.py (format in its
// header: magic "GLRL", version, JSON header, f32/i32 data). Returns the config, the batch,
// the weights as a flat buffer of our layout, and the expected outputs.
// Also readHfGolden for the Hugging Face families (make_hf_models.py).
// Used by model/cpu.test.ts, model/gpu.gpu.test.ts, model/hf.test.ts and model/hf.gpu.test.ts.
import { type ModelConfig, modelConfig, paramLayout } from "./config";
import { hfTensors } from "./hf";
import { loraLayout } from "./lora";

export const GOLDEN_MAGIC = 0x4c524c47;
export const GOLDEN_VERSION = 1;

export interface Golden {
  config: ModelConfig;
  B: number;
  T: number;
  entCoef: number;
  hparams: {
    lr: number;
    beta1: number;
    beta2: number;
    eps: number;
    weightDecay: number;
    maxGradNorm: number;
  };
  steps: number;
  tokens: Int32Array; // (B,T)
  targets: Int32Array; // (B,T)
  mask: Float32Array; // (B,T)
  weights: Float32Array; // flat, our layout
  grads: Float32Array; // flat, our layout
  logits: Float32Array; // (B,T,V)
  logp: Float32Array; // (B,T)
  entropy: Float32Array; // (B,T)
  loss: number;
  ce: number;
  stepLosses: Float32Array; // (steps)
  stepGradNorms: Float32Array; // (steps)
}

interface Entry {
  dtype: "f32" | "i32";
  shape: number[];
  offset: number;
}

/** The file's JSON header and typed readers of its tensors (any GLRL fixture). */
export function readGoldenFile(bytes: Uint8Array): {
  header: Record<string, unknown> & { tensors: Record<string, Entry> };
  has(name: string): boolean;
  f32(name: string): Float32Array;
  i32(name: string): Int32Array;
} {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = dv.getUint32(0, true);
  if (magic !== GOLDEN_MAGIC) throw new Error(`golden fixture: bad magic 0x${magic.toString(16)}`);
  const version = dv.getUint32(4, true);
  if (version !== GOLDEN_VERSION)
    throw new Error(`golden fixture: version ${version}, this reader knows ${GOLDEN_VERSION}`);
  const len = dv.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len)));
  const data = 12 + len + ((4 - (len % 4)) % 4);
  const entries = header.tensors as Record<string, Entry>;
  const get = (name: string): { e: Entry; n: number } => {
    const e = entries[name];
    if (!e) throw new Error(`golden fixture lacks ${name}`);
    return { e, n: e.shape.reduce((a, b) => a * b, 1) };
  };
  return {
    header,
    has: (name) => name in entries,
    f32: (name) => {
      const { e, n } = get(name);
      return Float32Array.from({ length: n }, (_, i) => dv.getFloat32(data + 4 * (e.offset + i), true));
    },
    i32: (name) => {
      const { e, n } = get(name);
      return Int32Array.from({ length: n }, (_, i) => dv.getInt32(data + 4 * (e.offset + i), true));
    },
  };
}

export interface LoraGolden {
  config: ModelConfig;
  B: number;
  T: number;
  entCoef: number;
  hparams: Golden["hparams"];
  steps: number;
  tokens: Int32Array;
  targets: Int32Array;
  mask: Float32Array;
  weights: Float32Array; // base, flat, our layout
  adapter: Float32Array; // flat, the LoRA layout
  adapterGrads: Float32Array; // flat, the LoRA layout
  logits: Float32Array; // (B,T,V) with the adapter
  baseLogits: Float32Array; // (B,T,V) the base alone
  logp: Float32Array;
  entropy: Float32Array;
  loss: number;
  stepLosses: Float32Array;
  stepGradNorms: Float32Array;
}

/** Reader of model/golden/make_lora_golden.py's lora-*.bin. */
export function readLoraGolden(bytes: Uint8Array): LoraGolden {
  const g = readGoldenFile(bytes);
  const h = g.header as unknown as Pick<LoraGolden, "B" | "T" | "entCoef" | "hparams" | "steps"> & {
    config: Partial<ModelConfig>;
  };
  const config = modelConfig(h.config);
  const layout = paramLayout(config);
  const lora = loraLayout(config, config.lora);
  const flat = (prefix: string, tensors: { name: string; offset: number; size: number }[], total: number) => {
    const out = new Float32Array(total);
    for (const t of tensors) {
      const src = g.f32(prefix + t.name);
      if (src.length !== t.size)
        throw new Error(`golden ${prefix + t.name}: ${src.length} floats, layout ${t.size}`);
      out.set(src, t.offset);
    }
    return out;
  };
  return {
    config,
    B: h.B,
    T: h.T,
    entCoef: h.entCoef,
    hparams: h.hparams,
    steps: h.steps,
    tokens: g.i32("tokens"),
    targets: g.i32("targets"),
    mask: g.f32("mask"),
    weights: flat("param.", layout.tensors, layout.total),
    adapter: flat("lora.", lora.tensors, lora.total),
    adapterGrads: flat("grad.lora.", lora.tensors, lora.total),
    logits: g.f32("logits"),
    baseLogits: g.f32("base_logits"),
    logp: g.f32("logp"),
    entropy: g.f32("entropy"),
    loss: g.f32("loss")[0],
    stepLosses: g.f32("step_losses"),
    stepGradNorms: g.f32("step_grad_norms"),
  };
}

export function readGolden(bytes: Uint8Array): Golden {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = dv.getUint32(0, true);
  if (magic !== GOLDEN_MAGIC) throw new Error(`golden fixture: bad magic 0x${magic.toString(16)}`);
  const version = dv.getUint32(4, true);
  if (version !== GOLDEN_VERSION)
    throw new Error(`golden fixture: version ${version}, this reader knows ${GOLDEN_VERSION}`);
  const len = dv.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len)));
  const data = 12 + len + ((4 - (len % 4)) % 4);
  const entries = header.tensors as Record<string, Entry>;
  const get = (name: string): { e: Entry; n: number } => {
    const e = entries[name];
    if (!e) throw new Error(`golden fixture lacks ${name}`);
    return { e, n: e.shape.reduce((a, b) => a * b, 1) };
  };
  const f32 = (name: string): Float32Array => {
    const { e, n } = get(name);
    return Float32Array.from({ length: n }, (_, i) => dv.getFloat32(data + 4 * (e.offset + i), true));
  };
  const i32 = (name: string): Int32Array => {
    const { e, n } = get(name);
    return Int32Array.from({ length: n }, (_, i) => dv.getInt32(data + 4 * (e.offset + i), true));
  };
  const config = modelConfig(header.config);
  const layout = paramLayout(config);
  const flat = (prefix: string): Float32Array => {
    const out = new Float32Array(layout.total);
    for (const t of layout.tensors) {
      const src = f32(prefix + t.name);
      if (src.length !== t.size)
        throw new Error(`golden ${prefix + t.name}: ${src.length} floats, layout ${t.size}`);
      out.set(src, t.offset);
    }
    return out;
  };
  return {
    config,
    B: header.B,
    T: header.T,
    entCoef: header.entCoef,
    hparams: header.hparams,
    steps: header.steps,
    tokens: i32("tokens"),
    targets: i32("targets"),
    mask: f32("mask"),
    weights: flat("param."),
    grads: flat("grad."),
    logits: f32("logits"),
    logp: f32("logp"),
    entropy: f32("entropy"),
    loss: f32("loss")[0],
    ce: f32("ce")[0],
    stepLosses: f32("step_losses"),
    stepGradNorms: f32("step_grad_norms"),
  };
}

/** The golden loss's gradients w.r.t. logp and entropy: -mask/N and -entCoef*mask/N. */
export function goldenLossGrads(g: Pick<Golden, "mask" | "entCoef">): {
  dlogp: Float32Array;
  dentropy: Float32Array;
} {
  const n = g.mask.reduce((a, b) => a + b, 0);
  return {
    dlogp: g.mask.map((m) => -m / n),
    dentropy: g.mask.map((m) => (-g.entCoef * m) / n),
  };
}

export function goldenLoss(
  g: Pick<Golden, "mask" | "entCoef">,
  logp: Float32Array,
  entropy: Float32Array,
): number {
  const n = g.mask.reduce((a, b) => a + b, 0);
  let s = 0;
  for (let i = 0; i < logp.length; i++) s -= g.mask[i] * (logp[i] + g.entCoef * entropy[i]);
  return s / n;
}

// ---------------------------------------------------------------------------------------
// Golden fixtures of the Hugging Face families (model/golden/make_hf_models.py): same container,
// magic "GLHF"; tensors carry Hugging Face names, mapped onto the layout by model/hf.ts.

export const HF_GOLDEN_MAGIC = 0x46484c47;
export const HF_GOLDEN_VERSION = 1;

export interface HfGolden extends Omit<Golden, "config"> {
  family: string;
  config: ModelConfig;
}

/** Reads golden.bin of a tiny HF model; `config` is its config.json's ModelConfig. */
export function readHfGolden(bytes: Uint8Array, config: ModelConfig): HfGolden {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = dv.getUint32(0, true);
  if (magic !== HF_GOLDEN_MAGIC) throw new Error(`HF golden fixture: bad magic 0x${magic.toString(16)}`);
  const version = dv.getUint32(4, true);
  if (version !== HF_GOLDEN_VERSION)
    throw new Error(`HF golden fixture: version ${version}, this reader knows ${HF_GOLDEN_VERSION}`);
  const len = dv.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len)));
  const data = 12 + len + ((4 - (len % 4)) % 4);
  const entries = header.tensors as Record<string, Entry>;
  const words = (name: string, get: (at: number) => number): number[] => {
    const e = entries[name];
    if (!e) throw new Error(`HF golden fixture lacks ${name}`);
    const n = e.shape.reduce((a, b) => a * b, 1);
    return Array.from({ length: n }, (_, i) => get(data + 4 * (e.offset + i)));
  };
  const f32 = (name: string) => Float32Array.from(words(name, (at) => dv.getFloat32(at, true)));
  const i32 = (name: string) => Int32Array.from(words(name, (at) => dv.getInt32(at, true)));
  const layout = paramLayout(config);
  const flat = (prefix: string): Float32Array => {
    const out = new Float32Array(layout.total);
    for (const t of hfTensors(config, layout)) {
      const src = f32(prefix + t.name);
      if (src.length !== t.size)
        throw new Error(`HF golden ${prefix + t.name}: ${src.length} floats, layout ${t.size}`);
      out.set(src, t.offset);
    }
    return out;
  };
  return {
    family: header.family,
    config,
    B: header.B,
    T: header.T,
    entCoef: header.entCoef,
    hparams: header.hparams,
    steps: header.steps,
    tokens: i32("tokens"),
    targets: i32("targets"),
    mask: f32("mask"),
    weights: flat("param."),
    grads: flat("grad."),
    logits: f32("logits"),
    logp: f32("logp"),
    entropy: f32("entropy"),
    loss: f32("loss")[0],
    ce: f32("ce")[0],
    stepLosses: f32("step_losses"),
    stepGradNorms: f32("step_grad_norms"),
  };
}
