// Small-M linear layer: out (M,N) = A (M,K) · Bᵀ (B stored (N,K)) (+ bias (N)) for M <= MAXM rows,
// the decode shapes (one row per sequence). One thread per output column n walks K in order,
// keeping the M sums: each weight is read once, and there are no barriers (on lavapipe a
// workgroup-per-column reduction spent ~40 µs a workgroup on them); the tiled matmul.wgsl would
// compute a 64-row tile to use 1..8 of its rows. Deterministic. Reference: matmulRef (transB).
// Used by matmul.ts.

struct P { M: u32, N: u32, K: u32, hasBias: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (M,N)
@group(0) @binding(1) var<storage, read_write> A: array<f32>;    // (M,K)
@group(0) @binding(2) var<storage, read_write> B: array<f32>;    // (N,K)
@group(0) @binding(3) var<storage, read_write> bias: array<f32>; // (N)
@group(0) @binding(4) var<uniform> p: P;

override WG: u32 = 64;
const MAXM = 8u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (n >= p.N) { return; }
  var acc: array<f32, MAXM>;
  let row = n * p.K;
  for (var k = 0u; k < p.K; k++) {
    let w = B[row + k];
    for (var m = 0u; m < MAXM; m++) {
      if (m < p.M) { acc[m] += A[m * p.K + k] * w; }
    }
  }
  for (var m = 0u; m < MAXM; m++) {
    if (m < p.M) {
      var x = acc[m];
      if (p.hasBias != 0u) { x += bias[n]; }
      outp[m * p.N + n] = x;
    }
  }
}
