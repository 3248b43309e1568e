// Matmul variant 6: register tiling without workgroup memory or barriers. Each thread computes a
// TM x TN block reading A and B straight from storage (reuse comes from the cache). On CPU
// implementations of WebGPU (SwiftShader, lavapipe) barriers are coroutine switches and
// workgroup memory is ordinary memory, so this avoids both. Same bindings as ../matmul.wgsl.

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

override WG_X: u32 = 8;
override WG_Y: u32 = 8;
override TRANS_A: bool = false;
override TRANS_B: bool = false;
const TM = 8u;
const TN = 8u;

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
  let baseA = wid.z * p.strideA;
  let baseB = wid.z * p.strideB;
  let baseO = wid.z * p.strideOut;
  let m0 = (wid.y * WG_Y + lid.y) * TM;
  let n0 = (wid.x * WG_X + lid.x) * TN;
  var acc: array<array<f32, TN>, TM>;
  for (var i = 0u; i < TM; i++) { for (var j = 0u; j < TN; j++) { acc[i][j] = 0.0; } }
  var a: array<f32, TM>;
  var b: array<f32, TN>;
  for (var k = 0u; k < p.K; k++) {
    for (var i = 0u; i < TM; i++) { a[i] = loadA(baseA, m0 + i, k); }
    for (var j = 0u; j < TN; j++) { b[j] = loadB(baseB, k, n0 + j); }
    for (var i = 0u; i < TM; i++) {
      for (var j = 0u; j < TN; j++) { acc[i][j] = fma(a[i], b[j], acc[i][j]); }
    }
  }
  for (var i = 0u; i < TM; i++) {
    let m = m0 + i;
    if (m >= p.M) { continue; }
    for (var j = 0u; j < TN; j++) {
      let n = n0 + j;
      if (n >= p.N) { continue; }
      var v = p.alpha * acc[i][j];
      if (p.hasBias != 0u) { v += bias[n]; }
      let o = baseO + m * p.N + n;
      if (p.accumulate != 0u) { v += outp[o]; }
      outp[o] = v;
    }
  }
}
