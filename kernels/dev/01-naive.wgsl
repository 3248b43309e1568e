// Matmul variant 1: naive. One thread per output element, a dot product straight from global
// memory. out (M,N) = A (M,K) · B (K,N). Uniform layout shared with ../matmul.wgsl.
struct Params {
  M: u32, N: u32, K: u32, hasBias: u32,
  strideA: u32, strideB: u32, strideOut: u32, accumulate: u32,
  alpha: f32,
}

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read_write> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> B: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let m = gid.y;
  if (m >= p.M || n >= p.N) { return; }
  var acc = 0.0;
  for (var k = 0u; k < p.K; k++) { acc = fma(A[m * p.K + k], B[k * p.N + n], acc); }
  outp[m * p.N + n] = p.alpha * acc;
}
