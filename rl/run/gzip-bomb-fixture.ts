// A gzip bomb made in milliseconds, for the bundle tests (rl/run/bundle-bomb.test.ts).
import { constants, crc32, deflateRawSync } from "node:zlib";

/**
 * A gzip file that inflates to `mib` MiB of zeros: one flushed deflate block for 1 MiB of zeros,
 * repeated (a byte-aligned block whose matches reach back only into zeros decodes the same anywhere
 * in a zero stream), then an empty final block, a real CRC-32 and the trailer's size.
 */
export function zeroBomb(mib: number, trailerSize?: number): Uint8Array<ArrayBuffer> {
  const zeros = new Uint8Array(1 << 20);
  const block = deflateRawSync(zeros, { finishFlush: constants.Z_SYNC_FLUSH, level: 9 });
  let crc = 0;
  for (let i = 0; i < mib; i++) crc = crc32(zeros, crc);
  const head = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
  const out = new Uint8Array(head.length + block.length * mib + 2 + 8);
  out.set(head);
  for (let i = 0; i < mib; i++) out.set(block, head.length + i * block.length);
  let at = head.length + block.length * mib;
  out.set([0x03, 0x00], at); // an empty fixed-Huffman final block
  at += 2;
  const size = trailerSize ?? (mib * 2 ** 20) >>> 0;
  new DataView(out.buffer).setUint32(at, crc >>> 0, true);
  new DataView(out.buffer).setUint32(at + 4, size, true);
  return out;
}
