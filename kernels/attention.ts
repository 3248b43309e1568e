// Causal attention (forward, backward) over a packed qkv (B,T,C+2KV) = [q | k | v], with an
// optional key mask (B,T) for padded batches, plus single-token decode over a KV cache and the
// cache write. Grouped-query: C = NH*hs is the query (and output) width, KVH key/value heads of
// the same size (KV = KVH*hs) each serve NH/KVH query heads; KVH defaults to NH (multi-head).
// WGSL in attention.wgsl (under the plan's unrolled kernels, SwiftShader's: forward, backward and
// decode unrolled per head size by attention-gen.ts when it is a multiple of 4); references in
// reference.ts; tested by attention.gpu.test.ts. Training attention has three kernels (the
// plan's `attention`, kernels/plan.ts; trainKernel): attention.wgsl's one thread per query or key
// ("loop"), attention-blocked.wgsl's several rows per thread sharing each K/V load
// ("blocked", software adapters) and attention-tiled.wgsl's K/V tiles in workgroup memory
// ("tiled", GPUs); all three keep no T x T matrix and give the same results to rounding.

import src from "./attention.wgsl?raw";
import bindingsSrc from "./attention-bindings.wgsl?raw";
import blockedSrc from "./attention-blocked.wgsl?raw";
import { attentionSource, decodeAttentionSource } from "./attention-gen";
import tiledSrc from "./attention-tiled.wgsl?raw";
import type { KernelPlan } from "./plan";
import { packUniform, type Recorder, type Runtime, type View } from "./runtime";

const WG = 64;
export const MAX_HEAD_SIZE = 128;

/** The shader with its per-thread q/acc arrays sized for this head size (private memory is scarce). */
function shader(C: number, NH: number): string {
  const hs = Math.min(Math.ceil(C / NH / 4) * 4, MAX_HEAD_SIZE);
  let code = sized.get(hs);
  if (!code) {
    code = src.replace("const MAX_HS = 128u;", `const MAX_HS = ${hs}u;`);
    sized.set(hs, code);
  }
  return code;
}

const sized = new Map<number, string>();

const unrolled = new Map<number, string>();
const decodeSources = new Map<string, string>();

/**
 * The forward/backward shader: with `rt.plan.matmul === "unrolled"` (SwiftShader) and a head size that is a multiple
 * of 4, attention-gen.ts's (every head vector in registers, not in arrays a loop indexes; ~3.5x
 * there), else attention.wgsl's (as fast on lavapipe, which compiles it 10-40x quicker).
 */
function trainShader(rt: Runtime, C: number, NH: number): string {
  const hs = C / NH;
  if (rt.plan.matmul !== "unrolled" || hs % 4 !== 0) return shader(C, NH);
  let code = unrolled.get(hs);
  if (!code) {
    code = attentionSource(hs);
    unrolled.set(hs, code);
  }
  return code;
}

/**
 * The blocked kernel's sizes: rows one thread computes at most (R = GH x QB; private memory is
 * 2-3 x R x hs floats) and keys one backward_key thread holds (4 x keys x hs floats), a third and
 * a quarter of them above head size 64 (LLVM's compile time grows with both). 12 x 8: 2.2x the loop kernel at T 256 (8 x 4: 1.9x, 16 x 8: 1.7x;
 * kernels/dev/attention-pretrained.ts, lavapipe under load). Mutable for that harness.
 */
export const BLOCKED = { rows: 12, keys: 8 };
/**
 * The blocked kernel reads the head size as a constant from head size 12 up, where R x head size
 * is at most this many floats. On lavapipe at the lab-made Llama's shape (B 32, T 151, 4 heads of
 * 12 over 2) forward + backward went from 257 to 54 ms with the same bits. Measured around it
 * (kernels/dev/attention-pretrained.ts): 12 rows of 16 (192 floats) gained nothing; head sizes 4,
 * 6 and 8 took LLVM 8-24 s to compile (it unrolls more); head size 64 gained 1.4x for 6 s more.
 */
const CONST_HEAD_FLOATS = 144;
const TILED_WG = 64;

/** The blocked kernel's shape for head size hs and GQA group (NH/KVH query heads per kv head). */
export function blockedShape(hs: number, group: number): { GH: number; QB: number; KB: number } {
  // as many heads of the group as fit (a divisor of it), then queries up to BLOCKED_ROWS rows
  let GH = 1;
  const rows = hs > 64 ? Math.max(1, Math.floor(BLOCKED.rows / 3)) : BLOCKED.rows;
  for (let d = 1; d <= Math.min(group, rows); d++) if (group % d === 0) GH = d;
  const QB = Math.max(1, Math.floor(rows / GH));
  return { GH, QB, KB: hs > 64 ? Math.max(1, BLOCKED.keys >> 2) : BLOCKED.keys };
}

/**
 * The tiled kernel's shape: BQ queries of each of the group's heads per workgroup (one thread per
 * (head, query)), tiles of BK keys (and BK queries in backward_key) sized to the workgroup memory:
 * two BK x hs tiles and two BK vectors; null where not even one key fits or the group has more
 * heads than a workgroup has threads.
 */
export function tiledShape(
  hs: number,
  group: number,
  storageBytes: number,
): { BQ: number; BK: number; bytes: number } | null {
  const stride = Math.ceil(hs / 4) * 4;
  const BK = Math.min(64, Math.floor(storageBytes / (4 * (2 * stride + 2))));
  if (BK < 1 || group > TILED_WG) return null;
  return { BQ: Math.floor(TILED_WG / group), BK, bytes: 4 * BK * (2 * stride + 2) };
}

/** The training kernels (kernels/plan.ts KernelPlan.attention). */
export type AttentionKernel = KernelPlan["attention"];

/**
 * The training kernel that runs on rt for this head size and group: the plan's, except that
 * "tiled" runs as "blocked" where a tile does not fit the workgroup memory.
 */
export function trainKernel(rt: Runtime, hs: number, group: number): AttentionKernel {
  const k = rt.plan.attention;
  if (k === "tiled" && !tiledShape(hs, group, rt.maxWorkgroupStorageBytes)) return "blocked";
  return k;
}

/** The shader with its uniform head size `field` read as the constant HS = hs instead. */
function constHead(code: string, field: string, hs: number): string {
  return `${code.replaceAll(field, "HS")}\nconst HS = ${hs}u;\n`;
}

const variants = new Map<string, string>();

/** The forward/backward shader of `kernel` at this shape (constants rewritten; cached). */
function kernelShader(rt: Runtime, kernel: AttentionKernel, hs: number, group: number): string {
  if (kernel === "loop") return trainShader(rt, hs * group, group);
  const stride = Math.ceil(hs / 4) * 4;
  const key =
    kernel === "tiled"
      ? `tiled ${hs} ${group} ${rt.maxWorkgroupStorageBytes}`
      : `blocked ${hs} ${group} ${BLOCKED.rows} ${BLOCKED.keys}`;
  let code = variants.get(key);
  if (!code) {
    if (kernel === "blocked") {
      const { GH, QB, KB } = blockedShape(hs, group);
      code = `${blockedSrc}\n${bindingsSrc}`
        .replace("const MAX_HS = 64u;", `const MAX_HS = ${stride}u;`)
        .replace("const QB = 4u;", `const QB = ${QB}u;`)
        .replace("const GH = 3u;", `const GH = ${GH}u;`)
        .replace("const KB = 4u;", `const KB = ${KB}u;`);
      // the head size as a constant where a thread's rows fit CONST_HEAD_FLOATS: the loops over
      // it then have a known count and LLVM keeps the per-row arrays in registers
      if (hs >= 12 && GH * QB * stride <= CONST_HEAD_FLOATS) code = constHead(code, "p.hs", hs);
    } else {
      const t = tiledShape(hs, group, rt.maxWorkgroupStorageBytes);
      if (!t) throw new Error(`attention: no tiled kernel for head size ${hs}`);
      code = `${tiledSrc}\n${bindingsSrc}`
        .replace("const MAX_HS = 64u;", `const MAX_HS = ${stride}u;`)
        .replace("const GRP = 3u;", `const GRP = ${group}u;`)
        .replace("const BQ = 21u;", `const BQ = ${t.BQ}u;`)
        .replace("const BK = 16u;", `const BK = ${t.BK}u;`);
      // the head size as a constant, as GPU attention kernels are built per head size: the head
      // loops get a known count, so q and acc can live in registers rather than indexable private
      // memory (the same bits; on lavapipe 483 -> 262 ms at the lab-made Llama's shape, 64 unchanged)
      code = constHead(code, "p.hs", hs);
    }
    variants.set(key, code);
  }
  return code;
}

/** Threads (blocked) or workgroups (tiled) of each training entry point, as a dispatch grid size. */
function trainGrid(
  kernel: AttentionKernel,
  entry: "forward" | "backward_query" | "backward_key",
  B: number,
  T: number,
  NH: number,
  KVH: number,
  hs: number,
  storageBytes: number,
): number {
  const group = NH / KVH;
  if (kernel === "loop") return Math.ceil((B * (entry === "backward_key" ? KVH : NH) * T) / WG);
  if (kernel === "blocked") {
    const { GH, QB, KB } = blockedShape(hs, group);
    const threads =
      entry === "backward_key" ? B * KVH * Math.ceil(T / KB) : B * KVH * (group / GH) * Math.ceil(T / QB);
    return Math.ceil(threads / WG);
  }
  const t = tiledShape(hs, group, storageBytes);
  if (!t) throw new Error(`attention: no tiled kernel for head size ${hs}`);
  return entry === "backward_key" ? B * KVH * Math.ceil(T / TILED_WG) : B * KVH * Math.ceil(T / t.BQ);
}

/**
 * Global K and V floats one training pass reads per query row (forward and backward_query alike:
 * each reads every visible key and value of its rows once), for the benchmark's count, with no
 * mask: "loop" reads (t+1) keys per query; "blocked" (t0+QB) per thread of GH x QB rows; "tiled"
 * min(t0+BQ, T) keys rounded up to the tile per workgroup of GRP x BQ rows.
 */
export function kvReadsPerQuery(
  kernel: AttentionKernel,
  T: number,
  hs: number,
  group: number,
  storageBytes = 16384,
): number {
  let keys = 0;
  if (kernel === "loop") for (let t = 0; t < T; t++) keys += t + 1;
  else if (kernel === "blocked") {
    const { GH, QB } = blockedShape(hs, group);
    for (let t0 = 0; t0 < T; t0 += QB) keys += Math.min(t0 + QB, T) / GH;
  } else {
    const t = tiledShape(hs, group, storageBytes);
    if (!t) throw new Error(`attention: no tiled kernel for head size ${hs}`);
    for (let t0 = 0; t0 < T; t0 += t.BQ) keys += (Math.ceil(Math.min(t0 + t.BQ, T) / t.BK) * t.BK) / group;
  }
  return (2 * hs * keys) / T;
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

/**
 * The FLOPs of one (T,T) product of causal attention over B sequences and NH heads of hs: the
 * T(T+1)/2 query-key pairs a head computes, a multiply-add per pair and head dimension. The
 * forward counts 2 products (scores, then the weighted values), backward_query 3 (the scores
 * again, dP = dout·V, dq) and backward_key 2 (dk, dv): the algorithm's, not a kernel's re-computations.
 */
export function causalProductFlops(B: number, T: number, NH: number, hs: number): number {
  return 2 * B * NH * ((T * (T + 1)) / 2) * hs;
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
  const [hs, group] = [C / NH, NH / KVH];
  const kernel = trainKernel(rt, hs, group);
  const code = kernelShader(rt, kernel, hs, group);
  const pipe = rt.pipeline(code, "forward", kernel === "tiled" ? {} : { WG });
  rt.dispatch(
    rec,
    pipe,
    [out, lse, qkv, mask ?? rt.dummy, null, null, null, u],
    [trainGrid(kernel, "forward", B, T, NH, KVH, hs, rt.maxWorkgroupStorageBytes)],
    { flops: 2 * causalProductFlops(B, T, NH, hs) },
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
  const [hs, group] = [C / NH, NH / KVH];
  const kernel = trainKernel(rt, hs, group);
  const code = kernelShader(rt, kernel, hs, group);
  const consts: Record<string, number> = kernel === "tiled" ? {} : { WG };
  const grid = (e: "backward_query" | "backward_key"): [number] => [
    trainGrid(kernel, e, B, T, NH, KVH, hs, rt.maxWorkgroupStorageBytes),
  ];
  rt.dispatch(
    rec,
    rt.pipeline(code, "backward_query", consts),
    [dqkv, lse, qkv, m, dout, out, scratch, u],
    grid("backward_query"),
    { flops: 3 * causalProductFlops(B, T, NH, hs) },
  );
  // per key of each kv head (it sums over the query heads that read it)
  rt.dispatch(
    rec,
    rt.pipeline(code, "backward_key", consts),
    [dqkv, lse, qkv, m, dout, null, scratch, u],
    grid("backward_key"),
    { flops: 2 * causalProductFlops(B, T, NH, hs) },
  );
}

/**
 * The decode shader: attention-gen.ts's under the unrolled plan where the head size is a multiple
 * of 4, else attention.wgsl's with the head size as a constant, so its loops have a known count
 * (on lavapipe q and acc then stay in registers; 2.0 -> 1.6 ms a token at SmolLM2's 2 layers x 8 rows).
 */
function decodeShader(rt: Runtime, C: number, NH: number): string {
  const hs = C / NH;
  const unrolledHere = rt.plan.matmul === "unrolled" && hs % 4 === 0;
  const key = `${unrolledHere ? "unrolled" : "const"} ${C} ${NH}`;
  let code = decodeSources.get(key);
  if (!code) {
    code = unrolledHere ? decodeAttentionSource(hs) : constHead(shader(C, NH), "dp.hs", hs);
    decodeSources.set(key, code);
  }
  return code;
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
  const pipe = rt.pipeline(decodeShader(rt, C, NH), "decode", { WG });
  // counted at the whole cache (the lengths are on the GPU): an upper bound on a step's reads
  rt.dispatch(rec, pipe, [out, q, kcache, vcache, lens, mask ?? rt.dummy, u], [Math.ceil((B * NH) / WG)], {
    flops: 4 * B * NH * Tmax * hs,
  });
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
    { bytes: 4 * B * (4 * KV + 1) },
  );
}
