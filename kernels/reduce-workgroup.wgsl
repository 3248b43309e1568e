// Workgroup-wide sum and max without subgroups: a tree in workgroup memory, log2(WG) barriers
// (WG a power of two). Prepended to a kernel by kernels/reduce.ts when the device has no
// `subgroups` (or Runtime.subgroups is off); reduce-subgroup.wgsl defines the same functions.
// The kernel declares `override WG` and takes a `Lane` in its entry point. Every invocation of
// the workgroup must call these in uniform control flow; all get the result. Same order of
// additions as the trees the kernels had before (bit-identical results).

struct Lane { @builtin(local_invocation_index) i: u32 }

var<workgroup> reduce_red: array<vec2f, WG>;

fn reduce_tree(v: vec2f, l: Lane, is_max: bool) -> vec2f {
  reduce_red[l.i] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l.i < s) {
      if (is_max) {
        reduce_red[l.i] = max(reduce_red[l.i], reduce_red[l.i + s]);
      } else {
        reduce_red[l.i] += reduce_red[l.i + s];
      }
    }
    workgroupBarrier();
  }
  let r = reduce_red[0];
  workgroupBarrier();
  return r;
}

fn wgSum(v: f32, l: Lane) -> f32 { return reduce_tree(vec2f(v, 0.0), l, false).x; }
fn wgSum2(v: vec2f, l: Lane) -> vec2f { return reduce_tree(v, l, false); }
fn wgMax(v: f32, l: Lane) -> f32 { return reduce_tree(vec2f(v, 0.0), l, true).x; }
