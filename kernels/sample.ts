// Token sampling from logits (B,V): temperature, top-k, top-p, seeded counter-based PRNG; gives
// each row's token (int32) and its log-prob under the (tempered, truncated, renormalized)
// sampling distribution. Greedy when temperature = 0. WGSL in sample.wgsl; reference sampleRef;
// tested by sample.gpu.test.ts.

import type { SampleParams } from "./reference";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";
import src from "./sample.wgsl?raw";

export type { SampleParams } from "./reference";

const WG = 256;

/**
 * tokens int32, logps at rows [rowBase, rowBase + B) from logits (B,V) of those rows, in the
 * slice-major layout of `sliceV` (default V: a plain (B,V) block; see logsoftmax.ts); the draw of
 * batch row b uses (seed, step, b).
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
    ]),
  );
  rt.dispatch(rec, rt.pipeline(src, "main", { WG }), [tokens, logps, logits, u], [B]);
}
