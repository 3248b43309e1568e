// Token + learned position embedding and its deterministic backward (no atomics).
// tokens: int32 (N), id < 0 = padding (zero row, no gradient); pos: uint32 (N), each token's own
// position, so left and right padding both work. WGSL in embedding.wgsl; reference in reference.ts.
// Tested by ops.gpu.test.ts.
import src from "./embedding.wgsl?raw";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 64;

/** out (N,C) = wte[tokens] (V,C) + wpe[pos] (maxT,C). */
export function embeddingForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  tokens: View,
  pos: View,
  wte: View,
  wpe: View,
  N: number,
  C: number,
) {
  const u = rt.uniform(
    packUniform([
      ["u32", N],
      ["u32", C],
      ["u32", 0],
    ]),
  );
  rt.dispatch(
    rec,
    rt.pipeline(src, "forward", { WG }),
    [out, tokens, pos, wte, wpe, u],
    [Math.ceil((N * C) / WG)],
  );
}

/**
 * dwte (V,C) += and dwpe (maxT,C) += dout (N,C) gathered by token and by position. Each thread owns
 * one (row, channel) and walks the N tokens in order: O(rows*C*N), fine for small vocabularies.
 */
export function embeddingBackward(
  rt: Runtime,
  rec: Recorder,
  dwte: View | null,
  dwpe: View | null,
  dout: View,
  tokens: View,
  pos: View,
  N: number,
  C: number,
  V: number,
  maxT: number,
) {
  for (const [table, rows, byPos] of [
    [dwte, V, false],
    [dwpe, maxT, true],
  ] as const) {
    if (!table) continue;
    const u = rt.uniform(
      packUniform([
        ["u32", N],
        ["u32", C],
        ["u32", rows],
      ]),
    );
    const pipeline = rt.pipeline(src, "backward", { WG, BY_POSITION: byPos ? 1 : 0 });
    rt.dispatch(rec, pipeline, [table, tokens, pos, dout, null, u], [Math.ceil((rows * C) / WG)]);
  }
}
