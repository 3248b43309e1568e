// Token sampling from logits (B,V): temperature, top-k, top-p, seeded counter-based PRNG; gives
// each row's token (int32) and its log-prob under the (tempered, truncated, renormalized)
// sampling distribution. Greedy when temperature = 0. WGSL in sample.wgsl; reference sampleRef;
// tested by sample.gpu.test.ts.

import type { SampleParams } from "./reference";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";
import src from "./sample.wgsl?raw";

export type { SampleParams } from "./reference";

/**
 * tokens int32, logps at rows [rowBase, rowBase + B) from logits (B,V) of those rows, in the
 * slice-major layout of `sliceV` (default V: a plain (B,V) block; see logsoftmax.ts); the draw of
 * batch row r uses (seed, step, r), or (seed, step + rowStep[r], r) when `rowStep` (uint32, one
 * per batch row) is given, with rowId[r] in place of r when `rowId` (uint32, one per batch row) is.
 */
export function sample(
  rt: Runtime,
  rec: Recorder,
  tokens: View,
  logps: View,
  logits: View,
  B: number,
  V: number,
  s: SampleParams,
  chunk: { sliceV?: number; rowBase?: number } = {},
  rowStep: View | null = null,
  rowId: View | null = null,
) {
  const u = rt.uniform(
    packUniform([
      ["u32", B],
      ["u32", V],
      ["f32", s.temperature],
      ["u32", s.topK],
      ["f32", s.topP],
      ["u32", s.seed],
      ["u32", s.step],
      ["u32", chunk.sliceV ?? V],
      ["u32", chunk.rowBase ?? 0],
      ["u32", rowStep ? 1 : 0],
      ["u32", rowId ? 1 : 0],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(src, "main", { WG: rt.rowWorkgroup(V) }),
    [tokens, logps, logits, u, rowStep ?? rt.dummy, rowId ?? rt.sink(0)],
    [B],
  );
}
