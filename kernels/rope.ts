// Rotary position embedding (GPT-NeoX / Llama half-split), applied IN PLACE to a strided slice:
// e.g. q of qkv (B*T, 3C) is {rowStride: 3C, colOffset: 0}, k is {rowStride: 3C, colOffset: C}.
// Backward rotates the gradient slice back in place. pos: uint32 (N) per-token positions.
// The cos and sin come from a table the host computes in float64 (ropeTable), so the rotation is
// exact to f32 at any position: WGSL's sin/cos promise about 5e-4 absolute on GPUs and an f32
// angle of thousands of radians is already 1e-4 off. WGSL in rope.wgsl; reference
// ropeForwardRef/ropeBackwardRef; tested by rope.gpu.test.ts.
import type { RopeShape } from "./reference";
import src from "./rope.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

export type { RopeShape } from "./reference";

const WG = 64;

/** The float64 rotation of one model's RoPE, rounded once to f32: (positions, headDim/2, [cos, sin]). */
export interface RopeTable {
  view: View;
  positions: number;
  headDim: number;
  base: number;
}

/** cos and sin of pos * base^(-2i/headDim) for pos < positions, each pair i, in float64 then f32. */
export function ropeAngles(base: number, headDim: number, positions: number): Float32Array {
  const half = headDim / 2;
  const out = new Float32Array(positions * half * 2);
  for (let i = 0; i < half; i++) {
    const inv = base ** ((-2 * i) / headDim);
    for (let p = 0; p < positions; p++) {
      const a = p * inv;
      out[(p * half + i) * 2] = Math.cos(a);
      out[(p * half + i) * 2 + 1] = Math.sin(a);
    }
  }
  return out;
}

/** One table per device, base and head size, grown to the most positions asked for (never shrunk). */
const tables = new WeakMap<GPUDevice, Map<string, RopeTable>>();

/**
 * The device's table for (base, headDim) covering at least `positions` (a model's context). A
 * position past the table rotates to NaN in the kernels, never to a wrong angle.
 */
export function ropeTable(rt: Runtime, base: number, headDim: number, positions: number): RopeTable {
  if (headDim % 2) throw new Error(`RoPE needs an even head size, got ${headDim}`);
  if (!(positions >= 1) || !Number.isInteger(positions))
    throw new Error(`RoPE table: positions must be a positive integer, got ${positions}`);
  let byKey = tables.get(rt.device);
  if (!byKey) {
    byKey = new Map();
    tables.set(rt.device, byKey);
  }
  const key = `${base}:${headDim}`;
  const had = byKey.get(key);
  if (had && had.positions >= positions) return had;
  // an older, smaller table stays alive for dispatches already recorded with it (garbage collected)
  const t: RopeTable = {
    view: rt.tensor(ropeAngles(base, headDim, positions), `rope-${key}`),
    positions,
    headDim,
    base,
  };
  byKey.set(key, t);
  return t;
}

function run(rt: Runtime, rec: Recorder, x: View, pos: View, s: RopeShape, positions: number, sign: number) {
  const table = ropeTable(rt, s.base, s.headDim, positions);
  const u = rt.uniform(
    packUniform([
      ["u32", s.N],
      ["u32", s.nHeads],
      ["u32", s.headDim],
      ["u32", s.rowStride],
      ["u32", s.colOffset],
      ["u32", table.positions],
      ["f32", sign],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(src, "main", { WG }),
    [x, pos, table.view, u],
    [Math.ceil((s.N * s.nHeads * s.headDim) / 2 / WG)],
  );
}

/** Rotates x's slice to each row's position; `positions` bounds them (the model's context). */
export function ropeForward(rt: Runtime, rec: Recorder, x: View, pos: View, s: RopeShape, positions: number) {
  run(rt, rec, x, pos, s, positions, 1);
}

/** dx (the same slice of the gradient) is rotated back in place: the gradient of a rotation. */
export function ropeBackward(
  rt: Runtime,
  rec: Recorder,
  dx: View,
  pos: View,
  s: RopeShape,
  positions: number,
) {
  run(rt, rec, dx, pos, s, positions, -1);
}
