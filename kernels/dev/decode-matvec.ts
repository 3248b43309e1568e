// Matvec variants at SmolLM2-135M's decode shapes (M = 1 row): wall time of `reps` dispatches per
// submit, median of interleaved runs, and the max difference from matmulRef.
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/decode-matvec.ts [K,N,reps] [variants]
import { createGpu, ENGINE_FEATURES } from "../device";
import mv0 from "../matvec.wgsl?raw";
import { nodeGpu } from "../node-gpu";
import { packUniform, Runtime } from "../runtime";
import { randn } from "../testing";

const [K, N, reps] = (process.argv[2] ?? "576,3072,20").split(",").map(Number);
const { device } = await createGpu(await nodeGpu(), { optionalFeatures: [...ENGINE_FEATURES] });
const rt = new Runtime(device);
console.log(`subgroups ${rt.subgroups} sizes ${rt.subgroupSizes}`);
const head = `
struct P { M: u32, N: u32, K: u32, hasBias: u32 }
@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(4) var<uniform> p: P;
override WG: u32 = 64;
`;
const V: Record<string, { code: string; wg: number; cols: number; ext?: string }> = {
  v0: { code: mv0, wg: 64, cols: 1 },
  // vec4 loads, one row, vec4 accumulator
  v1: {
    wg: 64,
    cols: 1,
    code: `${head}
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (n >= p.N) { return; }
  let K4 = p.K / 4u;
  let row = n * K4;
  var acc = vec4f(0.0);
  for (var k = 0u; k < K4; k++) { acc = fma(A[k], B[row + k], acc); }
  outp[n] = (acc.x + acc.y) + (acc.z + acc.w);
}`,
  },
  // vec4 loads, 2 vec4 per iteration
  v2: {
    wg: 64,
    cols: 1,
    code: `${head}
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (n >= p.N) { return; }
  let K4 = p.K / 4u;
  let row = n * K4;
  var acc = vec4f(0.0);
  var acc2 = vec4f(0.0);
  for (var k = 0u; k < K4; k += 2u) { acc = fma(A[k], B[row + k], acc); acc2 = fma(A[k+1u], B[row + k + 1u], acc2); }
  acc += acc2;
  outp[n] = (acc.x + acc.y) + (acc.z + acc.w);
}`,
  },
  // subgroup: one subgroup (8 lanes) per column, lanes split K in vec4s, subgroupAdd
  v3: {
    wg: 8,
    cols: 1 / 8,
    ext: "subgroups",
    code: `enable subgroups;
${head}
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = wid.y * nwg.x + wid.x;
  if (n >= p.N) { return; }
  let K4 = p.K / 4u;
  let row = n * K4;
  var acc = vec4f(0.0);
  for (var k = lid.x; k < K4; k += WG) { acc = fma(A[k], B[row + k], acc); }
  let s = subgroupAdd((acc.x + acc.y) + (acc.z + acc.w));
  if (lid.x == 0u) { outp[n] = s; }
}`,
  },
  // subgroup lanes split K, each workgroup of 8 lanes does 8 columns in a loop
  v4: {
    wg: 8,
    cols: 1,
    ext: "subgroups",
    code: `enable subgroups;
${head}
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n0 = (wid.y * nwg.x + wid.x) * WG;
  let K4 = p.K / 4u;
  var mine = 0.0;
  for (var j = 0u; j < WG; j++) {
    let n = min(n0 + j, p.N - 1u);
    let row = n * K4;
    var acc = vec4f(0.0);
    for (var k = lid.x; k < K4; k += WG) { acc = fma(A[k], B[row + k], acc); }
    let s = subgroupAdd((acc.x + acc.y) + (acc.z + acc.w));
    if (lid.x == j) { mine = s; }
  }
  if (n0 + lid.x < p.N) { outp[n0 + lid.x] = mine; }
}`,
  },
  v6: {
    wg: 64,
    cols: 1,
    code: `${head}
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
  if (n >= p.N) { return; }
  let K4 = p.K / 4u;
  let row = n * K4;
  var acc = vec4f(0.0);
  var acc2 = vec4f(0.0);
  var acc3 = vec4f(0.0);
  var acc4 = vec4f(0.0);
  for (var k = 0u; k < K4; k += 4u) {
    acc = fma(A[k], B[row + k], acc); acc2 = fma(A[k+1u], B[row + k + 1u], acc2);
    acc3 = fma(A[k+2u], B[row + k+2u], acc3); acc4 = fma(A[k+3u], B[row + k + 3u], acc4);
  }
  acc += acc2 + acc3 + acc4;
  outp[n] = (acc.x + acc.y) + (acc.z + acc.w);
}`,
  },
  // two columns per thread (rows n and n + N/2)
  v7: {
    wg: 32,
    cols: 1,
    code: `${head}
@group(0) @binding(1) var<storage, read_write> A: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> B: array<vec4f>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n = (wid.y * nwg.x + wid.x) * WG + lid.x;
  let h = p.N / 2u;
  if (n >= h) { return; }
  let K4 = p.K / 4u;
  let row = n * K4;
  let row2 = (n + h) * K4;
  var acc = vec4f(0.0);
  var acc2 = vec4f(0.0);
  for (var k = 0u; k < K4; k ++) {
    let a = A[k];
    acc = fma(a, B[row + k], acc); acc2 = fma(a, B[row2 + k], acc2);
  }
  outp[n] = (acc.x + acc.y) + (acc.z + acc.w);
  outp[n + h] = (acc2.x + acc2.y) + (acc2.z + acc2.w);
}`,
  },
};
const names = (process.argv[3] ?? Object.keys(V).join(",")).split(",");
const a = randn(K, 1);
const b = randn(N * K, 2, 1 / Math.sqrt(K));
const A = rt.tensor(a);
const Bt = rt.tensor(b);
const out = rt.tensor(N);
const ref = new Float64Array(N);
for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) ref[n] += a[k] * b[n * K + k];
const u = packUniform([
  ["u32", 1],
  ["u32", N],
  ["u32", K],
  ["u32", 0],
]);
const times = new Map<string, number[]>();
for (let r = 0; r <= 5; r++) {
  for (const name of names) {
    const v = V[name];
    if (v.ext && !rt.subgroups) continue;
    const pipe = rt.pipeline(v.code, "main", name === "v0" ? { WG: v.wg, WIDE: 0 } : { WG: v.wg });
    const groups = Math.ceil((N * (v.cols === 1 ? 1 : 8)) / v.wg / (v.cols === 1 ? 1 : 1));
    device.queue.writeBuffer(out.buffer, out.offset, new Float32Array(N));
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    for (let i = 0; i < reps; i++)
      rt.dispatch(
        enc,
        pipe,
        [out, A, Bt, name === "v0" ? rt.dummy : null, rt.uniform(u)],
        [v.cols === 1 ? Math.ceil(N / v.wg) : N],
      );
    rt.submit(enc);
    await device.queue.onSubmittedWorkDone();
    const ms = (performance.now() - t0) / reps;
    if (r === 0) {
      const got = await rt.read(out);
      let d = 0;
      for (let i = 0; i < N; i++) d = Math.max(d, Math.abs(got[i] - ref[i]));
      console.log(`${name}: max diff ${d.toExponential(1)}`);
    } else times.set(name, [...(times.get(name) ?? []), ms]);
    void groups;
  }
}
for (const [name, t] of times) {
  t.sort((x, y) => x - y);
  const med = t[t.length >> 1];
  console.log(
    `${name} median ${med.toFixed(2)} ms/dispatch, ${((K * N) / med / 1e6).toFixed(2)} GMAC/s (${t.map((x) => x.toFixed(1)).join(" ")})`,
  );
}
device.destroy();
