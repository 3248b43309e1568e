// Rotary position embedding, in place on a strided slice of rows (the q or k part of qkv): pairs
// (i, i + hd/2) of each head rotate by theta = pos[n] * base^(-2i/hd); backward rotates the
// gradient by -theta (sign = -1). One thread per (row, head, pair). Reference: ropeForwardRef.

struct P { N: u32, nHeads: u32, headDim: u32, rowStride: u32, colOffset: u32, base: f32, sign: f32 }

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> pos: array<u32>; // (N)
@group(0) @binding(2) var<uniform> p: P;

override WG: u32 = 64;
const TWO_PI = 6.283185307179586;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let half = p.headDim / 2u;
  let idx = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (idx >= p.N * p.nHeads * half) { return; }
  let i = idx % half;
  let h = (idx / half) % p.nHeads;
  let n = idx / (half * p.nHeads);
  let theta = f32(pos[n]) * pow(p.base, -2.0 * f32(i) / f32(p.headDim));
  // reduced to [-pi, pi] first: WGSL's sin/cos promise their accuracy only there, and positions
  // of real contexts (thousands) give angles of thousands of radians
  let r = theta - TWO_PI * round(theta / TWO_PI);
  let c = cos(r);
  let s = p.sign * sin(r);
  let a = n * p.rowStride + p.colOffset + h * p.headDim + i;
  let x0 = x[a];
  let x1 = x[a + half];
  x[a] = x0 * c - x1 * s;
  x[a + half] = x0 * s + x1 * c;
}
