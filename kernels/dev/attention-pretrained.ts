// Times the training attention kernels (the plan's attention variants: loop, blocked, tiled) forward +
// backward at a pretrained head shape (default SmolLM2-135M's: 9 heads of 64 over 3 KV heads),
// wall time per submit, median of interleaved runs, with the max difference from the loop kernel.
// Kernels: loop, blocked, tiled, or blocked:<rows>x<keys> (BLOCKED's sizes); per entry point GPU
// medians from timestamp queries.
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/attention-pretrained.ts [B,T,NH,KVH,hs,reps] [kernels]
import { type AttentionKernel, attentionBackward, attentionForward, BLOCKED } from "../attention";
import { createGpu, ENGINE_FEATURES } from "../device";
import { nodeGpu } from "../node-gpu";
import { devicePlan, planWith } from "../plan";
import { Runtime } from "../runtime";
import { randn } from "../testing";

const [B, T, NH, KVH, hs, reps] = (process.argv[2] ?? "1,256,9,3,64,3").split(",").map(Number);
const kernels = (process.argv[3] ?? "loop,blocked").split(",");
const { device } = await createGpu(await nodeGpu(), {
  optionalFeatures: [...ENGINE_FEATURES, "timestamp-query"],
});
let rt = new Runtime(device);
const C = NH * hs;
const row = C + 2 * KVH * hs;
const qkv = rt.tensor(randn(B * T * row, 1));
const dout = rt.tensor(randn(B * T * C, 2));
const out = rt.tensor(B * T * C);
const lse = rt.tensor(B * NH * T);
const dqkv = rt.tensor(B * T * row);
const scratch = rt.tensor(B * NH * T);
const times = new Map<string, number[]>();
const entries = new Map<string, number[][]>();
const results = new Map<string, Float32Array>();
for (let r = 0; r <= reps; r++) {
  for (const k of kernels) {
    const [name, size] = k.split(":");
    rt = new Runtime(device, {
      plan: planWith(devicePlan(device).plan, { attention: name as AttentionKernel }),
    });
    if (size) [BLOCKED.rows, BLOCKED.keys] = size.split("x").map(Number);
    rt.startProfile();
    device.queue.writeBuffer(dqkv.buffer, dqkv.offset, new Float32Array(B * T * row));
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    attentionForward(rt, enc, out, lse, qkv, null, B, T, C, NH, KVH);
    attentionBackward(rt, enc, dqkv, scratch, dout, qkv, out, lse, null, B, T, C, NH, KVH);
    rt.submit(enc);
    await device.queue.onSubmittedWorkDone();
    const ms = performance.now() - t0;
    const prof = (await rt.readProfile()).map((d) => d.ns / 1e6);
    if (r > 0) entries.set(k, [...(entries.get(k) ?? []), prof]);
    if (r === 0) results.set(k, await rt.read(dqkv));
    else times.set(k, [...(times.get(k) ?? []), ms]);
  }
}
const ref = results.get(kernels[0]) as Float32Array;
for (const k of kernels) {
  const t = (times.get(k) ?? []).sort((a, b) => a - b);
  const got = results.get(k) as Float32Array;
  let d = 0;
  for (let i = 0; i < ref.length; i++) d = Math.max(d, Math.abs(ref[i] - got[i]));
  console.log(
    `${k.padEnd(8)} median ${t[t.length >> 1].toFixed(0)} ms (${t.map((x) => x.toFixed(0)).join(" ")}); max |dqkv - ${kernels[0]}| ${d.toExponential(1)}`,
  );
}
device.destroy();
