// Small-M linear layer: out (M,N) = A (M,K) · Bᵀ (B stored (N,K)) (+ bias (N)) for M <= 8 rows,
// the decode shapes (one row per sequence). One thread per output column n walks K in order,
// keeping the sums of rows 0-3 in one vec4 and rows 4-7 in another (only when M > 4: the
// override WIDE), so nothing is indexed by a loop counter (SwiftShader turns that into per-lane
// memory gathers); rows past M read row M-1 and are dropped. Each weight is read once and there
// are no barriers (on lavapipe a workgroup-per-column reduction spent ~40 µs a workgroup on
// them); the tiled matmul would compute a 64-row tile to use 1..8 of its rows. Deterministic.
// Reference: matmulRef (transB). Used by matmul.ts.

struct P { M: u32, N: u32, K: u32, hasBias: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (M,N)
@group(0) @binding(1) var<storage, read_write> A: array<f32>;    // (M,K)
@group(0) @binding(2) var<storage, read_write> B: array<f32>;    // (N,K); array<f16> in the f16 variant
@group(0) @binding(3) var<storage, read_write> bias: array<f32>; // (N)
@group(0) @binding(4) var<uniform> p: P;

override WG: u32 = 64;
override WIDE: bool = false; // M > 4

fn rowOf(m: u32) -> u32 { return min(m, p.M - 1u) * p.K; }

fn store(m: u32, n: u32, x: f32) {
  if (m < p.M) { outp[m * p.N + n] = x; }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (n >= p.N) { return; }
  let r = vec4u(rowOf(0u), rowOf(1u), rowOf(2u), rowOf(3u));
  let s = vec4u(rowOf(4u), rowOf(5u), rowOf(6u), rowOf(7u));
  var lo = vec4f(0.0);
  var hi = vec4f(0.0);
  let row = n * p.K;
  for (var k = 0u; k < p.K; k++) {
    let w = f32(B[row + k]);
    lo += vec4f(A[r.x + k], A[r.y + k], A[r.z + k], A[r.w + k]) * w;
    if (WIDE) { hi += vec4f(A[s.x + k], A[s.y + k], A[s.z + k], A[s.w + k]) * w; }
  }
  var b = 0.0;
  if (p.hasBias != 0u) { b = bias[n]; }
  lo += vec4f(b);
  hi += vec4f(b);
  store(0u, n, lo.x);
  store(1u, n, lo.y);
  store(2u, n, lo.z);
  store(3u, n, lo.w);
  if (WIDE) {
    store(4u, n, hi.x);
    store(5u, n, hi.y);
    store(6u, n, hi.z);
    store(7u, n, hi.w);
  }
}
