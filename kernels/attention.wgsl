// Causal attention over qkv (B,T,C+2KV) = [q (C = NH*hs) | k (KV = KVH*hs) | v (KV)] per token,
// head size hs <= MAX_HS; grouped-query: query head h reads kv head h / (NH/KVH) (KVH = NH: plain
// multi-head attention).
// One thread per (b, h, query) with an online (fused) softmax; attention.ts rewrites MAX_HS to the
// head size so per-thread arrays are no larger than needed. lse (B,NH,T) is saved for backward,
// which recomputes probabilities: one pass per query writes dq and D = dout·out, one pass per key
// writes dk and dv, so every gradient element has a single writer (no atomics).
// mask (B,T): 1 = real token; a query sees keys j <= t with mask 1. A query with no key gets 0
// and lse = LSE_EMPTY, which zeroes its backward. Reference: reference.ts attention*.

struct P { B: u32, T: u32, C: u32, NH: u32, hs: u32, hasMask: u32, scale: f32, stride: u32, KVH: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (B,T,C)   | dqkv in backward (B,T,C+2KV)
@group(0) @binding(1) var<storage, read_write> lse: array<f32>;  // (B,NH,T)
@group(0) @binding(2) var<storage, read_write> qkv: array<f32>;  // (B,T,C+2KV) = [q | k | v]
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
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  let kh = p.C + (h / (p.NH / p.KVH)) * p.hs; // this head's k column: kv head h / (NH/KVH)
  let qo = (b * p.T + t) * C3 + h * p.hs;
  var q: array<f32, MAX_HS>;
  var acc: array<f32, MAX_HS>;
  for (var d = 0u; d < p.hs; d++) { q[d] = qkv[qo + d] * p.scale; acc[d] = 0.0; }
  var m = -1.0e30;
  var l = 0.0;
  for (var j = 0u; j <= t; j++) {
    if (!visible(b, j)) { continue; }
    let ko = (b * p.T + j) * C3 + kh;
    var s = 0.0;
    for (var d = 0u; d < p.hs; d++) { s = fma(q[d], qkv[ko + d], s); }
    let mn = max(m, s);
    let c = exp(m - mn);
    let e = exp(s - mn);
    l = l * c + e;
    let vo = ko + KV;
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
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  let kh = p.C + (h / (p.NH / p.KVH)) * p.hs; // this head's k column: kv head h / (NH/KVH)
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
    let ko = (b * p.T + j) * C3 + kh;
    let vo = ko + KV;
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

// per key j of kv head g: dv += sum_h sum_i P_hij dout_hi, dk += scale * sum_h sum_i P_hij (dout_hi·v_j - D_hi) q_hi
// over the NH/KVH query heads h that read kv head g; one thread per (b, g, j), the only writer of its dk, dv
@compute @workgroup_size(WG)
fn backward_key(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  if (idx >= p.B * p.KVH * p.T) { return; }
  let j = idx % p.T;
  let g = (idx / p.T) % p.KVH;
  let b = idx / (p.T * p.KVH);
  if (!visible(b, j)) { return; }
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  let ko = (b * p.T + j) * C3 + p.C + g * p.hs;
  let vo = ko + KV;
  var k: array<f32, MAX_HS>;
  var v: array<f32, MAX_HS>;
  var dk: array<f32, MAX_HS>;
  var dv: array<f32, MAX_HS>;
  for (var d = 0u; d < p.hs; d++) { k[d] = qkv[ko + d]; v[d] = qkv[vo + d]; dk[d] = 0.0; dv[d] = 0.0; }
  let group = p.NH / p.KVH;
  for (var h = g * group; h < (g + 1u) * group; h++) {
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
  }
  for (var d = 0u; d < p.hs; d++) {
    outp[ko + d] += dk[d] * p.scale;
    outp[vo + d] += dv[d];
  }
}

// ---- single-token decode over a KV cache (B,Tmax,KV); one thread per (b, h)
struct DP { B: u32, Tmax: u32, C: u32, NH: u32, hs: u32, hasMask: u32, scale: f32, qStride: u32, KVH: u32 }

@group(0) @binding(0) var<storage, read_write> dec_out: array<f32>; // (B,C)
@group(0) @binding(1) var<storage, read_write> dec_q: array<f32>;   // (B,qStride), q in the first C
@group(0) @binding(2) var<storage, read_write> kcache: array<f32>;  // (B,Tmax,KV)
@group(0) @binding(3) var<storage, read_write> vcache: array<f32>;  // (B,Tmax,KV)
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
    let ko = (b * dp.Tmax + j) * dp.KVH * dp.hs + (h / (dp.NH / dp.KVH)) * dp.hs;
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

// ---- copy each sequence's new k, v (from a (B,kvStride) row, k at column C, v at C+KV) to slot pos[b]
@group(0) @binding(0) var<storage, read_write> kdst: array<f32>;    // (B,Tmax,KV)
@group(0) @binding(1) var<storage, read_write> vdst: array<f32>;    // (B,Tmax,KV)
@group(0) @binding(2) var<storage, read_write> kvsrc: array<f32>;   // (B,kvStride)
@group(0) @binding(3) var<storage, read_write> slot: array<u32>;    // (B)
@group(0) @binding(4) var<uniform> kp: DP; // qStride = kvStride

@compute @workgroup_size(WG)
fn kv_write(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  let KV = kp.KVH * kp.hs;
  if (idx >= kp.B * KV) { return; }
  let c = idx % KV;
  let b = idx / KV;
  let t = slot[b];
  if (t >= kp.Tmax) { return; }
  let dst = (b * kp.Tmax + t) * KV + c;
  kdst[dst] = kvsrc[b * kp.qStride + kp.C + c];
  vdst[dst] = kvsrc[b * kp.qStride + kp.C + KV + c];
}
