// GPU tests of the fused update (GpuModel.updatePath "fused": zeroing, backward, grad norm, clip
// and AdamW in one submit, the norm read with the next forward's readback) against the legacy
// path (a submit each, the norm read before AdamW): the same weights and optimizer state bit for
// bit, one readback a minibatch, and a NaN gradient still skips the step and is flagged.
// Run: npx vitest run --project gpu model/update-path
import { beforeAll, describe, expect, it } from "vitest";
import { countersSince, type Runtime } from "../kernels/runtime";
import { gpuRuntime, randInt } from "../kernels/testing";
import { type MinibatchPlan, trainMinibatches } from "../rl/update/minibatch-loop";
import { modelConfig } from "./config";
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
function plan(model: GpuModel, nanAt = -1): MinibatchPlan {
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

async function run(path: "fused" | "legacy", nanAt = -1) {
  const model = new GpuModel(rt, config, undefined, 7);
  model.updatePath = path;
  const before = { ...rt.counters };
  const res = await trainMinibatches(model, plan(model, nanAt));
  const counts = countersSince(rt.counters, before);
  const out = { res, counts, weights: await model.getWeights(), opt: await model.getOptimizerState() };
  model.dispose();
  return out;
}

describe("fused update", () => {
  it("equals the legacy path bit for bit with one readback a minibatch", async () => {
    const legacy = await run("legacy");
    const fused = await run("fused");
    expect(fused.weights).toEqual(legacy.weights);
    expect(fused.opt.m).toEqual(legacy.opt.m);
    expect(fused.opt.step).toBe(4);
    expect(fused.res.metrics.grad_norm).toBe(legacy.res.metrics.grad_norm);
    // 4 minibatches: a forward + readback submit and a backward + optimizer submit each, then
    // one readback for the last step's norm
    expect(fused.counts.readbacks).toBe(4 + 1);
    expect(fused.counts.submits).toBe(4 * 2 + 1);
    // legacy: zero, forward, readback, backward, norm, norm readback, AdamW
    expect(legacy.counts.readbacks).toBe(4 * 2);
    expect(legacy.counts.submits).toBe(4 * 7);
  });

  it("a NaN gradient skips the step on the GPU and stops the update, as the legacy path does", async () => {
    const legacy = await run("legacy", 2);
    const fused = await run("fused", 2);
    expect(fused.res.skipped).toMatch(/non-finite gradient norm at test/);
    expect(legacy.res.skipped).toBe(fused.res.skipped);
    expect(fused.weights).toEqual(legacy.weights); // two steps applied, the third a no-op
    expect(fused.opt.step).toBe(2);
    expect(legacy.opt.step).toBe(2);
    expect(fused.opt.v).toEqual(legacy.opt.v);
  });
});
