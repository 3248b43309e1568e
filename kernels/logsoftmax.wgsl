// Fused log-softmax head over the vocabulary, one workgroup per row of logits (N,V), z = logits *
// invTemp: logp = z[target] - logsumexp(z), H = entropy of softmax(z), and dlogits (written) =
// d/dlogits of wlp*logp + went*H. Everything is computed on z - max(z), so large logits neither
// overflow nor cancel. target < 0: logp 0 and a zero gradient row. Reference: logSoftmaxRef.

struct P { N: u32, V: u32, invTemp: f32 }

@group(0) @binding(0) var<storage, read_write> logp: array<f32>;    // (N)
@group(0) @binding(1) var<storage, read_write> ent: array<f32>;     // (N)
@group(0) @binding(2) var<storage, read_write> dlogits: array<f32>; // (N,V)
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;  // (N,V)
@group(0) @binding(4) var<storage, read_write> targets: array<i32>; // (N)
@group(0) @binding(5) var<storage, read_write> wlp: array<f32>;     // (N)
@group(0) @binding(6) var<storage, read_write> went: array<f32>;    // (N)
@group(0) @binding(7) var<uniform> p: P;

override WG: u32 = 256;
var<workgroup> red: array<f32, WG>;

fn reduce(v: f32, lid: u32, is_max: bool) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      if (is_max) { red[lid] = max(red[lid], red[lid + s]); } else { red[lid] += red[lid + s]; }
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid3: vec3u) {
  let n = wid.y * nwg.x + wid.x;
  if (n >= p.N) { return; }
  let lid = lid3.x;
  let r = n * p.V;
  var mx = -3.4e38;
  for (var v = lid; v < p.V; v += WG) { mx = max(mx, logits[r + v] * p.invTemp); }
  mx = reduce(mx, lid, true);
  var s = 0.0;
  var sz = 0.0;
  for (var v = lid; v < p.V; v += WG) {
    let z = logits[r + v] * p.invTemp - mx;
    let e = exp(z);
    s += e;
    sz += e * z;
  }
  let sum = reduce(s, lid, false);
  let pz = reduce(sz, lid, false) / sum; // E_p[z - max]
  let lsum = log(sum);
  let t = targets[n];
  if (lid == 0u) {
    ent[n] = lsum - pz;
    logp[n] = select(0.0, logits[r + u32(max(t, 0))] * p.invTemp - mx - lsum, t >= 0);
  }
  let a = wlp[n];
  let b = went[n];
  for (var v = lid; v < p.V; v += WG) {
    if (t < 0) { dlogits[r + v] = 0.0; continue; }
    let z = logits[r + v] * p.invTemp - mx;
    let pr = exp(z - lsum);
    let hit = select(0.0, 1.0, i32(v) == t);
    dlogits[r + v] = p.invTemp * (a * (hit - pr) - b * pr * (z - pz));
  }
}
