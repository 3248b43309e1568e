// Causal attention (forward, backward) over a packed qkv (B,T,C+2KV) = [q | k | v], with an
// optional key mask (B,T) for padded batches, plus single-token decode over a KV cache and the
// cache write. Grouped-query: C = NH*hs is the query (and output) width, KVH key/value heads of
// the same size (KV = KVH*hs) each serve NH/KVH query heads; KVH defaults to NH (multi-head).
// WGSL in attention.wgsl (on SwiftShader, `rt.unrolled`: forward, backward and decode unrolled per
// head size by attention-gen.ts when it is a multiple of 4); references in reference.ts; tested by attention.gpu.test.ts.

import src from "./attention.wgsl?raw";
import { attentionSource, decodeAttentionSource } from "./attention-gen";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 64;
export const MAX_HEAD_SIZE = 128;

/** The shader with its per-thread q/acc arrays sized for this head size (private memory is scarce). */
function shader(C: number, NH: number): string {
  const hs = Math.ceil(C / NH / 4) * 4;
  return src.replace("const MAX_HS = 128u;", `const MAX_HS = ${Math.min(hs, MAX_HEAD_SIZE)}u;`);
}

const unrolled = new Map<number, string>();
const unrolledDecode = new Map<number, string>();

/**
 * The forward/backward shader: with `rt.unrolled` (SwiftShader) and a head size that is a multiple
 * of 4, attention-gen.ts's (every head vector in registers, not in arrays a loop indexes; ~3.5x
 * there), else attention.wgsl's (as fast on lavapipe, which compiles it 10-40x quicker).
 */
function trainShader(rt: Runtime, C: number, NH: number): string {
  const hs = C / NH;
  if (!rt.unrolled || hs % 4 !== 0) return shader(C, NH);
  let code = unrolled.get(hs);
  if (!code) {
    code = attentionSource(hs);
    unrolled.set(hs, code);
  }
  return code;
}

function params(
  rt: Runtime,
  B: number,
  T: number,
  C: number,
  NH: number,
  mask: View | null,
  extra: number,
  KVH: number,
) {
  const hs = C / NH;
  if (!Number.isInteger(hs) || hs > MAX_HEAD_SIZE)
    throw new Error(`head size ${hs} must be an integer <= ${MAX_HEAD_SIZE}`);
  if (!Number.isInteger(KVH) || KVH <= 0 || NH % KVH !== 0)
    throw new Error(`key/value heads ${KVH} must divide the ${NH} query heads`);
  return rt.uniform(
    packUniform([
      ["u32", B],
      ["u32", T],
      ["u32", C],
      ["u32", NH],
      ["u32", hs],
      ["u32", mask ? 1 : 0],
      ["f32", 1 / Math.sqrt(hs)],
      ["u32", extra],
      ["u32", KVH],
    ]),
  );
}

/** out (B,T,C), lse (B,NH,T) saved; qkv (B,T,C+2KV); mask (B,T) uint32, 1 = real token, or null. */
export function attentionForward(
  rt: Runtime,
  rec: Recorder,
  out: View,
  lse: View,
  qkv: View,
  mask: View | null,
  B: number,
  T: number,
  C: number,
  NH: number,
  KVH = NH,
) {
  const u = params(rt, B, T, C, NH, mask, 0, KVH);
  const pipe = rt.pipeline(trainShader(rt, C, NH), "forward", { WG });
  rt.dispatch(
    rec,
    pipe,
    [out, lse, qkv, mask ?? rt.dummy, null, null, null, u],
    [Math.ceil((B * NH * T) / WG)],
  );
}

/**
 * dqkv (B,T,C+2KV) += the gradient through attention. `scratch` holds (B,NH,T) floats (D = dout·out);
 * its contents are overwritten. out and lse are the forward's.
 */
export function attentionBackward(
  rt: Runtime,
  rec: Recorder,
  dqkv: View,
  scratch: View,
  dout: View,
  qkv: View,
  out: View,
  lse: View,
  mask: View | null,
  B: number,
  T: number,
  C: number,
  NH: number,
  KVH = NH,
) {
  const u = params(rt, B, T, C, NH, mask, 0, KVH);
  const m = mask ?? rt.dummy;
  rt.dispatch(
    rec,
    rt.pipeline(trainShader(rt, C, NH), "backward_query", { WG }),
    [dqkv, lse, qkv, m, dout, out, scratch, u],
    [Math.ceil((B * NH * T) / WG)],
  );
  // one thread per key of each kv head (it sums over the query heads that read it)
  rt.dispatch(
    rec,
    rt.pipeline(trainShader(rt, C, NH), "backward_key", { WG }),
    [dqkv, lse, qkv, m, dout, null, scratch, u],
    [Math.ceil((B * KVH * T) / WG)],
  );
}

/**
 * One query per sequence over the cache: out (B,C); q = the first C columns of each (B,qStride)
 * row (qStride defaults to C+2KV, a qkv row); kcache, vcache (B,Tmax,KV); lens (B) uint32 = cache
 * positions to read (the current token included); mask (B,Tmax) uint32 or null for left-padded prompts.
 */
export function decodeAttention(
  rt: Runtime,
  rec: Recorder,
  out: View,
  q: View,
  kcache: View,
  vcache: View,
  lens: View,
  mask: View | null,
  B: number,
  Tmax: number,
  C: number,
  NH: number,
  qStride?: number,
  KVH = NH,
) {
  const u = params(rt, B, Tmax, C, NH, mask, qStride ?? C + (2 * KVH * C) / NH, KVH);
  const hs = C / NH;
  let code = shader(C, NH);
  if (rt.unrolled && hs % 4 === 0) {
    code = unrolledDecode.get(hs) ?? decodeAttentionSource(hs);
    unrolledDecode.set(hs, code);
  }
  const pipe = rt.pipeline(code, "decode", { WG });
  rt.dispatch(rec, pipe, [out, q, kcache, vcache, lens, mask ?? rt.dummy, u], [Math.ceil((B * NH) / WG)]);
}

/**
 * Writes each row's k (columns C..C+KV) and v (C+KV..C+2KV) of kv (B,kvStride) into the caches
 * (B,Tmax,KV) at slot[b]; C = NH*hs, KV = KVH*hs, kvStride defaults to C+2KV.
 */
export function kvCacheWrite(
  rt: Runtime,
  rec: Recorder,
  kcache: View,
  vcache: View,
  kv: View,
  slot: View,
  B: number,
  Tmax: number,
  C: number,
  NH: number,
  kvStride?: number,
  KVH = NH,
) {
  const KV = (KVH * C) / NH;
  const u = params(rt, B, Tmax, C, NH, null, kvStride ?? C + 2 * KV, KVH);
  rt.dispatch(
    rec,
    rt.pipeline(src, "kv_write", { WG }),
    [kcache, vcache, kv, slot, u],
    [Math.ceil((B * KV) / WG)],
  );
}
