// Packing token sequences into a right-padded ScoreBatch: position t of row b scores
// seq[t+1] given seq[0..t], so a sequence of n tokens fills n-1 positions. Per-token values
// that the RL loop keeps per sequence (masks, advantages, old log-probs) are laid out the
// same way with `scatter` and read back with `gather`.
// Tested by model/batch.test.ts.
import type { ScoreBatch } from "./api";
import { PAD_ID } from "./tokenizer";

export interface PackedBatch {
  batch: ScoreBatch;
  /** (B,T) 1 where the position scores a real next token, 0 on padding. */
  valid: Uint8Array;
  /** Positions filled per row (sequence length - 1). */
  lengths: number[];
}

/** T defaults to the longest sequence minus one; sequences longer than T + 1 throw. */
export function packBatch(sequences: readonly (readonly number[])[], T?: number): PackedBatch {
  const lengths = sequences.map((s) => Math.max(0, s.length - 1));
  const width = T ?? Math.max(1, ...lengths);
  const B = sequences.length;
  const tokens = new Int32Array(B * width).fill(PAD_ID);
  const targets = new Int32Array(B * width).fill(PAD_ID);
  const valid = new Uint8Array(B * width);
  sequences.forEach((s, b) => {
    if (lengths[b] > width)
      throw new Error(`sequence ${b} has ${s.length} tokens, more than T + 1 = ${width + 1}`);
    for (let t = 0; t < lengths[b]; t++) {
      tokens[b * width + t] = s[t];
      targets[b * width + t] = s[t + 1];
      valid[b * width + t] = 1;
    }
  });
  return { batch: { B, T: width, tokens, targets }, valid, lengths };
}

/**
 * Lays per-token values of each sequence onto the (B,T) grid: values[b][i] belongs to token
 * i+1 of sequence b (the token scored at position i), as for packBatch; padding gets 0.
 */
export function scatter(
  packed: PackedBatch,
  values: readonly (ArrayLike<number> | undefined)[],
): Float32Array {
  const { B, T } = packed.batch;
  const out = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    const v = values[b];
    if (!v) continue;
    for (let t = 0; t < packed.lengths[b]; t++) out[b * T + t] = v[t] ?? 0;
  }
  return out;
}

/** The inverse of scatter: per sequence, the values at its filled positions. */
export function gather(packed: PackedBatch, grid: ArrayLike<number>): number[][] {
  const T = packed.batch.T;
  return packed.lengths.map((n, b) => Array.from({ length: n }, (_, t) => grid[b * T + t]));
}
