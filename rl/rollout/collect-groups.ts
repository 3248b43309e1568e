// Steps 1-4 of an RL step (DESIGN.md's data flow): sample prompts (seeded by step and round),
// roll out group_size trajectories each through the task seam (rl/rollout/task-driver.ts), reward them,
// filter groups, and refill per filters.refill (resample more rounds, or duplicate kept groups).
// ReMax adds one greedy rollout per prompt whose reward is the group's baseline.
// Tested by rl/run/trainer.test.ts, rl/run/trainer-env.test.ts, rl/update/baselines.test.ts and
// rl/run/registry-run.test.ts.

import { createRng } from "../../tasks/rng";
import type { Problem } from "../../tasks/types";
import { applyFilters, type FilterGroup, planDuplicate, planResample } from "../algos/filters";
import { std, sum } from "../algos/types";
import { samplingOptions } from "../common/config-options";
import type { TrainerContext } from "../common/phase-context";
import { computeRewards, type RewardedTrajectory, type RewardItem } from "./batch-rewards";
import { problemPrompt, tokenRewardsOf } from "./task-driver";

/**
 * Rolls out each problem `repeat` times and judges each trajectory: single-turn tasks by the
 * verifier on the final answer; environments play their episodes (correct = success).
 */
export async function rolloutProblems(
  ctx: TrainerContext,
  problems: Problem[],
  repeat: number,
  label: string,
  greedy = false,
): Promise<{ items: RewardItem[]; toolSeconds: number }> {
  const owners: Problem[] = [];
  for (const p of problems) for (let g = 0; g < repeat; g++) owners.push(p);
  const longest = Math.max(0, ...problems.map((p) => problemPrompt(p, ctx.chat).length));
  // A prompt that fills the context leaves no room to answer: say which field to change.
  const context = ctx.policy.config.context;
  if (longest >= context)
    throw new Error(
      `model.context: ${context} tokens cannot hold the prompts of task "${ctx.task.name}" (up to ${longest} tokens); raise model.context`,
    );
  return ctx.driver.rollout(ctx, owners, samplingOptions(ctx.config, label, greedy));
}

/**
 * Rolls out the problems x group_size and rewards them; with ReMax, also one greedy rollout
 * per prompt whose reward becomes the group's baselineReward (not trained).
 */
export async function rolloutAndReward(
  ctx: TrainerContext,
  label: string,
  problems: Problem[],
  step: number,
) {
  const c = ctx.config;
  const G = c.rl.group_size;
  const { items, toolSeconds } = await rolloutProblems(ctx, problems, G, `rollout:${label}`);
  const groupOf = (i: number) => `${label}:${Math.floor(i / G)}`;
  ctx.activity("reward");
  const rw = ctx.clock();
  const rewarded = await computeRewards(
    items.map((it, i) => ({ ...it, groupId: groupOf(i) })),
    c,
    { step, sandbox: ctx.sandbox, label },
  );
  let rewardSeconds = ctx.clock() - rw;
  let seconds = toolSeconds;
  if (c.rl.advantage === "remax") {
    ctx.activity("rollout");
    const greedy = await rolloutProblems(ctx, problems, 1, `rollout:${label}:greedy`, true);
    seconds += greedy.toolSeconds;
    const rb = ctx.clock();
    const base = await computeRewards(
      greedy.items.map((it, i) => ({ ...it, groupId: groupOf(i * G) })),
      c,
      { step, sandbox: ctx.sandbox, label: `${label}:greedy` },
    );
    // An episode's token rewards sum to its turn-discounted return (tokenRewardsOf), so its
    // baseline is the greedy episode's return measured the same way.
    const baseline = base.map((b) => (b.steps ? sum(tokenRewardsOf(c, b, b.traj.mask)!) : b.reward));
    rewarded.forEach((t, i) => {
      t.baselineReward = baseline[Math.floor(i / G)];
    });
    rewardSeconds += ctx.clock() - rb;
  }
  return { rewarded, toolSeconds: seconds, rewardSeconds };
}

export interface Collected {
  /** the trajectories to train on (kept groups, refilled) */
  batch: RewardedTrajectory[];
  /** every trajectory rolled out this step, over all rounds */
  all: RewardedTrajectory[];
  /** groupId -> filter decision; "abort" -> why refilling gave up */
  decisions: Map<string, string>;
  keptFracs: number[];
  /** groups over all rounds whose rewards were all equal, and those that were all correct / all wrong */
  zeroStd: ZeroStdCounts;
  groupsSeen: number;
  timing: { rollout: number; tool: number; reward: number };
}

/** Sample, roll out, reward, filter; refill per filters.refill. */
export async function collectGroups(ctx: TrainerContext, step: number): Promise<Collected> {
  const c = ctx.config;
  const needed = c.rl.prompts_per_step;
  const timing = { rollout: 0, tool: 0, reward: 0 };
  const kept: RewardedTrajectory[][] = [];
  const all: RewardedTrajectory[] = [];
  const decisions = new Map<string, string>();
  const keptFracs: number[] = [];
  const zeroStd: ZeroStdCounts = { zeroStd: 0, allCorrect: 0, allWrong: 0 };
  let groupsSeen = 0;
  for (let round = 0; ; ) {
    const rng = createRng(`${c.seed}:rl:${step}:${round}`);
    const problems = ctx.driver.sample(rng, round === 0 ? needed : Math.ceil(needed * c.filters.oversample));
    const tr = ctx.clock();
    ctx.activity("rollout");
    const { rewarded, toolSeconds, rewardSeconds } = await rolloutAndReward(
      ctx,
      `${step}:${round}`,
      problems,
      step,
    );
    const elapsed = ctx.clock() - tr;
    timing.tool += toolSeconds;
    timing.reward += rewardSeconds;
    timing.rollout += Math.max(0, elapsed - toolSeconds - rewardSeconds);
    all.push(...rewarded);
    const groups = chunk(rewarded, c.rl.group_size);
    groupsSeen += groups.length;
    addZeroStd(zeroStd, groups);
    const fr = applyFilters(groups.map(filterGroupOf), c.filters.list);
    keptFracs.push(fr.metrics["filter/kept_frac"]);
    groups.forEach((g, gi) => {
      decisions.set(g[0].groupId, fr.reasons[gi]);
      g.forEach((t, k) => {
        t.lossScale = fr.trajectoryScale?.[gi][k] ?? 1;
      });
      if (fr.keep[gi]) kept.push(g);
    });
    round++;
    if (c.filters.refill !== "resample" || c.filters.list.length === 0) break;
    const plan = planResample({
      kept: kept.length,
      needed,
      round,
      maxRounds: c.filters.max_gen_rounds,
      genBatch: needed,
    });
    if (plan.action === "train") break;
    if (plan.action === "abort") {
      decisions.set("abort", plan.error);
      break;
    }
  }
  let trainGroups = kept;
  if (c.filters.refill === "resample") trainGroups = kept.slice(0, needed);
  if (c.filters.refill === "duplicate" && kept.length > 0) {
    const rng = createRng(`${c.seed}:dup:${step}`);
    trainGroups = planDuplicate(kept.length, needed, () => rng.next()).map((gi, k) =>
      kept[gi].map((t) => ({ ...t, groupId: `${t.groupId}#${k}` })),
    );
  }
  return { batch: trainGroups.flat(), all, decisions, keptFracs, zeroStd, groupsSeen, timing };
}

/**
 * Zero-variance groups (every reward equal: no GRPO signal), split by why: all of the group
 * correct (the task is solved for that prompt) or all wrong (nothing to learn from). The
 * echo trap reads differently in each: a policy that repeats a solved answer fills the
 * first, one that repeats a failing one fills the second. A zero-variance group of mixed
 * correctness (a reward that ignores correctness) counts in neither.
 */
export interface ZeroStdCounts {
  zeroStd: number;
  allCorrect: number;
  allWrong: number;
}

export function addZeroStd(
  into: ZeroStdCounts,
  groups: { reward: number; correct: boolean }[][],
): ZeroStdCounts {
  for (const g of groups) {
    if (
      std(
        g.map((t) => t.reward),
        "population",
      ) !== 0
    )
      continue;
    into.zeroStd++;
    if (g.every((t) => t.correct)) into.allCorrect++;
    else if (g.every((t) => !t.correct)) into.allWrong++;
  }
  return into;
}

function chunk<T>(xs: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

function filterGroupOf(g: RewardedTrajectory[]): FilterGroup {
  return {
    groupId: g[0].groupId,
    rewards: g.map((t) => t.reward),
    acc: g.map((t) => Number(t.correct)),
    truncated: g.map((t) => t.traj.finish !== "stop"),
    toolCalls: g.map((t) => t.traj.toolCalls.filter((x) => x.executed).length),
    toolSuccesses: g.map((t) => t.traj.toolCalls.filter((x) => x.executed && x.outcome.ok).length),
  };
}
