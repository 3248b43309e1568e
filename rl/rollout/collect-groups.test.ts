// Unit tests of the zero-variance group counts behind groups/zero_std_frac and its split into
// all-correct and all-wrong groups (rl/rollout/collect-groups.ts addZeroStd).
import { describe, expect, it } from "vitest";
import { addZeroStd, type ZeroStdCounts } from "./collect-groups";

const t = (reward: number, correct: boolean) => ({ reward, correct });
const empty = (): ZeroStdCounts => ({ zeroStd: 0, allCorrect: 0, allWrong: 0 });

describe("addZeroStd", () => {
  it("splits equal-reward groups into all correct and all wrong, and skips groups with signal", () => {
    const groups = [
      [t(1, true), t(1, true), t(1, true)], // solved: zero std, all correct
      [t(0, false), t(0, false), t(0, false)], // failed: zero std, all wrong
      [t(-3, false), t(-3, false), t(-3, false)], // failed with a format penalty
      [t(1, true), t(0, false), t(1, true)], // signal
      [t(0.5, true), t(0.5, false), t(0.5, true)], // equal rewards, mixed correctness
    ];
    expect(addZeroStd(empty(), groups)).toEqual({ zeroStd: 4, allCorrect: 1, allWrong: 2 });
  });

  it("accumulates over rounds", () => {
    const c = empty();
    addZeroStd(c, [[t(1, true), t(1, true)]]);
    addZeroStd(c, [
      [t(0, false), t(0, false)],
      [t(0, false), t(1, true)],
    ]);
    expect(c).toEqual({ zeroStd: 2, allCorrect: 1, allWrong: 1 });
  });

  it("counts a group of one as zero variance", () => {
    expect(addZeroStd(empty(), [[t(1, false)]])).toEqual({ zeroStd: 1, allCorrect: 0, allWrong: 1 });
  });
});
