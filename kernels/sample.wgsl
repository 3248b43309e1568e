// Sampling one token per row of logits (B,V), one workgroup per row: temperature, top-k, top-p
// with a counter-based PRNG (PCG hash of seed, step, row), so a seed reproduces the same tokens.
// The kept set is {v : logit_v >= threshold}; thresholds are found exactly by building the
// threshold's ordered-u32 key bit by bit (32 counting / mass reductions), with no sort.
// The token is drawn by inverting the kept, renormalized CDF in index order: per-thread contiguous
// chunks, a serial scan of chunk sums, then a scan inside the chosen chunk. logp = log q(token)
// under that distribution. temperature 0: the first argmax, logp 0. Reference: sampleRef.
// The logits are a chunk of rows [rowBase, rowBase + B) of the batch in the head's slice-major
// layout (see logsoftmax.wgsl; Vs = V is a plain (B,V) block); the draw of row b uses the
// batch row rowBase + b, so chunking does not change the tokens.

// With perRow set, row r draws at step + rowStep[r] (a generation session's per-sequence count of
// sampled tokens, so k tokens per submit draw what k submits of one token would). With hasIds set,
// row r draws as row rowId[r] (the sequence it holds: a session may reorder its rows).

struct P { B: u32, V: u32, temperature: f32, topK: u32, topP: f32, seed: u32, step: u32, Vs: u32, rowBase: u32, perRow: u32, hasIds: u32 }

@group(0) @binding(0) var<storage, read_write> tokens: array<i32>; // (B)
@group(0) @binding(1) var<storage, read_write> logps: array<f32>;  // (B)
@group(0) @binding(2) var<storage, read_write> logits: array<f32>; // (B,V) slice-major (logsoftmax.wgsl)
@group(0) @binding(3) var<uniform> p: P;
@group(0) @binding(4) var<storage, read_write> rowStep: array<u32>; // (B) when p.perRow != 0
@group(0) @binding(5) var<storage, read_write> rowId: array<u32>; // (B) when p.hasIds != 0

override WG: u32 = 256;
var<workgroup> redf: array<f32, WG>;
var<workgroup> redu: array<u32, WG>;
var<workgroup> pick: vec2u;    // chosen chunk, found flag
var<workgroup> pickBase: f32;  // cumulative mass before that chunk

fn at(i: u32, v: u32) -> u32 {
  let s = v / p.Vs;
  let len = min(p.Vs, p.V - s * p.Vs);
  return p.B * s * p.Vs + i * len + (v - s * p.Vs);
}

fn pcg(x: u32) -> u32 {
  let state = x * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

fn ordered(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}

fn sumf(v: f32, lid: u32) -> f32 {
  redf[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { redf[lid] += redf[lid + s]; }
    workgroupBarrier();
  }
  let r = redf[0];
  workgroupBarrier();
  return r;
}

fn sumu(v: u32, lid: u32) -> u32 {
  redu[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { redu[lid] += redu[lid + s]; }
    workgroupBarrier();
  }
  let r = redu[0];
  workgroupBarrier();
  return r;
}

// (max value, first index of it)
fn argmax(v: f32, i: u32, lid: u32) -> vec2f {
  redf[lid] = v;
  redu[lid] = i;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let a = redf[lid];
      let b = redf[lid + s];
      if (b > a || (b == a && redu[lid + s] < redu[lid])) { redf[lid] = b; redu[lid] = redu[lid + s]; }
    }
    workgroupBarrier();
  }
  let r = vec2f(redf[0], bitcast<f32>(redu[0]));
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let b = wid.y * nwg.x + wid.x;
  if (b >= p.B) { return; }
  let lid = lid3.x;
  let row = p.rowBase + b;

  var best = -3.4e38;
  var bi = 0xffffffffu;
  for (var v = lid; v < p.V; v += WG) {
    if (logits[at(b, v)] > best) { best = logits[at(b, v)]; bi = v; }
  }
  let am = argmax(best, bi, lid);
  let mx = am.x;
  if (p.temperature == 0.0) {
    if (lid == 0u) { tokens[row] = i32(bitcast<u32>(am.y)); logps[row] = 0.0; }
    return;
  }
  let inv = 1.0 / p.temperature;

  var s = 0.0;
  for (var v = lid; v < p.V; v += WG) { s += exp((logits[at(b, v)] - mx) * inv); }
  let total = sumf(s, lid);

  var thr = 0u;
  if (p.topK > 0u && p.topK < p.V) {
    // the largest key with count(key >= it) >= k: the k-th largest logit
    var ans = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = ans | (1u << u32(bit));
      var c = 0u;
      for (var v = lid; v < p.V; v += WG) { c += select(0u, 1u, ordered(logits[at(b, v)]) >= cand); }
      if (sumu(c, lid) >= p.topK) { ans = cand; }
    }
    thr = ans;
  }
  if (p.topP < 1.0) {
    // the largest key whose mass(key >= it) reaches topP: the smallest nucleus
    var ans = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = ans | (1u << u32(bit));
      var m = 0.0;
      for (var v = lid; v < p.V; v += WG) {
        if (ordered(logits[at(b, v)]) >= cand) { m += exp((logits[at(b, v)] - mx) * inv); }
      }
      if (sumf(m, lid) >= p.topP * total) { ans = cand; }
    }
    thr = max(thr, ans);
  }

  let chunk = (p.V + WG - 1u) / WG;
  let lo = lid * chunk;
  let hi = min(lo + chunk, p.V);
  var cs = 0.0;
  for (var v = lo; v < hi; v++) {
    if (ordered(logits[at(b, v)]) >= thr) { cs += exp((logits[at(b, v)] - mx) * inv); }
  }
  // chunk sums, kept in place for the serial scan below
  redf[lid] = cs;
  workgroupBarrier();
  if (lid == 0u) {
    var kept = 0.0;
    for (var i = 0u; i < WG; i++) { kept += redf[i]; }
    let step = p.step + select(0u, rowStep[row], p.perRow != 0u);
    let id = select(row, rowId[row], p.hasIds != 0u);
    let u = f32(pcg(pcg(pcg(p.seed) ^ step) ^ id) >> 8u) / 16777216.0 * kept;
    // the chunk holding u; past the end (rounding) the last non-empty chunk, whose last kept token wins
    var cum = 0.0;
    var sel = 0u;
    var base = 0.0;
    for (var i = 0u; i < WG; i++) {
      if (redf[i] > 0.0) {
        sel = i;
        base = cum;
        if (u < cum + redf[i]) { break; }
      }
      cum += redf[i];
    }
    pick = vec2u(sel, bitcast<u32>(kept));
    pickBase = base;
    redu[0] = bitcast<u32>(u);
  }
  workgroupBarrier();
  if (lid == pick.x) {
    let u = bitcast<f32>(redu[0]);
    let kept = bitcast<f32>(pick.y);
    var cum = pickBase;
    var tok = 0u;
    for (var v = lo; v < hi; v++) {
      if (ordered(logits[at(b, v)]) < thr) { continue; }
      tok = v;
      cum += exp((logits[at(b, v)] - mx) * inv);
      if (u < cum) { break; }
    }
    tokens[row] = i32(tok);
    logps[row] = (logits[at(b, tok)] - mx) * inv - log(kept);
  }
}
