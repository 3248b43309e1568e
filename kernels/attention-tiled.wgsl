// Workgroup-tiled causal attention for GPUs (FlashAttention-2's scheme without tensor
// cores): attention.wgsl's algorithm, bindings and uniforms. A workgroup takes BQ queries of every
// query head of one GQA group (GRP = NH/KVH heads, one thread per (head, query)) and walks the keys
// in tiles of BK: the workgroup loads each K and V tile into workgroup memory once and every thread
// reads it from there, so each key is read from global memory once per BQ x GRP rows; tiles past
// the block's last query are never loaded (causal skip). backward_query does the same with K and V
// tiles; backward_key takes WG keys of one kv head (one thread per key, summing over the group's
// heads) and walks q, dout, lse and D in tiles of BK queries. attention.ts sizes BK so the tiles fit
// the adapter's maxComputeWorkgroupStorageSize and rewrites MAX_HS, BQ, GRP and BK per shape.
// Reference: reference.ts attention*.

// struct P, the bindings, LSE_EMPTY and visible(): attention-bindings.wgsl, appended by attention.ts (module-scope declarations may come in any order; the kernel's header stays first, naming it in profiles)

const WG = 64u;
const MAX_HS = 64u;
const GRP = 3u; // query heads per kv head
const BQ = 21u; // queries per workgroup: WG / GRP
const BK = 16u; // keys (or queries, in backward_key) per tile

var<workgroup> ta: array<f32, BK * MAX_HS>; // k tile | q tile in backward_key
var<workgroup> tb: array<f32, BK * MAX_HS>; // v tile | dout tile
var<workgroup> tx: array<f32, BK>;          // key visible (1/0) | lse
var<workgroup> ty: array<f32, BK>;          // (unused) | D

// workgroup -> (b, kv head g, first query t0); thread -> (head h, query t)
struct Block { b: u32, g: u32, t0: u32 }

fn block(wid: vec3u, nwg: vec3u) -> Block {
  let w = wid.y * nwg.x + wid.x;
  let nqb = (p.T + BQ - 1u) / BQ;
  return Block(w / (nqb * p.KVH), (w / nqb) % p.KVH, (w % nqb) * BQ);
}

// K and V rows j0 .. j0+BK-1 of kv head g into ta, tb; their visibility into tx
fn loadKV(b: u32, g: u32, j0: u32, jEnd: u32, lid: u32) {
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  for (var e = lid; e < BK * p.hs; e += WG) {
    let x = e / p.hs;
    let d = e % p.hs;
    let ko = (b * p.T + min(j0 + x, p.T - 1u)) * C3 + p.C + g * p.hs + d;
    ta[x * MAX_HS + d] = qkv[ko];
    tb[x * MAX_HS + d] = qkv[ko + KV];
  }
  for (var x = lid; x < BK; x += WG) { tx[x] = select(0.0, 1.0, j0 + x < jEnd && visible(b, j0 + x)); }
}

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let k = block(wid, nwg);
  if (k.b >= p.B) { return; }
  let b = k.b;
  let hh = lid.x / BQ;
  let t = k.t0 + lid.x % BQ;
  let live = hh < GRP && t < p.T;
  let h = k.g * GRP + min(hh, GRP - 1u);
  let tc = min(t, p.T - 1u);
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  let qo = (b * p.T + tc) * C3 + h * p.hs;
  var q: array<f32, MAX_HS>;
  var acc: array<f32, MAX_HS>;
  for (var d = 0u; d < p.hs; d++) { q[d] = qkv[qo + d] * p.scale; acc[d] = 0.0; }
  var m = -1.0e30;
  var l = 0.0;
  let jEnd = min(k.t0 + BQ, p.T);
  for (var j0 = 0u; j0 < jEnd; j0 += BK) {
    loadKV(b, k.g, j0, jEnd, lid.x);
    workgroupBarrier();
    let n = min(BK, jEnd - j0);
    for (var x = 0u; x < n; x++) {
      if (tx[x] == 0.0 || j0 + x > t) { continue; }
      var s = 0.0;
      for (var d = 0u; d < p.hs; d++) { s = fma(q[d], ta[x * MAX_HS + d], s); }
      let mn = max(m, s);
      let c = exp(m - mn);
      let e = exp(s - mn);
      l = l * c + e;
      for (var d = 0u; d < p.hs; d++) { acc[d] = acc[d] * c + e * tb[x * MAX_HS + d]; }
      m = mn;
    }
    workgroupBarrier();
  }
  if (!live) { return; }
  let o = (b * p.T + t) * p.C + h * p.hs;
  let li = (b * p.NH + h) * p.T + t;
  if (l == 0.0) {
    for (var d = 0u; d < p.hs; d++) { outp[o + d] = 0.0; }
    lse[li] = LSE_EMPTY;
    return;
  }
  for (var d = 0u; d < p.hs; d++) { outp[o + d] = acc[d] / l; }
  lse[li] = m + log(l);
}

// per query: D = dout·out (saved to dsum), dq += scale * sum_j P (dout·v_j - D) k_j
@compute @workgroup_size(WG)
fn backward_query(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let k = block(wid, nwg);
  if (k.b >= p.B) { return; }
  let b = k.b;
  let hh = lid.x / BQ;
  let t = k.t0 + lid.x % BQ;
  let h = k.g * GRP + min(hh, GRP - 1u);
  let tc = min(t, p.T - 1u);
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  let qo = (b * p.T + tc) * C3 + h * p.hs;
  let o = (b * p.T + tc) * p.C + h * p.hs;
  let li = (b * p.NH + h) * p.T + tc;
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
  let L = lse[li];
  let live = hh < GRP && t < p.T;
  let jEnd = min(k.t0 + BQ, p.T);
  for (var j0 = 0u; j0 < jEnd; j0 += BK) {
    loadKV(b, k.g, j0, jEnd, lid.x);
    workgroupBarrier();
    let n = min(BK, jEnd - j0);
    for (var x = 0u; x < n; x++) {
      if (tx[x] == 0.0 || j0 + x > t || L == LSE_EMPTY) { continue; }
      var s = 0.0;
      var dP = 0.0;
      for (var d = 0u; d < p.hs; d++) {
        s = fma(q[d], ta[x * MAX_HS + d], s);
        dP = fma(g[d], tb[x * MAX_HS + d], dP);
      }
      let dS = exp(s - L) * (dP - D);
      for (var d = 0u; d < p.hs; d++) { dq[d] = fma(dS, ta[x * MAX_HS + d], dq[d]); }
    }
    workgroupBarrier();
  }
  if (!live) { return; }
  dsum[li] = D;
  if (L == LSE_EMPTY) { return; }
  for (var d = 0u; d < p.hs; d++) { outp[qo + d] += dq[d] * p.scale; }
}

// per key j of kv head g: dv += sum_h sum_i P_hij dout_hi, dk += scale * sum_h sum_i P_hij (dout_hi·v_j - D_hi) q_hi;
// a workgroup takes WG keys (one thread each, the only writer of its dk, dv) and tiles of BK queries
@compute @workgroup_size(WG)
fn backward_key(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let w = wid.y * nwg.x + wid.x;
  let nkb = (p.T + WG - 1u) / WG;
  let b = w / (nkb * p.KVH);
  if (b >= p.B) { return; }
  let g = (w / nkb) % p.KVH;
  let j0 = (w % nkb) * WG;
  let j = j0 + lid.x;
  let jc = min(j, p.T - 1u);
  let live = j < p.T && visible(b, jc);
  let KV = p.KVH * p.hs;
  let C3 = p.C + 2u * KV;
  let ko = (b * p.T + jc) * C3 + p.C + g * p.hs;
  let vo = ko + KV;
  var kr: array<f32, MAX_HS>;
  var vr: array<f32, MAX_HS>;
  var dk: array<f32, MAX_HS>;
  var dv: array<f32, MAX_HS>;
  for (var d = 0u; d < p.hs; d++) { kr[d] = qkv[ko + d]; vr[d] = qkv[vo + d]; dk[d] = 0.0; dv[d] = 0.0; }
  for (var h = g * GRP; h < (g + 1u) * GRP; h++) {
    let row = (b * p.NH + h) * p.T;
    for (var i0 = j0; i0 < p.T; i0 += BK) {
      for (var e = lid.x; e < BK * p.hs; e += WG) {
        let x = e / p.hs;
        let d = e % p.hs;
        let i = min(i0 + x, p.T - 1u);
        ta[x * MAX_HS + d] = qkv[(b * p.T + i) * C3 + h * p.hs + d];
        tb[x * MAX_HS + d] = dout[(b * p.T + i) * p.C + h * p.hs + d];
      }
      for (var x = lid.x; x < BK; x += WG) {
        let i = min(i0 + x, p.T - 1u);
        tx[x] = lse[row + i];
        ty[x] = dsum[row + i];
      }
      workgroupBarrier();
      let n = min(BK, p.T - i0);
      for (var x = 0u; x < n; x++) {
        let L = tx[x];
        if (!live || i0 + x < j || L == LSE_EMPTY) { continue; }
        var s = 0.0;
        var dP = 0.0;
        for (var d = 0u; d < p.hs; d++) {
          s = fma(ta[x * MAX_HS + d] * p.scale, kr[d], s);
          dP = fma(tb[x * MAX_HS + d], vr[d], dP);
        }
        let P = exp(s - L);
        let dS = P * (dP - ty[x]);
        for (var d = 0u; d < p.hs; d++) {
          dv[d] = fma(P, tb[x * MAX_HS + d], dv[d]);
          dk[d] = fma(dS, ta[x * MAX_HS + d], dk[d]);
        }
      }
      workgroupBarrier();
    }
  }
  if (!live) { return; }
  for (var d = 0u; d < p.hs; d++) {
    outp[ko + d] += dk[d] * p.scale;
    outp[vo + d] += dv[d];
  }
}
