// The multi-seed aggregation behind `npm run compare`, on hand-computed numbers.
import { describe, expect, it } from "vitest";
import {
  aggregateArm,
  aggregateAvailable,
  binomialSE,
  pairedDifference,
  runSummary,
  type SeedRun,
  stat,
} from "./aggregate.ts";

const run = (seed: number, acc: number[], gn: number[] = []): SeedRun => ({
  seed,
  evalSize: 100,
  rows: [
    ...acc.map((v, i) => ({ step: i * 5, phase: "rl", "val/acc": v })),
    ...gn.map((v, i) => ({ step: i, phase: "rl", "actor/grad_norm": v })),
    { step: 0, phase: "sft", "val/acc": 9 },
  ],
});

describe("aggregation over seeds", () => {
  it("stat: sample sd (n - 1), min, max", () => {
    const s = stat([0.47, 0.75, 0.44, 0.5, 0.75, 0.72]);
    // ci-tiny's step-12 val/acc over 6 seeds, as measured: sd 0.15
    expect(s.mean).toBeCloseTo(0.605, 10);
    expect(s.sd).toBeCloseTo(0.1495, 4); // sqrt(0.11175 / 5)
    expect([s.min, s.max]).toEqual([0.44, 0.75]);
    expect(stat([3]).sd).toBe(0);
  });

  it("available seeds per step: a group still running has fewer seeds at its last steps", () => {
    const a = aggregateAvailable([run(0, [0.2, 0.4, 0.6]), run(1, [0.4])], "val/acc");
    expect(a.map((x) => [x.step, x.stat.n])).toEqual([
      [0, 2],
      [5, 1],
      [10, 1],
    ]);
    expect(a[0].stat.mean).toBeCloseTo(0.3, 12);
    expect(a[0].stat.sd).toBeCloseTo(Math.SQRT2 * 0.1, 12);
    expect(a[1].stat.sd).toBe(0);
  });

  it("binomial SE: sqrt(p(1-p)/n)", () => {
    expect(binomialSE(0.5, 32)).toBeCloseTo(0.0884, 4); // ci-tiny's 32 eval problems
    expect(binomialSE(0.68, 100)).toBeCloseTo(Math.sqrt(0.68 * 0.32) / 10, 12);
  });

  it("per eval step over seeds, RL rows only, with the SE at the mean", () => {
    const arm = [run(1, [0.2, 0.6]), run(2, [0.2, 0.8]), run(3, [0.2, 0.7])];
    const a = aggregateArm(arm, "val/acc");
    expect(a.map((x) => x.step)).toEqual([0, 5]);
    expect(a[0].stat.n).toBe(3);
    expect(a[0].stat.mean).toBeCloseTo(0.2, 12);
    expect(a[0].stat.sd).toBeCloseTo(0, 12);
    expect(a[1].stat.mean).toBeCloseTo(0.7, 12);
    expect(a[1].stat.sd).toBeCloseTo(0.1, 12);
    expect(a[1].se).toBeCloseTo(binomialSE(0.7, 100), 12);
  });

  it("paired difference over the seeds both arms ran", () => {
    const a = [run(1, [0.2, 0.6]), run(2, [0.2, 0.8]), run(3, [0.2, 0.7])];
    const b = [run(2, [0.2, 0.9]), run(3, [0.2, 0.7]), run(4, [0.1, 0.1])];
    const d = pairedDifference(a, b, "val/acc");
    expect(d[1].seeds).toEqual([2, 3]);
    expect(d[1].diff.mean).toBeCloseTo(0.05, 12); // (0.1 + 0.0) / 2
    expect(d[1].diff.sd).toBeCloseTo(Math.SQRT1_2 * 0.1, 12);
    expect(pairedDifference(a, [run(9, [0.5])], "val/acc")).toEqual([]);
  });

  it("training metrics: each seed's mean and max over steps, then over seeds", () => {
    const s = runSummary([run(1, [], [1, 3]), run(2, [], [2, 2])], "actor/grad_norm");
    expect(s.mean).toMatchObject({ n: 2, mean: 2, sd: 0 });
    expect(s.max.mean).toBe(2.5);
  });
});

describe("SE only where the set size is known", () => {
  it("val/acc and dev/acc get one, a bucket does not", () => {
    const r: SeedRun = {
      seed: 1,
      evalSize: 100,
      devSize: 25,
      rows: [{ step: 0, phase: "rl", "val/acc": 0.5, "dev/acc": 0.5, "val/acc/hard": 0.5 }],
    };
    expect(aggregateArm([r], "val/acc")[0].se).toBeCloseTo(0.05, 12);
    expect(aggregateArm([r], "dev/acc")[0].se).toBeCloseTo(0.1, 12);
    expect(aggregateArm([r], "val/acc/hard")[0].se).toBeUndefined();
  });
});
