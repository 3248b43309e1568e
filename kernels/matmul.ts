// Matmul dispatch: the general batched op(A)·op(B) used by linear layers and their backward, and
// the llm.c-style linear layer pair matmulForward / matmulBackward. The variant is the runtime's
// kernel plan's (kernels/plan.ts; kernels/dev/matmul-variants.ts has the measurements): the tiled
// matmul.wgsl (one pipeline for every form), or the unrolled ones generated per form by
// matmul-gen.ts (plan.matmul "unrolled", SwiftShader's). Where the plan has subgroupMatmul (CPU
// rasterisers with one fixed subgroup size) the products whose K and contiguous sides are
// multiples of 4 run matmul-subgroup.ts's kernel, whose lanes share A by subgroupBroadcast:
// bit-identical to matmul.wgsl, 1.8-3.1x faster on lavapipe (kernels/dev/matmul-subgroup.ts).
// A·Bᵀ with at most plan.smallRows rows (a linear layer or the head while decoding) goes to
// linear-rows.wgsl (matvec.wgsl where K is not a multiple of 4) instead: the tiles compute 64
// rows, so at batch 1 they did 64 times the work. Reference in reference.ts (matmulRef); tested by
// matmul.gpu.test.ts (every kernel).
// A weight stored in half precision (a HalfView, the frozen base of a LoRA model with model.dtype
// f16) is read by the f16 variant of the same two shaders (`enable f16;`, B as array<f16>, every
// load widened to f32: f32 accumulation, f32 activations and outputs), on devices with the
// `shader-f16` feature only; B is the only operand that may be half. Tested against matmulRef on
// the rounded weights by matmul-f16.gpu.test.ts.

import { linearRows, linearRowsFits } from "./decode";
import src from "./matmul.wgsl?raw";
import { matmulSource } from "./matmul-gen";
import {
  SUBGROUP_MATMUL_COLS,
  subgroupMatmulFits,
  subgroupMatmulLanes,
  subgroupMatmulSize,
  subgroupMatmulSource,
} from "./matmul-subgroup";
import mvSrc from "./matvec.wgsl?raw";
import type { MatmulShape } from "./reference";
import { type DispatchWork, isHalf, packUniform, type Recorder, type Runtime, type View } from "./runtime";

export type { MatmulShape } from "./reference";

/** The WebGPU feature the f16 variant needs. */
export const HALF_FEATURE = "shader-f16";

export { type HalfView, halfView, isHalf } from "./runtime";

/** Whether this runtime's device can run the f16 variant. */
export function hasHalf(rt: Runtime): boolean {
  return rt.device.features.has(HALF_FEATURE);
}

const halfSources = new Map<string, string>();
const B_F32 = "var<storage, read_write> B: array<f32>;";

/** The f16 variant of a matmul shader: the same code with B declared as array<f16>. */
function halfSource(code: string): string {
  let h = halfSources.get(code);
  if (!h) {
    if (!code.includes(B_F32)) throw new Error(`matmul: the shader has no \`${B_F32}\` to make f16`);
    h = `enable f16;\n${code.replace(B_F32, "var<storage, read_write> B: array<f16>;")}`;
    halfSources.set(code, h);
  }
  return h;
}

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

/** Rows up to which any plan runs A·Bᵀ as the small-rows kernels (linear-rows.wgsl's and matvec.wgsl's limit). */
export const MATVEC_MAX_ROWS = 8;

/**
 * Whether an A·Bᵀ of M rows goes to the small-rows kernels (linear-rows, matvec) rather than the
 * tiles: at most plan.smallRows rows. Each row's result depends only on which of the two runs it,
 * not on M (a decode window that computes fewer rows keeps to the same side:
 * model/gpu-generation.ts).
 */
export function smallRowsKernel(rt: Runtime, M: number): boolean {
  return M <= Math.min(rt.plan.smallRows, MATVEC_MAX_ROWS);
}

function matvecForm(s: MatmulShape): boolean {
  return !s.transA && !!s.transB && (s.batch ?? 1) === 1 && !s.accumulate && (s.alpha ?? 1) === 1;
}

/**
 * The counted work of out[b] (M,N) = op(A[b]) (M,K) · op(B[b]) (K,N) (+ out) (+ bias) over the
 * batch: 2MNK FLOPs a product; A, B (at 2 bytes a weight when f16; once when its batch stride is
 * 0, shared), out (read too when accumulating) and the bias moved once.
 */
export function matmulWork(s: MatmulShape, halfB: boolean, bias: boolean): DispatchWork {
  const batch = s.batch ?? 1;
  const times = (stride: number | undefined) => (stride ? batch : 1);
  const bytes =
    4 * s.M * s.K * times(s.strideA) +
    (halfB ? 2 : 4) * s.K * s.N * times(s.strideB) +
    4 * s.M * s.N * batch * (s.accumulate ? 2 : 1) +
    (bias ? 4 * s.N : 0);
  return { flops: 2 * s.M * s.N * s.K * batch, bytes };
}

/** out (M,N) = A (M,K) · Bᵀ (+ bias (N)) for M <= MATVEC_MAX_ROWS, one workgroup per column. */
function matvec(rt: Runtime, rec: Recorder, out: View, a: View, b: View, bias: View | null, s: MatmulShape) {
  if (linearRowsFits(s.M, s.K)) {
    linearRows(rt, rec, out, a, b, bias, s.M, s.K, s.N);
    return;
  }
  const code = isHalf(b) ? halfSource(mvSrc) : mvSrc;
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
    rt.pipeline(code, "main", { WG: 64, WIDE: s.M > 4 ? 1 : 0 }),
    [out, a, b, bias ?? rt.dummy, u],
    [Math.ceil(s.N / 64)],
    matmulWork(s, isHalf(b), !!bias),
  );
}

/**
 * out[b] (M,N) = alpha * op(A[b])·op(B[b]) (+ out if accumulate) (+ bias (N)). Strides in
 * elements. B may be a HalfView (the f16 variant: needs shader-f16).
 */
export function matmul(
  rt: Runtime,
  rec: Recorder,
  out: View,
  a: View,
  b: View,
  bias: View | null,
  s: MatmulShape,
) {
  const half = isHalf(b);
  if (isHalf(a) || isHalf(out) || (bias && isHalf(bias)))
    throw new Error("matmul: only the B operand (a weight) may be stored as f16");
  if (half && !hasHalf(rt))
    throw new Error(`matmul: an f16 weight needs the ${HALF_FEATURE} feature, which this device lacks`);
  if (matvecForm(s) && smallRowsKernel(rt, s.M)) {
    matvec(rt, rec, out, a, b, bias, s);
    return;
  }
  const sg = subgroupMatmulSize(rt);
  if (sg && subgroupMatmulFits(s, a, b)) {
    subgroupMatmul(rt, rec, out, a, b, bias, s, sg);
    return;
  }
  // The f16 variant is the tiled kernel's (SwiftShader, the unrolled kernels' adapter, has no shader-f16).
  const unrolledHere = rt.plan.matmul === "unrolled" && !half;
  const code = half ? halfSource(src) : unrolledHere ? unrolledSource(s) : src;
  // the tiled kernel's workgroup shape: the runtime's table (matmulTile), fitted to a narrow N
  const [wx, wy] = unrolledHere ? [WG_X, WG_Y] : rt.matmulTileFor(s.N, s.M, s.K);
  const pipeline = rt.pipeline(code, "main", { WG_X: wx, WG_Y: wy });
  rt.dispatch(
    rec,
    pipeline,
    [out, a, b, bias ?? rt.dummy, matmulUniform(rt, s, bias)],
    [Math.ceil(s.N / (wx * TN)), Math.ceil(s.M / (wy * TM)), s.batch ?? 1],
    matmulWork(s, half, !!bias),
  );
}

/** The Params uniform that matmul.wgsl, the unrolled kernels and the subgroup kernel share. */
function matmulUniform(rt: Runtime, s: MatmulShape, bias: View | null): GPUBufferBinding {
  return rt.uniform(
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
}

const subgroupSources = new Map<string, string>();

/** The product as matmul-subgroup.ts's kernel (lavapipe): SG rows x 4 lanes columns a workgroup. */
function subgroupMatmul(
  rt: Runtime,
  rec: Recorder,
  out: View,
  a: View,
  b: View,
  bias: View | null,
  s: MatmulShape,
  SG: number,
) {
  const WG = subgroupMatmulLanes(s.N, SG);
  const form = { transA: !!s.transA, transB: !!s.transB, SG, WG, halfB: isHalf(b) };
  const key = JSON.stringify(form);
  let code = subgroupSources.get(key);
  if (!code) {
    code = subgroupMatmulSource(form);
    subgroupSources.set(key, code);
  }
  rt.dispatch(
    rec,
    rt.pipeline(code, "main"),
    [out, a, b, bias ?? rt.dummy, matmulUniform(rt, s, bias)],
    [Math.ceil(s.N / (WG * SUBGROUP_MATMUL_COLS)), Math.ceil(s.M / SG), s.batch ?? 1],
    matmulWork(s, isHalf(b), !!bias),
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

/**
 * dinp += dout·weight, dweight += doutᵀ·inp, dbias += column sums of dout. Any may be null; an
 * f16 weight (frozen) takes dinp only.
 */
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
  if (dweight && isHalf(weight))
    throw new Error("matmulBackward: the weight is stored as f16 (a frozen base) and has no gradient");
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
  rt.dispatch(rec, pipeline, [dbias, dout, u], [Math.ceil(OC / 64)], {
    flops: N * OC,
    bytes: 4 * (N * OC + 2 * OC),
  });
}
