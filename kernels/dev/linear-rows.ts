// linear-rows.wgsl as committed against another revision's, side by side at the given shapes
// (K,N,M: inner size, weight rows, rows of A), plain product (no norm, residual or SwiGLU):
// median of 3 interleaved repetitions of 3 dispatches each, after one warm-up dispatch each.
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/linear-rows.ts [--base REV] K,N,M ...
// ("ours" is linearRows as the engine runs it: A staged or shared by subgroupShuffle where it would be.)
// (default base 8bfa4cb: two vec4s an iteration into vec4 accumulators, A read from storage.)
import { execFileSync } from "node:child_process";
import { linearRows } from "../decode";
import { createGpu, ENGINE_FEATURES } from "../device";
import { nodeGpu } from "../node-gpu";
import { packUniform, Runtime, view } from "../runtime";
import { randn } from "../testing";

const args = process.argv.slice(2);
const bi = args.indexOf("--base");
const base = bi >= 0 ? args.splice(bi, 2)[1] : "8bfa4cb";
const shapes = args.length ? args : ["576,49152,1", "576,49152,4", "576,49152,8", "576,3072,4", "1536,576,4"];
const srcs = {
  base: execFileSync("git", ["show", `${base}:kernels/linear-rows.wgsl`], { encoding: "utf8" }),
};
const { device } = await createGpu(await nodeGpu(), { optionalFeatures: [...ENGINE_FEATURES] });
const rt = new Runtime(device);
const sinks = [0, 1, 2, 3].map((k) => view(rt.buffer(64, `sink-${k}`), 0, 64));
const median = (a: number[]) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)];
for (const shape of shapes) {
  const [K, N, M] = shape.split(",").map(Number);
  const w = rt.tensor(randn(N * K, 1));
  const x = rt.tensor(randn(M * K, 2));
  const out = rt.tensor(M * N);
  const u = rt.uniform(
    packUniform([
      ["u32", M],
      ["u32", N],
      ["u32", K],
      ["u32", 0],
      ["f32", 0],
    ]),
  );
  const pipe = rt.pipeline(srcs.base, "main", {
    WG: 64,
    ROWS: M,
    NORM: 0,
    WRITE_NORMED: 0,
    RESID: 0,
    GLU: 0,
  });
  const run = async (which: "base" | "ours", reps: number) => {
    const t = performance.now();
    const enc = device.createCommandEncoder();
    for (let i = 0; i < reps; i++) {
      // ours as the engine runs it (A staged, or shared by subgroupShuffle, where linearRows would)
      if (which === "ours") linearRows(rt, enc, out, x, w, null, M, K, N);
      else
        rt.dispatch(
          enc,
          pipe,
          [out, x, w, sinks[0], u, sinks[1], sinks[2], sinks[3]],
          [Math.ceil(Math.ceil(N / 2) / 64)],
        );
    }
    rt.submit(enc);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t) / 1000 / reps;
  };
  await run("base", 1);
  await run("ours", 1);
  const t = { base: [] as number[], ours: [] as number[] };
  for (let r = 0; r < 3; r++) for (const k of ["base", "ours"] as const) t[k].push(await run(k, 3));
  const [b, o] = [median(t.base), median(t.ours)];
  const gfma = (s: number) => ((M * K * N) / s / 1e9).toFixed(2);
  console.log(
    `K ${K} N ${N} M ${M}: ${base} ${(b * 1000).toFixed(1)} ms (${gfma(b)} GFMA/s), ours ${(o * 1000).toFixed(1)} ms (${gfma(o)} GFMA/s): ${(b / o).toFixed(2)}x`,
  );
  for (const v of [w, x, out]) v.buffer.destroy();
}
device.destroy();
