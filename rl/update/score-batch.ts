// Packs sequences into the model's (B,T) score batch and maps per-token arrays between a
// trajectory's response positions and the batch's flat (B*T) layout.
// A response token j of row b sits at sequence position p = promptLen + j; the model's
// output at position p-1 scores it (logp of target tokens[p] given tokens[..p-1]).
// Tested by rl/update/score-batch.test.ts.
import type { ScoreBatch } from "../../model/api";
import { PAD_ID } from "../../model/tokenizer";

export interface PackedBatch {
  batch: ScoreBatch;
  /** Flat index (b*T + p - 1) of each row's response tokens, or -1 when cut off by T. */
  index: Int32Array[];
}

/**
 * Right-padded rows of prompt+response; targets are the tokens shifted left by one; scored
 * at `temperature` (absent: the model's default, 1).
 */
export function packSequences(
  rows: { prompt: readonly number[]; response: readonly number[] }[],
  maxT: number,
  temperature?: number,
): PackedBatch {
  const B = rows.length;
  const T = Math.min(maxT, Math.max(1, ...rows.map((r) => r.prompt.length + r.response.length)));
  const tokens = new Int32Array(B * T).fill(PAD_ID);
  const targets = new Int32Array(B * T).fill(PAD_ID);
  const index: Int32Array[] = [];
  const scoreFrom = new Int32Array(B); // prompt rows carry no loss: the head skips them
  rows.forEach((r, b) => {
    scoreFrom[b] = Math.min(Math.max(0, r.prompt.length - 1), T);
    const seq = [...r.prompt, ...r.response].slice(0, T);
    for (let t = 0; t < seq.length; t++) tokens[b * T + t] = seq[t];
    for (let t = 0; t + 1 < seq.length; t++) targets[b * T + t] = seq[t + 1];
    const idx = new Int32Array(r.response.length).fill(-1);
    for (let j = 0; j < r.response.length; j++) {
      const p = r.prompt.length + j;
      if (p >= 1 && p < seq.length) idx[j] = b * T + p - 1;
    }
    index.push(idx);
  });
  const batch: ScoreBatch = { B, T, tokens, targets, scoreFrom };
  if (temperature !== undefined) batch.temperature = temperature;
  return { batch, index };
}

/** Reads a (B*T) array at each row's response positions (0 where cut off). */
export function gatherRows(flat: ArrayLike<number>, index: readonly Int32Array[]): Float64Array[] {
  return index.map((idx) => Float64Array.from(idx, (i) => (i >= 0 ? flat[i] : 0)));
}

/** Writes per-response-token values into a fresh (B*T) Float32Array (0 elsewhere). */
export function scatterRows(
  values: readonly ArrayLike<number>[],
  index: readonly Int32Array[],
  size: number,
): Float32Array {
  const out = new Float32Array(size);
  values.forEach((v, b) => {
    const idx = index[b];
    for (let j = 0; j < idx.length; j++) if (idx[j] >= 0) out[idx[j]] += v[j];
  });
  return out;
}
