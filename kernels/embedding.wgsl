// Token (+ learned position) embedding and its deterministic backward (no atomics). The token
// table may be larger than one binding: both entry points work on a slice of its rows
// [rowBase, rowBase + rows), and the caller dispatches once per slice. A token id < 0 is padding:
// a zero row (written by the slice at row 0) and no gradient.

struct P { N: u32, C: u32, rowBase: u32, rows: u32, k0: u32, count: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;   // (N,C)
@group(0) @binding(1) var<storage, read_write> tokens: array<i32>; // (N)
@group(0) @binding(2) var<storage, read_write> pos: array<u32>;    // (N)
@group(0) @binding(3) var<storage, read_write> wte: array<f32>;    // (rows,C): table rows [rowBase, rowBase+rows)
@group(0) @binding(4) var<storage, read_write> wpe: array<f32>;    // (maxT,C)
@group(0) @binding(5) var<uniform> p: P;

override WG: u32 = 64;
override HAS_WPE: bool = true;

// One thread per output element; only tokens in this slice's rows are written.
@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (i >= p.N * p.C) { return; }
  let n = i / p.C;
  let c = i % p.C;
  let t = tokens[n];
  if (t < 0) {
    if (p.rowBase == 0u) { outp[i] = 0.0; }
    return;
  }
  let r = u32(t);
  if (r < p.rowBase || r >= p.rowBase + p.rows) { return; }
  var x = wte[(r - p.rowBase) * p.C + c];
  if (HAS_WPE) { x += wpe[pos[n] * p.C + c]; }
  outp[i] = x;
}

// dtable rows [rowBase, rowBase+rows) += dout summed per key. The keys (token ids or positions)
// of the batch come grouped on the host: keys[k] ascending, its dout rows order[starts[k] ..
// starts[k+1]) in token order. One thread per (key k0 + j, channel) adds its rows in that order.
@group(0) @binding(0) var<storage, read_write> dtable: array<f32>;   // (rows,C)
@group(0) @binding(1) var<storage, read_write> keys: array<i32>;     // (count of keys)
@group(0) @binding(2) var<storage, read_write> starts: array<u32>;   // (count of keys + 1)
@group(0) @binding(3) var<storage, read_write> dout: array<f32>;     // (N,C)
@group(0) @binding(4) var<storage, read_write> order: array<u32>;    // (N)

@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (i >= p.count * p.C) { return; }
  let k = p.k0 + i / p.C;
  let c = i % p.C;
  var s = 0.0;
  for (var q = starts[k]; q < starts[k + 1u]; q++) { s += dout[order[q] * p.C + c]; }
  dtable[(u32(keys[k]) - p.rowBase) * p.C + c] += s;
}
