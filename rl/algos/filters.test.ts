// Worked numbers of ALGORITHMS.md §4, §7, §8.1, §9.6 for the filter registry and the
// refill planners. `npx vitest run rl/algos/`.
import { describe, expect, it } from "vitest";
import {
  allToolsFailed,
  applyFilters,
  FILTER,
  type FilterGroup,
  planDuplicate,
  planResample,
} from "./filters.ts";

const g = (rewards: number[], extra: Partial<FilterGroup> = {}, id = "g"): FilterGroup => ({
  groupId: id,
  rewards,
  ...extra,
});

describe("dapo-dynamic-sampling (§4)", () => {
  it("drops all-equal groups, keeps mixed and singleton groups", () => {
    const r = FILTER["dapo-dynamic-sampling"](
      [g([1, 1, 1, 1]), g([-1, -1, -1, -1]), g([1, -1, -1, -1]), g([1])],
      {},
    );
    expect(r.keep).toEqual([false, false, true, true]);
    expect(r.metrics["filter/kept_frac"]).toBe(0.5);
    expect(r.reasons[0]).toMatch(/all-equal acc/);
  });
  it("uses acc by default and rewards on request", () => {
    const grp = g([0.3, 0.5], { acc: [1, 1] });
    expect(FILTER["dapo-dynamic-sampling"]([grp], {}).keep).toEqual([false]);
    expect(FILTER["dapo-dynamic-sampling"]([grp], { metric: "reward" }).keep).toEqual([true]);
  });
});

describe("starpo-variance (§7)", () => {
  const groups = [g([1, 1, 1, 1]), g([1, 0, 1, 0]), g([1, 0, 0, 0]), g([0, 0, 0, 0])];
  it("keeps the top floor(p·N) groups by std", () => {
    expect(FILTER["starpo-variance"](groups, { p: 0.25 }).keep).toEqual([false, true, false, false]);
    expect(FILTER["starpo-variance"](groups, { p: 0.5 }).keep).toEqual([false, true, true, false]);
    expect(FILTER["starpo-variance"](groups, { p: 1 }).keep).toEqual([true, true, true, true]);
  });
  it("std_rev keeps the lowest, ties broken by index; floor 0 keeps nothing", () => {
    expect(FILTER["starpo-variance"](groups, { p: 0.25, type: "std_rev" }).keep).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(FILTER["starpo-variance"](groups.slice(0, 3), { p: 0.25 }).keep).toEqual([false, false, false]);
    expect(() => FILTER["starpo-variance"](groups, { p: 0 })).toThrow(/p must be/);
  });
});

describe("zerotir-band (§9.6)", () => {
  it("keeps strictly inside the band", () => {
    const accs = [
      [0, 0, 0, 0],
      [1, 0, 0, 0],
      [1, 1, 0, 0],
      [1, 1, 1, 1, 0],
      [1, 1, 1, 1],
    ];
    const r = FILTER["zerotir-band"](
      accs.map((a) => g(a, { acc: a })),
      { lo: 0.2, hi: 0.8 },
    );
    expect(r.keep).toEqual([false, true, true, false, false]);
  });
});

describe("tao-tool-aware (§8.1)", () => {
  it("drops degenerate groups and keeps mixed ones", () => {
    expect(FILTER["tao-tool-aware"]([g([1, 1, 1, 1]), g([1, 0, 0, 1])], {}).keep).toEqual([false, true]);
  });
  it("drops all-truncated groups and, with removeClip, groups with few untruncated", () => {
    const t = g([1, 0, 0, 1], { truncated: [true, true, true, true] });
    expect(FILTER["tao-tool-aware"]([t], {}).reasons[0]).toBe("all responses truncated");
    const few = g([1, 0, 0, 1], { truncated: [false, true, true, false] });
    expect(FILTER["tao-tool-aware"]([few], {}).keep).toEqual([true]);
    expect(FILTER["tao-tool-aware"]([few], { removeClip: true }).keep).toEqual([false]);
    expect(
      FILTER["tao-tool-aware"]([g([1, 0, 0, 0], { acc: [1, 0, 0, 0] })], { accBand: [0.3, 0.9] }).keep,
    ).toEqual([false]);
  });
  it("scales all-tools-failed trajectories; zero calls are kept", () => {
    expect([allToolsFailed(2, 1), allToolsFailed(1, 0), allToolsFailed(0, 0)]).toEqual([false, true, false]);
    const grp = g([1, 0, 0], { toolCalls: [2, 1, 0], toolSuccesses: [1, 0, 0] });
    expect(FILTER["tao-tool-aware"]([grp], {}).trajectoryScale).toEqual([[1, 0, 1]]);
    expect(FILTER["tao-tool-aware"]([grp], { strength: 0.5 }).trajectoryScale).toEqual([[1, 0.5, 1]]);
    expect(FILTER["tao-tool-aware"]([grp], { execErrorFilter: false }).trajectoryScale).toEqual([[1, 1, 1]]);
  });
});

describe("applyFilters", () => {
  it("chains filters over survivors and names the filter that dropped a group", () => {
    const groups = [
      g([1, 1], {}, "a"),
      g([1, 0], {}, "b"),
      g([1, 0, 0, 0], {}, "c"),
      g([0, 1, 1, 1], {}, "d"),
    ];
    const r = applyFilters(groups, [
      { name: "dapo-dynamic-sampling", options: {} },
      { name: "starpo-variance", options: { p: 0.5 } },
    ]);
    expect(r.keep).toEqual([false, true, false, false]);
    expect(r.reasons[0]).toMatch(/^dapo-dynamic-sampling: /);
    expect(r.reasons[2]).toMatch(/^starpo-variance: /);
    expect(r.metrics["filter/kept_frac"]).toBe(0.25);
    expect(() => applyFilters(groups, [{ name: "nope", options: {} }])).toThrow(/unknown filter/);
  });
});

describe("refill", () => {
  it("resample: trains when enough, asks for more, aborts at the cap", () => {
    expect(planResample({ kept: 9, needed: 8, round: 1, maxRounds: 10, genBatch: 24 })).toEqual({
      action: "train",
      takeGroups: 8,
    });
    expect(planResample({ kept: 3, needed: 8, round: 1, maxRounds: 10, genBatch: 24 })).toEqual({
      action: "resample",
      prompts: 24,
    });
    expect(planResample({ kept: 3, needed: 8, round: 10, maxRounds: 10, genBatch: 24 }).action).toBe("abort");
    expect(planResample({ kept: 3, needed: 8, round: 99, maxRounds: 0, genBatch: 24 }).action).toBe(
      "resample",
    );
  });
  it("duplicate: repeats survivors ceil(needed/valid) times, subsets when too many", () => {
    expect(planDuplicate(3, 8)).toEqual([0, 1, 2, 0, 1, 2, 0, 1]);
    expect(planDuplicate(0, 8)).toEqual([]);
    expect(planDuplicate(5, 3)).toEqual([0, 1, 2]);
    const seq = [0.9, 0.1, 0.5, 0.3];
    let k = 0;
    const pick = planDuplicate(5, 3, () => seq[k++ % seq.length]);
    expect(pick).toHaveLength(3);
    expect(new Set(pick).size).toBe(3);
  });
});
