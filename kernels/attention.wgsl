// Causal multi-head attention over qkv (B,T,3C) = [q | k | v] per token, head size hs <= MAX_HS.
// One thread per (b, h, query) with an online (fused) softmax; attention.ts rewrites MAX_HS to the
// head size so per-thread arrays are no larger than needed. lse (B,NH,T) is saved for backward,
// which recomputes probabilities: one pass per query writes dq and D = dout·out, one pass per key
// writes dk and dv, so every gradient element has a single writer (no atomics).
// mask (B,T): 1 = real token; a query sees keys j <= t with mask 1. A query with no key gets 0
// and lse = LSE_EMPTY, which zeroes its backward. Reference: reference.ts attention*.

struct P { B: u32, T: u32, C: u32, NH: u32, hs: u32, hasMask: u32, scale: f32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (B,T,C)   | dqkv in backward
@group(0) @binding(1) var<storage, read_write> lse: array<f32>;  // (B,NH,T)
@group(0) @binding(2) var<storage, read_write> qkv: array<f32>;  // (B,T,3C)
@group(0) @binding(3) var<storage, read_write> mask: array<u32>; // (B,T)
@group(0) @binding(4) var<storage, read_write> dout: array<f32>; // (B,T,C)
@group(0) @binding(5) var<storage, read_write> fwdout: array<f32>; // (B,T,C) forward output
@group(0) @binding(6) var<storage, read_write> dsum: array<f32>; // (B,NH,T) scratch: D = dout·out
@group(0) @binding(7) var<uniform> p: P;

override WG: u32 = 64;
const MAX_HS = 128u;
const LSE_EMPTY = 3.0e38;

fn visible(b: u32, j: u32) -> bool {
  return p.hasMask == 0u || mask[b * p.T + j] != 0u;
}

fn linear(wid: vec3u, nwg: vec3u, lid: vec3u) -> u32 { return (wid.y * nwg.x + wid.x) * WG + lid.x; }

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  if (idx >= p.B * p.NH * p.T) { return; }
  let t = idx % p.T;
  let h = (idx / p.T) % p.NH;
  let b = idx / (p.T * p.NH);
  let C3 = 3u * p.C;
  let qo = (b * p.T + t) * C3 + h * p.hs;
  var q: array<f32, MAX_HS>;
  var acc: array<f32, MAX_HS>;
  for (var d = 0u; d < p.hs; d++) { q[d] = qkv[qo + d] * p.scale; acc[d] = 0.0; }
  var m = -1.0e30;
  var l = 0.0;
  for (var j = 0u; j <= t; j++) {
    if (!visible(b, j)) { continue; }
    let ko = (b * p.T + j) * C3 + p.C + h * p.hs;
    var s = 0.0;
    for (var d = 0u; d < p.hs; d++) { s = fma(q[d], qkv[ko + d], s); }
    let mn = max(m, s);
    let c = exp(m - mn);
    let e = exp(s - mn);
    l = l * c + e;
    let vo = ko + p.C;
    for (var d = 0u; d < p.hs; d++) { acc[d] = acc[d] * c + e * qkv[vo + d]; }
    m = mn;
  }
  let o = (b * p.T + t) * p.C + h * p.hs;
  if (l == 0.0) {
    for (var d = 0u; d < p.hs; d++) { outp[o + d] = 0.0; }
    lse[idx] = LSE_EMPTY;
    return;
  }
  for (var d = 0u; d < p.hs; d++) { outp[o + d] = acc[d] / l; }
  lse[idx] = m + log(l);
}

// per query: D = dout·out (saved to dsum), dq += scale * sum_j P (dout·v_j - D) k_j
@compute @workgroup_size(WG)
fn backward_query(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  if (idx >= p.B * p.NH * p.T) { return; }
  let t = idx % p.T;
  let h = (idx / p.T) % p.NH;
  let b = idx / (p.T * p.NH);
  let C3 = 3u * p.C;
  let qo = (b * p.T + t) * C3 + h * p.hs;
  let o = (b * p.T + t) * p.C + h * p.hs;
  var q: array<f32, MAX_HS>;
  var g: array<f32, MAX_HS>;
  var dq: array<f32, MAX_HS>;
  var D = 0.0;
  for (var d = 0u; d < p.hs; d++) {
    q[d] = qkv[qo + d] * p.scale;
    g[d] = dout[o + d];
    dq[d] = 0.0;
    D = fma(g[d], fwdout[o + d], D);
  }
  dsum[idx] = D;
  let L = lse[idx];
  if (L == LSE_EMPTY) { return; }
  for (var j = 0u; j <= t; j++) {
    if (!visible(b, j)) { continue; }
    let ko = (b * p.T + j) * C3 + p.C + h * p.hs;
    let vo = ko + p.C;
    var s = 0.0;
    var dP = 0.0;
    for (var d = 0u; d < p.hs; d++) {
      s = fma(q[d], qkv[ko + d], s);
      dP = fma(g[d], qkv[vo + d], dP);
    }
    let dS = exp(s - L) * (dP - D);
    for (var d = 0u; d < p.hs; d++) { dq[d] = fma(dS, qkv[ko + d], dq[d]); }
  }
  for (var d = 0u; d < p.hs; d++) { outp[qo + d] += dq[d] * p.scale; }
}

// per key j: dv += sum_i P_ij dout_i, dk += scale * sum_i P_ij (dout_i·v_j - D_i) q_i
@compute @workgroup_size(WG)
fn backward_key(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  if (idx >= p.B * p.NH * p.T) { return; }
  let j = idx % p.T;
  let h = (idx / p.T) % p.NH;
  let b = idx / (p.T * p.NH);
  if (!visible(b, j)) { return; }
  let C3 = 3u * p.C;
  let ko = (b * p.T + j) * C3 + p.C + h * p.hs;
  let vo = ko + p.C;
  var k: array<f32, MAX_HS>;
  var v: array<f32, MAX_HS>;
  var dk: array<f32, MAX_HS>;
  var dv: array<f32, MAX_HS>;
  for (var d = 0u; d < p.hs; d++) { k[d] = qkv[ko + d]; v[d] = qkv[vo + d]; dk[d] = 0.0; dv[d] = 0.0; }
  let row = (b * p.NH + h) * p.T;
  for (var i = j; i < p.T; i++) {
    let L = lse[row + i];
    if (L == LSE_EMPTY) { continue; }
    let qo = (b * p.T + i) * C3 + h * p.hs;
    let o = (b * p.T + i) * p.C + h * p.hs;
    var s = 0.0;
    var dP = 0.0;
    for (var d = 0u; d < p.hs; d++) {
      s = fma(qkv[qo + d] * p.scale, k[d], s);
      dP = fma(dout[o + d], v[d], dP);
    }
    let P = exp(s - L);
    let dS = P * (dP - dsum[row + i]);
    for (var d = 0u; d < p.hs; d++) {
      dv[d] = fma(P, dout[o + d], dv[d]);
      dk[d] = fma(dS, qkv[qo + d], dk[d]);
    }
  }
  for (var d = 0u; d < p.hs; d++) {
    outp[ko + d] += dk[d] * p.scale;
    outp[vo + d] += dv[d];
  }
}

// ---- single-token decode over a KV cache (B,Tmax,C); one thread per (b, h)
struct DP { B: u32, Tmax: u32, C: u32, NH: u32, hs: u32, hasMask: u32, scale: f32, qStride: u32 }

@group(0) @binding(0) var<storage, read_write> dec_out: array<f32>; // (B,C)
@group(0) @binding(1) var<storage, read_write> dec_q: array<f32>;   // (B,qStride), q in the first C
@group(0) @binding(2) var<storage, read_write> kcache: array<f32>;  // (B,Tmax,C)
@group(0) @binding(3) var<storage, read_write> vcache: array<f32>;  // (B,Tmax,C)
@group(0) @binding(4) var<storage, read_write> lens: array<u32>;    // (B)
@group(0) @binding(5) var<storage, read_write> dec_mask: array<u32>; // (B,Tmax)
@group(0) @binding(6) var<uniform> dp: DP;

@compute @workgroup_size(WG)
fn decode(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  if (idx >= dp.B * dp.NH) { return; }
  let h = idx % dp.NH;
  let b = idx / dp.NH;
  var q: array<f32, MAX_HS>;
  var acc: array<f32, MAX_HS>;
  for (var d = 0u; d < dp.hs; d++) { q[d] = dec_q[b * dp.qStride + h * dp.hs + d] * dp.scale; acc[d] = 0.0; }
  var m = -1.0e30;
  var l = 0.0;
  let n = min(lens[b], dp.Tmax);
  for (var j = 0u; j < n; j++) {
    if (dp.hasMask != 0u && dec_mask[b * dp.Tmax + j] == 0u) { continue; }
    let ko = (b * dp.Tmax + j) * dp.C + h * dp.hs;
    var s = 0.0;
    for (var d = 0u; d < dp.hs; d++) { s = fma(q[d], kcache[ko + d], s); }
    let mn = max(m, s);
    let c = exp(m - mn);
    let e = exp(s - mn);
    l = l * c + e;
    for (var d = 0u; d < dp.hs; d++) { acc[d] = acc[d] * c + e * vcache[ko + d]; }
    m = mn;
  }
  let o = b * dp.C + h * dp.hs;
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var d = 0u; d < dp.hs; d++) { dec_out[o + d] = acc[d] * inv; }
}

// ---- copy each sequence's new k, v (from a (B,kvStride) row, k at column C, v at 2C) to slot pos[b]
@group(0) @binding(0) var<storage, read_write> kdst: array<f32>;    // (B,Tmax,C)
@group(0) @binding(1) var<storage, read_write> vdst: array<f32>;    // (B,Tmax,C)
@group(0) @binding(2) var<storage, read_write> kvsrc: array<f32>;   // (B,kvStride)
@group(0) @binding(3) var<storage, read_write> slot: array<u32>;    // (B)
@group(0) @binding(4) var<uniform> kp: DP; // qStride = kvStride

@compute @workgroup_size(WG)
fn kv_write(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  if (idx >= kp.B * kp.C) { return; }
  let c = idx % kp.C;
  let b = idx / kp.C;
  let t = slot[b];
  if (t >= kp.Tmax) { return; }
  let dst = (b * kp.Tmax + t) * kp.C + c;
  kdst[dst] = kvsrc[b * kp.qStride + kp.C + c];
  vdst[dst] = kvsrc[b * kp.qStride + 2u * kp.C + c];
}
