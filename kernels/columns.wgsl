// Column blocks of a (N, stride) array: the LoRA term added into one target's columns of a
// fused output (q, k or v of qkv; gate or up of fc), and that block's gradient read back out.
// One thread per element of the (N, cols) block; the 1-D grid may be folded into y.
// Reference: columnsAddRef / columnsGatherRef in reference.ts.

struct P { n: u32, cols: u32, stride: u32, start: u32, scale: f32 }

@group(0) @binding(0) var<storage, read_write> dst: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<uniform> p: P;

override WG: u32 = 256;

fn index(wid: vec3u, nwg: vec3u, lid: vec3u) -> u32 {
  return (wid.y * nwg.x + wid.x) * WG + lid.x;
}

// dst (N,stride) columns [start, start+cols) += scale * src (N,cols)
@compute @workgroup_size(WG)
fn columns_add(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let row = i / p.cols;
  let j = i % p.cols;
  dst[row * p.stride + p.start + j] += p.scale * src[i];
}

// dst (N,cols) = scale * src (N,stride) columns [start, start+cols)
@compute @workgroup_size(WG)
fn columns_gather(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let row = i / p.cols;
  let j = i % p.cols;
  dst[i] = p.scale * src[row * p.stride + p.start + j];
}
