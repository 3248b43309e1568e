// Register-tiled batched matmul: out[b] = alpha * op(A[b]) * op(B[b]) (+ out[b] if ACCUM) (+ bias).
// op(A) is (M,K): A stored (M,K), or (K,M) when transA. op(B) is (K,N): B stored (K,N), or (N,K) when
// transB. The transpositions are uniforms, not overrides: one pipeline (one slow software-driver
// compile) serves all four forms, and the branch is uniform. A workgroup computes a (WG_Y*TM) x (WG_X*4*TN4) tile of out (64x64); each thread a
// TM x 4*TN4 block (8x8) held in vec4 registers. K is walked in BK-deep slabs staged in workgroup
// memory as vec4 (A as [m][k/4], B as [k][n/4]), so the inner loop does 16 vec4 loads per 64 vec4
// FMAs. Global loads are scalar and bounds-checked: any M, N, K, transposition and view offset
// work. The winner of kernels/dev on lavapipe (variant 05) and the kernel for every adapter but
// SwiftShader. On SwiftShader matmul.ts runs matmul-gen.ts's unrolled kernels instead: there each
// access to acc/a/b here, indexed by a loop counter, is a per-lane gather or scatter in memory
// (see kernels/dev/matmul-variants.ts).
// The f16 variant (matmul.ts halfSource: `enable f16;` and B as array<f16>) reads a frozen weight
// stored in half precision; every load widens to f32, so tiles, FMAs and accumulators stay f32.

struct Params {
  M: u32, N: u32, K: u32, hasBias: u32,
  strideA: u32, strideB: u32, strideOut: u32, accumulate: u32,
  alpha: f32, transA: u32, transB: u32,
}

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read_write> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> B: array<f32>; // array<f16> in the f16 variant (matmul.ts)
@group(0) @binding(3) var<storage, read_write> bias: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG_X: u32 = 8;
override WG_Y: u32 = 8;
const TM = 8u;
const TN4 = 2u;
const BK = 16u;
const BK4 = BK / 4u;
override BM: u32 = WG_Y * TM;
override BN4: u32 = WG_X * TN4;

var<workgroup> As: array<vec4f, BM * BK4>; // [m][k/4]
var<workgroup> Bs: array<vec4f, BK * BN4>; // [k][n/4]

fn loadA(base: u32, m: u32, k: u32) -> f32 {
  if (m >= p.M || k >= p.K) { return 0.0; }
  if (p.transA != 0u) { return A[base + k * p.M + m]; }
  return A[base + m * p.K + k];
}

fn loadB(base: u32, k: u32, n: u32) -> f32 {
  if (k >= p.K || n >= p.N) { return 0.0; }
  if (p.transB != 0u) { return f32(B[base + n * p.K + k]); }
  return f32(B[base + k * p.N + n]);
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let baseA = wid.z * p.strideA;
  let baseB = wid.z * p.strideB;
  let baseO = wid.z * p.strideOut;
  let tileM = wid.y * BM;
  let tileN = wid.x * BN4 * 4u;
  let tid = lid.y * WG_X + lid.x;
  let nthreads = WG_X * WG_Y;

  var acc: array<array<vec4f, TN4>, TM>;
  for (var i = 0u; i < TM; i++) { for (var j = 0u; j < TN4; j++) { acc[i][j] = vec4f(0.0); } }
  var a: array<vec4f, TM>;
  var b: array<vec4f, TN4>;

  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    for (var e = tid; e < BM * BK4; e += nthreads) {
      var m: u32; var k4: u32;
      if (p.transA != 0u) { m = e % BM; k4 = e / BM; } else { k4 = e % BK4; m = e / BK4; }
      let gm = tileM + m;
      let gk = k0 + 4u * k4;
      As[m * BK4 + k4] = vec4f(loadA(baseA, gm, gk), loadA(baseA, gm, gk + 1u), loadA(baseA, gm, gk + 2u), loadA(baseA, gm, gk + 3u));
    }
    for (var e = tid; e < BK * BN4; e += nthreads) {
      var k: u32; var n4: u32;
      if (p.transB != 0u) { k = e % BK; n4 = e / BK; } else { n4 = e % BN4; k = e / BN4; }
      let gk = k0 + k;
      let gn = tileN + 4u * n4;
      Bs[k * BN4 + n4] = vec4f(loadB(baseB, gk, gn), loadB(baseB, gk, gn + 1u), loadB(baseB, gk, gn + 2u), loadB(baseB, gk, gn + 3u));
    }
    workgroupBarrier();
    for (var k4 = 0u; k4 < BK4; k4++) {
      for (var i = 0u; i < TM; i++) { a[i] = As[(lid.y * TM + i) * BK4 + k4]; }
      for (var kk = 0u; kk < 4u; kk++) {
        for (var j = 0u; j < TN4; j++) { b[j] = Bs[(k4 * 4u + kk) * BN4 + lid.x * TN4 + j]; }
        for (var i = 0u; i < TM; i++) {
          let ai = vec4f(a[i][kk]);
          for (var j = 0u; j < TN4; j++) { acc[i][j] = fma(ai, b[j], acc[i][j]); }
        }
      }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < TM; i++) {
    let m = tileM + lid.y * TM + i;
    if (m >= p.M) { continue; }
    for (var j = 0u; j < TN4; j++) {
      for (var c = 0u; c < 4u; c++) {
        let n = tileN + (lid.x * TN4 + j) * 4u + c;
        if (n >= p.N) { continue; }
        var v = p.alpha * acc[i][j][c];
        if (p.hasBias != 0u) { v += bias[n]; }
        let o = baseO + m * p.N + n;
        if (p.accumulate != 0u) { v += outp[o]; }
        outp[o] = v;
      }
    }
  }
}

// dbias[n] += sum over rows m of dout[m, n]: one thread per column, rows in order (deterministic).
struct BiasParams { M: u32, N: u32 }
@group(0) @binding(0) var<storage, read_write> dbias: array<f32>;
@group(0) @binding(1) var<storage, read_write> dout: array<f32>;
@group(0) @binding(2) var<uniform> bp: BiasParams;

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn bias_backward(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  if (n >= bp.N) { return; }
  var s = 0.0;
  for (var m = 0u; m < bp.M; m++) { s += dout[m * bp.N + n]; }
  dbias[n] += s;
}
