// Rope-append: a decode step's rotary embedding and KV-cache append in one dispatch (rope.wgsl twice and
// attention.wgsl's kv_write before): per row b of qkv (B, Q + 2 KV), the query pairs rotate in
// place, the key pairs rotate in place and go to kcache (B,Tmax,KV) at slot[b], the values go to
// vcache; a row whose slot is >= Tmax writes no cache. ROPE false: no rotation, the append only.
// The same table of cos and sin (the host's float64 angles, rope.ts ropeTable) and arithmetic as
// rope.wgsl (results bit-identical to the three dispatches); a position past the table gives NaN.
// One thread per (row, query pair | key pair | value). Reference: ropeForwardRef and the cache
// layout of decodeAttentionRef. Used by kernels/decode.ts; tested by decode.gpu.test.ts.

struct P { B: u32, NH: u32, KVH: u32, hs: u32, Tmax: u32, positions: u32 }

@group(0) @binding(0) var<storage, read_write> qkv: array<f32>;    // (B, Q + 2 KV)
@group(0) @binding(1) var<storage, read_write> kcache: array<f32>; // (B,Tmax,KV)
@group(0) @binding(2) var<storage, read_write> vcache: array<f32>; // (B,Tmax,KV)
@group(0) @binding(3) var<storage, read_write> pos: array<u32>;    // (B)
@group(0) @binding(4) var<storage, read_write> slot: array<u32>;   // (B)
@group(0) @binding(5) var<storage, read> cs: array<vec2f>;       // (positions, hs/2): cos, sin
@group(0) @binding(6) var<uniform> p: P;

override WG: u32 = 64;
override ROPE: bool = true;

// pair i of a head at row b, rotated to position pos[b] (rope.wgsl's arithmetic), in place
fn rotate(a: u32, i: u32, b: u32) -> vec2f {
  let half = p.hs / 2u;
  let x0 = qkv[a];
  let x1 = qkv[a + half];
  if (!ROPE) { return vec2f(x0, x1); }
  let at = pos[b];
  // NaN (a quiet NaN's bits, built from a runtime value: a NaN constant does not compile)
  var r = vec2f(bitcast<f32>(0x7fc00000u | min(at, 0u)));
  if (at < p.positions) { r = cs[at * half + i]; }
  let c = r.x;
  let s = r.y;
  let y = vec2f(x0 * c - x1 * s, x0 * s + x1 * c);
  qkv[a] = y.x;
  qkv[a + half] = y.y;
  return y;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let half = p.hs / 2u;
  let Q = p.NH * p.hs;
  let KV = p.KVH * p.hs;
  let qPairs = p.NH * half;
  let kPairs = p.KVH * half;
  let per = qPairs + kPairs + KV;
  let idx = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (idx >= p.B * per) { return; }
  let b = idx / per;
  let j = idx % per;
  let rowAt = b * (Q + 2u * KV);
  let t = slot[b];
  let dst = (b * p.Tmax + t) * KV;
  if (j < qPairs) {
    let i = j % half;
    _ = rotate(rowAt + (j / half) * p.hs + i, i, b);
  } else if (j < qPairs + kPairs) {
    let jj = j - qPairs;
    let i = jj % half;
    let c = (jj / half) * p.hs + i;
    let y = rotate(rowAt + Q + c, i, b);
    if (t < p.Tmax) {
      kcache[dst + c] = y.x;
      kcache[dst + c + half] = y.y;
    }
  } else if (t < p.Tmax) {
    let c = j - qPairs - kPairs;
    vcache[dst + c] = qkv[rowAt + Q + KV + c];
  }
}
