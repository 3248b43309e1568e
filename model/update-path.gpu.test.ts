// GPU tests of the fused update (zeroing, backward, grad norm, clip and AdamW in one submit, the
// norm read with the next forward's readback) against the CPU model's update: the same weights
// and optimizer state within tolerance, one readback a minibatch, and a NaN gradient still skips
// the step and is flagged.
// Run: npx vitest run --project gpu model/update-path
import { beforeAll, describe, expect, it } from "vitest";
import { countersSince, type Runtime } from "../kernels/runtime";
import { assertClose, gpuRuntime, randInt } from "../kernels/testing";
import { type MinibatchPlan, trainMinibatches } from "../rl/update/minibatch-loop";
import { modelConfig } from "./config";
import { CpuModel } from "./cpu";
import { GpuModel } from "./gpu";

let rt: Runtime;
beforeAll(async () => {
  rt = await gpuRuntime();
});

const config = modelConfig({ layers: 1, dModel: 32, heads: 2, context: 24 });
const rows = Array.from({ length: 6 }, (_, i) => ({
  prompt: Array.from(randInt(3 + (i % 3), config.vocab, 10 + i)),
  response: Array.from(randInt(4 + i, config.vocab, 20 + i)),
}));
const hparams = { lr: 3e-3, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 0.5 };

/** 2 epochs x 2 minibatches of a log-likelihood loss; `nanAt` poisons that minibatch's gradient. */
function plan(model: GpuModel | CpuModel, nanAt = -1): MinibatchPlan {
  let mb = 0;
  return {
    rows,
    size: 3,
    epochs: 2,
    context: config.context,
    order: (epoch) => (epoch === 0 ? [0, 1, 2, 3, 4, 5] : [5, 3, 1, 0, 2, 4]),
    loss: (_idx, scores) => {
      const here = mb++;
      const n = scores.logp.reduce((a, r) => a + r.length, 0);
      const dlogp = scores.logp.map((r) =>
        Float64Array.from(r, () => (here === nanAt ? Number.NaN : -1 / n)),
      );
      const loss = -scores.logp.reduce((a, r) => a + r.reduce((x, y) => x + y, 0), 0) / n;
      return { loss, dlogp, metrics: {} };
    },
    step: () => model.step(hparams),
    gradNormKey: "grad_norm",
    where: "test",
  };
}

async function run(on: "gpu" | "cpu", nanAt = -1) {
  const model = on === "gpu" ? new GpuModel(rt, config, undefined, 7) : new CpuModel(config, undefined, 7);
  const before = { ...rt.counters };
  const res = await trainMinibatches(model, plan(model, nanAt));
  const counts = countersSince(rt.counters, before);
  const out = { res, counts, weights: await model.getWeights(), opt: await model.getOptimizerState() };
  model.dispose();
  return out;
}

describe("fused update", () => {
  it("equals the CPU model's update with one readback a minibatch", async () => {
    const cpu = await run("cpu");
    const fused = await run("gpu");
    assertClose("weights", fused.weights, cpu.weights, { atol: 1e-5, rtol: 1e-4 });
    assertClose("adam m", fused.opt.m, cpu.opt.m, { atol: 1e-6, rtol: 1e-3 });
    expect(fused.opt.step).toBe(4);
    expect(Math.abs(Number(fused.res.metrics.grad_norm) - Number(cpu.res.metrics.grad_norm))).toBeLessThan(
      1e-4,
    );
    // 4 minibatches: a forward + readback submit and a backward + optimizer submit each, then
    // one readback for the last step's norm
    expect(fused.counts.readbacks).toBe(4 + 1);
    expect(fused.counts.submits).toBe(4 * 2 + 1);
  });

  it("a NaN gradient skips the step on the GPU and stops the update, as the CPU model does", async () => {
    const cpu = await run("cpu", 2);
    const fused = await run("gpu", 2);
    expect(fused.res.skipped).toMatch(/non-finite gradient norm at test/);
    expect(cpu.res.skipped).toBe(fused.res.skipped);
    // two steps applied, the third a no-op
    assertClose("weights", fused.weights, cpu.weights, { atol: 1e-5, rtol: 1e-4 });
    expect(fused.opt.step).toBe(2);
    expect(cpu.opt.step).toBe(2);
  });
});
