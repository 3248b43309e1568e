// Matmul dispatch: the general batched op(A)·op(B) used by linear layers and their backward, and
// the llm.c-style linear layer pair matmulForward / matmulBackward. Two kernels, chosen by
// `rt.unrolled` (kernels/dev/matmul-variants.ts has the measurements): the tiled matmul.wgsl (one
// pipeline for every form) everywhere but SwiftShader, and the unrolled ones generated per form by
// matmul-gen.ts on SwiftShader. A·Bᵀ with at most MATVEC_MAX_ROWS rows (a linear layer or the head
// while decoding) goes to matvec.wgsl instead, where `rt.matvec` is set (the default; on
// SwiftShader only for one row): the tiles compute 64 rows, so at batch 1 they did 64 times the
// work (SmolLM2-shape decode on lavapipe: 0.06 -> 0.62 tokens/s). Reference in reference.ts (matmulRef); tested by
// matmul.gpu.test.ts (both kernels).

import src from "./matmul.wgsl?raw";
import { matmulSource } from "./matmul-gen";
import mvSrc from "./matvec.wgsl?raw";
import type { MatmulShape } from "./reference";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

export type { MatmulShape } from "./reference";

// Both kernels: an 8x8 block of out per thread, 8x8 threads, a 64x64 tile per workgroup
// (matmul.wgsl's TM and 4*TN4). Larger unrolled tiles were at most 15% faster on SwiftShader and
// compile 2-8x slower.
const WG_X = 8;
const WG_Y = 8;
const TM = 8;
const TN = 8;

const unrolled = new Map<string, string>();

/** The unrolled shader for this form; vec4 loads when every row it loads is 16-byte aligned. */
function unrolledSource(s: MatmulShape): string {
  const transA = !!s.transA;
  const transB = !!s.transB;
  const four = (x: number | undefined) => (x ?? 0) % 4 === 0;
  const vec4 =
    s.K > 0 &&
    s.K % 4 === 0 &&
    four(s.strideA) &&
    four(s.strideB) &&
    (!transA || s.M % 4 === 0) &&
    (transB || s.N % 4 === 0);
  const key = `${transA}|${transB}|${vec4}`;
  let code = unrolled.get(key);
  if (!code) {
    code = matmulSource({ tm: TM, tn: TN, transA, transB, vec4 });
    unrolled.set(key, code);
  }
  return code;
}

/** Rows up to which A·Bᵀ runs as matvec.wgsl. */
export const MATVEC_MAX_ROWS = 8;

function matvecForm(s: MatmulShape): boolean {
  return (
    !s.transA &&
    !!s.transB &&
    s.M <= MATVEC_MAX_ROWS &&
    (s.batch ?? 1) === 1 &&
    !s.accumulate &&
    (s.alpha ?? 1) === 1
  );
}

/** out (M,N) = A (M,K) · Bᵀ (+ bias (N)) for M <= MATVEC_MAX_ROWS, one workgroup per column. */
function matvec(rt: Runtime, rec: Recorder, out: View, a: View, b: View, bias: View | null, s: MatmulShape) {
  const u = rt.uniform(
    packUniform([
      ["u32", s.M],
      ["u32", s.N],
      ["u32", s.K],
      ["u32", bias ? 1 : 0],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(mvSrc, "main", { WG: 64, WIDE: s.M > 4 ? 1 : 0 }),
    [out, a, b, bias ?? rt.dummy, u],
    [Math.ceil(s.N / 64)],
  );
}

/** out[b] (M,N) = alpha * op(A[b])·op(B[b]) (+ out if accumulate) (+ bias (N)). Strides in floats. */
export function matmul(
  rt: Runtime,
  rec: Recorder,
  out: View,
  a: View,
  b: View,
  bias: View | null,
  s: MatmulShape,
) {
  // On SwiftShader the unrolled tiles beat the matvec from 4 rows up (measured at 1024x128).
  if (rt.matvec && matvecForm(s) && (!rt.unrolled || s.M === 1)) {
    matvec(rt, rec, out, a, b, bias, s);
    return;
  }
  const code = rt.unrolled ? unrolledSource(s) : src;
  const pipeline = rt.pipeline(code, "main", { WG_X, WG_Y });
  const u = rt.uniform(
    packUniform([
      ["u32", s.M],
      ["u32", s.N],
      ["u32", s.K],
      ["u32", bias ? 1 : 0],
      ["u32", s.strideA ?? 0],
      ["u32", s.strideB ?? 0],
      ["u32", s.strideOut ?? 0],
      ["u32", s.accumulate ? 1 : 0],
      ["f32", s.alpha ?? 1],
      ["u32", s.transA ? 1 : 0],
      ["u32", s.transB ? 1 : 0],
    ]),
  );
  rt.dispatch(
    rec,
    pipeline,
    [out, a, b, bias ?? rt.dummy, u],
    [Math.ceil(s.N / (WG_X * TN)), Math.ceil(s.M / (WG_Y * TM)), s.batch ?? 1],
  );
}

/** out (N,OC) = inp (N,C) · weightᵀ (weight (OC,C)) + bias (OC): a linear layer. */
export function matmulForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  inp: View,
  weight: View,
  bias: View | null,
  N: number,
  C: number,
  OC: number,
) {
  matmul(rt, rec, out, inp, weight, bias, { M: N, N: OC, K: C, transB: true });
}

/** dinp += dout·weight, dweight += doutᵀ·inp, dbias += column sums of dout. Any may be null. */
export function matmulBackward(
  rt: Runtime,
  rec: Recorder,
  dinp: View | null,
  dweight: View | null,
  dbias: View | null,
  dout: View,
  inp: View,
  weight: View,
  N: number,
  C: number,
  OC: number,
) {
  if (dinp) matmul(rt, rec, dinp, dout, weight, null, { M: N, N: C, K: OC, accumulate: true });
  if (dweight)
    matmul(rt, rec, dweight, dout, inp, null, { M: OC, N: C, K: N, transA: true, accumulate: true });
  if (dbias) biasBackward(rt, rec, dbias, dout, N, OC);
}

/** dbias (OC) += sum over the N rows of dout (N,OC). */
export function biasBackward(rt: Runtime, rec: Recorder, dbias: View, dout: View, N: number, OC: number) {
  const pipeline = rt.pipeline(src, "bias_backward", { WG: 64 });
  const u = rt.uniform(
    packUniform([
      ["u32", N],
      ["u32", OC],
    ]),
  );
  rt.dispatch(rec, pipeline, [dbias, dout, u], [Math.ceil(OC / 64)]);
}
