// A reader of safetensors files (Hugging Face's weight format) that reads one tensor at a time,
// or one bounded piece of a tensor, through random-access byte reads, so loading a model never
// holds more than that piece's bytes (plus its float32 copy) on the host:
//   8-byte little-endian header length | JSON header | raw little-endian tensor data.
// The header maps each tensor name to {dtype, shape, data_offsets: [begin, end)} relative to
// the data; "__metadata__" holds string metadata. Reads BF16, F16 and F32 into Float32Array.
// A ByteSource is anything with a size and ranged reads: a Blob or File (browser; Node's
// fs.openAsBlob), or bytes in memory. Every error names the file and the tensor.
// The lab's own checkpoints (model/checkpoint.ts) use the same format, F32 only.
// The file is untrusted: the header is refused when its length is beyond the file or 16 MB, or a
// tensor's shape overflows, its dtype and size disagree, its bytes leave the data section or
// overlap another's; nothing is allocated before these checks but the header itself.
// Tested by model/hf/read.test.ts (good and bad files) and model/untrusted.test.ts (the fuzz).

/** A file read by ranges. */
export interface ByteSource {
  /** File name, for error messages. */
  readonly name: string;
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** A ByteSource over a Blob or File: only the requested slice is read. */
export function blobSource(blob: Blob, name: string): ByteSource {
  return {
    name,
    size: blob.size,
    read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
  };
}

/** A ByteSource over bytes already in memory. */
export function bytesSource(bytes: Uint8Array, name: string): ByteSource {
  return {
    name,
    size: bytes.length,
    read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
  };
}

/** The dtypes this reader widens to float32. */
export type SafetensorsDtype = "BF16" | "F16" | "F32";
const READABLE = new Set(["BF16", "F16", "F32"]);
// Every dtype of the format, so a file holding others (int buffers, fp8) still opens and the
// error comes only if one of them is read.
const DTYPE_BYTES: Record<string, number> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
};

export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  /** Byte range in the file (absolute, header included). */
  begin: number;
  end: number;
}

export interface SafetensorsFile {
  source: ByteSource;
  tensors: Map<string, SafetensorsEntry>;
  metadata: Record<string, string>;
}

// A header larger than this is not a weights file of the models the lab reads (the format's
// reference reader caps it at 100 MB; Qwen2.5-0.5B's is 32 KB, a shard of a 70B model's ~100 KB).
export const MAX_SAFETENSORS_HEADER = 16 * 1024 * 1024;

/** Reads and checks the header: every tensor's dtype, shape and byte range against the file size. */
export async function openSafetensors(source: ByteSource): Promise<SafetensorsFile> {
  const f = source.name;
  if (source.size < 8) throw new Error(`${f}: not a safetensors file (${source.size} bytes, fewer than 8)`);
  const first = await source.read(0, 8);
  const headLen = Number(new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true));
  if (8 + headLen > source.size) {
    throw new Error(
      `${f}: truncated or not a safetensors file (header length ${headLen}, file size ${source.size})`,
    );
  }
  if (headLen > MAX_SAFETENSORS_HEADER)
    throw new Error(
      `${f}: the safetensors header is ${headLen} bytes; the lab reads headers of at most ${MAX_SAFETENSORS_HEADER}`,
    );
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(await source.read(8, headLen)));
  } catch (e) {
    throw new Error(`${f}: the safetensors header is not JSON (${(e as Error).message})`);
  }
  if (typeof header !== "object" || header === null || Array.isArray(header))
    throw new Error(`${f}: the safetensors header is not a JSON object`);
  const dataStart = 8 + headLen;
  const tensors = new Map<string, SafetensorsEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header)) {
    if (name === "__metadata__") {
      if (
        raw !== null &&
        (typeof raw !== "object" ||
          Array.isArray(raw) ||
          !Object.values(raw).every((v) => typeof v === "string"))
      )
        throw new Error(`${f}: the safetensors __metadata__ is not an object of strings`);
      metadata = (raw ?? {}) as Record<string, string>;
      continue;
    }
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const where = `${f}: tensor ${name}`;
    if (!Array.isArray(e?.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0))
      throw new Error(`${where} has no valid shape`);
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((x) => Number.isInteger(x) && x >= 0))
      throw new Error(`${where} has no valid data_offsets`);
    const dtype = String(e.dtype);
    if (!(dtype in DTYPE_BYTES))
      throw new Error(`${where} has dtype ${dtype}, which safetensors does not define`);
    const shape = e.shape as number[];
    const numel = shape.reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(numel * DTYPE_BYTES[dtype]))
      throw new Error(`${where} has shape [${shape}], whose size overflows`);
    const [b, en] = off as [number, number];
    if (en - b !== numel * DTYPE_BYTES[dtype])
      throw new Error(`${where}: data_offsets [${b}, ${en}) do not hold ${numel} ${dtype} values`);
    if (dataStart + en > source.size) {
      throw new Error(
        `${f} is truncated: tensor ${name} needs bytes up to ${dataStart + en}, the file has ${source.size}`,
      );
    }
    tensors.set(name, { dtype, shape, begin: dataStart + b, end: dataStart + en });
  }
  // No two tensors share bytes.
  const byBegin = [...tensors].filter(([, e]) => e.end > e.begin).sort((x, y) => x[1].begin - y[1].begin);
  for (let i = 1; i < byBegin.length; i++) {
    const [prev, p] = byBegin[i - 1];
    const [name, e] = byBegin[i];
    if (e.begin < p.end)
      throw new Error(
        `${f}: tensors ${prev} and ${name} overlap (data_offsets [${p.begin - dataStart}, ${p.end - dataStart}) and [${e.begin - dataStart}, ${e.end - dataStart}))`,
      );
  }
  return { source, tensors, metadata };
}

/** The entry of a tensor this reader can widen to float32, or an error naming its dtype. */
export function readableEntry(file: SafetensorsFile, name: string): SafetensorsEntry {
  const e = file.tensors.get(name);
  if (!e) throw new Error(`${file.source.name}: no tensor ${name}`);
  if (!READABLE.has(e.dtype))
    throw new Error(
      `${file.source.name}: tensor ${name} has dtype ${e.dtype}; supported are BF16, F16 and F32`,
    );
  return e;
}

/** One tensor as float32 (BF16 and F16 widened exactly). */
export async function readTensor(file: SafetensorsFile, name: string): Promise<Float32Array> {
  const e = readableEntry(file, name);
  const bytes = await file.source.read(e.begin, e.end - e.begin);
  if (bytes.length !== e.end - e.begin)
    throw new Error(`${file.source.name} is truncated: tensor ${name} could not be read whole`);
  return toFloat32(bytes, e.dtype as SafetensorsDtype);
}

/**
 * One tensor as float32 in consecutive pieces of at most `maxElems` values: `each(start, data)`
 * gets the element offset of the piece in the tensor. Host memory peaks at one piece.
 */
export async function readTensorChunks(
  file: SafetensorsFile,
  name: string,
  maxElems: number,
  each: (start: number, data: Float32Array) => void | Promise<void>,
): Promise<void> {
  const e = readableEntry(file, name);
  const bytesPer = DTYPE_BYTES[e.dtype];
  const total = (e.end - e.begin) / bytesPer;
  const step = Math.max(1, Math.floor(maxElems));
  for (let start = 0; start < total; start += step) {
    const n = Math.min(step, total - start);
    const bytes = await file.source.read(e.begin + start * bytesPer, n * bytesPer);
    if (bytes.length !== n * bytesPer)
      throw new Error(`${file.source.name} is truncated: tensor ${name} could not be read whole`);
    await each(start, toFloat32(bytes, e.dtype as SafetensorsDtype));
  }
}

/** Little-endian BF16 / F16 / F32 bytes to float32. */
export function toFloat32(bytes: Uint8Array, dtype: SafetensorsDtype): Float32Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.length / DTYPE_BYTES[dtype];
  const out = new Float32Array(n);
  if (dtype === "F32") {
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  } else if (dtype === "BF16") {
    // bf16 is the top half of a float32.
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u[i] = dv.getUint16(2 * i, true) << 16;
  } else {
    for (let i = 0; i < n; i++) out[i] = halfToFloat(dv.getUint16(2 * i, true));
  }
  return out;
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // subnormal
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/**
 * What precedes a safetensors file's data: the 8-byte little-endian header length, then the
 * JSON header padded with spaces so the data starts 8-byte aligned (as the reference writer
 * does). Shared by the lab's writers (model/checkpoint.ts, model/hf/write.ts, cli/stamp-checkpoint.ts).
 */
export function safetensorsHead(header: Record<string, unknown>): Uint8Array {
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + new TextEncoder().encode(json).length) % 8)) % 8);
  const text = new TextEncoder().encode(json);
  const head = new Uint8Array(8 + text.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(text.length), true);
  head.set(text, 8);
  return head;
}
