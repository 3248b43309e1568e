// Lora-rows: a LoRA adapter's term on one fused weight (its q/k/v or gate/up targets, up to 3)
// for decode rows, in two dispatches whatever its targets (model/gpu-lora.ts's loraForward
// records three per target: U = x·Aᵀ, delta = U·Bᵀ, out += scale·delta).
//  - u:   U (M, n*r): thread t = j*r + i computes x (M,K) · row i of target j's A (r,K), per row;
//  - add: out (M, outStride) += scale * U_j (M,r) · B_j (rows_j, r)ᵀ on target j's columns
//         [start_j, start_j + rows_j), one thread per column of out (columns of no target: none).
// A and B live in the adapter buffer `W` at float offsets a_j, b_j. Reference: the LoRA term of
// cpu-passes.ts (matmulRef twice, columnsAddRef); tested by kernels/decode.gpu.test.ts.

struct P {
  M: u32, K: u32, r: u32, n: u32,
  outStride: u32, scale: f32, _p0: u32, _p1: u32,
  a: vec4u, b: vec4u, start: vec4u, rows: vec4u,
}

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (M, outStride)
@group(0) @binding(1) var<storage, read_write> x: array<f32>;    // (M,K)
@group(0) @binding(2) var<storage, read_write> W: array<f32>;    // the adapter's A and B matrices
@group(0) @binding(3) var<storage, read_write> U: array<f32>;    // (M, n*r)
@group(0) @binding(4) var<uniform> p: P;

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn u(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t = (wid.y * nwg.x + wid.x) * WG + lid.x;
  let w = p.n * p.r;
  if (t >= w) { return; }
  let j = t / p.r;
  let row = p.a[j] + (t % p.r) * p.K;
  for (var m = 0u; m < p.M; m++) {
    var s = 0.0;
    for (var k = 0u; k < p.K; k++) { s += x[m * p.K + k] * W[row + k]; }
    U[m * w + t] = s;
  }
}

@compute @workgroup_size(WG)
fn add(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let c = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (c >= p.outStride) { return; }
  var j = 4u;
  for (var q = 0u; q < p.n; q++) {
    if (c >= p.start[q] && c < p.start[q] + p.rows[q]) { j = q; }
  }
  if (j == 4u) { return; }
  let w = p.n * p.r;
  let brow = p.b[j] + (c - p.start[j]) * p.r;
  for (var m = 0u; m < p.M; m++) {
    var s = 0.0;
    for (var i = 0u; i < p.r; i++) { s += U[m * w + j * p.r + i] * W[brow + i]; }
    outp[m * p.outStride + c] += p.scale * s;
  }
}
