// Headless training in CI: public/recipes/ci-tiny.json, from the committed SFT checkpoint,
// through Dawn (WebGPU in Node) and the QuickJS worker pool: the same path as
// `npm run train -- public/recipes/ci-tiny.json`. RL must raise both the reward and the rate
// of tool calls: the model learns that calling its calculator pays.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadRecipeFile } from "../config/recipe-file";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { GpuModel } from "../model/gpu";
import { RunLoop } from "../rl/runner";
import { createTrainer } from "../rl/session";
import type { MetricsRow } from "../rl/trainer";
import { createNodeSandboxPool } from "../sandbox/pool-node";

const sandbox = createNodeSandboxPool({ size: 2 });
afterAll(() => sandbox.close());

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe("ci-tiny", () => {
  it("RL raises reward and tool-call rate from the committed SFT checkpoint", async () => {
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
    const series = (k: string) => steps.map((x) => Number(x[k]));
    const reward = series("reward/mean");
    const tool = series("tool/call_rate");
    console.log(
      `ci-tiny reward ${reward.map((x) => x.toFixed(2)).join(" ")}\nci-tiny tool rate ${tool.map((x) => x.toFixed(2)).join(" ")}`,
    );
    const k = 3;
    expect(mean(reward.slice(-k))).toBeGreaterThan(mean(reward.slice(0, k)) + 0.05);
    expect(mean(tool.slice(-k))).toBeGreaterThan(mean(tool.slice(0, k)) + 0.1);
    device.destroy();
  });
});
