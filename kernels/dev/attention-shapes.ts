// Times causal attention forward + backward at the quick-demo update's shape (B 32, T 80, C 48,
// NH 2) per kernel variant, from timestamp queries (min of 6 interleaved runs).
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/attention-shapes.ts
import { attentionBackward, attentionForward } from "../attention";
import { createGpu, ENGINE_FEATURES } from "../device";
import { nodeGpu } from "../node-gpu";
import { devicePlan, planWith } from "../plan";
import { Runtime } from "../runtime";
import { randn } from "../testing";

const { device } = await createGpu(await nodeGpu(), {
  optionalFeatures: [...ENGINE_FEATURES, "timestamp-query"],
});
let rt = new Runtime(device);
const [B, T, C, NH] = [32, 80, 48, 2];
const qkv = rt.tensor(randn(B * T * 3 * C, 1));
const out = rt.tensor(new Float32Array(B * T * C));
const lse = rt.tensor(new Float32Array(B * NH * T));
const dout = rt.tensor(randn(B * T * C, 2));
const dqkv = rt.tensor(new Float32Array(B * T * 3 * C));
const scratch = rt.tensor(new Float32Array(B * NH * T));
const variants = (process.argv[2] ?? "loop,unrolled").split(",");
const best = new Map<string, number[]>();
for (let rep = 0; rep < 6; rep++) {
  for (const v of variants) {
    rt = new Runtime(device, {
      plan: planWith(devicePlan(device).plan, { matmul: v === "unrolled" ? "unrolled" : "tiled" }),
    });
    const enc = device.createCommandEncoder();
    rt.startProfile();
    for (let i = 0; i < 2; i++) {
      attentionForward(rt, enc, out, lse, qkv, null, B, T, C, NH);
      attentionBackward(rt, enc, dqkv, scratch, dout, qkv, out, lse, null, B, T, C, NH);
    }
    rt.submit(enc);
    const p = await rt.readProfile();
    const ms = p.map((d) => d.ns / 1e6);
    const b = best.get(v) ?? ms;
    best.set(
      v,
      b.map((x, i) => Math.min(x, ms[i])),
    );
  }
}
for (const [v, ms] of best) console.log(v.padEnd(9), "min ms:", ms.map((x) => x.toFixed(1)).join(" "));
device.destroy();
