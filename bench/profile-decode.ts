// Per-kernel GPU time of KV-cache decoding at batch 1 at SmolLM2-135M's shape (random weights,
// 30 layers unless --layers), from timestamp queries (Runtime.startProfile), summed by entry
// point over the timed tokens, and the wall time per token. Needs timestamp-query (lavapipe has it).
// Run: npx tsx --import ./cli/raw-loader.mjs bench/profile-decode.ts [--layers N] [--tokens N] [--legacy] [--no-profile]
import { createGpu, ENGINE_FEATURES } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import type { ProfiledDispatch } from "../kernels/runtime";
import { Runtime } from "../kernels/runtime";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";
import { profileTable } from "./profile-table";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const layers = arg("--layers", 30);
const tokens = arg("--tokens", 4);
const profiling = !process.argv.includes("--no-profile");
const gpu = await createGpu(await nodeGpu(), {
  optionalFeatures: profiling ? [...ENGINE_FEATURES, "timestamp-query"] : [...ENGINE_FEATURES],
});
const rt = new Runtime(gpu.device);
// --legacy: the decode before the fused kernels (matvec.wgsl, 13 dispatches a block)
rt.legacyDecode = process.argv.includes("--legacy");
const c = { ...hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: 256 }), layers };
let t0 = performance.now();
const model = new GpuModel(rt, c, undefined, 1);
console.log(`init ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const gen = model.startGeneration({ temperature: 1, seed: 3 });
await gen.prefill([[1, 2, 3, 4]]);
await gen.decode([true]);
await gen.decode([true]);
t0 = performance.now();
for (let i = 0; i < tokens; i++) await gen.decode([true]);
console.log(`unprofiled: ${(((performance.now() - t0) / 1000 / tokens) * 1000).toFixed(0)} ms/token`);
if (!profiling) process.exit(0);
rt.startProfile();
t0 = performance.now();
for (let i = 0; i < tokens; i++) await gen.decode([true]);
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
