// Times the tiled matmul at the quick-demo update's shapes (d48, 4x MLP, vocab 107, 2560 rows) with
// the 8x8 tile fitted to a narrow N (Runtime.matmulTileFor; the tile as is is no longer a path of
// the engine), from timestamp queries (bench/profile-update.ts is the whole-update profile).
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/update-shapes.ts
import { createGpu, ENGINE_FEATURES } from "../device";
import { matmul } from "../matmul";
import { nodeGpu } from "../node-gpu";
import { devicePlan, planWith } from "../plan";
import type { MatmulShape } from "../reference";
import { Runtime } from "../runtime";

const { device } = await createGpu(await nodeGpu(), {
  optionalFeatures: [...ENGINE_FEATURES, "timestamp-query"],
});
const rt = new Runtime(device, { plan: planWith(devicePlan(device).plan, { matmulTile: [8, 8] }) });
const R = 2560;
const shapes: [string, MatmulShape][] = [
  ["fwd qkv", { M: R, N: 144, K: 48, transB: true }],
  ["fwd proj", { M: R, N: 48, K: 48, transB: true }],
  ["fwd fc", { M: R, N: 192, K: 48, transB: true }],
  ["fwd fcproj", { M: R, N: 48, K: 192, transB: true }],
  ["fwd head", { M: R, N: 107, K: 48, transB: true }],
  ["dx qkv", { M: R, N: 48, K: 144, accumulate: true }],
  ["dx fc", { M: R, N: 48, K: 192, accumulate: true }],
  ["dx fcproj", { M: R, N: 192, K: 48, accumulate: true }],
  ["dW qkv", { M: 144, N: 48, K: R, transA: true, accumulate: true }],
  ["dW proj", { M: 48, N: 48, K: R, transA: true, accumulate: true }],
  ["dW fc", { M: 192, N: 48, K: R, transA: true, accumulate: true }],
  ["dW fcproj", { M: 48, N: 192, K: R, transA: true, accumulate: true }],
  ["dW head", { M: 107, N: 48, K: R, transA: true, accumulate: true }],
];
// the 8x8 tile fitted to a narrow N (matmulTileFor); the tile as is is no longer a path of the engine
const variants = ["new"];
const buf = (n: number) => ({
  buffer: device.createBuffer({
    size: n * 4,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
  }),
  offset: 0,
  size: n * 4,
});
const A = buf(R * 192);
const B = buf(R * 192);
const O = buf(R * 192);
for (const [name, s] of shapes) {
  const best = new Map<string, number>();
  for (let rep = 0; rep < 5; rep++) {
    for (const v of variants) {
      const enc = device.createCommandEncoder();
      rt.startProfile();
      matmul(rt, enc, O, A, B, null, s);
      rt.submit(enc);
      const ms = (await rt.readProfile()).reduce((t, d) => t + d.ns / 1e6, 0);
      best.set(v, Math.min(best.get(v) ?? ms, ms));
    }
  }
  console.log(
    `${name.padEnd(10)} ${s.M}x${s.N}x${s.K}: ${[...best].map(([v, ms]) => `${v} ${ms.toFixed(2)}`).join(" | ")} ms (min of 5)`,
  );
}
device.destroy();
