// The matmul for CPU adapters that run a subgroup as the lanes of one SIMD register (lavapipe):
// the lanes of a subgroup share A through subgroupBroadcast instead of each loading it.
//
// Why: on lavapipe a load costs about a dozen FMAs, a vec4 about as much as a scalar, and one
// whose address is the same in every lane no less than one that differs (kernels/dev/
// probe-costs.ts), so what a kernel there can do is FMAs per float loaded. matmul.wgsl gets about
// 3.6 (its slabs in workgroup memory are loaded too, with barriers), a thread reading its own
// R x C block from storage 2RC/(R+C); every variant of either reached about 1.2-1.6 GFMA/s.
// Here a subgroup of SG lanes computes SG rows of out: lane i loads four K-values of row i of A in
// one vec4 and four columns of B in four, and gets the other rows' values from their lanes by
// subgroupBroadcast (a register shuffle): 4 x SG x 4 FMAs per 5 vec4s, 6.4 FMAs per float at SG 8,
// 4.3 GFMA/s at SmolLM2's 1024 x 576 x 1,536 (kernels/dev/matmul-subgroup.ts).
//
// Each out element is summed as in matmul.wgsl (fma over k from 0 upward, then alpha, bias and
// the accumulated out in that order), so the products are bit-identical to it. Needs K, the
// contiguous dimension of each operand and the batch strides to be multiples of 4; matmul.ts
// checks (subgroupMatmulFits) and runs matmul.wgsl otherwise. B may be f16 (a LoRA model's frozen
// base with model.dtype f16): then it is read as vec4<f16> and widened to f32 at the load, exact,
// so the sums are those of matmul.wgsl's f16 variant.

import type { MatmulShape } from "./reference";
import type { Runtime, View } from "./runtime";

/** Columns of out a lane computes: one vec4 of B per K-row when B is stored (K,N). */
const C = 4;

export interface SubgroupMatmulForm {
  transA: boolean;
  transB: boolean;
  /** the adapter's subgroup size, fixed (min = max), a multiple of 4 */
  SG: number;
  /** lanes a workgroup, a multiple of SG: it computes SG rows x 4 WG columns */
  WG: number;
  /** B stored as f16 (needs shader-f16) */
  halfB?: boolean;
}

/**
 * The kernel for one form, with named variables (no arrays, so nothing lands in memory).
 * op(A) (M,K) is A stored (M,K), or (K,M) when transA; op(B) (K,N) is B stored (K,N), or (N,K)
 * when transB. transA with transB is not a form the engine runs and is not generated.
 */
export function subgroupMatmulSource(f: SubgroupMatmulForm): string {
  const { transA, transB, SG, WG } = f;
  const half = !!f.halfB;
  // a B load: a vec4 of B, widened from f16 where B is half
  const loadB = (index: string) => (half ? `vec4f(B[${index}])` : `B[${index}]`);
  if (transA && transB) throw new Error("subgroupMatmulSource: no form for transA with transB");
  if (SG % 4 !== 0 || WG % SG !== 0) throw new Error(`subgroupMatmulSource: SG ${SG}, WG ${WG}`);
  const L: string[] = [];
  L.push(`// Subgroup-matmul (kernels/matmul-subgroup.ts): transA ${transA}, transB ${transB}, SG ${SG}${half ? ", B f16" : ""}
${half ? "enable f16;\n" : ""}enable subgroups;
struct Params {
  M: u32, N: u32, K: u32, hasBias: u32,
  strideA: u32, strideB: u32, strideOut: u32, accumulate: u32,
  alpha: f32, transA: u32, transB: u32,
}
@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<${half ? "vec4<f16>" : "vec4f"}>;
@group(0) @binding(3) var<storage, read_write> bias: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) sid: u32) {
  let M = p.M;
  let N = p.N;
  let K4 = p.K / 4u;
  let baseA = wid.z * p.strideA / 4u;
  let baseB = wid.z * p.strideB / 4u;
  let row0 = wid.y * ${SG}u;
  let col0 = wid.x * ${WG * C}u + li * ${C}u;`);
  // what this lane loads each step of four k (every index clamped in bounds: no branch)
  if (transA) {
    // A (K,M): lane sid loads rows row0 + 4 (sid / 4) .. + 3 at k = 4 k4 + sid % 4
    L.push(`  let M4 = M / 4u;`);
    L.push(`  let ra = baseA + (sid % 4u) * M4 + min(row0 / 4u + sid / 4u, M4 - 1u);`);
  } else {
    // A (M,K): lane sid loads row row0 + sid at k = 4 k4 .. + 3
    L.push(`  let ra = baseA + min(row0 + sid, M - 1u) * K4;`);
  }
  if (transB) {
    for (let c = 0; c < C; c++) L.push(`  let rb${c} = baseB + min(col0 + ${c}u, N - 1u) * K4;`);
  } else {
    L.push(`  let N4 = N / 4u;`);
    L.push(`  let rb = baseB + min(col0 / 4u, N4 - 1u);`);
  }
  for (let r = 0; r < SG; r++) for (let c = 0; c < C; c++) L.push(`  var c${r}_${c} = 0.0;`);
  L.push(`  for (var k4 = 0u; k4 < K4; k4++) {`);
  L.push(transA ? `    let a = A[ra + k4 * 4u * M4];` : `    let a = A[ra + k4];`);
  if (transB) for (let c = 0; c < C; c++) L.push(`    let b${c} = ${loadB(`rb${c} + k4`)};`);
  else for (let kk = 0; kk < 4; kk++) L.push(`    let b${kk} = ${loadB(`rb + (k4 * 4u + ${kk}u) * N4`)};`);
  // op(B)[k4*4+kk, col0+c]
  const bval = (kk: number, c: number) => (transB ? `b${c}[${kk}]` : `b${kk}[${c}]`);
  if (transA) {
    // lane j holds op(A) rows row0 + 4 (j / 4) .. + 3 at k4*4 + j % 4; a row's values come from
    // its group's four lanes in lane order, so each sum still takes k in ascending order
    for (let j = 0; j < SG; j++) {
      const kk = j % 4;
      L.push(`    let a${j} = subgroupBroadcast(a, ${j}u);`);
      for (let q = 0; q < 4; q++) {
        const r = 4 * (j >> 2) + q;
        for (let c = 0; c < C; c++) L.push(`    c${r}_${c} = fma(a${j}[${q}], ${bval(kk, c)}, c${r}_${c});`);
      }
    }
  } else {
    for (let r = 0; r < SG; r++) {
      L.push(`    let a${r} = subgroupBroadcast(a, ${r}u);`);
      for (let kk = 0; kk < 4; kk++)
        for (let c = 0; c < C; c++) L.push(`    c${r}_${c} = fma(a${r}[${kk}], ${bval(kk, c)}, c${r}_${c});`);
    }
  }
  L.push(`  }`);
  L.push(`  let baseO = wid.z * p.strideOut;`);
  for (let r = 0; r < SG; r++) {
    L.push(`  if (row0 + ${r}u < M) {`);
    for (let c = 0; c < C; c++) {
      L.push(`    if (col0 + ${c}u < N) {`);
      L.push(`      let o = baseO + (row0 + ${r}u) * N + col0 + ${c}u;`);
      L.push(`      var v = p.alpha * c${r}_${c};`);
      L.push(`      if (p.hasBias != 0u) { v += bias[col0 + ${c}u]; }`);
      L.push(`      if (p.accumulate != 0u) { v += outp[o]; }`);
      L.push(`      outp[o] = v;`);
      L.push(`    }`);
    }
    L.push(`  }`);
  }
  L.push(`}`);
  return L.join("\n");
}

/**
 * The adapter's one fixed subgroup size where it has one, a multiple of 4 from 4 to 64, and the
 * device the `subgroups` feature; else 0 (the subgroup kernels cannot run there).
 */
export function fixedSubgroupSize(rt: Runtime): number {
  const [lo, hi] = rt.subgroupSizes;
  const ok = rt.device.features.has("subgroups") && lo === hi && lo % 4 === 0;
  return ok && lo >= 4 && lo <= 64 ? lo : 0;
}

/** The subgroup size this kernel runs at on rt, or 0 where the plan does not run it (plan.subgroupMatmul). */
export function subgroupMatmulSize(rt: Runtime): number {
  return rt.plan.subgroupMatmul ? fixedSubgroupSize(rt) : 0;
}

/** Whether this product can run as the subgroup kernel (see the file's head). */
export function subgroupMatmulFits(s: MatmulShape, a: View, b: View): boolean {
  const four = (x: number | undefined) => (x ?? 0) % 4 === 0;
  return (
    !(s.transA && s.transB) &&
    s.M > 0 &&
    s.N > 0 &&
    s.K > 0 &&
    s.K % 4 === 0 &&
    (!s.transA || s.M % 4 === 0) &&
    (s.transB || s.N % 4 === 0) &&
    ((s.batch ?? 1) === 1 || (four(s.strideA) && four(s.strideB))) &&
    a.offset % 16 === 0 &&
    b.offset % 16 === 0
  );
}

/** Lanes a workgroup for N columns: the power of two that covers N / 4, from SG to 64. */
export function subgroupMatmulLanes(N: number, SG: number): number {
  return Math.max(SG, Math.min(64, 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(N / C))))));
}

/** Columns of out one lane computes (the dispatch's x is ceil(N / (lanes x this))). */
export const SUBGROUP_MATMUL_COLS = C;
