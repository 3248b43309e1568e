// `npx tsx cli/stamp-checkpoint.ts <file.safetensors> key=value [key=value...]`
// Adds string metadata (made_by, seed, backend, ...) to a committed checkpoint's __metadata__
// and writes it back; the other header entries and every byte of the tensor data are copied
// as they are, and the file must load to the same weights, or nothing is written. Used once for public/checkpoints/frozenlake-sft and
// function-calling-sft, which were saved before `made_by` was recorded; the values are the
// recipe and command that made each (docs/EXPERIMENTS.md, the commits that added them).
// Tested by model/checkpoints-committed.test.ts (every committed checkpoint names its recipe).
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadCheckpoint } from "../model/checkpoint";
import { safetensorsHead } from "../model/safetensors";

/** The JSON header and the data bytes of a safetensors file. */
export function splitSafetensors(bytes: Uint8Array): { header: Record<string, unknown>; data: Uint8Array } {
  if (bytes.length < 8) throw new Error("stamp-checkpoint: not a safetensors file (fewer than 8 bytes)");
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (8 + n > bytes.length) throw new Error(`stamp-checkpoint: header length ${n} exceeds the file`);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as Record<string, unknown>;
  return { header, data: bytes.subarray(8 + n) };
}

/**
 * `bytes` with `extra` added to its __metadata__: the rest of the header (the model config
 * string, the tensor entries) and the data bytes are copied as they are. Refuses to overwrite
 * a key the file already has with a different value.
 */
export function stampCheckpoint(bytes: Uint8Array, extra: Record<string, string>): Uint8Array {
  const { header, data } = splitSafetensors(bytes);
  const meta = { ...((header.__metadata__ ?? {}) as Record<string, string>) };
  for (const [k, v] of Object.entries(extra)) {
    if (k in meta && meta[k] !== v)
      throw new Error(
        `stamp-checkpoint: __metadata__.${k} is already "${meta[k]}"; not replacing it with "${v}"`,
      );
    meta[k] = v;
  }
  const head = safetensorsHead({ ...header, __metadata__: meta }); // the data stays 8-byte aligned
  const out = new Uint8Array(head.length + data.length);
  out.set(head);
  out.set(data, head.length);
  // The file must still load, to the same weights.
  const before = loadCheckpoint(bytes).weights;
  const after = loadCheckpoint(out).weights;
  if (before.length !== after.length || !before.every((x, i) => Object.is(x, after[i])))
    throw new Error("stamp-checkpoint: the weights would change");
  return out;
}

function main(argv: string[]): void {
  const [file, ...pairs] = argv;
  if (!file || pairs.length === 0) throw new Error("usage: stamp-checkpoint <file.safetensors> key=value...");
  const extra: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf("=");
    if (i <= 0) throw new Error(`stamp-checkpoint: "${p}" is not key=value`);
    extra[p.slice(0, i)] = p.slice(i + 1);
  }
  writeFileSync(file, stampCheckpoint(new Uint8Array(readFileSync(file)), extra));
  console.log(`${file}: ${Object.keys(extra).join(", ")} added; tensors unchanged`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
