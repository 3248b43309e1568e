// LayerNorm and RMSNorm over the last axis of (N,C), eps 1e-5 unless given (Qwen: 1e-6); forward saves mean/rstd (N) for
// backward; backward adds into dinp, dweight, dbias. WGSL in norm.wgsl (its row reductions from
// kernels/reduce.ts: subgroups where the device has them); references in reference.ts; tested by
// ops.gpu.test.ts and reduce.gpu.test.ts.
import src from "./norm.wgsl?raw";
import { NORM_EPS } from "./reference";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 64;

function params(rt: Runtime, N: number, C: number, eps = NORM_EPS) {
  return rt.uniform(
    packUniform([
      ["u32", N],
      ["u32", C],
      ["f32", eps],
    ]),
  );
}

/** out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) saved. */
export function layernormForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  mean: View,
  rstd: View,
  inp: View,
  weight: View,
  bias: View,
  N: number,
  C: number,
  eps = NORM_EPS,
) {
  const u = params(rt, N, C, eps);
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), "layernorm_forward", { WG: rt.reductionWorkgroup(C) }),
    [out, mean, rstd, inp, weight, bias, null, u],
    [N],
  );
}

export function layernormBackward(
  rt: Runtime,
  rec: Recorder,
  dinp: View | null,
  dweight: View | null,
  dbias: View | null,
  dout: View,
  inp: View,
  weight: View,
  mean: View,
  rstd: View,
  N: number,
  C: number,
) {
  const u = params(rt, N, C);
  if (dinp) {
    const pipe = rt.pipeline(rt.reducing(src), "layernorm_backward_input", {
      WG: rt.reductionWorkgroup(C),
    });
    rt.dispatch(rec, pipe, [dinp, mean, rstd, inp, weight, null, dout, u], [N]);
  }
  if (dweight && dbias) {
    const pipe = rt.pipeline(rt.reducing(src), "layernorm_backward_params", { WG });
    rt.dispatch(rec, pipe, [dweight, mean, rstd, inp, null, dbias, dout, u], [Math.ceil(C / WG)]);
  } else if (dweight || dbias) {
    throw new Error("layernormBackward computes dweight and dbias together");
  }
}

/** out (N,C) = inp * rstd * weight, rstd = 1/sqrt(mean(inp^2) + eps) (N) saved. */
export function rmsnormForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  rstd: View,
  inp: View,
  weight: View,
  N: number,
  C: number,
  eps = NORM_EPS,
) {
  const u = params(rt, N, C, eps);
  rt.dispatch(
    rec,
    rt.pipeline(rt.reducing(src), "rmsnorm_forward", { WG: rt.reductionWorkgroup(C) }),
    [out, null, rstd, inp, weight, null, null, u],
    [N],
  );
}

export function rmsnormBackward(
  rt: Runtime,
  rec: Recorder,
  dinp: View | null,
  dweight: View | null,
  dout: View,
  inp: View,
  weight: View,
  rstd: View,
  N: number,
  C: number,
) {
  const u = params(rt, N, C);
  if (dinp) {
    const pipe = rt.pipeline(rt.reducing(src), "rmsnorm_backward_input", {
      WG: rt.reductionWorkgroup(C),
    });
    rt.dispatch(rec, pipe, [dinp, null, rstd, inp, weight, null, dout, u], [N]);
  }
  if (dweight) {
    const pipe = rt.pipeline(rt.reducing(src), "rmsnorm_backward_weight", { WG });
    rt.dispatch(rec, pipe, [dweight, null, rstd, inp, null, null, dout, u], [Math.ceil(C / WG)]);
  }
}
