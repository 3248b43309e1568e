// The training attention kernels' shared interface (attention-blocked.wgsl and attention-tiled.wgsl;
// attention.ts appends it): attention.wgsl's uniforms and bindings, so one dispatch fits all three.

struct P { B: u32, T: u32, C: u32, NH: u32, hs: u32, hasMask: u32, scale: f32, stride: u32, KVH: u32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>; // (B,T,C)   | dqkv in backward (B,T,C+2KV)
@group(0) @binding(1) var<storage, read_write> lse: array<f32>;  // (B,NH,T)
@group(0) @binding(2) var<storage, read_write> qkv: array<f32>;  // (B,T,C+2KV) = [q | k | v]
@group(0) @binding(3) var<storage, read_write> mask: array<u32>; // (B,T)
@group(0) @binding(4) var<storage, read_write> dout: array<f32>; // (B,T,C)
@group(0) @binding(5) var<storage, read_write> fwdout: array<f32>; // (B,T,C) forward output
@group(0) @binding(6) var<storage, read_write> dsum: array<f32>; // (B,NH,T) scratch: D = dout·out
@group(0) @binding(7) var<uniform> p: P;

const LSE_EMPTY = 3.0e38;

fn visible(b: u32, j: u32) -> bool {
  return p.hasMask == 0u || mask[b * p.T + j] != 0u;
}
