// Token + learned position embedding. Forward: one thread per output element. Backward without
// atomics: one thread per (vocab row or position, channel) walks all tokens in order, so the sum
// is deterministic. A token id < 0 is padding: a zero row and no gradient.

struct P { N: u32, C: u32, rows: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;   // (N,C) or the gradient table
@group(0) @binding(1) var<storage, read_write> tokens: array<i32>; // (N)
@group(0) @binding(2) var<storage, read_write> pos: array<u32>;    // (N)
@group(0) @binding(3) var<storage, read_write> wte: array<f32>;    // (V,C), or dout (N,C) in backward
@group(0) @binding(4) var<storage, read_write> wpe: array<f32>;    // (maxT,C)
@group(0) @binding(5) var<uniform> p: P;

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (i >= p.N * p.C) { return; }
  let n = i / p.C;
  let c = i % p.C;
  let t = tokens[n];
  if (t < 0) { outp[i] = 0.0; return; }
  outp[i] = wte[u32(t) * p.C + c] + wpe[pos[n] * p.C + c];
}

// dtable (binding 0, (rows,C)) += sum over tokens n whose id (BY_POSITION: position) is the row.
override BY_POSITION: bool = false;

@group(0) @binding(0) var<storage, read_write> dtable: array<f32>;
@group(0) @binding(3) var<storage, read_write> dout: array<f32>;

@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (i >= p.rows * p.C) { return; }
  let r = i32(i / p.C);
  let c = i % p.C;
  var s = 0.0;
  for (var n = 0u; n < p.N; n++) {
    let t = tokens[n];
    if (t < 0) { continue; }
    var key = t;
    if (BY_POSITION) { key = i32(pos[n]); }
    if (key == r) { s += dout[n * p.C + c]; }
  }
  dtable[i] += s;
}
