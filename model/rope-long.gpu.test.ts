// The lab-made Llama (public/models/lab-llama) at T = 600 against a float64 PyTorch golden
// (model/golden/make_lab_llama_golden.py, lab-llama-t600.json): the WebGPU and CPU models'
// per-token log-probs within 2e-4 of it. Long positions are where an f32 RoPE angle drifts
// (rope.wgsl takes the host's float64 table).
// Run: npx vitest run --project gpu model/rope-long.gpu.test.ts
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { gpuRuntime } from "../kernels/testing";
import { CpuModel } from "./cpu";
import { GpuModel } from "./gpu";
import { nodeModelDir } from "./hf/node";

const ROOT = new URL("../", import.meta.url).pathname;
const golden = JSON.parse(readFileSync(`${ROOT}model/golden/lab-llama-t600.json`, "utf8")) as {
  T: number;
  tokens: number[];
  targets: number[];
  logp: number[];
  logp_f32: number[];
};

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return Number.isNaN(m) ? Number.POSITIVE_INFINITY : m;
}

describe("lab-llama at T 600 against float64 PyTorch", () => {
  const batch = {
    B: 1,
    T: golden.T,
    tokens: Int32Array.from(golden.tokens),
    targets: Int32Array.from(golden.targets),
  };

  it("WebGPU log-probs within 2e-4", async () => {
    const rt = await gpuRuntime();
    const model = await GpuModel.fromHf(rt, nodeModelDir(`${ROOT}public/models/lab-llama`));
    const out = await model.forwardScore(batch);
    const d = maxDiff(out.logp, golden.logp);
    console.log(`WebGPU vs float64: max |dlogp| ${d.toExponential(2)} over ${golden.T} tokens`);
    expect(d).toBeLessThan(2e-4);
    model.dispose();
  });

  it("CPU model log-probs within 2e-4 (float32 PyTorch for scale)", async () => {
    const model = await CpuModel.fromHf(nodeModelDir(`${ROOT}public/models/lab-llama`));
    const out = await model.forwardScore(batch);
    const d = maxDiff(out.logp, golden.logp);
    console.log(
      `CPU vs float64: ${d.toExponential(2)}; float32 PyTorch vs float64: ${maxDiff(golden.logp_f32, golden.logp).toExponential(2)}`,
    );
    expect(d).toBeLessThan(2e-4);
  });
});
