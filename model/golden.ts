// Reader of the PyTorch golden fixture written by model/golden/make_golden.py (format in its
// header: magic "GLRL", version, JSON header, f32/i32 data). Returns the config, the batch,
// the weights as a flat buffer of our layout, and the expected outputs.
// Also readHfGolden for the Hugging Face families (make_hf_models.py, magic "GLHF") and
// readLoraGolden (make_lora_golden.py): all three read one container (readContainer).
// Used by model/cpu.test.ts, model/gpu.gpu.test.ts, model/hf/read.test.ts and model/hf/read.gpu.test.ts.
import type { AdamWHparams } from "./api";
import { type ModelConfig, modelConfig, paramLayout } from "./config";
import { hfTensors } from "./hf/read";
import { loraLayout } from "./lora";

export const GOLDEN_MAGIC = 0x4c524c47;
export const GOLDEN_VERSION = 1;

export interface Golden {
  config: ModelConfig;
  B: number;
  T: number;
  entCoef: number;
  hparams: AdamWHparams;
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

/** A fixture's JSON header and typed readers of its tensors. */
export interface GoldenFile {
  header: Record<string, unknown> & { tensors: Record<string, Entry> };
  has(name: string): boolean;
  f32(name: string): Float32Array;
  i32(name: string): Int32Array;
}

/**
 * The container every golden fixture shares: u32 magic, u32 version, u32 header length, the
 * JSON header (padded to 4 bytes), then the f32/i32 data its `tensors` entries point into.
 * `what` names the fixture kind in errors ("golden fixture", "HF golden fixture").
 */
function readContainer(bytes: Uint8Array, magic: number, version: number, what: string): GoldenFile {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const m = dv.getUint32(0, true);
  if (m !== magic) throw new Error(`${what}: bad magic 0x${m.toString(16)}`);
  const v = dv.getUint32(4, true);
  if (v !== version) throw new Error(`${what}: version ${v}, this reader knows ${version}`);
  const len = dv.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len)));
  const data = 12 + len + ((4 - (len % 4)) % 4);
  const entries = header.tensors as Record<string, Entry>;
  const get = (name: string): { e: Entry; n: number } => {
    const e = entries[name];
    if (!e) throw new Error(`${what} lacks ${name}`);
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

/** The file's JSON header and typed readers of its tensors (any GLRL fixture). */
export function readGoldenFile(bytes: Uint8Array): GoldenFile {
  return readContainer(bytes, GOLDEN_MAGIC, GOLDEN_VERSION, "golden fixture");
}

/** The tensors `prefix + name` of a fixture, each placed at its offset in one flat buffer of `total` floats. */
function flatTensors(
  g: Pick<GoldenFile, "f32">,
  what: string,
  prefix: string,
  tensors: readonly { name: string; offset: number; size: number }[],
  total: number,
): Float32Array {
  const out = new Float32Array(total);
  for (const t of tensors) {
    const src = g.f32(prefix + t.name);
    if (src.length !== t.size)
      throw new Error(`${what} ${prefix + t.name}: ${src.length} floats, layout ${t.size}`);
    out.set(src, t.offset);
  }
  return out;
}

/** What every fixture holds besides weights and outputs: the batch, the loss's and AdamW's settings. */
function goldenBatch(
  g: GoldenFile,
): Pick<Golden, "B" | "T" | "entCoef" | "hparams" | "steps" | "tokens" | "targets" | "mask"> {
  const h = g.header as unknown as Pick<Golden, "B" | "T" | "entCoef" | "hparams" | "steps">;
  return {
    B: h.B,
    T: h.T,
    entCoef: h.entCoef,
    hparams: h.hparams,
    steps: h.steps,
    tokens: g.i32("tokens"),
    targets: g.i32("targets"),
    mask: g.f32("mask"),
  };
}

/** The fields of a full-model fixture (GLRL or GLHF), its weights and gradients in `tensors`' layout. */
function modelGolden(
  g: GoldenFile,
  what: string,
  tensors: readonly { name: string; offset: number; size: number }[],
  total: number,
): Omit<Golden, "config"> {
  return {
    ...goldenBatch(g),
    weights: flatTensors(g, what, "param.", tensors, total),
    grads: flatTensors(g, what, "grad.", tensors, total),
    logits: g.f32("logits"),
    logp: g.f32("logp"),
    entropy: g.f32("entropy"),
    loss: g.f32("loss")[0],
    ce: g.f32("ce")[0],
    stepLosses: g.f32("step_losses"),
    stepGradNorms: g.f32("step_grad_norms"),
  };
}

/** A LoRA fixture: the batch and outputs as Golden's, a frozen base and the adapter's weights and gradients. */
export interface LoraGolden
  extends Pick<
    Golden,
    | "config"
    | "B"
    | "T"
    | "entCoef"
    | "hparams"
    | "steps"
    | "tokens"
    | "targets"
    | "mask"
    | "logp"
    | "entropy"
    | "loss"
    | "stepLosses"
    | "stepGradNorms"
  > {
  weights: Float32Array; // base, flat, our layout
  adapter: Float32Array; // flat, the LoRA layout
  adapterGrads: Float32Array; // flat, the LoRA layout
  logits: Float32Array; // (B,T,V) with the adapter
  baseLogits: Float32Array; // (B,T,V) the base alone
}

/** Reader of model/golden/make_lora_golden.py's lora-*.bin. */
export function readLoraGolden(bytes: Uint8Array): LoraGolden {
  const g = readGoldenFile(bytes);
  const config = modelConfig((g.header as unknown as { config: Partial<ModelConfig> }).config);
  const layout = paramLayout(config);
  const lora = loraLayout(config, config.lora);
  const flat = (prefix: string, tensors: { name: string; offset: number; size: number }[], total: number) =>
    flatTensors(g, "golden", prefix, tensors, total);
  return {
    config,
    ...goldenBatch(g),
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
  const g = readGoldenFile(bytes);
  const config = modelConfig((g.header as unknown as { config: Partial<ModelConfig> }).config);
  const layout = paramLayout(config);
  return { config, ...modelGolden(g, "golden", layout.tensors, layout.total) };
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
// magic "GLHF"; tensors carry Hugging Face names, mapped onto the layout by model/hf/read.ts.

export const HF_GOLDEN_MAGIC = 0x46484c47;
export const HF_GOLDEN_VERSION = 1;

export interface HfGolden extends Omit<Golden, "config"> {
  family: string;
  config: ModelConfig;
}

/** Reads golden.bin of a tiny HF model; `config` is its config.json's ModelConfig. */
export function readHfGolden(bytes: Uint8Array, config: ModelConfig): HfGolden {
  const g = readContainer(bytes, HF_GOLDEN_MAGIC, HF_GOLDEN_VERSION, "HF golden fixture");
  const layout = paramLayout(config);
  return {
    family: g.header.family as string,
    config,
    ...modelGolden(g, "HF golden", hfTensors(config, layout), layout.total),
  };
}
