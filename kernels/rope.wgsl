// Rotary position embedding, in place on a strided slice of rows (the q or k part of qkv): pairs
// (i, i + hd/2) of each head rotate by theta = pos[n] * base^(-2i/hd); backward rotates the
// gradient by -theta (sign = -1). cos and sin come from cs, the host's float64 table (rope.ts
// ropeTable); a position past it gives NaN. One thread per (row, head, pair). Reference:
// ropeForwardRef.

struct P { N: u32, nHeads: u32, headDim: u32, rowStride: u32, colOffset: u32, positions: u32, sign: f32 }

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> pos: array<u32>; // (N)
@group(0) @binding(2) var<storage, read> cs: array<vec2f>;      // (positions, hd/2): cos, sin
@group(0) @binding(3) var<uniform> p: P;

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let half = p.headDim / 2u;
  let idx = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (idx >= p.N * p.nHeads * half) { return; }
  let i = idx % half;
  let h = (idx / half) % p.nHeads;
  let n = idx / (half * p.nHeads);
  let at = pos[n];
  // NaN (a quiet NaN's bits, built from a runtime value: a NaN constant does not compile)
  var r = vec2f(bitcast<f32>(0x7fc00000u | min(at, 0u)));
  if (at < p.positions) { r = cs[at * half + i]; }
  let c = r.x;
  let s = p.sign * r.y;
  let a = n * p.rowStride + p.colOffset + h * p.headDim + i;
  let x0 = x[a];
  let x1 = x[a + half];
  x[a] = x0 * c - x1 * s;
  x[a + half] = x0 * s + x1 * c;
}
