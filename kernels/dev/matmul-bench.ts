// Runs the matmul variants in Node through Dawn (lavapipe/SwiftShader here; a real GPU elsewhere)
// and prints correctness, ms and GFLOP/s per variant and size.
// Run: npx tsx --import ./cli/raw-loader.mjs kernels/dev/matmul-bench.ts [sizes: 128,256] [reps: 3] [name regex]
import { createGpu } from "../device";
import { nodeGpu } from "../node-gpu";
import { Runtime } from "../runtime";
import { runMatmulVariants } from "./matmul-variants";

const sizes = (process.argv[2] ?? "128,256").split(",").map(Number);
const reps = Number(process.argv[3] ?? 3);
const only = process.argv[4] ? new RegExp(process.argv[4]) : undefined;
const { device, adapter } = await createGpu(await nodeGpu());
console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
const rows = await runMatmulVariants(new Runtime(device), sizes, reps, only);
for (const r of rows) {
  console.log(
    `${r.name.padEnd(38)} n=${String(r.size).padEnd(5)} ${r.ok ? "ok  " : "FAIL"} maxdiff ${r.maxDiff.toExponential(1)}  ${r.ms.toFixed(2)} ms  ${r.gflops.toFixed(2)} GFLOP/s`,
  );
}
device.destroy();
process.exit(rows.every((r) => r.ok) ? 0 : 1);
