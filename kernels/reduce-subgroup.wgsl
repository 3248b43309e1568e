// Workgroup-wide sum and max with subgroups: subgroupAdd / subgroupMax inside each subgroup, one
// value per subgroup in workgroup memory (at its subgroup_id), then every invocation adds those
// num_subgroups values in order. One barrier pair instead of log2(WG), none at all when the
// workgroup is one subgroup. Correct for any subgroup size (lavapipe 8, SwiftShader 4, GPUs
// 16-128, possibly different per pipeline): nothing here assumes a size or how invocations map
// onto subgroups. Deterministic for a given subgroup size; the bits differ from the tree's
// (reduce-workgroup.wgsl, the same functions), within the kernels' tolerance.
// Prepended by kernels/reduce.ts where Runtime.subgroups is set.
enable subgroups;

struct Lane {
  @builtin(local_invocation_index) i: u32,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) nsg: u32,
}

var<workgroup> reduce_red: array<vec2f, WG>;

// The adapter's smallest subgroup size (reduce.ts writes it in; 0 when unknown). A workgroup of
// at most that many invocations is one subgroup: no workgroup memory, no barrier. (Tint does not
// count num_subgroups as uniform, so the test cannot be on l.nsg.)
const REDUCE_MIN_SUBGROUP = 0u;

fn reduce_sub(v: vec2f, l: Lane, is_max: bool) -> vec2f {
  var s: vec2f;
  if (is_max) { s = subgroupMax(v); } else { s = subgroupAdd(v); }
  if (WG <= REDUCE_MIN_SUBGROUP) { return s; }
  if (subgroupElect()) { reduce_red[l.sg] = s; }
  workgroupBarrier();
  var t = reduce_red[0];
  for (var k = 1u; k < l.nsg; k++) {
    if (is_max) { t = max(t, reduce_red[k]); } else { t += reduce_red[k]; }
  }
  workgroupBarrier();
  return t;
}

fn wgSum(v: f32, l: Lane) -> f32 { return reduce_sub(vec2f(v, 0.0), l, false).x; }
fn wgSum2(v: vec2f, l: Lane) -> vec2f { return reduce_sub(v, l, false); }
fn wgMax(v: f32, l: Lane) -> f32 { return reduce_sub(vec2f(v, 0.0), l, true).x; }
