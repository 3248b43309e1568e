// Per-kernel GPU time of KV-cache decoding at SmolLM2-135M's shape (random weights, batch 1 and
// 30 layers unless --batch / --layers; --lora: rank 16 on all seven targets, as bench/rl-shape.ts),
// from timestamp queries (Runtime.startProfile), summed by entry point over the timed tokens, and
// the wall time per token. Needs timestamp-query (lavapipe has it).
// Run: npx tsx --import ./cli/raw-loader.mjs bench/profile-decode.ts [--layers N] [--batch N] [--lora] [--tokens N] [--no-profile] (LAB_KERNEL_PLAN=NAME: another plan)
import { createGpu, ENGINE_FEATURES } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import type { ProfiledDispatch } from "../kernels/runtime";
import { Runtime } from "../kernels/runtime";
import { modelConfig } from "../model/config";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";
import { LORA_TARGETS } from "../model/lora";
import { profileTable } from "./profile-table";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const layers = arg("--layers", 30);
const tokens = arg("--tokens", 4);
const batch = arg("--batch", 1);
const profiling = !process.argv.includes("--no-profile");
const gpu = await createGpu(await nodeGpu(), {
  optionalFeatures: profiling ? [...ENGINE_FEATURES, "timestamp-query"] : [...ENGINE_FEATURES],
});
const rt = new Runtime(gpu.device);
const base = { ...hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: 256 }), layers };
const c = process.argv.includes("--lora")
  ? modelConfig({ ...base, lora: { rank: 16, alpha: 32, targets: [...LORA_TARGETS] } })
  : base;
let t0 = performance.now();
const model = new GpuModel(rt, c, undefined, 1);
console.log(`init ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const gen = model.startGeneration({ temperature: 1, seed: 3 });
const rows = new Array(batch).fill(true);
await gen.prefill(Array.from({ length: batch }, (_, b) => [1 + b, 2, 3, 4]));
await gen.decode(rows);
await gen.decode(rows);
t0 = performance.now();
for (let i = 0; i < tokens; i++) await gen.decode(rows);
console.log(`unprofiled: ${(((performance.now() - t0) / 1000 / tokens) * 1000).toFixed(0)} ms/token`);
if (!profiling) process.exit(0);
rt.startProfile();
t0 = performance.now();
for (let i = 0; i < tokens; i++) await gen.decode(rows);
const wall = (performance.now() - t0) / 1000;
const last: ProfiledDispatch[] = await rt.readProfile();
const total = last.reduce((a, d) => a + d.ns, 0);
console.log(
  `${tokens} tokens: wall ${((wall / tokens) * 1000).toFixed(0)} ms/token (profiled), GPU ${(total / 1e6 / tokens).toFixed(0)} ms/token, ${last.length / tokens} dispatches/token`,
);
console.log(profileTable(last, tokens, "/token"));
gen.finish();
model.dispose();
gpu.device.destroy();
