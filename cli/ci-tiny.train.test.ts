// Headless training in CI: public/recipes/ci-tiny.json, from the committed SFT checkpoint,
// through Dawn (WebGPU in Node) and the QuickJS worker pool: the same path as
// `npm run train -- public/recipes/ci-tiny.json`. RL must raise held-out greedy accuracy and
// greedy tool use: the model learns that calling its calculator pays. Greedy held-out metrics
// do not move when nothing learns (with lr 0 the weights, and so every greedy answer, stay
// the same), unlike the training reward, which sampling noise moves either way.
// Margins from 6 seeds (5-10) on lavapipe with quick-demo-sft-v2: val/acc 0.094 at step 0
// and 0.47-0.72 at step 12 (rise 0.38-0.63, mean 0.51, sd 0.12); greedy tool-call rate 0 at
// step 0 and 0.94-1.0 at step 12. With 3 seeds at lr 0 both rises were exactly 0.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadRecipeFile } from "../config/recipe-file";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { GpuModel } from "../model/gpu";
import { createTrainer } from "../rl/run/build-trainer";
import { RunLoop } from "../rl/run/run-loop";
import type { MetricsRow } from "../rl/run/trainer";
import { createNodeSandboxPool } from "../sandbox/pool-node";

const sandbox = createNodeSandboxPool({ size: 2 });
afterAll(() => sandbox.close());

describe("ci-tiny", () => {
  it("RL raises held-out greedy accuracy and tool use from the committed SFT checkpoint", async () => {
    const r = await loadRecipeFile("public/recipes/ci-tiny.json", async (p) => readFileSync(p, "utf8"));
    if (!r.ok) throw new Error(r.error);
    const { device } = await createGpu(await nodeGpu());
    const trainer = await createTrainer(r.config, {
      makeModel: (mc, w, seed) => GpuModel.create(device, mc, w, seed),
      sandbox,
      readFile: async (p) => new Uint8Array(readFileSync(resolve("public", p))),
    });
    const rows: MetricsRow[] = [];
    await new RunLoop(trainer, { row: (row) => rows.push(row) }).run();
    const steps = rows.filter((x) => x.phase === "rl" && x["reward/mean"] !== undefined);
    expect(steps).toHaveLength(r.config.stop.max_steps);
    const evals = rows.filter((x) => x.phase === "rl" && x["val/acc"] !== undefined);
    const val = (k: string) => evals.map((x) => Number(x[k]));
    const acc = val("val/acc");
    const tool = val("val/tool_call_rate");
    console.log(
      `ci-tiny val/acc ${acc.map((x) => x.toFixed(2)).join(" ")}\nci-tiny val/tool_call_rate ${tool.map((x) => x.toFixed(2)).join(" ")}`,
    );
    expect(evals.length).toBeGreaterThanOrEqual(2);
    // About 1.5 sd under the smallest of six seeds' rises (0.38), far above lr 0's exactly 0.
    expect(acc[acc.length - 1]).toBeGreaterThan(acc[0] + 0.2);
    expect(tool[tool.length - 1]).toBeGreaterThan(tool[0] + 0.5);
    device.destroy();
  });
});
