// The inspector's sample records (rl/common/step-records.ts sampleRecords): every group of a step up to
// SAMPLE_GROUPS, groups with a learning signal first when there are more, how many the step
// had, and the per-token entropy of the scoring pass (empty for trajectories not scored).
import { describe, expect, it } from "vitest";
import type { RewardedTrajectory } from "../rollout/batch-rewards";
import { callsPerSolved, SAMPLE_GROUPS, sampleRecords } from "./step-records";

function traj(groupId: string, reward: number): RewardedTrajectory {
  return {
    traj: {
      promptTokens: [1],
      tokens: [2, 3],
      mask: [1, 1],
      postTool: [0, 0],
      logprobs: [-0.1, -0.2],
      toolCalls: [],
      finish: "stop",
      text: "",
    },
    problem: { id: `p-${groupId}`, messages: [], answer: "", bucket: "easy", meta: {} },
    groupId,
    correct: reward > 0,
    reward,
    terms: { correctness: reward },
    lossScale: 1,
  } as unknown as RewardedTrajectory;
}

describe("sampleRecords", () => {
  it("keeps every group up to SAMPLE_GROUPS, in step order", () => {
    const all = ["g0", "g1", "g2"].flatMap((g) => [traj(g, 0), traj(g, 0)]);
    const recs = sampleRecords(3, all, new Map());
    expect([...new Set(recs.map((r) => r.groupId))]).toEqual(["g0", "g1", "g2"]);
    expect(recs.every((r) => r.groupsInStep === 3 && r.step === 3)).toBe(true);
  });

  it("prefers groups with signal when a step has more groups than it keeps", () => {
    const n = SAMPLE_GROUPS + 4;
    // Groups 0..n-1; only the last three have unequal rewards.
    const all = Array.from({ length: n }, (_, i) => `g${i}`).flatMap((g, i) =>
      i >= n - 3 ? [traj(g, 0), traj(g, 1)] : [traj(g, 0), traj(g, 0)],
    );
    const groups = [...new Set(sampleRecords(0, all, new Map()).map((r) => r.groupId))];
    expect(groups).toHaveLength(SAMPLE_GROUPS);
    expect(groups).toEqual(expect.arrayContaining([`g${n - 3}`, `g${n - 2}`, `g${n - 1}`]));
  });

  it("records the scoring pass's entropy per token, and none for a trajectory it did not score", () => {
    const a = traj("g0", 0);
    const b = traj("g0", 1);
    const recs = sampleRecords(0, [a, b], new Map(), {
      advantages: new Map(),
      entropies: new Map([[a, Float64Array.from([0.5, 0.25])]]),
    });
    expect(recs[0].entropy).toEqual([0.5, 0.25]);
    expect(recs[1].entropy).toEqual([]);
  });
});

describe("callsPerSolved (tool/ and val/ calls_per_solved, excess_calls_per_solved)", () => {
  const item = (correct: boolean, executed: boolean[], minCalls?: number) => ({
    correct,
    traj: { toolCalls: executed.map((e) => ({ executed: e })) },
    problem: { meta: minCalls === undefined ? {} : { minCalls } },
  });

  it("counts executed calls over solved problems and the calls above each one's minimum", () => {
    const items = [
      item(true, [true, true, true], 2), // 3 calls, 1 above
      item(true, [true], 0), // 1 call, 1 above
      item(true, [true, true, false], 2), // the third was not executed: 2 calls, 0 above
      item(false, [true, true, true, true, true], 3), // not solved: not counted
    ];
    expect(callsPerSolved(items, "val/", "_sampled")).toEqual({
      "val/calls_per_solved_sampled": 2,
      "val/excess_calls_per_solved_sampled": 2 / 3,
    });
  });

  it("is absent when the task has no minCalls or nothing was solved", () => {
    expect(callsPerSolved([item(true, [true])], "tool/", "")).toEqual({});
    expect(callsPerSolved([item(false, [true], 1)], "tool/", "")).toEqual({});
  });
});
