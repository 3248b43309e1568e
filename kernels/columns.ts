// Column-block ops for LoRA on fused weights: add a (N, cols) term into columns
// [start, start+cols) of a (N, stride) output, and gather that block (scaled) back out.
// WGSL in columns.wgsl; references columnsAddRef / columnsGatherRef in reference.ts; tested by
// ops.gpu.test.ts.
import src from "./columns.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 256;

function run(
  rt: Runtime,
  rec: Recorder,
  entry: string,
  dst: View,
  from: View,
  N: number,
  cols: number,
  stride: number,
  start: number,
  scale: number,
) {
  if (start + cols > stride)
    throw new Error(`columns: block [${start}, ${start + cols}) exceeds the row of ${stride}`);
  const n = N * cols;
  const u = rt.uniform(
    packUniform([
      ["u32", n],
      ["u32", cols],
      ["u32", stride],
      ["u32", start],
      ["f32", scale],
    ]),
  );
  rt.dispatch(rec, rt.pipeline(src, entry, { WG }), [dst, from, u], [Math.ceil(n / WG)]);
}

/** out (N,stride) columns [start, start+cols) += scale * src (N,cols). */
export function columnsAdd(
  rt: Runtime,
  rec: Recorder,
  out: View,
  src: View,
  N: number,
  cols: number,
  stride: number,
  start: number,
  scale: number,
) {
  run(rt, rec, "columns_add", out, src, N, cols, stride, start, scale);
}

/** dst (N,cols) = scale * src (N,stride) columns [start, start+cols). */
export function columnsGather(
  rt: Runtime,
  rec: Recorder,
  dst: View,
  src: View,
  N: number,
  cols: number,
  stride: number,
  start: number,
  scale: number,
) {
  run(rt, rec, "columns_gather", dst, src, N, cols, stride, start, scale);
}
