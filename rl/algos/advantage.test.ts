// Worked numbers of ALGORITHMS.md §1-§6 and §12 for the advantage registry, edge cases
// (all-equal, singleton, empty masks) and fast-check properties. `npx vitest run rl/algos/`.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ADVANTAGE,
  gaeScan,
  lengthAdaptiveLambda,
  RETURN,
  turnDiscount,
  withAdvantageDefaults,
} from "./advantage.ts";
import type { Trajectory } from "./types.ts";

const close = (got: ArrayLike<number>, want: number[], digits = 5) => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => {
    expect(got[i]).toBeCloseTo(w, digits);
  });
};

/** One group of trajectories with the given rewards and token counts. */
function group(rewards: number[], tokens = 2, groupId = "g"): Trajectory[] {
  return rewards.map((reward) => ({ groupId, reward, mask: new Float64Array(tokens).fill(1) }));
}
const scalars = (name: string, batch: Trajectory[], o = {}) => {
  const r = ADVANTAGE[name](batch, withAdvantageDefaults(o));
  return Array.from(r.scalar ?? r.advantages.map((a) => a[0]));
};

describe("grpo (§2)", () => {
  it("reproduces the worked numbers", () => {
    close(scalars("grpo", group([1, 0, 0, 1])), [0.866024, -0.866024, -0.866024, 0.866024]);
    close(
      scalars("grpo", group([1, 0, 0, 1]), { std: "population" }),
      [0.999998, -0.999998, -0.999998, 0.999998],
    );
    close(scalars("grpo", group([1, 0, 0, 0])), [1.499997, -0.499999, -0.499999, -0.499999]);
    close(scalars("grpo", group([1, 1, 1, 1])), [0, 0, 0, 0]);
  });

  it("handles singleton groups per flag and broadcasts to mask = 1 tokens only", () => {
    expect(scalars("grpo", group([1]))).toEqual([0]);
    expect(scalars("grpo", group([0.7]), { singletonGroup: "raw" })).toEqual([0.7]);
    const t: Trajectory = { groupId: "a", reward: 1, mask: [1, 0, 1, 0] };
    const u: Trajectory = { groupId: "a", reward: 0, mask: [0, 0, 0, 0] };
    const r = ADVANTAGE.grpo([t, u], withAdvantageDefaults());
    // one non-empty pair [1, 0]: (1 − 0.5)/(0.707107 + 1e-6) = 0.707106
    close(r.advantages[0], [Math.SQRT1_2, 0, Math.SQRT1_2, 0]);
    close(r.advantages[1], [0, 0, 0, 0]);
    expect(ADVANTAGE.grpo([], withAdvantageDefaults()).advantages).toEqual([]);
  });

  it("keeps groups apart", () => {
    const batch = [...group([1, 0], 1, "a"), ...group([5, 5], 1, "b")];
    close(scalars("grpo", batch), [Math.SQRT1_2, -Math.SQRT1_2, 0, 0]);
  });

  it("property: advantages sum to zero within each group", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.double({ min: -5, max: 5, noNaN: true }), { minLength: 1, maxLength: 8 }), {
          minLength: 1,
          maxLength: 5,
        }),
        (groups) => {
          const batch = groups.flatMap((rs, gi) => group(rs, 1, `g${gi}`));
          const a = scalars("grpo", batch);
          let o = 0;
          for (const rs of groups) {
            const s = a.slice(o, o + rs.length).reduce((x, y) => x + y, 0);
            expect(Math.abs(s)).toBeLessThan(1e-6 * rs.length);
            o += rs.length;
          }
        },
      ),
    );
  });
});

describe("dr-grpo (§3)", () => {
  it("drops the std", () => {
    close(scalars("dr-grpo", group([1, 0, 0, 1])), [0.5, -0.5, -0.5, 0.5]);
    expect(scalars("dr-grpo", group([3]))).toEqual([0]);
  });
});

describe("rloo (§5)", () => {
  it("reproduces the worked numbers", () => {
    close(scalars("rloo", group([1, 0, 0, 1])), [0.666667, -0.666667, -0.666667, 0.666667]);
    close(scalars("rloo", group([2, 2, 2])), [0, 0, 0]);
    expect(scalars("rloo", group([1]))).toEqual([0]);
    expect(scalars("rloo", group([1]), { singletonGroup: "raw" })).toEqual([1]);
  });

  it("property: reward minus the mean of the others", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 2, maxLength: 10 }),
        (rs) => {
          const a = scalars("rloo", group(rs, 1));
          rs.forEach((r, i) => {
            const others = rs.filter((_, j) => j !== i);
            const b = others.reduce((x, y) => x + y, 0) / others.length;
            expect(a[i]).toBeCloseTo(r - b, 9);
          });
        },
      ),
    );
  });
});

describe("gae (§1)", () => {
  it("reproduces the worked numbers before whitening", () => {
    const r = gaeScan([0, 0, 1], [0.5, 0.6, 0.7], [1, 1, 1], 1, 0.95);
    close(r.adv, [0.46575, 0.385, 0.3]);
    close(r.ret, [0.96575, 0.985, 1.0]);
    const m = gaeScan([0, 0, 1], [0.5, 0.6, 0.7], [1, 0, 1], 1, 0.95);
    close(m.adv, [0.485, 0.3, 0.3]);
  });

  it("places the outcome reward on the last policy token and masks env tokens", () => {
    const t: Trajectory = { groupId: "a", reward: 1, mask: [1, 1, 1, 0], values: [0.5, 0.6, 0.7, 0.9] };
    const r = ADVANTAGE.gae([t], withAdvantageDefaults({ lambda: 0.95, whiten: false }));
    close(r.advantages[0], [0.46575, 0.385, 0.3, 0]);
    close(r.returns?.[0] ?? [], [0.96575, 0.985, 1.0, 0.9]);
  });

  it("whitens over the batch and needs a critic", () => {
    const t: Trajectory = { groupId: "a", reward: 1, mask: [1, 1, 1], values: [0.5, 0.6, 0.7] };
    const r = ADVANTAGE.gae([t], withAdvantageDefaults({ lambda: 0.95 }));
    const a = Array.from(r.advantages[0]);
    expect(a.reduce((x, y) => x + y, 0)).toBeCloseTo(0, 9);
    expect(a[0]).toBeGreaterThan(a[2]);
    expect(() => ADVANTAGE.gae([{ groupId: "a", reward: 1, mask: [1] }], withAdvantageDefaults())).toThrow(
      /values/,
    );
  });

  it("decoupled λ: returns use λ_critic, advantages λ_policy (§12)", () => {
    const t: Trajectory = { groupId: "a", reward: 1, mask: [1, 1, 1], values: [0.5, 0.6, 0.7] };
    const r = ADVANTAGE.gae([t], withAdvantageDefaults({ lambda: 0.95, lambdaCritic: 1, whiten: false }));
    close(r.advantages[0], [0.46575, 0.385, 0.3]);
    close(r.returns?.[0] ?? [], [1, 1, 1]);
  });

  it("length-adaptive λ (§12)", () => {
    expect(lengthAdaptiveLambda(100, 0.05)).toBeCloseTo(0.8, 12);
    expect(lengthAdaptiveLambda(1000, 0.05)).toBeCloseTo(0.98, 12);
    expect(lengthAdaptiveLambda(10, 0.05)).toBe(0);
    expect(lengthAdaptiveLambda(20, 0.5)).toBeCloseTo(0.9, 12);
  });
});

describe("reinforce-pp and reinforce-pp-baseline (§5)", () => {
  const batch: Trajectory[] = [
    { groupId: "a", reward: 1, mask: [1, 1] },
    { groupId: "b", reward: 0, mask: [1, 1, 1] },
  ];
  it("whitens token returns over the batch (verl sample / OpenRLHF population)", () => {
    const v = ADVANTAGE["reinforce-pp"](batch, withAdvantageDefaults());
    close(v.advantages[0], [1.095445, 1.095445]);
    close(v.advantages[1], [-0.730297, -0.730297, -0.730297]);
    const o = ADVANTAGE["reinforce-pp"](batch, withAdvantageDefaults({ std: "population" }));
    close(o.advantages[0], [1.224745, 1.224745]);
    close(o.advantages[1], [-0.816497, -0.816497, -0.816497]);
  });

  it("folds k1 KL into token rewards", () => {
    const t: Trajectory = {
      groupId: "a",
      reward: 1,
      mask: [1, 1],
      oldLogprob: [-1, -1],
      refLogprob: [-1.5, -1],
    };
    const u: Trajectory = {
      groupId: "b",
      reward: 0,
      mask: [1, 1],
      oldLogprob: [-1, -1],
      refLogprob: [-1, -1],
    };
    // β = 0.2: t's rewards [−0.1, 1] → returns [0.9, 1]; u's returns [0, 0].
    const r = ADVANTAGE["reinforce-pp"]([t, u], withAdvantageDefaults({ klCoef: 0.2, std: "population" }));
    const all = [0.9, 1, 0, 0];
    const mu = 0.475;
    const sd = Math.sqrt(all.reduce((s, x) => s + (x - mu) ** 2, 0) / 4 + 1e-8);
    close(r.advantages[0], [(0.9 - mu) / sd, (1 - mu) / sd]);
    // k2 of (−1, −1.5) is 0.125: rewards [−0.025, 1] → returns [0.975, 1]
    const k2 = ADVANTAGE["reinforce-pp"](
      [t, u],
      withAdvantageDefaults({ klCoef: 0.2, klEstimator: "k2", whiten: false }),
    );
    const raw = ADVANTAGE.remax(
      [{ ...t, baselineReward: 0 }],
      withAdvantageDefaults({ klCoef: 0.2, klEstimator: "k2" }),
    );
    close(raw.advantages[0], [0.975, 1]);
    expect(k2.advantages[0][0]).not.toBeCloseTo(r.advantages[0][0], 3);
  });

  it("baseline variant reproduces the worked numbers and guards degenerate batches", () => {
    const b = ADVANTAGE["reinforce-pp-baseline"](group([1, 0, 0, 1]), withAdvantageDefaults());
    close(b.advantages[0], [0.935414, 0.935414]);
    close(b.advantages[1], [-0.935414, -0.935414]);
    const p = ADVANTAGE["reinforce-pp-baseline"](
      group([1, 0, 0, 1]),
      withAdvantageDefaults({ std: "population" }),
    );
    close(p.advantages[0], [1, 1]);
    const d = ADVANTAGE["reinforce-pp-baseline"](group([1, 1, 1]), withAdvantageDefaults());
    for (const a of d.advantages) close(a, [0, 0]);
  });
});

describe("remax (§5)", () => {
  it("subtracts the greedy reward", () => {
    const r = ADVANTAGE.remax(
      [
        { groupId: "a", reward: 1, baselineReward: 0, mask: [1, 0, 1] },
        { groupId: "b", reward: 1, baselineReward: 1, mask: [1, 1] },
      ],
      withAdvantageDefaults(),
    );
    close(r.advantages[0], [1, 0, 1]);
    close(r.advantages[1], [0, 0]);
    expect(() => ADVANTAGE.remax(group([1]), withAdvantageDefaults())).toThrow(/baselineReward/);
  });
});

describe("gigpo (§6)", () => {
  const batch: Trajectory[] = [
    {
      groupId: "task",
      reward: 10,
      mask: [1, 1, 1],
      steps: [
        { anchor: "s0", reward: 0, start: 0, end: 1 },
        { anchor: "s1", reward: 0, start: 1, end: 2 },
        { anchor: "s2", reward: 10, start: 2, end: 3 },
      ],
    },
    {
      groupId: "task",
      reward: 0,
      mask: [1, 1],
      steps: [
        { anchor: "s0", reward: 0, start: 0, end: 1 },
        { anchor: "s3", reward: 0, start: 1, end: 2 },
      ],
    },
  ];
  it("paper form", () => {
    const r = ADVANTAGE.gigpo(batch, withAdvantageDefaults());
    close(r.advantages[0], [9.5125, 5, 5]);
    close(r.advantages[1], [-9.5125, -5]);
  });
  it("reference-code form (stats over step rows)", () => {
    const r = ADVANTAGE.gigpo(
      batch,
      withAdvantageDefaults({ gigpo: { ...withAdvantageDefaults().gigpo, episodeStats: "rows" } }),
    );
    close(r.advantages[0], [8.5125, 4, 4]);
    close(r.advantages[1], [-10.5125, -6]);
  });
  it("singleton episode group gives A^E = R", () => {
    const r = ADVANTAGE.gigpo([batch[0]], withAdvantageDefaults());
    close(r.advantages[0], [10, 10, 10]);
  });
});

describe("reinforce-history (§12)", () => {
  it("uses the window mean of earlier batches and returns the new state", () => {
    const o = withAdvantageDefaults({ history: { window: 2, ema: null } });
    const r = ADVANTAGE["reinforce-history"](group([1, 0]), o, { rewardHistory: [0.9, 0.2, 0.4] });
    close(r.scalar ?? [], [0.7, -0.3]);
    expect(r.state?.rewardHistory).toEqual([0.4, 0.5]);
    const first = ADVANTAGE["reinforce-history"](group([1, 0]), o);
    close(first.scalar ?? [], [0.5, -0.5]);
  });
  it("EMA baseline", () => {
    const o = withAdvantageDefaults({ history: { window: 2, ema: 0.9 } });
    const r = ADVANTAGE["reinforce-history"](group([1, 1]), o, { emaBaseline: 0.5 });
    close(r.scalar ?? [], [0.5, 0.5]);
    expect(r.state?.emaBaseline).toBeCloseTo(0.55, 12);
  });
});

describe("turn-discount (§12)", () => {
  it("reproduces the Kevin example", () => {
    close(turnDiscount([0, 0, 1], 0.4), [0.16, 0.4, 1.0]);
    expect(RETURN["turn-discount"]).toBe(turnDiscount);
  });
});

describe("opo, grpo-passk, liteppo (§13)", () => {
  // §13's batch: rewards [1, 0, 1, 0 | 2, 0.5, 0.5], response lengths [4, 2, 6, 3 | 5, 5, 2].
  const R = [1, 0, 1, 0, 2, 0.5, 0.5];
  const LEN = [4, 2, 6, 3, 5, 5, 2];
  const worked = (): Trajectory[] =>
    R.map((reward, i) => ({
      groupId: i < 4 ? "g0" : "g1",
      reward,
      // a trailing tool-output token (mask 0) does not count in |y|
      mask: Float64Array.from({ length: LEN[i] + 1 }, (_, t) => (t < LEN[i] ? 1 : 0)),
    }));

  it("opo reproduces §13: the length-weighted group mean as baseline", () => {
    close(scalars("opo", worked()), [0.333333, -0.666667, 0.333333, -0.666667, 0.875, -0.625, -0.625]);
    // singleton group: baseline 0 (verl); advantages sit only on mask-1 tokens
    const one = ADVANTAGE.opo(group([0.7], 3), withAdvantageDefaults());
    close(one.advantages[0], [0.7, 0.7, 0.7]);
    const adv = ADVANTAGE.opo(worked(), withAdvantageDefaults()).advantages[0];
    expect(adv[4]).toBe(0);
  });

  it("grpo-passk reproduces §13: only the best of each group, R_max − R_second (over std + ε)", () => {
    close(scalars("grpo-passk", worked(), { stdEps: 1e-6 }), [0, 0, 0, 0, 1.732049, 0, 0]);
    close(scalars("grpo-passk", worked(), { normByStd: false }), [0, 0, 0, 0, 1.5, 0, 0]);
    // the population-std setting does not change it: pass@k uses torch's unbiased std
    close(scalars("grpo-passk", worked(), { stdEps: 1e-6, std: "population" }), [0, 0, 0, 0, 1.732049, 0, 0]);
    expect(() => ADVANTAGE["grpo-passk"](group([1]), withAdvantageDefaults())).toThrow(/group_size >= 2/);
    close(scalars("grpo-passk", group([0, 0, 0])), [0, 0, 0]);
  });

  it("liteppo: group mean, batch std (derived: mean_g0 0.5, mean_g1 1, sample std of all 7 rewards 0.698638)", () => {
    // (R − group mean) / (0.6986381 + 1e-6): 0.5 → 0.715677, 1 → 1.431354
    close(
      scalars("liteppo", worked(), { stdEps: 1e-6 }),
      [0.715677, -0.715677, 0.715677, -0.715677, 1.431354, -0.715677, -0.715677],
    );
    // unlike grpo, a group's scale is the batch's: equal rewards in one group give 0 there
    const b = [...group([1, 1], 2, "a"), ...group([0, 1], 2, "b")];
    close(scalars("liteppo", b, { stdEps: 0 }), [0, 0, -0.5 / 0.5, 0.5 / 0.5]);
    // a batch of one: std 0, a zero numerator (singleton rule "zero") gives 0, not NaN
    close(scalars("liteppo", group([3])), [0]);
  });
});
