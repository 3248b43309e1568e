// Fused log-softmax head over the vocabulary, one workgroup per row of a chunk of logits (row
// reductions wgMax/wgSum2 from kernels/reduce.ts: subgroups where the device has them), z =
// logits * invTemp: logp = z[target] - logsumexp(z), H = entropy of softmax(z) (forward), and
// dlogits (written) = d/dlogits of wlp*logp + went*H (backward). Everything is computed on
// z - max(z), so large logits neither overflow nor cancel. target < 0: logp 0 and a zero
// gradient row. Reference: logSoftmaxRef.
//
// A chunk holds rows [rowBase, rowBase + rows) of the batch, stored slice-major: vocabulary slice s
// (ids [s*Vs, s*Vs + len_s), len_s = min(Vs, V - s*Vs)) is a (rows, len_s) block at rows*s*Vs, as
// the head's per-slice matmuls write it. With Vs = V it is a plain (rows, V) block.

struct P { rows: u32, V: u32, Vs: u32, invTemp: f32, rowBase: u32 }

@group(0) @binding(0) var<storage, read_write> logp: array<f32>;    // (N)
@group(0) @binding(1) var<storage, read_write> ent: array<f32>;     // (N)
@group(0) @binding(2) var<storage, read_write> dlogits: array<f32>; // the chunk's layout
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;  // (rows, V) slice-major
@group(0) @binding(4) var<storage, read_write> targets: array<i32>; // (N)
@group(0) @binding(5) var<storage, read_write> wlp: array<f32>;     // (N)
@group(0) @binding(6) var<storage, read_write> went: array<f32>;    // (N)
@group(0) @binding(7) var<uniform> p: P;

override WG: u32 = 256;
// wgSum / wgMax: kernels/reduce.ts prepends the subgroup or the workgroup-tree version

/** Index of (chunk row i, vocabulary id v) in the slice-major chunk. */
fn at(i: u32, v: u32) -> u32 {
  let s = v / p.Vs;
  let len = min(p.Vs, p.V - s * p.Vs);
  return p.rows * s * p.Vs + i * len + (v - s * p.Vs);
}

/** (max z, log sum exp(z - max), E_p[z - max]) of chunk row i. */
fn rowStats(i: u32, lane: Lane) -> vec3f {
  let lid = lane.i;
  var mx = -3.4e38;
  for (var v = lid; v < p.V; v += WG) { mx = max(mx, logits[at(i, v)] * p.invTemp); }
  mx = wgMax(mx, lane);
  var s = 0.0;
  var sz = 0.0;
  for (var v = lid; v < p.V; v += WG) {
    let z = logits[at(i, v)] * p.invTemp - mx;
    let e = exp(z);
    s += e;
    sz += e * z;
  }
  let t = wgSum2(vec2f(s, sz), lane);
  let sum = t.x;
  let pz = t.y / sum;
  return vec3f(mx, log(sum), pz);
}

fn row(wid: vec3u, nwg: vec3u) -> u32 { return wid.y * nwg.x + wid.x; }

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let i = row(wid, nwg);
  if (i >= p.rows) { return; }
  let st = rowStats(i, lane);
  let n = p.rowBase + i;
  let t = targets[n];
  if (lane.i == 0u) {
    ent[n] = st.y - st.z;
    logp[n] = select(0.0, logits[at(i, u32(max(t, 0)))] * p.invTemp - st.x - st.y, t >= 0);
  }
}

@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, lane: Lane) {
  let i = row(wid, nwg);
  if (i >= p.rows) { return; }
  let lid = lane.i;
  let st = rowStats(i, lane);
  let n = p.rowBase + i;
  let t = targets[n];
  let a = wlp[n];
  let b = went[n];
  for (var v = lid; v < p.V; v += WG) {
    let k = at(i, v);
    if (t < 0) { dlogits[k] = 0.0; continue; }
    let z = logits[k] * p.invTemp - st.x;
    let pr = exp(z - st.y);
    let hit = select(0.0, 1.0, i32(v) == t);
    dlogits[k] = p.invTemp * (a * (hit - pr) - b * pr * (z - st.z));
  }
}
