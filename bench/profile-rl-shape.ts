// Per-kernel GPU time of one RL step at SmolLM2-135M's layer shape with 4 layers (bench/rl-shape.ts:
// LoRA r16, random weights, 2 prompts x 2 samples, context 512: rollout, old log-probs, one update)
// from timestamp queries (Runtime.startProfile), summed by entry point, on the step after a warm-up
// step (`--steps 1`: the first step, shader compiles included in its wall time but not in the
// per-kernel GPU times). Needs timestamp-query (lavapipe has it). `--prompt N`, `--layers N`,
// `--context N` change the shape; LAB_KERNEL_PLAN names another kernel plan. Run: npx tsx --import ./cli/raw-loader.mjs bench/profile-rl-shape.ts (LAB_KERNEL_PLAN=NAME: another plan)
import { createGpu, ENGINE_FEATURES } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import type { ProfiledDispatch } from "../kernels/runtime";
import { Runtime } from "../kernels/runtime";
import { GpuModel } from "../model/gpu";
import { profileTable } from "./profile-table";
import { RL_SHAPE, rlShapeConfig, rlShapeStep } from "./rl-shape";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const shape = {
  ...RL_SHAPE,
  layers: arg("--layers", RL_SHAPE.layers),
  promptTokens: arg("--prompt", RL_SHAPE.promptTokens),
  context: arg("--context", RL_SHAPE.context),
};
const gpu = await createGpu(await nodeGpu(), { optionalFeatures: [...ENGINE_FEATURES, "timestamp-query"] });
const rt = new Runtime(gpu.device);
const model = new GpuModel(rt, rlShapeConfig(shape), undefined, 1);
let last: ProfiledDispatch[] = [];
const steps = arg("--steps", 2);
for (let s = 0; s < steps; s++) {
  rt.startProfile();
  const t = await rlShapeStep(model, shape, s + 1);
  last = await rt.readProfile();
  const gpuS = last.reduce((a, d) => a + d.ns, 0) / 1e9;
  console.log(
    `step ${s}: wall ${t.totalS.toFixed(1)} s (rollout ${t.rolloutS.toFixed(1)}, old log-probs ${t.oldLogprobsS.toFixed(1)}, update ${t.updateS.toFixed(1)}), GPU ${gpuS.toFixed(1)} s over ${last.length} dispatches; mean response logp ${t.meanLogp.toFixed(2)}`,
  );
}
console.log(`shape ${JSON.stringify(shape)}`);
console.log(profileTable(last));
model.dispose();
gpu.device.destroy();
