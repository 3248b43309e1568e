// Rotary position embedding (GPT-NeoX / Llama half-split), applied IN PLACE to a strided slice:
// e.g. q of qkv (B*T, 3C) is {rowStride: 3C, colOffset: 0}, k is {rowStride: 3C, colOffset: C}.
// Backward rotates the gradient slice back in place. pos: uint32 (N) per-token positions.
// WGSL in rope.wgsl; reference ropeForwardRef/ropeBackwardRef; tested by rope.gpu.test.ts.
import type { RopeShape } from "./reference";
import src from "./rope.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

export type { RopeShape } from "./reference";

const WG = 64;

function run(rt: Runtime, rec: Recorder, x: View, pos: View, s: RopeShape, sign: number) {
  if (s.headDim % 2) throw new Error(`RoPE needs an even head size, got ${s.headDim}`);
  const u = rt.uniform(
    packUniform([
      ["u32", s.N],
      ["u32", s.nHeads],
      ["u32", s.headDim],
      ["u32", s.rowStride],
      ["u32", s.colOffset],
      ["f32", s.base],
      ["f32", sign],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(src, "main", { WG }),
    [x, pos, u],
    [Math.ceil((s.N * s.nHeads * s.headDim) / 2 / WG)],
  );
}

export function ropeForward(rt: Runtime, rec: Recorder, x: View, pos: View, s: RopeShape) {
  run(rt, rec, x, pos, s, 1);
}

/** dx (the same slice of the gradient) is rotated back in place: the gradient of a rotation. */
export function ropeBackward(rt: Runtime, rec: Recorder, dx: View, pos: View, s: RopeShape) {
  run(rt, rec, dx, pos, s, -1);
}
