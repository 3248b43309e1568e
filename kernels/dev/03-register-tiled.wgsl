// Matmul variant 3 (the first production kernel): scalar register tiling.
// out[b] = alpha * op(A[b]) * op(B[b]) (+ out[b] if ACCUM) (+ bias).
// op(A) is (M,K): A stored (M,K), or (K,M) when TRANS_A. op(B) is (K,N): B stored (K,N), or (N,K) when
// TRANS_B. Each workgroup computes a (WG_Y*TM) x (WG_X*TN) tile of out; each thread a TM x TN block
// held in registers; K is walked in BK-wide slabs staged through workgroup memory. Edges are
// bounds-checked, so any M, N, K work. TM, TN, BK are rewritten by matmul-variants.ts.

struct Params {
  M: u32, N: u32, K: u32, hasBias: u32,
  strideA: u32, strideB: u32, strideOut: u32, accumulate: u32,
  alpha: f32,
}

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read_write> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> bias: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;
override TRANS_A: bool = false;
override TRANS_B: bool = false;
const TM = 4u;
const TN = 4u;
const BK = 16u;
override BM: u32 = WG_Y * TM;
override BN: u32 = WG_X * TN;

var<workgroup> As: array<f32, BK * BM>; // [k][m]
var<workgroup> Bs: array<f32, BK * BN>; // [k][n]

fn loadA(base: u32, m: u32, k: u32) -> f32 {
  if (m >= p.M || k >= p.K) { return 0.0; }
  if (TRANS_A) { return A[base + k * p.M + m]; }
  return A[base + m * p.K + k];
}

fn loadB(base: u32, k: u32, n: u32) -> f32 {
  if (k >= p.K || n >= p.N) { return 0.0; }
  if (TRANS_B) { return B[base + n * p.K + k]; }
  return B[base + k * p.N + n];
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let batch = wid.z;
  let baseA = batch * p.strideA;
  let baseB = batch * p.strideB;
  let baseO = batch * p.strideOut;
  let tileM = wid.y * BM;
  let tileN = wid.x * BN;
  let tid = lid.y * WG_X + lid.x;
  let nthreads = WG_X * WG_Y;

  var acc: array<array<f32, TN>, TM>;
  for (var i = 0u; i < TM; i++) { for (var j = 0u; j < TN; j++) { acc[i][j] = 0.0; } }
  var a: array<f32, TM>;
  var b: array<f32, TN>;

  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // Consecutive threads walk the contiguous axis of each operand so global loads coalesce.
    for (var e = tid; e < BK * BM; e += nthreads) {
      var m: u32; var k: u32;
      if (TRANS_A) { m = e % BM; k = e / BM; } else { k = e % BK; m = e / BK; }
      As[k * BM + m] = loadA(baseA, tileM + m, k0 + k);
    }
    for (var e = tid; e < BK * BN; e += nthreads) {
      var n: u32; var k: u32;
      if (TRANS_B) { k = e % BK; n = e / BK; } else { n = e % BN; k = e / BN; }
      Bs[k * BN + n] = loadB(baseB, k0 + k, tileN + n);
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      for (var i = 0u; i < TM; i++) { a[i] = As[k * BM + lid.y * TM + i]; }
      for (var j = 0u; j < TN; j++) { b[j] = Bs[k * BN + lid.x * TN + j]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { acc[i][j] = fma(a[i], b[j], acc[i][j]); }
      }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < TM; i++) {
    let m = tileM + lid.y * TM + i;
    if (m >= p.M) { continue; }
    for (var j = 0u; j < TN; j++) {
      let n = tileN + lid.x * TN + j;
      if (n >= p.N) { continue; }
      var v = p.alpha * acc[i][j];
      if (p.hasBias != 0u) { v += bias[n]; }
      let o = baseO + m * p.N + n;
      if (p.accumulate != 0u) { v += outp[o]; }
      outp[o] = v;
    }
  }
}
