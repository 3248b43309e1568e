// Elementwise ops: residual add, GELU (tanh), SiLU, SwiGLU, fill, scaled accumulate.
// One thread per element; the 1-D grid may be folded into y (see Runtime.dispatch).
// Backward entry points ADD into their gradient views. Reference: reference.ts.

struct P { n: u32, H: u32, value: f32 }

@group(0) @binding(0) var<storage, read_write> o0: array<f32>;
@group(0) @binding(1) var<storage, read_write> o1: array<f32>;
@group(0) @binding(2) var<storage, read_write> i0: array<f32>;
@group(0) @binding(3) var<uniform> p: P;

override WG: u32 = 256;
const GELU_K = 0.7978845608028654; // sqrt(2/pi)

fn index(wid: vec3u, nwg: vec3u, lid: vec3u) -> u32 {
  return (wid.y * nwg.x + wid.x) * WG + lid.x;
}

// out = a + b: o0 = out, o1 = a, i0 = b
@compute @workgroup_size(WG)
fn residual_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  o0[i] = o1[i] + i0[i];
}

// da += dout, db += dout: o0 = da, o1 = db, i0 = dout
@compute @workgroup_size(WG)
fn residual_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  o0[i] += i0[i];
  o1[i] += i0[i];
}

// tanh written out: some drivers' tanh returns NaN for large |u|.
fn tanh_safe(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  return sign(u) * (1.0 - e) / (1.0 + e);
}

// o0 = gelu(o1)
@compute @workgroup_size(WG)
fn gelu_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let x = o1[i];
  o0[i] = 0.5 * x * (1.0 + tanh_safe(GELU_K * (x + 0.044715 * x * x * x)));
}

// dinp (o0) += gelu'(inp (o1)) * dout (i0)
@compute @workgroup_size(WG)
fn gelu_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let x = o1[i];
  let t = tanh_safe(GELU_K * (x + 0.044715 * x * x * x));
  let du = GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
  o0[i] += (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du) * i0[i];
}

fn sigmoid(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }

// o0 = silu(o1)
@compute @workgroup_size(WG)
fn silu_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  o0[i] = o1[i] * sigmoid(o1[i]);
}

// dinp (o0) += silu'(inp (o1)) * dout (i0)
@compute @workgroup_size(WG)
fn silu_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let s = sigmoid(o1[i]);
  o0[i] += i0[i] * s * (1.0 + o1[i] * (1.0 - s));
}

// out (o0, (N,H)) = silu(gate) * up, inp (o1, (N,2H)) = [gate | up]; n = N*H
@compute @workgroup_size(WG)
fn swiglu_forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let r = i / p.H;
  let j = i % p.H;
  let g = o1[r * 2u * p.H + j];
  o0[i] = g * sigmoid(g) * o1[r * 2u * p.H + p.H + j];
}

// dinp (o0, (N,2H)) += ..., inp (o1), dout (i0, (N,H))
@compute @workgroup_size(WG)
fn swiglu_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let r = i / p.H;
  let j = i % p.H;
  let ig = r * 2u * p.H + j;
  let g = o1[ig];
  let u = o1[ig + p.H];
  let s = sigmoid(g);
  let d = i0[i];
  o0[ig] += d * u * s * (1.0 + g * (1.0 - s));
  o0[ig + p.H] += d * g * s;
}

// o0 = value
@compute @workgroup_size(WG)
fn fill(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  o0[i] = p.value;
}

// o0 += value * o1
@compute @workgroup_size(WG)
fn axpy(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  o0[i] += p.value * o1[i];
}
