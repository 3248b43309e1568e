// LayerNorm and RMSNorm over the last axis of (N,C). Forward and the input gradient: one workgroup
// per row, reduced with wgSum/wgSum2 (kernels/reduce.ts prepends the subgroup or the workgroup-tree
// version). Weight/bias gradients: one thread per channel summing rows in order, so every
// reduction is deterministic without atomics. Forward keeps mean and rstd for backward.
// Reference: reference.ts (layernorm*, rmsnorm*).

struct P { N: u32, C: u32, eps: f32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;   // (N,C)  | dinp
@group(0) @binding(1) var<storage, read_write> mean: array<f32>;   // (N)
@group(0) @binding(2) var<storage, read_write> rstd: array<f32>;   // (N)
@group(0) @binding(3) var<storage, read_write> inp: array<f32>;    // (N,C)
@group(0) @binding(4) var<storage, read_write> weight: array<f32>; // (C)
@group(0) @binding(5) var<storage, read_write> bias: array<f32>;   // (C)
@group(0) @binding(6) var<storage, read_write> dout: array<f32>;   // (N,C)
@group(0) @binding(7) var<uniform> p: P;

override WG: u32 = 64;

fn row_of(wid: vec3u, nwg: vec3u) -> u32 { return wid.y * nwg.x + wid.x; }

@compute @workgroup_size(WG)
fn layernorm_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let n = row_of(wid, nwg);
  if (n >= p.N) { return; }
  let lid = lane.i;
  let x = n * p.C;
  var s = 0.0;
  for (var c = lid; c < p.C; c += WG) { s += inp[x + c]; }
  let m = wgSum(s, lane) / f32(p.C);
  // two passes (not E[x^2]-m^2): no cancellation when |mean| >> std
  var v = 0.0;
  for (var c = lid; c < p.C; c += WG) { let d = inp[x + c] - m; v += d * d; }
  let r = inverseSqrt(wgSum(v, lane) / f32(p.C) + p.eps);
  for (var c = lid; c < p.C; c += WG) { outp[x + c] = (inp[x + c] - m) * r * weight[c] + bias[c]; }
  if (lid == 0u) { mean[n] = m; rstd[n] = r; }
}

@compute @workgroup_size(WG)
fn layernorm_backward_input(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let n = row_of(wid, nwg);
  if (n >= p.N) { return; }
  let lid = lane.i;
  let x = n * p.C;
  let m = mean[n];
  let r = rstd[n];
  var a = 0.0;
  var b = 0.0;
  for (var c = lid; c < p.C; c += WG) {
    let dnorm = weight[c] * dout[x + c];
    a += dnorm;
    b += dnorm * (inp[x + c] - m) * r;
  }
  let s = wgSum2(vec2f(a, b), lane) / f32(p.C);
  for (var c = lid; c < p.C; c += WG) {
    let norm = (inp[x + c] - m) * r;
    outp[x + c] += (weight[c] * dout[x + c] - s.x - norm * s.y) * r;
  }
}

// dweight (binding 0) += sum_n norm * dout, dbias (binding 5) += sum_n dout; thread per channel
@group(0) @binding(0) var<storage, read_write> dweight: array<f32>;
@group(0) @binding(5) var<storage, read_write> dbias: array<f32>;

@compute @workgroup_size(WG)
fn layernorm_backward_params(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  if (c >= p.C) { return; }
  var dw = 0.0;
  var db = 0.0;
  for (var n = 0u; n < p.N; n++) {
    let d = dout[n * p.C + c];
    dw += (inp[n * p.C + c] - mean[n]) * rstd[n] * d;
    db += d;
  }
  dweight[c] += dw;
  dbias[c] += db;
}

@compute @workgroup_size(WG)
fn rmsnorm_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let n = row_of(wid, nwg);
  if (n >= p.N) { return; }
  let lid = lane.i;
  let x = n * p.C;
  var s = 0.0;
  for (var c = lid; c < p.C; c += WG) { s += inp[x + c] * inp[x + c]; }
  let r = inverseSqrt(wgSum(s, lane) / f32(p.C) + p.eps);
  for (var c = lid; c < p.C; c += WG) { outp[x + c] = inp[x + c] * r * weight[c]; }
  if (lid == 0u) { rstd[n] = r; }
}

@compute @workgroup_size(WG)
fn rmsnorm_backward_input(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let n = row_of(wid, nwg);
  if (n >= p.N) { return; }
  let lid = lane.i;
  let x = n * p.C;
  let r = rstd[n];
  var a = 0.0;
  for (var c = lid; c < p.C; c += WG) { a += weight[c] * dout[x + c] * inp[x + c] * r; }
  let dot = wgSum(a, lane) / f32(p.C);
  for (var c = lid; c < p.C; c += WG) {
    outp[x + c] += (weight[c] * dout[x + c] - inp[x + c] * r * dot) * r;
  }
}

@compute @workgroup_size(WG)
fn rmsnorm_backward_weight(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  if (c >= p.C) { return; }
  var dw = 0.0;
  for (var n = 0u; n < p.N; n++) { dw += inp[n * p.C + c] * rstd[n] * dout[n * p.C + c]; }
  dweight[c] += dw;
}
