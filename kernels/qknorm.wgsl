// Qwen3's q/k norm: RMSNorm over each head's hs values of q and k inside qkv rows
// (N, (NH+2KVH)*hs) = [q heads | k heads | v heads]; q heads scale by qw (hs), k heads by kw (hs),
// v heads pass through. Forward and the input gradient: one thread per (row, head) walking its hs
// values (forward, backward_input), or, where the device has subgroups, one workgroup per (row,
// head) reducing over hs with wgSum (forward_rows, backward_input_rows: coalesced loads, and on
// lavapipe one subgroup with no barrier); the weight gradients: partial sums over chunks of rows,
// then the chunks in order (deterministic, no atomics). wgSum comes from kernels/reduce.ts.
// Reference: reference.ts qkNormForwardRef / qkNormBackwardRef.

struct P { N: u32, NH: u32, KVH: u32, hs: u32, eps: f32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (N,(NH+2KVH)*hs) | dinp
@group(0) @binding(1) var<storage, read_write> rstd: array<f32>; // (N,NH+KVH)
@group(0) @binding(2) var<storage, read_write> inp: array<f32>;  // (N,(NH+2KVH)*hs)
@group(0) @binding(3) var<storage, read_write> qw: array<f32>;   // (hs)
@group(0) @binding(4) var<storage, read_write> kw: array<f32>;   // (hs)
@group(0) @binding(5) var<storage, read_write> dout: array<f32>; // (N,(NH+2KVH)*hs)
@group(0) @binding(6) var<uniform> p: P;

override WG: u32 = 64;

fn weight(h: u32, d: u32) -> f32 { return select(kw[d], qw[d], h < p.NH); }

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let heads = p.NH + 2u * p.KVH;
  let idx = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (idx >= p.N * heads) { return; }
  let h = idx % heads;
  let n = idx / heads;
  let x = idx * p.hs;
  if (h >= p.NH + p.KVH) {
    for (var d = 0u; d < p.hs; d++) { outp[x + d] = inp[x + d]; }
    return;
  }
  var ss = 0.0;
  for (var d = 0u; d < p.hs; d++) { ss = fma(inp[x + d], inp[x + d], ss); }
  let r = inverseSqrt(ss / f32(p.hs) + p.eps);
  for (var d = 0u; d < p.hs; d++) { outp[x + d] = inp[x + d] * r * weight(h, d); }
  rstd[n * (p.NH + p.KVH) + h] = r;
}

@compute @workgroup_size(WG)
fn backward_input(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let heads = p.NH + 2u * p.KVH;
  let idx = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (idx >= p.N * heads) { return; }
  let h = idx % heads;
  let n = idx / heads;
  let x = idx * p.hs;
  if (h >= p.NH + p.KVH) {
    for (var d = 0u; d < p.hs; d++) { outp[x + d] += dout[x + d]; }
    return;
  }
  let r = rstd[n * (p.NH + p.KVH) + h];
  var dot = 0.0;
  for (var d = 0u; d < p.hs; d++) { dot += weight(h, d) * dout[x + d] * inp[x + d] * r; }
  dot /= f32(p.hs);
  for (var d = 0u; d < p.hs; d++) {
    outp[x + d] += (weight(h, d) * dout[x + d] - inp[x + d] * r * dot) * r;
  }
}

// ---- one workgroup per (row, head): the same arithmetic with the sum over hs across the workgroup
@compute @workgroup_size(WG)
fn forward_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let heads = p.NH + 2u * p.KVH;
  let idx = wid.y * nwg.x + wid.x;
  if (idx >= p.N * heads) { return; }
  let h = idx % heads;
  let n = idx / heads;
  let x = idx * p.hs;
  if (h >= p.NH + p.KVH) {
    for (var d = lane.i; d < p.hs; d += WG) { outp[x + d] = inp[x + d]; }
    return;
  }
  var ss = 0.0;
  for (var d = lane.i; d < p.hs; d += WG) { ss = fma(inp[x + d], inp[x + d], ss); }
  let r = inverseSqrt(wgSum(ss, lane) / f32(p.hs) + p.eps);
  for (var d = lane.i; d < p.hs; d += WG) { outp[x + d] = inp[x + d] * r * weight(h, d); }
  if (lane.i == 0u) { rstd[n * (p.NH + p.KVH) + h] = r; }
}

@compute @workgroup_size(WG)
fn backward_input_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let heads = p.NH + 2u * p.KVH;
  let idx = wid.y * nwg.x + wid.x;
  if (idx >= p.N * heads) { return; }
  let h = idx % heads;
  let n = idx / heads;
  let x = idx * p.hs;
  if (h >= p.NH + p.KVH) {
    for (var d = lane.i; d < p.hs; d += WG) { outp[x + d] += dout[x + d]; }
    return;
  }
  let r = rstd[n * (p.NH + p.KVH) + h];
  var a = 0.0;
  for (var d = lane.i; d < p.hs; d += WG) { a += weight(h, d) * dout[x + d] * inp[x + d] * r; }
  let dot = wgSum(a, lane) / f32(p.hs);
  for (var d = lane.i; d < p.hs; d += WG) {
    outp[x + d] += (weight(h, d) * dout[x + d] - inp[x + d] * r * dot) * r;
  }
}

// The weight gradients in two deterministic stages (no atomics): each thread of stage one sums
// ROWS consecutive (row, head) pairs of one part (q or k) for one d into partial[chunk][part*hs+d];
// stage two sums the chunks in order into dqw (binding 3) / dkw (binding 4). A single pass of one
// thread per d would run N*NH iterations on only 2*hs threads (65536 at Qwen3's 16 heads x 4096 rows).
const ROWS = 256u;
@group(0) @binding(0) var<storage, read_write> partial: array<f32>; // (chunks, 2*hs)
@group(0) @binding(3) var<storage, read_write> dqw: array<f32>;
@group(0) @binding(4) var<storage, read_write> dkw: array<f32>;

@compute @workgroup_size(WG)
fn backward_weights_partial(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = (wid.y * nwg.x + wid.x) * WG + lid.x;
  let cols = 2u * p.hs;
  let chunks = (p.N * p.NH + ROWS - 1u) / ROWS;
  if (idx >= cols * chunks) { return; }
  let col = idx % cols;
  let chunk = idx / cols;
  let d = col % p.hs;
  let isK = col >= p.hs;
  let nh = select(p.NH, p.KVH, isK); // heads of this part
  let h0 = select(0u, p.NH, isK); // its first head in a row
  let heads = p.NH + 2u * p.KVH;
  let end = min((chunk + 1u) * ROWS, p.N * nh);
  var dw = 0.0;
  for (var r = chunk * ROWS; r < end; r++) {
    let n = r / nh;
    let h = h0 + r % nh;
    let x = (n * heads + h) * p.hs + d;
    dw += inp[x] * rstd[n * (p.NH + p.KVH) + h] * dout[x];
  }
  partial[idx] = dw;
}

@compute @workgroup_size(WG)
fn backward_weights_sum(@builtin(global_invocation_id) gid: vec3u) {
  let cols = 2u * p.hs;
  if (gid.x >= cols) { return; }
  let chunks = (p.N * p.NH + ROWS - 1u) / ROWS;
  var dw = 0.0;
  for (var c = 0u; c < chunks; c++) { dw += partial[c * cols + gid.x]; }
  if (gid.x >= p.hs) { dkw[gid.x - p.hs] += dw; } else { dqw[gid.x] += dw; }
}
