// Fused decode kernels: what a block does per decoded token in fewer, faster dispatches.
// linearRows (linear-rows.wgsl) is the small-M linear layer in vec4s with the RMSNorm before it,
// the residual add after it or SwiGLU's gate and up folded in; ropeAppend (rope-append.wgsl) is
// the rotary embedding of q and k and the KV-cache append in one dispatch. model/gpu-generation.ts
// runs a block as 6 dispatches with them (norm+QKV, rope+append, attention, proj+residual,
// norm+gate/up+SwiGLU, down+residual) where blockForward records 13. Also used by matmul.ts for every A·Bᵀ of at most 8 rows whose K is
// a multiple of 4 (the LM head while sampling). loraRows (lora-rows.wgsl) is a LoRA adapter's
// term on one fused weight for decode rows in two dispatches, whatever its targets. References: matmulRef, rmsnormRef, swigluRef,
// ropeForwardRef (reference.ts); tested by decode.gpu.test.ts.
import linearSrc from "./linear-rows.wgsl?raw";
import loraSrc from "./lora-rows.wgsl?raw";
import { fixedSubgroupSize } from "./matmul-subgroup";
import { ropeTable } from "./rope";
import ropeSrc from "./rope-append.wgsl?raw";
import { isHalf, packUniform, type Recorder, type Runtime, type View } from "./runtime";

/** Rows up to which linearRows runs (one accumulator per row and thread). */
export const LINEAR_ROWS_MAX = 8;

const B_F32 = "var<storage, read_write> B: array<vec4f>;";
const linearSources = new Map<string, string>();

/** Replaces `from` (which must be there) in linear-rows.wgsl's text. */
function edit(code: string, from: string, to: string): string {
  if (!code.includes(from)) throw new Error(`linear-rows.wgsl has no \`${from}\` to edit`);
  return code.replace(from, to);
}

/**
 * linear-rows.wgsl, with B as f16 (half) and/or A's rows shared by subgroupShuffle (shuffle):
 * lane i loads row i % ROWS of A each iteration and every lane takes row m's vec4 from lane m,
 * where the loop otherwise loads all ROWS vec4s per lane (from storage, or from workgroup memory
 * after STAGE's copy and barrier). Needs a subgroup of at least ROWS lanes.
 */
function linearSource(half: boolean, shuffle: boolean): string {
  const key = `${half}|${shuffle}`;
  let code = linearSources.get(key);
  if (!code) {
    code = linearSrc;
    if (half) code = `enable f16;\n${edit(code, B_F32, "var<storage, read_write> B: array<vec4<f16>>;")}`;
    if (shuffle) {
      code = edit(
        code,
        "@builtin(local_invocation_id) lid: vec3u) {",
        "@builtin(local_invocation_id) lid: vec3u, @builtin(subgroup_invocation_id) sid: u32) {",
      );
      code = edit(
        code,
        "    let u = w4(row1 + k);",
        "    let u = w4(row1 + k);\n    let mine = A[(sid % ROWS) * K4 + k];",
      );
      code = edit(
        code,
        "if (STAGE) { x = As[m * K4 + k]; } else { x = A[m * K4 + k]; }",
        "x = subgroupShuffle(mine, m);",
      );
      code = `enable subgroups;\n${code}`;
    }
    linearSources.set(key, code);
  }
  return code;
}

/**
 * Whether linearRows shares A's M rows by subgroupShuffle on this runtime: from 2 rows, where the
 * adapter's one fixed subgroup size is at least M (lavapipe: 8) and the plan has rowsShuffle. 1.2-1.7x at 2-8 rows of SmolLM2's head and gate/up, 4.4x on its down
 * projection at 8 rows (too big to stage); slower at 1 row, which loads nothing twice.
 */
export function linearRowsShuffle(rt: Runtime, M: number): boolean {
  return rt.plan.rowsShuffle && M >= 2 && fixedSubgroupSize(rt) >= M;
}

/** What linearRows folds in around the product. */
export interface LinearFusion {
  /** RMSNorm of the input first: gain (K), eps; `normed` (M,K) also receives the normed input. */
  norm?: { gain: View; eps: number; normed?: View };
  /** (M,N) added to the output: the residual stream. */
  residual?: View;
  /** SwiGLU: weight (2H,K) = gate rows then up rows, out (M,H) = silu(gate) * up. */
  glu?: boolean;
}

/**
 * linear-rows' STAGE and SLOTS: A (M,K) copied into workgroup memory from 3 rows up where it
 * fits, SLOTS the power of two of vec4s that holds it (few pipelines: not one per K).
 */
export function linearRowsStage(rt: Runtime, M: number, K: number): { STAGE: number; SLOTS: number } {
  const slots = 2 ** Math.ceil(Math.log2((M * K) / 4));
  return M >= 3 && slots * 16 <= rt.maxWorkgroupStorageBytes
    ? { STAGE: 1, SLOTS: slots }
    : { STAGE: 0, SLOTS: 1 };
}

/** Whether linearRows can run M rows with inner size K (vec4 rows, at most LINEAR_ROWS_MAX). */
export function linearRowsFits(M: number, K: number): boolean {
  return M >= 1 && M <= LINEAR_ROWS_MAX && K > 0 && K % 4 === 0;
}

/**
 * out (M,N) = f(inp) (M,K) · weightᵀ (weight (N,K)) (+ bias (N)) (+ residual): N counts the
 * weight's rows (2H under glu, where out is (M,H)). The weight may be a HalfView.
 */
export function linearRows(
  rt: Runtime,
  rec: Recorder,
  out: View,
  inp: View,
  weight: View,
  bias: View | null,
  M: number,
  K: number,
  N: number,
  fuse: LinearFusion = {},
) {
  if (!linearRowsFits(M, K))
    throw new Error(`linearRows: ${M} rows of ${K} (needs 1-${LINEAR_ROWS_MAX} rows, K a multiple of 4)`);
  if (fuse.glu && N % 2 !== 0)
    throw new Error(`linearRows: SwiGLU needs an even number of weight rows, got ${N}`);
  if (fuse.glu && fuse.residual) throw new Error("linearRows: SwiGLU and a residual do not combine");
  const { norm, residual, glu = false } = fuse;
  const u = rt.uniform(
    packUniform([
      ["u32", M],
      ["u32", N],
      ["u32", K],
      ["u32", bias ? 1 : 0],
      ["f32", norm?.eps ?? 0],
    ]),
  );
  const shuffle = linearRowsShuffle(rt, M);
  const pipe = rt.pipeline(linearSource(isHalf(weight), shuffle), "main", {
    WG: 64,
    ROWS: M,
    ...(shuffle ? { STAGE: 0, SLOTS: 1 } : linearRowsStage(rt, M, K)),
    NORM: norm ? 1 : 0,
    WRITE_NORMED: norm?.normed ? 1 : 0,
    RESID: residual ? 1 : 0,
    GLU: glu ? 1 : 0,
  });
  rt.dispatch(
    rec,
    pipe,
    [
      out,
      inp,
      weight,
      bias ?? rt.sink(0),
      u,
      norm?.gain ?? rt.sink(1),
      residual ?? rt.sink(2),
      norm?.normed ?? rt.sink(3),
    ],
    [Math.ceil(Math.ceil(N / 2) / 64)],
    {
      flops: 2 * M * N * K,
      bytes:
        4 * M * K * (norm?.normed ? 2 : 1) +
        (isHalf(weight) ? 2 : 4) * N * K +
        4 * M * (glu ? N / 2 : N) * (residual ? 2 : 1) +
        (bias ? 4 * N : 0) +
        (norm ? 4 * K : 0),
    },
  );
}

/**
 * A decode step's RoPE (q and k of qkv (B, Q + 2 KV), in place; none when ropeBase is null) and
 * the append of k and v to the caches (B,Tmax,KV) at slot[b] (rows with slot >= Tmax append
 * nothing), in one dispatch.
 */
export function ropeAppend(
  rt: Runtime,
  rec: Recorder,
  qkv: View,
  kcache: View,
  vcache: View,
  pos: View,
  slot: View,
  s: {
    B: number;
    Tmax: number;
    NH: number;
    KVH: number;
    headDim: number;
    ropeBase: number | null;
    /** Positions the RoPE table covers (the model's context). */
    positions: number;
  },
) {
  const { B, Tmax, NH, KVH, headDim: hs } = s;
  if (hs % 2 !== 0) throw new Error(`ropeAppend: head size ${hs} must be even`);
  const table = s.ropeBase === null ? null : ropeTable(rt, s.ropeBase, hs, s.positions);
  const u = rt.uniform(
    packUniform([
      ["u32", B],
      ["u32", NH],
      ["u32", KVH],
      ["u32", hs],
      ["u32", Tmax],
      ["u32", table?.positions ?? 0],
    ]),
  );
  const per = ((NH + KVH) * hs) / 2 + KVH * hs;
  rt.dispatch(
    rec,
    rt.pipeline(ropeSrc, "main", { WG: 64, ROPE: s.ropeBase === null ? 0 : 1 }),
    [qkv, kcache, vcache, pos, slot, table?.view ?? rt.dummy, u],
    [Math.ceil((B * per) / 64)],
    // q and k rotated in place, k and v appended (not the whole caches), a table row a row
    {
      flops: s.ropeBase === null ? 0 : 3 * B * (NH + KVH) * hs,
      bytes: 4 * B * (2 * (NH + KVH) * hs + 3 * KVH * hs + (s.ropeBase === null ? 0 : hs) + 2),
    },
  );
}

/** One target of a fused weight for loraRows: offsets (floats) of A (r,K) and B (rows,r) in W, its output columns. */
export interface LoraRowsTarget {
  a: number;
  b: number;
  start: number;
  rows: number;
}

/**
 * out (M, outStride) += scale * (x (M,K) · A_jᵀ) · B_jᵀ on each target j's columns, for up to 3
 * targets of one fused weight, in two dispatches (lora-rows.wgsl): U (M, n*r) is scratch.
 */
export function loraRows(
  rt: Runtime,
  rec: Recorder,
  out: View,
  x: View,
  W: View,
  U: View,
  s: { M: number; K: number; r: number; scale: number; outStride: number; targets: LoraRowsTarget[] },
) {
  const n = s.targets.length;
  if (n < 1 || n > 3) throw new Error(`loraRows: 1-3 targets, got ${n}`);
  const at = (f: (t: LoraRowsTarget) => number) => [0, 1, 2, 3].map((j) => (j < n ? f(s.targets[j]) : 0));
  const u = rt.uniform(
    packUniform([
      ["u32", s.M],
      ["u32", s.K],
      ["u32", s.r],
      ["u32", n],
      ["u32", s.outStride],
      ["f32", s.scale],
      ["u32", 0],
      ["u32", 0],
      ...at((t) => t.a).map((v): ["u32", number] => ["u32", v]),
      ...at((t) => t.b).map((v): ["u32", number] => ["u32", v]),
      ...at((t) => t.start).map((v): ["u32", number] => ["u32", v]),
      ...at((t) => t.rows).map((v): ["u32", number] => ["u32", v]),
    ]),
  );
  // each entry point's layout holds only the bindings it uses
  // counted at the adapter's A and B, not the whole fused weight W that is bound
  const cols = s.targets.reduce((a, t) => a + t.rows, 0);
  rt.dispatch(rec, rt.pipeline(loraSrc, "u", { WG: 64 }), [null, x, W, U, u], [Math.ceil((n * s.r) / 64)], {
    flops: 2 * s.M * s.K * s.r * n,
    bytes: 4 * (s.M * s.K + n * s.r * s.K + s.M * n * s.r),
  });
  rt.dispatch(
    rec,
    rt.pipeline(loraSrc, "add", { WG: 64 }),
    [out, null, W, U, u],
    [Math.ceil(s.outStride / 64)],
    { flops: 2 * s.M * s.r * cols + s.M * cols, bytes: 4 * (s.M * n * s.r + cols * s.r + 2 * s.M * cols) },
  );
}
