// AdamW (with clip-by-norm folded in) and the global gradient L2 norm over views of a flat buffer.
// Each op binds the views it is given; a buffer larger than one binding is passed window by
// window (AdamW) or as the list of its windows (the norm, which stays one deterministic reduction).
// Hyperparameters travel in a fresh uniform slot per call, so live edits and several calls per
// encoder are safe. WGSL in optim.wgsl; references adamwRef, gradNormRef, clipScale; tested by
// head.gpu.test.ts.
import src from "./optim.wgsl?raw";
import type { AdamWParams } from "./reference";
import { alignFloats, FLOAT_ALIGN, packUniform, type Recorder, type Runtime, type View } from "./runtime";

export type { AdamWParams } from "./reference";

const WG = 256;
/** About this many parts in the norm's first stage (more when windows cut it finer): see normParts. */
export const NORM_PARTS = 256;

/**
 * One AdamW step in place: params, m, v updated from grads; all views of n floats. With `gate`
 * (gradNorm's output), nothing changes when gate[0] is not finite, and a `maxNorm` above 0 clips
 * by it: each gradient is read times min(1, maxNorm / (gate[0] + 1e-6)) (the buffer itself is
 * left as it is), the bits a separate clip pass would give.
 */
export function adamw(
  rt: Runtime,
  rec: Recorder,
  params: View,
  grads: View,
  m: View,
  v: View,
  n: number,
  h: AdamWParams,
  gate: View | null = null,
  maxNorm = 0,
) {
  if (maxNorm > 0 && !gate) throw new Error("adamw: clipping by norm needs the norm (gate)");
  const u = rt.uniform(
    packUniform([
      ["u32", n],
      ["f32", h.lr],
      ["f32", h.beta1],
      ["f32", h.beta2],
      ["f32", h.eps],
      ["f32", h.weightDecay],
      ["f32", 1 - h.beta1 ** h.step],
      ["f32", 1 - h.beta2 ** h.step],
      ["u32", gate ? 1 : 0],
      ["f32", maxNorm > 0 && Number.isFinite(maxNorm) ? maxNorm : 0],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), "adamw", { WG }),
    [params, grads, m, v, u, gate ?? rt.dummy],
    [Math.ceil(n / WG)],
  );
}

function normParams(rt: Runtime, n: number, chunk: number, nparts: number, maxNorm = 0, partBase = 0) {
  return rt.uniform(
    packUniform([
      ["u32", n],
      ["u32", chunk],
      ["u32", nparts],
      ["f32", maxNorm],
      ["u32", partBase],
    ]),
  );
}

/**
 * Floats per part of the norm's first stage over n floats bound in windows of at most
 * `maxWindow` floats: about n / NORM_PARTS, a multiple of 64, at most one window. Cutting the
 * windows at multiples of it (FlatBuffer.windows(max, chunk)) keeps the partition, and so the
 * result's bits, the same whatever the windowing.
 */
export function normChunk(n: number, maxWindow: number): number {
  const w = Math.floor(maxWindow / FLOAT_ALIGN) * FLOAT_ALIGN;
  return Math.max(FLOAT_ALIGN, Math.min(alignFloats(Math.ceil(n / NORM_PARTS)), w));
}

/** Parts of the norm (floats of its scratch) over windows of these lengths. */
export function normParts(lengths: number[], chunk: number): number {
  return lengths.reduce((a, n) => a + Math.ceil(n / chunk), 0);
}

/**
 * out[0] = ||concatenation of the windows||₂. Each window is split into parts of `chunk` floats
 * (one workgroup each, a partial sum of squares into scratch), then one workgroup adds the
 * normParts partials in order. Deterministic: the partition depends only on the windows' lengths.
 */
export function gradNorm(rt: Runtime, rec: Recorder, out: View, scratch: View, grads: View[], chunk: number) {
  const nparts = normParts(
    grads.map((g) => g.size / 4),
    chunk,
  );
  if (scratch.size / 4 < nparts)
    throw new Error(`gradNorm: scratch holds ${scratch.size / 4} partials, needs ${nparts}`);
  let base = 0;
  for (const g of grads) {
    const n = g.size / 4;
    const parts = Math.ceil(n / chunk);
    const u = normParams(rt, n, chunk, nparts, 0, base);
    rt.dispatch(rec, rt.pipeline(rt.reducing(src), "norm_partial", { WG }), [g, scratch, null, u], [parts]);
    base += parts;
  }
  const u = normParams(rt, 0, chunk, nparts);
  rt.dispatch(rec, rt.pipeline(rt.reducing(src), "norm_final", { WG }), [null, scratch, out, u], [1]);
}
