// Qwen3's q/k norm (RMSNorm over the head dimension of q and k, before RoPE) on a qkv buffer
// (N, (NH+2KVH)*hs): forward writes the normed rows (v copied) and saves rstd (N, NH+KVH);
// backward adds into dinp (v passes through) and into the two (hs) weight gradients. With
// rt.subgroups the forward and the input gradient run one workgroup per (row, head) (the
// *_rows entries); else one thread per (row, head). WGSL in qknorm.wgsl; references
// qkNormForwardRef / qkNormBackwardRef; tested by ops.gpu.test.ts and reduce.gpu.test.ts.
import src from "./qknorm.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 64;

export interface QkNormShape {
  N: number;
  NH: number;
  KVH: number;
  hs: number;
  eps: number;
}

function params(rt: Runtime, s: QkNormShape) {
  return rt.uniform(
    packUniform([
      ["u32", s.N],
      ["u32", s.NH],
      ["u32", s.KVH],
      ["u32", s.hs],
      ["f32", s.eps],
    ]),
  );
}

/** out (N,(NH+2KVH)*hs) = inp with q heads RMS-normed * qw, k heads * kw, v copied; rstd (N,NH+KVH) saved. */
export function qkNormForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  rstd: View,
  inp: View,
  qw: View,
  kw: View,
  s: QkNormShape,
) {
  const u = params(rt, s);
  const [entry, wg, groups] = perHead(rt, "forward", s);
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), entry, { WG: wg }),
    [out, rstd, inp, qw, kw, null, u],
    [groups],
  );
}

/** The entry point, workgroup size and workgroups of forward / backward_input for this runtime. */
function perHead(rt: Runtime, entry: string, s: QkNormShape): [string, number, number] {
  const pairs = s.N * (s.NH + 2 * s.KVH);
  if (rt.subgroups) return [`${entry}_rows`, rt.reductionWorkgroup(s.hs), pairs];
  return [entry, WG, Math.ceil(pairs / WG)];
}

const ROWS = 256; // qknorm.wgsl's rows per partial sum of the weight gradients

/** Floats of the scratch qkNormBackward needs (the weight gradients' partial sums). */
export function qkNormScratchSize(s: QkNormShape): number {
  return 2 * s.hs * Math.ceil((s.N * s.NH) / ROWS);
}

/** dinp += the gradient through qkNormForward; dqw, dkw (hs) += theirs. scratch: qkNormScratchSize(s) floats. */
export function qkNormBackward(
  rt: Runtime,
  rec: Recorder,
  dinp: View,
  dqw: View,
  dkw: View,
  dout: View,
  inp: View,
  qw: View,
  kw: View,
  rstd: View,
  scratch: View,
  s: QkNormShape,
) {
  const need = qkNormScratchSize(s);
  if (scratch.size < need * 4)
    throw new Error(`qkNormBackward: scratch holds ${scratch.size / 4} floats, needs ${need}`);
  const u = params(rt, s);
  const [entry, wg, groups] = perHead(rt, "backward_input", s);
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), entry, { WG: wg }),
    [dinp, rstd, inp, qw, kw, dout, u],
    [groups],
  );
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), "backward_weights_partial", { WG }),
    [scratch, rstd, inp, null, null, dout, u],
    [Math.ceil(need / WG)],
  );
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), "backward_weights_sum", { WG }),
    [scratch, null, null, dqw, dkw, null, u],
    [Math.ceil((2 * s.hs) / WG)],
  );
}
