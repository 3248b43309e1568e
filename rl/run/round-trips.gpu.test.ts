// The round trips of one RL step of the quick-demo recipe (public/recipes/quick-demo.json from its
// SFT checkpoint, at 4 prompts x 4 rollouts to keep it short) on the GPU, as the metrics row
// reports them (perf/*). A change that adds a submit or a readback to a phase fails here.
// The update's numbers follow from the plan alone; the rollout's depend on where the sampled
// trajectories stop (re-measure them if the model's numerics or the sampler change).
// The matmul tile is measured for real first (kernels/autotune.ts, not the test projects' fixed
// 8x8): its timing dispatches run on a Runtime of their own, so no phase counts them.
// Run: npx vitest run --project gpu rl/run/round-trips
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mergeConfig } from "../../config";
import { parseRecipeFile } from "../../config/recipe-file";
import { tuneMatmulTile } from "../../kernels/autotune";
import { createGpu } from "../../kernels/device";
import { nodeGpu } from "../../kernels/node-gpu";
import { GpuModel } from "../../model/gpu";
import { createNodeSandboxPool } from "../../sandbox/pool-node";
import { createTrainer } from "./build-trainer";

const ROOT = join(import.meta.dirname, "../..");
let device: GPUDevice;
const sandbox = createNodeSandboxPool({ size: 2 });
beforeAll(async () => {
  device = (await createGpu(await nodeGpu())).device;
  delete process.env.LAB_MATMUL_TILE; // so the models below take the measured tile from memory
  expect((await tuneMatmulTile(device, { override: null })).source).toBe("measured");
});
afterAll(async () => {
  await sandbox.close();
  device?.destroy();
});

async function quickDemoStep() {
  const file = join(ROOT, "public/recipes/quick-demo.json");
  const r = parseRecipeFile(readFileSync(file, "utf8"), file);
  if (!r.ok) throw new Error(r.error);
  const config = mergeConfig(r.config, { rl: { prompts_per_step: 4, group_size: 4 } });
  const trainer = await createTrainer(config, {
    makeModel: async (mc, w, seed) => GpuModel.create(device, mc, w, seed),
    sandbox,
    readFile: async (p) => new Uint8Array(readFileSync(join(ROOT, "public", p))),
  });
  const { row } = await trainer.rlStep();
  trainer.policy.dispose();
  return row;
}

describe("round trips of the quick-demo RL step", () => {
  it("counts submits and readbacks per phase", async () => {
    const row = await quickDemoStep();
    const n = (k: string) => row[`perf/${k}`];
    // 2 minibatches of old log-probs: a forward whose readback shares its submit
    expect([n("old_logprobs/submits"), n("old_logprobs/readbacks")]).toEqual([2, 2]);
    // 2 epochs x 2 minibatches: forward + readback, then backward + clip + AdamW in one submit;
    // the last step's norm read at the end
    expect([n("update/submits"), n("update/readbacks")]).toEqual([2 * 4 + 1, 4 + 1]);
    // rollout: the prefill's submit, then one submit and one readback per window of tokens
    expect(n("rollout/submits")).toBe(Number(n("rollout/readbacks")) + 1);
    expect([n("rollout/submits"), n("rollout/readbacks")]).toEqual([4, 3]);
    expect(n("submits")).toBe(15);
    expect(n("readbacks")).toBe(10);
    expect(Number(n("readback_bytes"))).toBeGreaterThan(0);
  }, 480_000);
});
