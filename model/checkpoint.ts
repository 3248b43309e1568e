// Checkpoints in the safetensors format, as bytes (Uint8Array) so the same code saves to
// OPFS/IndexedDB in the browser and to files in Node:
//   8-byte little-endian header length | JSON header | raw little-endian F32 data.
// The header names each tensor of the layout ({dtype: "F32", shape, data_offsets: [begin,
// end)} relative to the data), plus "optim.m.<name>" / "optim.v.<name>" when optimizer state
// is saved, "ref.<name>" when a run's frozen KL reference is saved with it, and __metadata__ (string values only, per the format): the model config as
// JSON, the optimizer step, and a format tag. The gaps of the flat buffer are not stored.
// With LoRA (config.lora.rank > 0) the adapter is "lora.<name>" (model/lora.ts layout) and the
// moments are those of the adapter ("optim.m.lora.<name>"): the base is frozen.
// PyTorch's safetensors.torch.load_file reads these files (same names as nanoGPT's state dict).
// Tested by model/checkpoint.test.ts.
import type { OptimizerState } from "./api";
import { type ModelConfig, modelConfig, paramLayout, type TensorSpec } from "./config";
import { loraLayout } from "./lora";
import { safetensorsHead } from "./safetensors";

export const CHECKPOINT_FORMAT = "agentic-rl-lab/model/v1";

export interface Checkpoint {
  config: ModelConfig;
  weights: Float32Array; // flat, the layout's total size
  /** The LoRA adapter (flat, its layout), when config.lora.rank > 0. */
  adapter?: Float32Array;
  /** Moments of the trained parameters: the layout's, or the adapter's with LoRA. */
  optimizer?: OptimizerState;
  /** The frozen reference policy's weights (a run's KL reference), same layout. */
  reference?: Float32Array;
  /** Extra string metadata (run id, step, ...). */
  metadata?: Record<string, string>;
}

interface HeaderEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

interface Flat {
  tensors: TensorSpec[];
  total: number;
}

/** The base layout, and the adapter's (names prefixed "lora.") with LoRA. */
function layoutsOf(config: ModelConfig): { base: Flat; lora: Flat | null } {
  const base = paramLayout(config);
  if (config.lora.rank === 0) return { base, lora: null };
  const l = loraLayout(config, config.lora);
  return {
    base,
    lora: { tensors: l.tensors.map((t) => ({ ...t, name: `lora.${t.name}` })), total: l.total },
  };
}

export function saveCheckpoint(ck: Checkpoint): Uint8Array {
  const { base, lora } = layoutsOf(ck.config);
  if (lora && !ck.adapter) throw new Error("saveCheckpoint: the config has LoRA but no adapter was given");
  if (!lora && ck.adapter) throw new Error("saveCheckpoint: an adapter was given but config.lora.rank is 0");
  const trained = lora ?? base;
  const sources: [string, Float32Array, Flat][] = [["", ck.weights, base]];
  if (lora && ck.adapter) sources.push(["", ck.adapter, lora]);
  if (ck.optimizer)
    sources.push(["optim.m.", ck.optimizer.m, trained], ["optim.v.", ck.optimizer.v, trained]);
  if (ck.reference) sources.push(["ref.", ck.reference, base]);
  const header: Record<string, HeaderEntry | Record<string, string>> = {};
  header.__metadata__ = {
    ...ck.metadata,
    format: CHECKPOINT_FORMAT,
    config: JSON.stringify(ck.config),
    ...(ck.optimizer ? { optimizer_step: String(ck.optimizer.step) } : {}),
  };
  let bytes = 0;
  for (const [prefix, buf, layout] of sources) {
    if (buf.length !== layout.total)
      throw new Error(
        `saveCheckpoint: ${prefix || (layout === base ? "weights" : "adapter")} has ${buf.length} floats, expected ${layout.total}`,
      );
    for (const t of layout.tensors) {
      header[prefix + t.name] = { dtype: "F32", shape: t.shape, data_offsets: [bytes, bytes + t.size * 4] };
      bytes += t.size * 4;
    }
  }
  const head = safetensorsHead(header);
  const out = new Uint8Array(head.length + bytes);
  const dv = new DataView(out.buffer);
  out.set(head);
  let at = head.length;
  for (const [, buf, layout] of sources) {
    for (const t of layout.tensors) {
      const src = buf.subarray(t.offset, t.offset + t.size);
      if (LITTLE_ENDIAN) out.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength), at);
      else for (let i = 0; i < src.length; i++) dv.setFloat32(at + 4 * i, src[i], true);
      at += t.size * 4;
    }
  }
  return out;
}

export function loadCheckpoint(bytes: Uint8Array): Checkpoint {
  if (bytes.length < 8) throw new Error("not a safetensors checkpoint: fewer than 8 bytes");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headLen = Number(dv.getBigUint64(0, true));
  if (8 + headLen > bytes.length)
    throw new Error(`not a safetensors checkpoint: header length ${headLen} exceeds the file`);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headLen))) as Record<
    string,
    unknown
  >;
  const meta = (header.__metadata__ ?? {}) as Record<string, string>;
  if (typeof meta.config !== "string")
    throw new Error("checkpoint has no model config in __metadata__.config");
  const config = modelConfig(JSON.parse(meta.config) as Partial<ModelConfig>);
  const { base, lora } = layoutsOf(config);
  const dataStart = 8 + headLen;
  const read = (prefix: string, layout: Flat): Float32Array | undefined => {
    if (!(prefix + layout.tensors[0].name in header)) return undefined;
    return readFlat(header, layout, prefix, bytes, dataStart);
  };
  const weights = read("", base);
  if (!weights) throw new Error(`checkpoint lacks tensor ${base.tensors[0].name}`);
  const adapter = lora ? read("", lora) : undefined;
  if (lora && !adapter)
    throw new Error(`checkpoint has LoRA in its config but lacks tensor ${lora.tensors[0].name}`);
  const m = read("optim.m.", lora ?? base);
  const v = read("optim.v.", lora ?? base);
  const reference = read("ref.", base);
  const { format: _f, config: _c, optimizer_step, ...rest } = meta;
  const out: Checkpoint = {
    config,
    weights,
    ...(adapter ? { adapter } : {}),
    optimizer: m && v ? { m, v, step: Number(optimizer_step ?? 0) } : undefined,
    metadata: rest,
  };
  if (reference) out.reference = reference;
  return out;
}

function readFlat(
  header: Record<string, unknown>,
  layout: Flat,
  prefix: string,
  bytes: Uint8Array,
  dataStart: number,
): Float32Array {
  const flat = new Float32Array(layout.total);
  for (const t of layout.tensors) {
    const e = header[prefix + t.name] as HeaderEntry | undefined;
    if (!e) throw new Error(`checkpoint lacks tensor ${prefix + t.name}`);
    if (e.dtype !== "F32") throw new Error(`tensor ${prefix + t.name} is ${e.dtype}; only F32 is supported`);
    if (e.shape.join(",") !== t.shape.join(",")) {
      throw new Error(`tensor ${prefix + t.name} has shape [${e.shape}], the config needs [${t.shape}]`);
    }
    const [begin, end] = e.data_offsets;
    if (end - begin !== t.size * 4 || dataStart + end > bytes.length)
      throw new Error(`tensor ${prefix + t.name} has bad data_offsets`);
    // Copy through a DataView: the data need not be 4-byte aligned in the caller's buffer.
    const dv = new DataView(bytes.buffer, bytes.byteOffset + dataStart + begin, t.size * 4);
    for (let i = 0; i < t.size; i++) flat[t.offset + i] = dv.getFloat32(4 * i, true);
  }
  return flat;
}
