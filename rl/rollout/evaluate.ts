// Held-out evaluation: greedy and sampled rollouts of the task's eval set (val/* metrics:
// accuracy, tool-call rate, valid-call rate (a call that ran without error), calls per solved problem where the task knows the fewest (meta.minCalls), greedy accuracy per bucket; environments add steps and return),
// and the same on its dev set (dev/*, split version 2, when task.dev_size > 0): choose
// stopping steps on dev/* and report val/*.
// For an environment, val/acc is the success rate of episodes on its eval seeds.
// Tested by rl/run/trainer.test.ts and rl/run/trainer-env.test.ts.
import type { Problem } from "../../tasks/types";
import { mean } from "../algos/types";
import type { TrainerContext } from "../common/phase-context";
import { callsPerSolved, perfMeter, putPerf } from "../common/step-records";
import { toolrlMeans } from "./batch-rewards";
import { rolloutProblems } from "./collect-groups";

/**
 * val/* (or dev/*) metrics of `problems`, labelled by the RL step they follow. The rollout
 * seed label is "eval:<step>" for the eval set and "dev:<step>" for the dev set.
 */
export async function evaluate(
  ctx: TrainerContext,
  problems: Problem[],
  rlStep: number,
  prefix: "val" | "dev" = "val",
): Promise<Record<string, number>> {
  if (problems.length === 0) return {};
  ctx.activity("eval");
  const perf = perfMeter(ctx.policy);
  const out: Record<string, number> = {};
  for (const mode of ["greedy", "sampled"] as const) {
    const label = prefix === "val" ? "eval" : "dev";
    const { items } = await rolloutProblems(ctx, problems, 1, `${label}:${rlStep}`, mode === "greedy");
    const correct = items.map((r) => r.correct);
    const calls = items.map(({ traj }) => traj.toolCalls.some((x) => x.executed));
    // a call whose sandbox status was Success (a parse error or an exception is executed too)
    const valid = items.map(({ traj }) => traj.toolCalls.some((x) => x.outcome.ok));
    const suffix = mode === "greedy" ? "" : "_sampled";
    out[`${prefix}/acc${suffix}`] = mean(correct.map(Number));
    out[`${prefix}/tool_call_rate${suffix}`] = mean(calls.map(Number));
    out[`${prefix}/valid_call_rate${suffix}`] = mean(valid.map(Number));
    Object.assign(out, ctx.driver.evalMetrics(items, suffix, prefix));
    Object.assign(out, callsPerSolved(items, `${prefix}/`, suffix));
    const toolrl = toolrlMeans(items);
    if (toolrl) {
      // on tasks with ground-truth calls (function calling) the first call must be the one that ran
      out[`${prefix}/valid_call_rate${suffix}`] = toolrl.valid;
      out[`${prefix}/toolrl_format${suffix}`] = toolrl.format;
      out[`${prefix}/toolrl_call${suffix}`] = toolrl.call;
    }
    if (mode === "greedy") {
      // task.buckets picks which of the task's buckets are reported (all of them when it names none).
      const own = ctx.task.buckets;
      const picked = own.filter((b) => ctx.config.task.buckets.includes(b));
      for (const bucket of picked.length ? picked : own) {
        const idx = items.map((r, i) => (r.problem.bucket === bucket ? i : -1)).filter((i) => i >= 0);
        if (idx.length) out[`${prefix}/acc/${bucket}`] = mean(idx.map((i) => Number(correct[i])));
      }
    }
  }
  perf.end("eval");
  // perf/eval/* only: the step's perf/submits etc. stay the RL step's own totals
  const counts: Record<string, number> = {};
  putPerf(counts, perf.phases);
  for (const [k, v] of Object.entries(counts)) if (k.startsWith("perf/eval/")) out[k] = v;
  return out;
}
