// Matmul variant 2: shared-memory tiling. A TILE x TILE workgroup stages TILE-wide slabs of A and
// B in workgroup memory; each thread still computes one output. out (M,N) = A (M,K) · B (K,N).
struct Params {
  M: u32, N: u32, K: u32, hasBias: u32,
  strideA: u32, strideB: u32, strideOut: u32, accumulate: u32,
  alpha: f32,
}

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read_write> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> B: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG_X: u32 = 16; // = TILE; WG_Y must equal it
override WG_Y: u32 = 16;
var<workgroup> As: array<f32, WG_X * WG_X>;
var<workgroup> Bs: array<f32, WG_X * WG_X>;

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let T = WG_X;
  let n = gid.x;
  let m = gid.y;
  var acc = 0.0;
  for (var k0 = 0u; k0 < p.K; k0 += T) {
    let ka = k0 + lid.x;
    let kb = k0 + lid.y;
    As[lid.y * T + lid.x] = select(0.0, A[m * p.K + ka], m < p.M && ka < p.K);
    Bs[lid.y * T + lid.x] = select(0.0, B[kb * p.N + n], kb < p.K && n < p.N);
    workgroupBarrier();
    for (var k = 0u; k < T; k++) { acc = fma(As[lid.y * T + k], Bs[k * T + lid.x], acc); }
    workgroupBarrier();
  }
  if (m < p.M && n < p.N) { outp[m * p.N + n] = p.alpha * acc; }
}
