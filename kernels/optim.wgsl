// Optimizer-side passes over one flat buffer: AdamW with clip-by-norm folded in (its scale
// computed on the GPU from the norm: no readback, and no pass of its own over the gradients), and
// the global gradient L2 norm (two-stage tree reduction with a fixed partition, so bit-identical
// across runs; wgSum from kernels/reduce.ts, subgroups where the device has them). Reference:
// reference.ts (adamwRef with clipScale). AdamW given the norm (gate != 0) does nothing when it
// is not finite: a NaN or infinite gradient turns the step into a no-op on the GPU, and the norm
// read back later says so.

struct AdamP { n: u32, lr: f32, beta1: f32, beta2: f32, eps: f32, wd: f32, bc1: f32, bc2: f32, gate: u32, maxNorm: f32 }

@group(0) @binding(0) var<storage, read_write> params: array<f32>;
@group(0) @binding(1) var<storage, read_write> grads: array<f32>;
@group(0) @binding(2) var<storage, read_write> m1: array<f32>;
@group(0) @binding(3) var<storage, read_write> m2: array<f32>;
@group(0) @binding(4) var<uniform> ap: AdamP;
@group(0) @binding(5) var<storage, read_write> gateNorm: array<f32>; // [0] = the global grad norm

fn finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }

override WG: u32 = 256;

fn linear(wid: vec3u, nwg: vec3u, lid: vec3u) -> u32 { return (wid.y * nwg.x + wid.x) * WG + lid.x; }

@compute @workgroup_size(WG)
fn adamw(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = linear(wid, nwg, lid);
  if (i >= ap.n) { return; }
  if (ap.gate != 0u && !finite(gateNorm[0])) { return; }
  var g = grads[i];
  // clip-by-norm, as torch.nn.utils.clip_grad_norm_: g * min(1, maxNorm / (norm + 1e-6))
  if (ap.maxNorm > 0.0) { g *= min(1.0, ap.maxNorm / (gateNorm[0] + 1e-6)); }
  let m = ap.beta1 * m1[i] + (1.0 - ap.beta1) * g;
  let v = ap.beta2 * m2[i] + (1.0 - ap.beta2) * g * g;
  m1[i] = m;
  m2[i] = v;
  let w = params[i];
  params[i] = w - ap.lr * ((m / ap.bc1) / (sqrt(v / ap.bc2) + ap.eps) + ap.wd * w);
}

// ---- global norm: stage 1 writes one sum of squares per part of `chunk` floats of one window (at
// partial[partBase + part]), stage 2 adds all nparts in order and takes one sqrt
struct NormP { n: u32, chunk: u32, nparts: u32, maxNorm: f32, partBase: u32 }

@group(0) @binding(0) var<storage, read_write> g: array<f32>;
@group(0) @binding(1) var<storage, read_write> partial: array<f32>; // (nparts)
@group(0) @binding(2) var<storage, read_write> norm: array<f32>;    // [0] = norm
@group(0) @binding(3) var<uniform> np: NormP;

// wgSum: kernels/reduce.ts prepends the subgroup or the workgroup-tree version

@compute @workgroup_size(WG)
fn norm_partial(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let part = wid.y * nwg.x + wid.x;
  let start = part * np.chunk;
  if (start >= np.n) { return; } // a folded grid's spare workgroups (uniform per workgroup)
  let end = min(start + np.chunk, np.n);
  var s = 0.0;
  for (var i = start + lane.i; i < end; i += WG) { s += g[i] * g[i]; }
  let total = wgSum(s, lane);
  if (lane.i == 0u) { partial[np.partBase + part] = total; }
}

@compute @workgroup_size(WG)
fn norm_final(lane: Lane) {
  var s = 0.0;
  for (var i = lane.i; i < np.nparts; i += WG) { s += partial[i]; }
  let total = wgSum(s, lane);
  if (lane.i == 0u) { norm[0] = sqrt(total); }
}
