// What an operation costs on this adapter (lavapipe's cost model): FMAs from registers, and
// loads from storage and workgroup memory, uniform across lanes, contiguous by lane, or strided.
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/probe-costs.ts [name part ...]
// lavapipe (Mesa 25.0.7, 2 cores, idle, 2026-12-02), GFMA/s with 12 FMAs a load: registers only
// 9.2; storage, uniform address 4.4; contiguous by lane 4.0; stride 16 by lane 4.0; vec4
// contiguous (48 FMAs a load) 7.3; 12 uniform + 1 per-lane loads per 12 FMAs 0.71; workgroup
// memory, uniform 3.8, contiguous 3.2, 12 uniform + 1 per lane 0.87. So a load costs about 13
// FMAs whatever it is (uniform or not, storage or workgroup memory), a vec4 no more than a scalar:
// the model behind kernels/matmul-subgroup.ts.
import { createGpu, ENGINE_FEATURES } from "../device";
import { nodeGpu } from "../node-gpu";
import { packUniform, Runtime } from "../runtime";

const { device } = await createGpu(await nodeGpu(), { optionalFeatures: [...ENGINE_FEATURES] });
const rt = new Runtime(device);
const ITERS = 4096;
const GROUPS = 256;
const ACC = 12;
const data = rt.tensor(new Float32Array(1 << 20).map((_, i) => (i % 7) * 1e-3));
const out = rt.tensor(GROUPS * 64 * 4);
const u = rt.uniform(
  packUniform([
    ["u32", ITERS],
    ["u32", 0],
    ["u32", 0],
    ["u32", 0],
  ]),
);

const accDecl = Array.from({ length: ACC }, (_, i) => `var a${i} = f32(lid.x) * ${i + 1}e-6;`).join("\n");
const accSum = Array.from({ length: ACC }, (_, i) => `a${i}`).join(" + ");
const fmaWith = (v: string) =>
  Array.from({ length: ACC }, (_, i) => `a${i} = fma(a${i}, ${v}, ${i}e-7);`).join("\n");
const head = `
struct P { iters: u32, x: u32, y: u32, z: u32 }
@group(0) @binding(0) var<storage, read_write> outp: array<f32>;
@group(0) @binding(1) var<storage, read> d: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
@group(0) @binding(3) var<storage, read> d4: array<vec4f>;
var<workgroup> ws: array<f32, 1024>;
`;
const kernel = (pre: string, body: string) => `${head}
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  ${accDecl}
  ${pre}
  for (var k = 0u; k < p.iters; k++) {
    ${body}
  }
  ws[lid.x] += f32(p.y); outp[wid.x * 64u + lid.x] = ${accSum} + (d[p.x] + d4[p.x].x + ws[p.x]) * f32(p.y);
}`;
// each probe: [name, kernel, FMAs a lane an iteration, loads a lane an iteration]
const probes: [string, string, number, number][] = [
  ["fma from registers", kernel("", `let v = f32(k) * 1e-9; ${fmaWith("v")}`), ACC, 0],
  ["storage, uniform address", kernel("", `let v = d[k & 1023u]; ${fmaWith("v")}`), ACC, 1],
  [
    "storage, contiguous by lane",
    kernel("", `let v = d[((k * 64u) & 65535u) + lid.x]; ${fmaWith("v")}`),
    ACC,
    1,
  ],
  [
    "storage, stride 16 by lane",
    kernel("", `let v = d[((k * 1024u) & 65535u) + lid.x * 16u]; ${fmaWith("v")}`),
    ACC,
    1,
  ],
  [
    "storage vec4, contiguous by lane",
    kernel(
      "",
      `let q = d4[((k * 64u) & 65535u) + lid.x]; ${Array.from({ length: 3 }, (_, j) => fmaWith(`q[${j}]`)).join("\n")} ${fmaWith("q.w")}`,
    ),
    4 * ACC,
    1,
  ],
  [
    "storage, 12 uniform + 1 by lane",
    kernel(
      "",
      `let v = d[((k * 64u) & 65535u) + lid.x]; ${Array.from({ length: ACC }, (_, i) => `a${i} = fma(d[(k * 16u + ${i}u) & 1023u], v, a${i});`).join("\n")}`,
    ),
    ACC,
    13,
  ],
  [
    "workgroup, uniform address",
    kernel("ws[lid.x] = f32(lid.x); workgroupBarrier();", `let v = ws[k & 1023u]; ${fmaWith("v")}`),
    ACC,
    1,
  ],
  [
    "workgroup, contiguous by lane",
    kernel(
      "ws[lid.x] = f32(lid.x); workgroupBarrier();",
      `let v = ws[(k * 64u + lid.x) & 1023u]; ${fmaWith("v")}`,
    ),
    ACC,
    1,
  ],
  [
    "workgroup, 12 uniform + 1 by lane",
    kernel(
      "ws[lid.x] = f32(lid.x); workgroupBarrier();",
      `let v = ws[(k * 64u + lid.x) & 1023u]; ${Array.from({ length: ACC }, (_, i) => `a${i} = fma(ws[(k * 16u + ${i}u) & 1023u], v, a${i});`).join("\n")}`,
    ),
    ACC,
    13,
  ],
];
const only = process.argv.slice(2);
for (const [name, src, fmas, loads] of probes) {
  if (only.length && !only.some((o) => name.includes(o))) continue;
  const t0 = performance.now();
  const pipe = rt.pipeline(src, "main");
  const run = async () => {
    const t = performance.now();
    const enc = device.createCommandEncoder();
    rt.dispatch(enc, pipe, [out, data, u, data], [GROUPS]);
    rt.submit(enc);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t) / 1000;
  };
  await run();
  const compile = (performance.now() - t0) / 1000;
  const ts = [await run(), await run(), await run()].sort((a, b) => a - b);
  const lanesIters = GROUPS * 64 * ITERS;
  console.log(
    `${name.padEnd(36)} ${(ts[1] * 1000).toFixed(1).padStart(8)} ms  ${((lanesIters * fmas) / ts[1] / 1e9).toFixed(2).padStart(6)} GFMA/s  ${((lanesIters * loads) / ts[1] / 1e9).toFixed(2).padStart(6)} Gload/s  (first run + compile ${compile.toFixed(1)} s)`,
  );
}
device.destroy();
