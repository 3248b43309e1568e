// Elementwise ops: residual add, GELU (tanh approximation), SiLU, SwiGLU, fill/zero, axpy.
// WGSL in pointwise.wgsl; references in reference.ts; tested by ops.gpu.test.ts.
// Backward functions add into their gradient views.
import src from "./pointwise.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 256;

function run(
  rt: Runtime,
  rec: Recorder,
  entry: string,
  o0: View,
  o1: View | null,
  i0: View | null,
  n: number,
  H = 0,
  value = 0,
) {
  const u = rt.uniform(
    packUniform([
      ["u32", n],
      ["u32", H],
      ["f32", value],
    ]),
  );
  rt.dispatch(rec, rt.pipeline(src, entry, { WG }), [o0, o1, i0, u], [Math.ceil(n / WG)]);
}

/** out = a + b, n elements. */
export function residualForward(rt: Runtime, rec: Recorder, out: View, a: View, b: View, n: number) {
  run(rt, rec, "residual_forward", out, a, b, n);
}

/** da += dout, db += dout. */
export function residualBackward(rt: Runtime, rec: Recorder, da: View, db: View, dout: View, n: number) {
  run(rt, rec, "residual_backward", da, db, dout, n);
}

export function geluForward(rt: Runtime, rec: Recorder, out: View, inp: View, n: number) {
  run(rt, rec, "gelu_forward", out, inp, null, n);
}

/** dinp += gelu'(inp) * dout. */
export function geluBackward(rt: Runtime, rec: Recorder, dinp: View, inp: View, dout: View, n: number) {
  run(rt, rec, "gelu_backward", dinp, inp, dout, n);
}

export function siluForward(rt: Runtime, rec: Recorder, out: View, inp: View, n: number) {
  run(rt, rec, "silu_forward", out, inp, null, n);
}

export function siluBackward(rt: Runtime, rec: Recorder, dinp: View, inp: View, dout: View, n: number) {
  run(rt, rec, "silu_backward", dinp, inp, dout, n);
}

/** out (N,H) = silu(gate) * up where inp (N,2H) = [gate | up] per row. */
export function swigluForward(rt: Runtime, rec: Recorder, out: View, inp: View, N: number, H: number) {
  run(rt, rec, "swiglu_forward", out, inp, null, N * H, H);
}

/** dinp (N,2H) += the SwiGLU gradient of dout (N,H). */
export function swigluBackward(
  rt: Runtime,
  rec: Recorder,
  dinp: View,
  inp: View,
  dout: View,
  N: number,
  H: number,
) {
  run(rt, rec, "swiglu_backward", dinp, inp, dout, N * H, H);
}

/** Sets n elements (default: the whole view) to `value`. Zeroing gradients is this op. */
export function fill(rt: Runtime, rec: Recorder, out: View, value = 0, n = out.size / 4) {
  run(rt, rec, "fill", out, null, null, n, 0, value);
}

export function zero(rt: Runtime, rec: Recorder, out: View, n = out.size / 4) {
  fill(rt, rec, out, 0, n);
}

/** y += alpha * x (e.g. adding a second gradient path). */
export function axpy(rt: Runtime, rec: Recorder, y: View, alpha: number, x: View, n: number) {
  run(rt, rec, "axpy", y, x, null, n, 0, alpha);
}
