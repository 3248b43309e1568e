// Small-M linear layer: out (M,N) = A (M,K) · Bᵀ (B stored (N,K)) (+ bias (N)) for M <= MAXM rows,
// the decode shapes (one row per sequence). One workgroup per output column n: its WG threads
// stride over K, each keeping the M partial sums, then one tree reduction per row. Each weight is
// read once; the tiled matmul.wgsl would compute a 64-row tile to use 1..8 of its rows.
// Deterministic (fixed reduction order). Reference: matmulRef (transB). Used by matmul.ts.

struct P { M: u32, N: u32, K: u32, hasBias: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (M,N)
@group(0) @binding(1) var<storage, read_write> A: array<f32>;    // (M,K)
@group(0) @binding(2) var<storage, read_write> B: array<f32>;    // (N,K)
@group(0) @binding(3) var<storage, read_write> bias: array<f32>; // (N)
@group(0) @binding(4) var<uniform> p: P;

override WG: u32 = 64;
const MAXM = 8u;
var<workgroup> red: array<f32, 512>; // (MAXM, WG) with WG <= 64

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let n = wid.y * nwg.x + wid.x;
  if (n >= p.N) { return; } // uniform per workgroup
  let lid = lid3.x;
  var acc: array<f32, MAXM>;
  for (var k = lid; k < p.K; k += WG) {
    let w = B[n * p.K + k];
    for (var m = 0u; m < MAXM; m++) {
      if (m < p.M) { acc[m] += A[m * p.K + k] * w; }
    }
  }
  for (var m = 0u; m < MAXM; m++) { red[m * WG + lid] = acc[m]; }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var m = 0u; m < MAXM; m++) { red[m * WG + lid] += red[m * WG + lid + s]; }
    }
    workgroupBarrier();
  }
  if (lid < p.M) {
    var x = red[lid * WG];
    if (p.hasBias != 0u) { x += bias[n]; }
    outp[lid * p.N + n] = x;
  }
}
