// Per-kernel GPU time of the quick-demo RL update (old log-probs, then epochs x minibatches of
// forward, backward, AdamW), from timestamp queries (Runtime.startProfile): the table the update
// speed work starts from. Needs an adapter with timestamp-query (lavapipe has it).
// Run: npx tsx --import ./cli/raw-loader.mjs bench/profile-update.ts [--steps N] [--recipe FILE]
// (--whole: the whole step, rollout included; LAB_KERNEL_PLAN=NAME: another plan; --recipe: another recipe than quick-demo;
// --plan-change '{"attention":"loop"}': the device's plan with those entries changed, bench/plan-variant.ts)
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseRecipeFile } from "../config/recipe-file";
import { createGpu, ENGINE_FEATURES } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import type { ProfiledDispatch } from "../kernels/runtime";
import { GpuModel } from "../model/gpu";
import { createTrainer } from "../rl/run/build-trainer";
import { createNodeSandboxPool } from "../sandbox/pool-node";
import { variantModel } from "./plan-variant";

const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
const stepsArg = process.argv.indexOf("--steps");
const steps = stepsArg > 0 ? Number(process.argv[stepsArg + 1]) : 2;

const recipeArg = process.argv.indexOf("--recipe");
const path =
  recipeArg > 0 ? resolve(process.argv[recipeArg + 1]) : join(ROOT, "public/recipes/quick-demo.json");
const r = parseRecipeFile(readFileSync(path, "utf8"), path);
if (!r.ok) throw new Error(r.error);
/** --whole: profile the whole step, the rollout's decoding included, not only the update. */
const whole = process.argv.includes("--whole");
const changeArg = process.argv.indexOf("--plan-change");
const change = changeArg > 0 ? JSON.parse(process.argv[changeArg + 1]) : null;
const gpu = await createGpu(await nodeGpu(), { optionalFeatures: [...ENGINE_FEATURES, "timestamp-query"] });
const sandbox = createNodeSandboxPool({ size: 2 });
let model: GpuModel | null = null;
let profiling = false;
/** Wall ms spent awaiting the model's forwardScore and backward in the current step. */
const awaited = { forwardScore: 0, backward: 0 };
const trainer = await createTrainer(r.config, {
  makeModel: async (mc, w, seed) => {
    const m = change
      ? await variantModel(gpu.device, change, mc, w, seed)
      : await GpuModel.create(gpu.device, mc, w, seed);
    if (!model) {
      model = m;
      const fs = m.forwardScore.bind(m);
      m.forwardScore = async (batch, options) => {
        if (!profiling) {
          m.rt.startProfile();
          profiling = true;
        }
        const t0 = performance.now();
        const r = await fs(batch, options);
        awaited.forwardScore += performance.now() - t0;
        return r;
      };
      const bw = m.backward.bind(m);
      m.backward = async (grads) => {
        const t0 = performance.now();
        await bw(grads);
        awaited.backward += performance.now() - t0;
      };
    }
    return m;
  },
  sandbox,
  readFile: async (p) => new Uint8Array(readFileSync(join(ROOT, "public", p))),
});
let last: ProfiledDispatch[] = [];
for (let s = 0; s < steps; s++) {
  profiling = false;
  if (whole && model) {
    (model as GpuModel).rt.startProfile();
    profiling = true;
  }
  awaited.forwardScore = 0;
  awaited.backward = 0;
  const t0 = performance.now();
  const { row } = await trainer.rlStep();
  const wall = (performance.now() - t0) / 1000;
  if (!model) throw new Error("no model was made");
  last = profiling ? await (model as GpuModel).rt.readProfile() : [];
  const timing = Object.entries(row)
    .filter(([k]) => k.startsWith("timing/"))
    .map(([k, v]) => `${k}=${Number(v).toFixed(2)}`)
    .join(" ");
  const gpuS = last.reduce((a, d) => a + d.ns, 0) / 1e9;
  console.log(
    `step ${s}: wall ${wall.toFixed(2)} s, update GPU ${gpuS.toFixed(2)} s over ${last.length} dispatches; awaiting forwardScore ${(awaited.forwardScore / 1000).toFixed(2)} s, backward ${(awaited.backward / 1000).toFixed(2)} s; ${timing}`,
  );
}
const by = new Map<string, { ns: number; n: number; shapes: Map<string, number> }>();
for (const d of last) {
  const e = by.get(d.label) ?? { ns: 0, n: 0, shapes: new Map() };
  e.ns += d.ns;
  e.n++;
  const k = d.groups.join("x");
  e.shapes.set(k, (e.shapes.get(k) ?? 0) + d.ns);
  by.set(d.label, e);
}
const total = last.reduce((a, d) => a + d.ns, 0);
console.log("| kernel | dispatches | GPU ms | share | top workgroup grids (ms) |");
console.log("|---|---|---|---|---|");
for (const [label, e] of [...by].sort((a, b) => b[1].ns - a[1].ns)) {
  const shapes = [...e.shapes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([k, ns]) => `${k}: ${(ns / 1e6).toFixed(0)}`)
    .join(", ");
  console.log(
    `| ${label} | ${e.n} | ${(e.ns / 1e6).toFixed(1)} | ${((100 * e.ns) / total).toFixed(1)}% | ${shapes} |`,
  );
}
await sandbox.close();
gpu.device.destroy();
