// Register-blocked causal attention: attention.wgsl's algorithm, bindings and uniforms,
// but each thread computes R = GH x QB rows (GH query heads of one GQA group x QB consecutive
// queries), so every key and value vector it loads from global memory serves R rows instead of
// one: R times fewer global K/V reads per query, and no workgroup memory or barrier (which cost
// most on lavapipe, see docs/PERFORMANCE.md). backward_key likewise gives each thread KB keys of
// one kv head, so every q and dout row it loads serves KB keys. attention.ts rewrites MAX_HS, QB, GH
// and KB per shape; the per-row arrays are indexed by constants or by the uniform head index, which
// lavapipe keeps as vector registers or stack slots. Reference: reference.ts attention*.

// struct P, the bindings, LSE_EMPTY and visible(): attention-bindings.wgsl, appended by attention.ts (module-scope declarations may come in any order; the kernel's header stays first, naming it in profiles)

override WG: u32 = 64;
const MAX_HS = 64u;
const QB = 4u; // queries per thread
const GH = 3u; // query heads per thread (a divisor of NH/KVH)
const KB = 4u; // keys per thread in backward_key
const R = GH * QB;

fn linear(wid: vec3u, nwg: vec3u, lid: vec3u) -> u32 { return (wid.y * nwg.x + wid.x) * WG + lid.x; }

// thread idx -> (b, first query t0, first query head h0, kv head g), or b = B when past the end
struct Rows { b: u32, t0: u32, h0: u32, g: u32 }

fn rows(idx: u32) -> Rows {
  let nqb = (p.T + QB - 1u) / QB;
  let group = p.NH / p.KVH;
  let nsub = group / GH;
  let qb = idx % nqb;
  let rest = idx / nqb;
  let sub = rest % nsub;
  let g = (rest / nsub) % p.KVH;
  let b = rest / (nsub * p.KVH);
  return Rows(b, qb * QB, g * group + sub * GH, g);
}

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let w = rows(linear(wid, nwg, lid));
  if (w.b >= p.B) { return; }
  let b = w.b;
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  var q: array<f32, R * MAX_HS>; // row r = hh * QB + qi: head h0 + hh, query t0 + qi
  var acc: array<f32, R * MAX_HS>;
  var m: array<f32, R>;
  var l: array<f32, R>;
  for (var r = 0u; r < R; r++) {
    let t = min(w.t0 + r % QB, p.T - 1u);
    let qo = (b * p.T + t) * C3 + (w.h0 + r / QB) * p.hs;
    for (var d = 0u; d < p.hs; d++) { q[r * MAX_HS + d] = qkv[qo + d] * p.scale; acc[r * MAX_HS + d] = 0.0; }
    m[r] = -1.0e30;
    l[r] = 0.0;
  }
  let jEnd = min(w.t0 + QB, p.T);
  for (var j = 0u; j < jEnd; j++) {
    if (!visible(b, j)) { continue; }
    let ko = (b * p.T + j) * C3 + p.C + w.g * p.hs;
    var s: array<f32, R>;
    for (var r = 0u; r < R; r++) { s[r] = 0.0; }
    for (var d = 0u; d < p.hs; d++) {
      let kd = qkv[ko + d];
      for (var r = 0u; r < R; r++) { s[r] = fma(q[r * MAX_HS + d], kd, s[r]); }
    }
    var c: array<f32, R>;
    var e: array<f32, R>;
    for (var r = 0u; r < R; r++) {
      let live = j <= w.t0 + r % QB;
      let mn = select(m[r], max(m[r], s[r]), live);
      c[r] = exp(m[r] - mn);
      e[r] = select(0.0, exp(s[r] - mn), live);
      l[r] = l[r] * c[r] + e[r];
      m[r] = mn;
    }
    let vo = ko + KV;
    for (var d = 0u; d < p.hs; d++) {
      let vd = qkv[vo + d];
      for (var r = 0u; r < R; r++) { acc[r * MAX_HS + d] = acc[r * MAX_HS + d] * c[r] + e[r] * vd; }
    }
  }
  for (var r = 0u; r < R; r++) {
    let t = w.t0 + r % QB;
    if (t >= p.T) { continue; }
    let h = w.h0 + r / QB;
    let o = (b * p.T + t) * p.C + h * p.hs;
    let li = (b * p.NH + h) * p.T + t;
    if (l[r] == 0.0) {
      for (var d = 0u; d < p.hs; d++) { outp[o + d] = 0.0; }
      lse[li] = LSE_EMPTY;
      continue;
    }
    let inv = 1.0 / l[r];
    for (var d = 0u; d < p.hs; d++) { outp[o + d] = acc[r * MAX_HS + d] * inv; }
    lse[li] = m[r] + log(l[r]);
  }
}

// per query row: D = dout·out (saved to dsum), dq += scale * sum_j P (dout·v_j - D) k_j
@compute @workgroup_size(WG)
fn backward_query(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let w = rows(linear(wid, nwg, lid));
  if (w.b >= p.B) { return; }
  let b = w.b;
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  var q: array<f32, R * MAX_HS>;
  var g: array<f32, R * MAX_HS>;
  var dq: array<f32, R * MAX_HS>;
  var D: array<f32, R>;
  var L: array<f32, R>;
  for (var r = 0u; r < R; r++) {
    let t = min(w.t0 + r % QB, p.T - 1u);
    let h = w.h0 + r / QB;
    let qo = (b * p.T + t) * C3 + h * p.hs;
    let o = (b * p.T + t) * p.C + h * p.hs;
    var Dr = 0.0;
    for (var d = 0u; d < p.hs; d++) {
      q[r * MAX_HS + d] = qkv[qo + d] * p.scale;
      g[r * MAX_HS + d] = dout[o + d];
      dq[r * MAX_HS + d] = 0.0;
      Dr = fma(g[r * MAX_HS + d], fwdout[o + d], Dr);
    }
    D[r] = Dr;
    let li = (b * p.NH + h) * p.T + t;
    L[r] = lse[li];
    if (w.t0 + r % QB < p.T) { dsum[li] = Dr; }
  }
  let jEnd = min(w.t0 + QB, p.T);
  var kk: array<f32, MAX_HS>;
  for (var j = 0u; j < jEnd; j++) {
    if (!visible(b, j)) { continue; }
    let ko = (b * p.T + j) * C3 + p.C + w.g * p.hs;
    let vo = ko + KV;
    var s: array<f32, R>;
    var dP: array<f32, R>;
    for (var r = 0u; r < R; r++) { s[r] = 0.0; dP[r] = 0.0; }
    for (var d = 0u; d < p.hs; d++) {
      let kd = qkv[ko + d];
      let vd = qkv[vo + d];
      kk[d] = kd;
      for (var r = 0u; r < R; r++) {
        s[r] = fma(q[r * MAX_HS + d], kd, s[r]);
        dP[r] = fma(g[r * MAX_HS + d], vd, dP[r]);
      }
    }
    var dS: array<f32, R>;
    for (var r = 0u; r < R; r++) {
      let live = j <= w.t0 + r % QB && L[r] != LSE_EMPTY;
      dS[r] = select(0.0, exp(s[r] - L[r]) * (dP[r] - D[r]), live);
    }
    for (var d = 0u; d < p.hs; d++) {
      let kd = kk[d];
      for (var r = 0u; r < R; r++) { dq[r * MAX_HS + d] = fma(dS[r], kd, dq[r * MAX_HS + d]); }
    }
  }
  for (var r = 0u; r < R; r++) {
    let t = w.t0 + r % QB;
    if (t >= p.T) { continue; }
    let qo = (b * p.T + t) * C3 + (w.h0 + r / QB) * p.hs;
    for (var d = 0u; d < p.hs; d++) { outp[qo + d] += dq[r * MAX_HS + d] * p.scale; }
  }
}

// per key j of kv head g: dv += sum_h sum_i P_hij dout_hi, dk += scale * sum_h sum_i P_hij (dout_hi·v_j - D_hi) q_hi
// over the NH/KVH query heads h that read kv head g; one thread per (b, g, KB keys), the only writer of their dk, dv
@compute @workgroup_size(WG)
fn backward_key(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let idx = linear(wid, nwg, lid);
  let nkb = (p.T + KB - 1u) / KB;
  if (idx >= p.B * p.KVH * nkb) { return; }
  let j0 = (idx % nkb) * KB;
  let g = (idx / nkb) % p.KVH;
  let b = idx / (nkb * p.KVH);
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  var k: array<f32, KB * MAX_HS>;
  var v: array<f32, KB * MAX_HS>;
  var dk: array<f32, KB * MAX_HS>;
  var dv: array<f32, KB * MAX_HS>;
  var vis: array<bool, KB>;
  for (var x = 0u; x < KB; x++) {
    let j = min(j0 + x, p.T - 1u);
    vis[x] = j0 + x < p.T && visible(b, j);
    let ko = (b * p.T + j) * C3 + p.C + g * p.hs;
    for (var d = 0u; d < p.hs; d++) {
      k[x * MAX_HS + d] = qkv[ko + d];
      v[x * MAX_HS + d] = qkv[ko + KV + d];
      dk[x * MAX_HS + d] = 0.0;
      dv[x * MAX_HS + d] = 0.0;
    }
  }
  let group = p.NH / p.KVH;
  var qq: array<f32, MAX_HS>;
  var oo: array<f32, MAX_HS>;
  for (var h = g * group; h < (g + 1u) * group; h++) {
    let row = (b * p.NH + h) * p.T;
    for (var i = j0; i < p.T; i++) {
      let L = lse[row + i];
      if (L == LSE_EMPTY) { continue; }
      let qo = (b * p.T + i) * C3 + h * p.hs;
      let o = (b * p.T + i) * p.C + h * p.hs;
      var s: array<f32, KB>;
      var dP: array<f32, KB>;
      for (var x = 0u; x < KB; x++) { s[x] = 0.0; dP[x] = 0.0; }
      for (var d = 0u; d < p.hs; d++) {
        let qd = qkv[qo + d] * p.scale;
        let od = dout[o + d];
        qq[d] = qkv[qo + d];
        oo[d] = od;
        for (var x = 0u; x < KB; x++) {
          s[x] = fma(qd, k[x * MAX_HS + d], s[x]);
          dP[x] = fma(od, v[x * MAX_HS + d], dP[x]);
        }
      }
      let Di = dsum[row + i];
      var P: array<f32, KB>;
      var dS: array<f32, KB>;
      for (var x = 0u; x < KB; x++) {
        let live = vis[x] && j0 + x <= i;
        P[x] = select(0.0, exp(s[x] - L), live);
        dS[x] = P[x] * (dP[x] - Di);
      }
      for (var d = 0u; d < p.hs; d++) {
        let qd = qq[d];
        let od = oo[d];
        for (var x = 0u; x < KB; x++) {
          dv[x * MAX_HS + d] = fma(P[x], od, dv[x * MAX_HS + d]);
          dk[x * MAX_HS + d] = fma(dS[x], qd, dk[x * MAX_HS + d]);
        }
      }
    }
  }
  for (var x = 0u; x < KB; x++) {
    if (!vis[x]) { continue; }
    let ko = (b * p.T + j0 + x) * C3 + p.C + g * p.hs;
    for (var d = 0u; d < p.hs; d++) {
      outp[ko + d] += dk[x * MAX_HS + d] * p.scale;
      outp[ko + KV + d] += dv[x * MAX_HS + d];
    }
  }
}
