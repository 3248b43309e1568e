// Tests of the chart series helpers: `npx vitest run app/smoothing.test.ts`.
import { describe, expect, it } from "vitest";
import {
  debiasedEma,
  mergeDuplicateSteps,
  minMaxDownsample,
  minMaxIndices,
  percentileRange,
} from "./smoothing";

describe("debiasedEma (TensorBoard's formula)", () => {
  it("matches hand-computed values for w = 0.5", () => {
    // last: 0.5, 1.25, 2.125; debias by 1 - 0.5^n: 0.5, 0.75, 0.875
    const out = debiasedEma([1, 2, 3], 0.5) as number[];
    expect(out[0]).toBeCloseTo(1, 12);
    expect(out[1]).toBeCloseTo(1.25 / 0.75, 12);
    expect(out[2]).toBeCloseTo(2.125 / 0.875, 12);
  });

  it("matches TensorBoard's default weight 0.6 on a short series", () => {
    const ys = [10, 0, 5];
    let last = 0;
    const want = ys.map((y, i) => {
      last = last * 0.6 + 0.4 * y;
      return last / (1 - 0.6 ** (i + 1));
    });
    expect(debiasedEma(ys, 0.6)).toEqual(want);
    expect(want[1]).toBeCloseTo(2.4 / 0.64, 12);
  });

  it("returns a constant series unchanged, even at the slider's 0.999", () => {
    for (const w of [0, 0.6, 0.9, 0.999]) {
      for (const v of debiasedEma(new Array(50).fill(0.37), w)) expect(v).toBeCloseTo(0.37, 10);
    }
  });

  it("passes NaN and gaps through without counting them", () => {
    const out = debiasedEma([1, Number.NaN, null, 3], 0.5);
    expect(out[1]).toBeNaN();
    expect(out[2]).toBeNull();
    expect(out[3]).toBeCloseTo((0.5 * 0.5 + 1.5) / 0.75, 12);
  });

  it("is the identity at w = 0 and clamps w", () => {
    expect(debiasedEma([3, -1, 7], 0)).toEqual([3, -1, 7]);
    expect(debiasedEma([3, -1, 7], -2)).toEqual([3, -1, 7]);
  });
});

describe("mergeDuplicateSteps", () => {
  it("sorts by step and keeps the later value of a repeated step", () => {
    expect(mergeDuplicateSteps([2, 1, 2, 3], [20, 10, 21, 30])).toEqual({ xs: [1, 2, 3], ys: [10, 21, 30] });
  });
  it("does not let a gap overwrite a value", () => {
    expect(mergeDuplicateSteps([1, 1], [5, null])).toEqual({ xs: [1], ys: [5] });
  });
});

describe("min/max downsampling", () => {
  const n = 10_000;
  const xs = Array.from({ length: n }, (_, i) => i);
  const ys = xs.map((i) => Math.sin(i / 300));
  ys[5003] = 40; // a spike
  ys[7001] = -40; // a dip

  it("keeps spikes, dips, the first and the last point, within 4 points per bucket", () => {
    const idx = minMaxIndices(xs, [ys], 100);
    expect(idx).toContain(5003);
    expect(idx).toContain(7001);
    expect(idx[0]).toBe(0);
    expect(idx[idx.length - 1]).toBe(n - 1);
    expect(idx.length).toBeLessThanOrEqual(400);
    expect(idx.length).toBeGreaterThan(100);
    expect([...idx].sort((a, b) => a - b)).toEqual(idx);
  });

  it("keeps aligned series aligned and keeps each series' extremes", () => {
    const other = xs.map((i) => (i === 1234 ? 99 : 0));
    const d = minMaxDownsample(xs, [ys, other], 50);
    expect(d.series[0].length).toBe(d.xs.length);
    expect(d.series[1].length).toBe(d.xs.length);
    expect(Math.max(...(d.series[0] as number[]))).toBe(40);
    expect(Math.min(...(d.series[0] as number[]))).toBe(-40);
    expect(d.xs[(d.series[1] as number[]).indexOf(99)]).toBe(1234);
  });

  it("returns short series whole", () => {
    expect(minMaxIndices([0, 1, 2], [[1, 2, 3]], 100)).toEqual([0, 1, 2]);
  });

  it("skips gaps when looking for extremes", () => {
    const g = xs.map((i) => (i % 2 ? null : i));
    const idx = minMaxIndices(xs, [g], 10);
    expect(idx).toContain(0);
    expect(idx).toContain(9998);
  });
});

describe("percentileRange", () => {
  it("drops the outliers outside 5-95%", () => {
    const v = Array.from({ length: 101 }, (_, i) => i);
    v[100] = 1e9;
    expect(percentileRange(v)).toEqual([5, 95]);
    expect(percentileRange([null, Number.NaN])).toBeNull();
  });
});
