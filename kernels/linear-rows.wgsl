// Linear-rows: the small-M linear layer for decoding, in vec4s, with what surrounds it fused in:
// out (M,N) = norm(A) (M,K) · Bᵀ (B stored (N,K)) (+ bias (N)) (+ res (M,N)), M = ROWS <= 8.
// Each thread computes two output columns (weight rows t and t + ceil(N/2)), reading them one
// vec4 an iteration and keeping one scalar sum per row and column (dot() per vec4). On lavapipe
// every per-lane load is a gather (a vec4 is one gather of four floats) and each vec4 held per
// lane is four SIMD registers: the former vec4 accumulators (2 x ROWS of them) and two vec4s an
// iteration spilled from 3 rows up; scalar sums are 1.2x faster at 1 row, 1.5-2.1x at 4 and 1.5x
// at 8 (kernels/dev/linear-rows.ts at SmolLM2's shapes). A's vec4s are the same for every lane;
// with STAGE (from 3 rows, where A's ROWS x K floats fit the workgroup memory: SLOTS vec4s) the
// workgroup first copies A into workgroup memory (one barrier) and reads it there: 1.2x at 4
// rows, 2.2x at 8 on lavapipe, the same values. The norm's work on A is shared by the two
// columns. Overrides:
//  - NORM: A is RMSNorm'ed on the fly: each thread sums the squares of its rows of A in the same
//    loop (uniform work), multiplies A by the gain, and scales each row's dot product by
//    1/sqrt(mean + eps) at the end: the norm's own dispatch is gone. WRITE_NORMED also stores the
//    normed A (what a LoRA adapter's A·Uᵀ reads), threads striding over it.
//  - RESID: adds res (M,N), the residual stream: the residual add's dispatch is gone.
//  - GLU: SwiGLU's gate and up in one: B is (2H,K) (gate rows then up rows), so thread t's two
//    rows are gate t and up t; it writes silu(gate) * up to out (M,H).
// Every binding is read_write (the decode step's activations share one buffer, and WebGPU
// forbids read-only and writable uses of one buffer in a dispatch); absent ones bind sinks.
// Needs K % 4 == 0 (every row of A and B starts on a vec4). Reference: matmulRef after
// rmsnormRef (and swigluRef). Used by kernels/decode.ts; tested by decode.gpu.test.ts.

struct P { M: u32, N: u32, K: u32, hasBias: u32, eps: f32 }

@group(0) @binding(0) var<storage, read_write> outp: array<f32>;   // (M,N); (M,N/2) with GLU
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;    // (M,K)
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;    // (N,K); vec4<f16> in the f16 variant
@group(0) @binding(3) var<storage, read_write> bias: array<f32>;   // (N)
@group(0) @binding(4) var<uniform> p: P;
@group(0) @binding(5) var<storage, read_write> gain: array<vec4f>; // (K) RMSNorm weight (NORM)
@group(0) @binding(6) var<storage, read_write> res: array<f32>;    // (M,N) residual (RESID)
@group(0) @binding(7) var<storage, read_write> normed: array<vec4f>; // (M,K) normed A (WRITE_NORMED)

override WG: u32 = 64;
override ROWS: u32 = 1;
override NORM: bool = false;
override WRITE_NORMED: bool = false;
override RESID: bool = false;
override GLU: bool = false;
override STAGE: bool = false;
override SLOTS: u32 = 1;

var<workgroup> As: array<vec4f, SLOTS>;

fn w4(i: u32) -> vec4f { return vec4f(B[i]); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t = (wid.y * nwg.x + wid.x) * WG + lid.x;
  let K4 = p.K / 4u;
  if (STAGE) {
    for (var i = lid.x; i < ROWS * K4; i += WG) { As[i] = A[i]; }
    workgroupBarrier();
  }
  // thread t computes weight rows t and t + pairs (GLU: gate row t and up row H + t)
  let pairs = (p.N + 1u) / 2u;
  let live = t < pairs;
  let row0 = min(t, pairs - 1u) * K4;
  let row1 = min(t + pairs, p.N - 1u) * K4;
  var acc0: array<f32, 8>; // (ROWS) dot products with weight row t
  var acc1: array<f32, 8>; // (ROWS) dot products with weight row t + pairs
  var ss: array<f32, 8>; // (ROWS) sums of squares of A's rows (NORM)
  for (var k = 0u; k < K4; k++) {
    let w = w4(row0 + k);
    let u = w4(row1 + k);
    var g = vec4f(1.0);
    if (NORM) { g = gain[k]; }
    for (var m = 0u; m < ROWS; m++) {
      var x: vec4f;
      if (STAGE) { x = As[m * K4 + k]; } else { x = A[m * K4 + k]; }
      var a = x;
      if (NORM) {
        ss[m] += dot(x, x);
        a *= g;
      }
      acc0[m] += dot(a, w);
      acc1[m] += dot(a, u);
    }
  }
  var rstd: array<f32, 8>;
  for (var m = 0u; m < ROWS; m++) {
    rstd[m] = 1.0;
    if (NORM) { rstd[m] = inverseSqrt(ss[m] / f32(p.K) + p.eps); }
  }
  if (live) {
    let n1 = t + pairs;
    for (var m = 0u; m < ROWS; m++) {
      var x = acc0[m] * rstd[m];
      var y = acc1[m] * rstd[m];
      if (p.hasBias != 0u) {
        x += bias[t];
        y += bias[min(n1, p.N - 1u)];
      }
      if (GLU) {
        outp[m * pairs + t] = x * (1.0 / (1.0 + exp(-x))) * y;
      } else {
        if (RESID) { x += res[m * p.N + t]; }
        outp[m * p.N + t] = x;
        if (n1 < p.N) {
          if (RESID) { y += res[m * p.N + n1]; }
          outp[m * p.N + n1] = y;
        }
      }
    }
  }
  if (NORM && WRITE_NORMED) {
    let threads = nwg.x * nwg.y * WG;
    for (var i = t; i < ROWS * K4; i += threads) {
      let m = i / K4;
      var r = rstd[0];
      for (var j = 1u; j < ROWS; j++) { if (j == m) { r = rstd[j]; } }
      normed[i] = A[i] * r * gain[i % K4];
    }
  }
}
