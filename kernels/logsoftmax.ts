// The loss head: fused log-softmax over the vocabulary giving per-token log-prob of the target,
// entropy (forward), and the gradient of sum_t (wlp[t]*logp_t + went[t]*H_t) w.r.t. the logits
// (backward). The RL losses compute wlp/went per token on the CPU (SFT cross-entropy: wlp = -1/N,
// went = 0). Both work on a chunk of rows of the batch in the slice-major layout the head's
// vocabulary-sliced matmuls write (logsoftmax.wgsl), so the logits of a whole batch at a large
// vocabulary never have to exist at once (model/head.ts plans the chunks).
// WGSL in logsoftmax.wgsl (row reductions from kernels/reduce.ts); reference logSoftmaxRef; tested
// by head.gpu.test.ts and reduce.gpu.test.ts.
import src from "./logsoftmax.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

/**
 * Rows [rowBase, rowBase + rows) of the batch over a vocabulary of V, stored slice-major with
 * slices of sliceV ids: slice s is a (rows, len_s) block at rows*s*sliceV (sliceV = V: plain (rows, V)).
 */
export interface LogitsChunk {
  rows: number;
  V: number;
  sliceV: number;
  rowBase: number;
}

/** A plain (N,V) block as one chunk. */
export function wholeChunk(N: number, V: number): LogitsChunk {
  return { rows: N, V, sliceV: V, rowBase: 0 };
}

/** Offset (floats) and length of vocabulary slice s inside a chunk. */
export function chunkSlice(ch: LogitsChunk, s: number): { at: number; len: number } {
  return { at: ch.rows * s * ch.sliceV, len: Math.min(ch.sliceV, ch.V - s * ch.sliceV) };
}

/** (rows, V) row-major logits from a slice-major chunk (host side: tests and inspection). */
export function unsliceLogits(chunk: Float32Array, ch: LogitsChunk): Float32Array {
  const out = new Float32Array(ch.rows * ch.V);
  for (let s = 0; s * ch.sliceV < ch.V; s++) {
    const { at, len } = chunkSlice(ch, s);
    for (let i = 0; i < ch.rows; i++)
      out.set(chunk.subarray(at + i * len, at + (i + 1) * len), i * ch.V + s * ch.sliceV);
  }
  return out;
}

/** The slice-major chunk of (rows, V) row-major logits (host side: tests). */
export function sliceLogits(logits: Float32Array, ch: LogitsChunk): Float32Array {
  const out = new Float32Array(ch.rows * ch.V);
  for (let s = 0; s * ch.sliceV < ch.V; s++) {
    const { at, len } = chunkSlice(ch, s);
    for (let i = 0; i < ch.rows; i++)
      out.set(logits.subarray(i * ch.V + s * ch.sliceV, i * ch.V + s * ch.sliceV + len), at + i * len);
  }
  return out;
}

function chunkUniform(rt: Runtime, ch: LogitsChunk, invTemp: number) {
  return rt.uniform(
    packUniform([
      ["u32", ch.rows],
      ["u32", ch.V],
      ["u32", ch.sliceV],
      ["f32", invTemp],
      ["u32", ch.rowBase],
    ]),
  );
}

/**
 * logp, ent (N) at the chunk's rows from its logits. targets int32 (N), < 0 = ignore.
 * invTemp = 1/temperature: log-probs are of softmax(logits/temperature), as the sampler drew them.
 */
export function logSoftmaxForward(
  rt: Runtime,
  rec: Recorder,
  logp: View,
  ent: View,
  logits: View,
  targets: View,
  ch: LogitsChunk,
  invTemp = 1,
) {
  const u = chunkUniform(rt, ch, invTemp);
  const bindings = [logp, ent, null, logits, targets, null, null, u];
  rt.dispatch(rec, rt.pipeline(rt.reducing(src), "forward", { WG: rt.reductionWorkgroup(ch.V) }), bindings, [
    ch.rows,
  ]);
}

/**
 * dlogits (the chunk's layout) is WRITTEN, not accumulated (it is where backward starts), and may
 * not overlap logits. wlp, went (N) weigh each row's logp and entropy.
 */
export function logSoftmaxBackward(
  rt: Runtime,
  rec: Recorder,
  dlogits: View,
  logits: View,
  targets: View,
  wlp: View,
  went: View,
  ch: LogitsChunk,
  invTemp = 1,
) {
  const u = chunkUniform(rt, ch, invTemp);
  const bindings = [null, null, dlogits, logits, targets, wlp, went, u];
  rt.dispatch(rec, rt.pipeline(rt.reducing(src), "backward", { WG: rt.reductionWorkgroup(ch.V) }), bindings, [
    ch.rows,
  ]);
}

/** Both on a plain (N,V) block: logp, ent (N) and dlogits (N,V). */
export function logSoftmax(
  rt: Runtime,
  rec: Recorder,
  logp: View,
  ent: View,
  dlogits: View,
  logits: View,
  targets: View,
  wlp: View,
  went: View,
  N: number,
  V: number,
  invTemp = 1,
) {
  const ch = wholeChunk(N, V);
  logSoftmaxForward(rt, rec, logp, ent, logits, targets, ch, invTemp);
  logSoftmaxBackward(rt, rec, dlogits, logits, targets, wlp, went, ch, invTemp);
}
