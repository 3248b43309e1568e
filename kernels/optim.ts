// AdamW, global gradient L2 norm and clip-by-norm over one flat buffer (or any view of it).
// Hyperparameters travel in a fresh uniform slot per call, so live edits and several calls per
// encoder are safe. WGSL in optim.wgsl; references adamwRef, gradNormRef, clipScale; tested by
// optim.gpu.test.ts.
import src from "./optim.wgsl?raw";
import type { AdamWParams } from "./reference";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

export type { AdamWParams } from "./reference";

const WG = 256;
/** Workgroups of the norm's first stage: the scratch view needs this many floats. */
export const NORM_PARTS = 256;

/**
 * One AdamW step in place: params, m, v updated from grads; all views of n floats. With `gate`
 * (gradNorm's output), nothing changes when gate[0] is not finite.
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
) {
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
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(src, "adamw", { WG }),
    [params, grads, m, v, u, gate ?? rt.dummy],
    [Math.ceil(n / WG)],
  );
}

function normParams(rt: Runtime, n: number, maxNorm = 0) {
  const chunk = Math.ceil(n / NORM_PARTS);
  return rt.uniform(
    packUniform([
      ["u32", n],
      ["u32", chunk],
      ["u32", NORM_PARTS],
      ["f32", maxNorm],
    ]),
  );
}

/** out[0] = ||grads[0..n)||₂. scratch: NORM_PARTS floats. Deterministic (fixed partition). */
export function gradNorm(rt: Runtime, rec: Recorder, out: View, grads: View, scratch: View, n: number) {
  const u = normParams(rt, n);
  rt.dispatch(rec, rt.pipeline(src, "norm_partial", { WG }), [grads, scratch, null, u], [NORM_PARTS]);
  rt.dispatch(rec, rt.pipeline(src, "norm_final", { WG }), [null, scratch, out, u], [1]);
}

/**
 * grads *= min(1, maxNorm / (norm[0] + 1e-6)), the norm read on the GPU from gradNorm's output;
 * a non-finite norm leaves them as they are.
 */
export function clipByNorm(rt: Runtime, rec: Recorder, grads: View, norm: View, n: number, maxNorm: number) {
  const u = normParams(rt, n, maxNorm);
  rt.dispatch(rec, rt.pipeline(src, "clip", { WG }), [grads, null, norm, u], [Math.ceil(n / WG)]);
}
