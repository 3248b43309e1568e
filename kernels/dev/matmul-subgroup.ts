// matmul-subgroup.ts's kernel against matmul.wgsl (rt.subgroupMatmul off, the tuned or given
// tile) at SmolLM2's products (1024 rows: a forward, its input gradient, a weight gradient):
// max difference (bit-identical is 0) and GFMA/s, median of 3 interleaved after one warm-up each.
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/matmul-subgroup.ts [M,N,K[,tA,tB] ...]
import { createGpu, ENGINE_FEATURES } from "../device";
import { matmul } from "../matmul";
import { subgroupMatmulSize } from "../matmul-subgroup";
import { nodeGpu } from "../node-gpu";
import { devicePlan, planWith } from "../plan";
import type { MatmulShape } from "../reference";
import { Runtime } from "../runtime";
import { randn } from "../testing";

const given = process.argv.slice(2).map((a): [string, MatmulShape] => {
  const [M, N, K, tA, tB] = a.split(",").map(Number);
  return [a, { M, N, K, transA: tA === 1, transB: tB === 1 }];
});
const shapes: [string, MatmulShape][] = given.length
  ? given
  : [
      ["forward 1024x576 . (1536x576)T", { M: 1024, N: 1536, K: 576, transB: true }],
      ["input grad 1024x1536 . 1536x576", { M: 1024, N: 576, K: 1536 }],
      ["weight grad (1024x576)T . 1024x1536", { M: 576, N: 1536, K: 1024, transA: true }],
      ["head 512x576 . (49152x576)T", { M: 512, N: 49152, K: 576, transB: true }],
    ];
const { device, adapter } = await createGpu(await nodeGpu(), { optionalFeatures: [...ENGINE_FEATURES] });
const plan = (subgroupMatmul: boolean) =>
  planWith(devicePlan(device).plan, { smallRows: 0, matmul: "tiled", subgroupMatmul });
const runtimes = {
  tiled: new Runtime(device, { plan: plan(false) }),
  subgroup: new Runtime(device, { plan: plan(true) }),
};
let rt = runtimes.subgroup;
console.log(
  `${adapter.description}: subgroup size for the kernel ${subgroupMatmulSize(rt) || "none (it does not run here)"}`,
);
const median = (a: number[]) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)];
for (const [name, s] of shapes) {
  const a = rt.tensor(randn(s.M * s.K, 1));
  const b = rt.tensor(randn(s.K * s.N, 2));
  const outs = { tiled: rt.tensor(s.M * s.N), subgroup: rt.tensor(s.M * s.N) };
  const run = async (which: "tiled" | "subgroup") => {
    rt = runtimes[which];
    const t = performance.now();
    const enc = device.createCommandEncoder();
    matmul(rt, enc, outs[which], a, b, null, s);
    rt.submit(enc);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t) / 1000;
  };
  await run("tiled");
  await run("subgroup");
  const [x, y] = [await rt.read(outs.tiled), await rt.read(outs.subgroup)];
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff = Math.max(diff, Math.abs(x[i] - y[i]));
  const t = { tiled: [] as number[], subgroup: [] as number[] };
  for (let r = 0; r < 3; r++) for (const k of ["tiled", "subgroup"] as const) t[k].push(await run(k));
  const g = (sec: number) => ((s.M * s.N * s.K) / sec / 1e9).toFixed(2);
  const [ti, sg] = [median(t.tiled), median(t.subgroup)];
  console.log(
    `${name}: tiled ${g(ti)} GFMA/s, subgroup ${g(sg)} GFMA/s, ${(ti / sg).toFixed(2)}x; max difference ${diff}`,
  );
  for (const v of [a, b, outs.tiled, outs.subgroup]) v.buffer.destroy();
}
device.destroy();
