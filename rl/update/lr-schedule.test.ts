import { describe, expect, it } from "vitest";
import { lrAt } from "./lr-schedule";

describe("lrAt", () => {
  const base = { lr: 1e-3, warmupSteps: 10, minLrRatio: 0.1, totalSteps: 110 };
  it("warms up linearly to lr", () => {
    expect(lrAt(0, { ...base, schedule: "constant" })).toBeCloseTo(1e-4, 12);
    expect(lrAt(9, { ...base, schedule: "constant" })).toBeCloseTo(1e-3, 12);
    expect(lrAt(50, { ...base, schedule: "constant" })).toBe(1e-3);
  });
  it("decays linearly or by cosine to min_lr_ratio * lr at the last step", () => {
    expect(lrAt(10, { ...base, schedule: "cosine" })).toBeCloseTo(1e-3, 12);
    expect(lrAt(109, { ...base, schedule: "cosine" })).toBeCloseTo(1e-4, 12);
    expect(lrAt(109, { ...base, schedule: "linear" })).toBeCloseTo(1e-4, 12);
    // Halfway, cosine and linear agree on the midpoint between lr and the floor.
    const mid = 10 + 99 / 2;
    expect(lrAt(mid, { ...base, schedule: "cosine" })).toBeCloseTo(5.5e-4, 12);
    expect(lrAt(mid, { ...base, schedule: "linear" })).toBeCloseTo(5.5e-4, 12);
  });
});
