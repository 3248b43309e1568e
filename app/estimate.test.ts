// The line by Start: the plan from the config, the time from measured step gaps.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, parseRunConfig, type RunConfig } from "../config";
import type { MetricsRow } from "../workers/api";
import { estimateSeconds, evaluationsOf, measureStepTimes, planText } from "./estimate";

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
    const rows = [0, 2, 4, 10].map(
      (t, step) => ({ step, phase: "rl", time: t, "reward/mean": 0 }) as MetricsRow,
    );
    // gaps 2, 2, 6: median 2 s per step of 32 rollouts
    expect(measureStepTimes(rows, cfg).rlPerRollout).toBeCloseTo(2 / 32, 12);
    expect(measureStepTimes(rows.slice(0, 2), cfg).rlPerRollout).toBeUndefined();
  });

  it("counts the start, every evaluation and the steps: the default demo's shape", () => {
    // 10 steps of 64 rollouts, 100 held-out problems at steps 0 and 5 and after step 10.
    const demo = config({
      sft: { init_checkpoint: "checkpoints/quick-demo-sft-v2.safetensors" },
      task: { eval_size: 100, eval_every: 5 },
      stop: { max_steps: 10 },
    });
    expect(evaluationsOf(demo)).toBe(3);
    expect(evaluationsOf({ ...demo, task: { ...demo.task, eval_every: 0 } })).toBe(2);
    expect(evaluationsOf({ ...demo, task: { ...demo.task, eval_size: 0 } })).toBe(0);
    // A step is 8 s, an evaluation 20 s; the first row also holds 30 s of compiles and warm-up,
    // and 12 s of loading came before the trainer's clock.
    const val = { "val/acc": 0.5 };
    const rows: MetricsRow[] = [];
    let t = 0;
    for (let step = 0; step < 10; step++) {
      t += 8 + (step % 5 === 0 ? 20 : 0) + (step === 0 ? 30 : 0);
      rows.push({
        step,
        phase: "rl",
        time: t,
        "reward/mean": 0.1,
        ...(step % 5 === 0 ? val : {}),
      } as MetricsRow);
    }
    rows.push({ step: 10, phase: "rl", time: t + 20, ...val } as MetricsRow);
    const m = measureStepTimes(rows, demo, 12);
    expect(m.rlPerRollout).toBeCloseTo(8 / 64, 12);
    expect(m.evalPerProblem).toBeCloseTo(20 / 100, 12);
    expect(m.startS).toBeCloseTo(42, 9);
    // The estimate is the run's whole wall time: 12 s before the clock plus its last row's time.
    expect(estimateSeconds(demo, m)).toBeCloseTo(12 + t + 20, 9);
    // Without an evaluation measured, a plan that evaluates has no time yet.
    expect(estimateSeconds(demo, { rlPerRollout: 0.1 })).toBeUndefined();
    expect(planText(demo, { rlPerRollout: 0.1 })).toMatch(/measured after the first steps and evaluation\.$/);
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
    // 10 x 32 s of steps, 3 x 100 x 0.1 s of evaluation, 40 s of start: 390 s = 7 min
    expect(planText(demo, { rlPerRollout: 0.5, evalPerProblem: 0.1, startS: 40 })).toBe(
      "Start loads quick-demo-sft-v2.safetensors, then 10 GRPO steps of 8 prompts × 8 samples, then evaluates 100 held-out problems every 5 steps (watch val/acc). Time on this adapter: about 7 min (32 s per RL step).",
    );
    // 10 steps x 32 rollouts x 0.25 s = 80 s; 3 seeds: 240 s = 4 min
    expect(planText({ ...cfg, seeds: 3 }, { rlPerRollout: 0.25 })).toBe(
      "Start 10 GRPO steps of 8 prompts × 4 samples, for 3 seeds (1234–1236) one after another. Time on this adapter: about 4 min (8 s per RL step).",
    );
  });
});
