// The line by Start: the plan from the config, the time from measured step gaps.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, parseRunConfig, type RunConfig } from "../config";
import type { MetricsRow } from "../workers/api";
import { measureStepTimes, planText } from "./estimate";

function config(partial: unknown): RunConfig {
  const r = parseRunConfig(mergeConfig(defaultRunConfig(), partial));
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.config;
}

describe("plan and time by Start", () => {
  const cfg = config({
    sft: { steps: 0 },
    rl: { prompts_per_step: 8, group_size: 4 },
    stop: { max_steps: 10 },
    task: { eval_size: 0 },
  });

  it("measures the median RL step gap per rollout (two gaps at least)", () => {
    const rows = [0, 2, 4, 10].map((t, step) => ({ step, phase: "rl", time: t }) as MetricsRow);
    // gaps 2, 2, 6: median 2 s per step of 32 rollouts
    expect(measureStepTimes(rows, cfg).rlPerRollout).toBeCloseTo(2 / 32, 12);
    expect(measureStepTimes(rows.slice(0, 2), cfg).rlPerRollout).toBeUndefined();
  });

  it("says what happens, and how long only once measured", () => {
    expect(planText(cfg, {})).toBe(
      "Start 10 GRPO steps of 8 prompts × 4 samples. Time on this adapter: measured after the first steps.",
    );
    // The default demo: its checkpoint, its steps and the held-out metric it shows rising.
    const demo = config({
      sft: { steps: 1200, init_checkpoint: "checkpoints/quick-demo-sft-v2.safetensors" },
      task: { eval_size: 100, eval_every: 5 },
      stop: { max_steps: 10 },
    });
    expect(planText(demo, { rlPerRollout: 0.5 })).toBe(
      "Start loads quick-demo-sft-v2.safetensors, then 10 GRPO steps of 8 prompts × 8 samples, then evaluates 100 held-out problems every 5 steps (watch val/acc): about 5 min on this adapter (measured 32 s per RL step).",
    );
    // 10 steps x 32 rollouts x 0.25 s = 80 s; 3 seeds: 240 s = 4 min
    expect(planText({ ...cfg, seeds: 3 }, { rlPerRollout: 0.25 })).toBe(
      "Start 10 GRPO steps of 8 prompts × 4 samples, for 3 seeds (1234–1236) one after another: about 4 min on this adapter (measured 8 s per RL step).",
    );
  });
});
