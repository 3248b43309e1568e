// LoRA on the GPU: the adapter's term added into a fused base output (model/lora.ts, as
// model/cpu-passes.ts does on the CPU), forward and backward. Legend as model/gpu.ts.
// Tested by model/lora.gpu.test.ts (PyTorch golden, CPU equality).
import {
  columnsAdd,
  columnsGather,
  type FlatBuffer,
  LINEAR_ROWS_MAX,
  loraRows,
  matmulBackward,
  matmulForward,
  type Recorder,
  type Runtime,
  type View,
  zero,
} from "../kernels/index";
import type { LoraBaseWeight, LoraLayout } from "./lora";
import type { loraScratchSizes } from "./memory-plan";

// ---------------------------------------------------------------------------------------
// LoRA: the adapter's term added into a fused base output (model/lora.ts, as model/cpu.ts)

/** The adapter's weights: its own flat layout in a FlatBuffer. */
export interface GpuAdapter {
  layout: LoraLayout;
  w: FlatBuffer;
}

export type LoraScratch = Record<keyof ReturnType<typeof loraScratchSizes>, View>;

/** out columns of each target on weight `w` of layer l += scale * (inp A^T) B^T. */
export function loraForward(
  rt: Runtime,
  rec: Recorder,
  ad: GpuAdapter | null,
  sc: LoraScratch | null,
  l: number,
  w: LoraBaseWeight,
  out: View,
  inp: View,
  N: number,
) {
  if (!ad || !sc) return;
  const r = ad.layout.rank;
  for (const s of ad.layout.layers[l]) {
    if (s.weight !== w) continue;
    const A = ad.w.view(s.a, r * s.inDim); // (r,in)
    const Bm = ad.w.view(s.b, s.rows * r); // (rows,r)
    matmulForward(rt, rec, sc.loraU, inp, A, null, N, s.inDim, r); // (N,r)
    matmulForward(rt, rec, sc.loraDelta, sc.loraU, Bm, null, N, r, s.rows); // (N,rows)
    columnsAdd(rt, rec, out, sc.loraDelta, N, s.rows, s.outStride, s.rowStart, ad.layout.scale);
  }
}

/**
 * loraForward for decode rows (N <= LINEAR_ROWS_MAX): every target of weight `w` in two
 * dispatches (kernels/decode.ts loraRows) where its A and B lie in one adapter buffer segment
 * and U fits the delta scratch; else loraForward's three a target.
 */
export function loraForwardRows(
  rt: Runtime,
  rec: Recorder,
  ad: GpuAdapter | null,
  sc: LoraScratch | null,
  l: number,
  w: LoraBaseWeight,
  out: View,
  inp: View,
  N: number,
) {
  if (!ad || !sc) return;
  const specs = ad.layout.layers[l].filter((s) => s.weight === w);
  if (specs.length === 0) return;
  const r = ad.layout.rank;
  const lo = Math.min(...specs.map((s) => s.a));
  const hi = Math.max(...specs.map((s) => s.b + s.rows * r));
  const seg = ad.w.segments.find((g) => lo >= g.start && lo < g.start + g.length);
  const fits =
    N <= LINEAR_ROWS_MAX &&
    specs.length <= 3 &&
    !!seg &&
    hi <= seg.start + seg.length &&
    4 * (hi - lo) <= rt.maxBindingBytes &&
    N * specs.length * r <= sc.loraDelta.size / 4;
  if (!fits) {
    loraForward(rt, rec, ad, sc, l, w, out, inp, N);
    return;
  }
  loraRows(rt, rec, out, inp, ad.w.view(lo, hi - lo), sc.loraDelta, {
    M: N,
    K: specs[0].inDim,
    r,
    scale: ad.layout.scale,
    outStride: specs[0].outStride,
    targets: specs.map((s) => ({ a: s.a - lo, b: s.b - lo, start: s.rowStart, rows: s.rows })),
  });
}

/** dinp += the adapter's input gradient; dA, dB (in dad, the adapter's layout) += theirs. u is recomputed. */
export function loraBackward(
  rt: Runtime,
  rec: Recorder,
  ad: GpuAdapter | null,
  dad: FlatBuffer | null,
  sc: LoraScratch | null,
  l: number,
  w: LoraBaseWeight,
  dinp: View,
  dout: View,
  inp: View,
  N: number,
) {
  if (!ad || !dad || !sc) return;
  const r = ad.layout.rank;
  for (const s of ad.layout.layers[l]) {
    if (s.weight !== w) continue;
    const A = ad.w.view(s.a, r * s.inDim);
    const Bm = ad.w.view(s.b, s.rows * r);
    matmulForward(rt, rec, sc.loraU, inp, A, null, N, s.inDim, r);
    columnsGather(rt, rec, sc.loraDelta, dout, N, s.rows, s.outStride, s.rowStart, ad.layout.scale);
    zero(rt, rec, sc.loraDu, N * r);
    matmulBackward(
      rt,
      rec,
      sc.loraDu,
      dad.view(s.b, s.rows * r),
      null,
      sc.loraDelta,
      sc.loraU,
      Bm,
      N,
      r,
      s.rows,
    );
    matmulBackward(rt, rec, dinp, dad.view(s.a, r * s.inDim), null, sc.loraDu, inp, A, N, s.inDim, r);
  }
}
