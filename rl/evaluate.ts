// Held-out evaluation: greedy and sampled rollouts of the task's eval set (val/* metrics:
// accuracy, tool-call rate, greedy accuracy per bucket; environments add steps and return).
// For an environment, val/acc is the success rate of episodes on its eval seeds.
// Tested by rl/trainer.test.ts and rl/trainer-env.test.ts.
import type { Problem } from "../tasks/types";
import { mean } from "./algos/types";
import { rolloutProblems } from "./collect";
import type { TrainerContext } from "./context";

/** val/* metrics of `problems` (the eval set), labelled by the RL step they follow. */
export async function evaluate(
  ctx: TrainerContext,
  problems: Problem[],
  rlStep: number,
): Promise<Record<string, number>> {
  if (problems.length === 0) return {};
  ctx.activity("eval");
  const out: Record<string, number> = {};
  for (const mode of ["greedy", "sampled"] as const) {
    const { items } = await rolloutProblems(ctx, problems, 1, `eval:${rlStep}`, mode === "greedy");
    const correct = items.map((r) => r.correct);
    const calls = items.map(({ traj }) => traj.toolCalls.some((x) => x.executed));
    const suffix = mode === "greedy" ? "" : "_sampled";
    out[`val/acc${suffix}`] = mean(correct.map(Number));
    out[`val/tool_call_rate${suffix}`] = mean(calls.map(Number));
    Object.assign(out, ctx.driver.evalMetrics(items, suffix));
    if (mode === "greedy") {
      // task.buckets picks which of the task's buckets are reported (all of them when it names none).
      const own = ctx.task.buckets;
      const picked = own.filter((b) => ctx.config.task.buckets.includes(b));
      for (const bucket of picked.length ? picked : own) {
        const idx = items.map((r, i) => (r.problem.bucket === bucket ? i : -1)).filter((i) => i >= 0);
        if (idx.length) out[`val/acc/${bucket}`] = mean(idx.map((i) => Number(correct[i])));
      }
    }
  }
  return out;
}
