// Matmul variant 7: variant 5 (matmul.wgsl) with vec4 global loads, for A·B with no
// transposition, K and N multiples of 4 and batch strides multiples of 4 (A and B bound as
// array<vec4f>): one 16-byte load per 4 elements instead of 4 bounds-checked scalar loads.

struct Params {
  M: u32, N: u32, K: u32, hasBias: u32,
  strideA: u32, strideB: u32, strideOut: u32, accumulate: u32,
  alpha: f32, transA: u32, transB: u32,
}

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read_write> A4: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B4: array<vec4f>;
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

// (m, k..k+3) of A (M,K); rows past M read as 0, and K % 4 == 0 so a vec4 never straddles K
fn loadA4(base: u32, m: u32, k: u32) -> vec4f {
  if (m >= p.M || k >= p.K) { return vec4f(0.0); }
  return A4[(base + m * p.K + k) / 4u];
}

// (k, n..n+3) of B (K,N), N % 4 == 0
fn loadB4(base: u32, k: u32, n: u32) -> vec4f {
  if (k >= p.K || n >= p.N) { return vec4f(0.0); }
  return B4[(base + k * p.N + n) / 4u];
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
      let k4 = e % BK4;
      let m = e / BK4;
      As[m * BK4 + k4] = loadA4(baseA, tileM + m, k0 + 4u * k4);
    }
    for (var e = tid; e < BK * BN4; e += nthreads) {
      let n4 = e % BN4;
      let k = e / BN4;
      Bs[k * BN4 + n4] = loadB4(baseB, k0 + k, tileN + 4u * n4);
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
