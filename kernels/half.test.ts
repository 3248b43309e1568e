// The host f16 conversion (kernels/half.ts): exact round trips of every f16 value, ties to
// even between neighbours, subnormals, the range's end. Run: npx vitest run --project unit kernels/half.test.ts
import { describe, expect, it } from "vitest";
import { F16_MAX, halfBits, halfValue, maxAbs, roundHalf, roundHalfArray } from "./half";

describe("f16 conversion", () => {
  it("round-trips every finite f16 value and rounds the midpoints between neighbours to even", () => {
    const bad: string[] = [];
    let ties = 0;
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00) continue; // inf, NaN
      const v = halfValue(h);
      if (halfBits(v) !== h) bad.push(`${h}: ${halfBits(v)}`);
      const next = h + 1;
      if ((next & 0x7fff) >= 0x7c00 || h === 0x7fff) continue;
      const mid = (v + halfValue(next)) / 2; // exact in float32 for f16 neighbours of one sign
      if (Math.fround(mid) !== mid) continue;
      ties++;
      if (halfBits(mid) !== (h % 2 === 0 ? h : next)) bad.push(`tie after ${h}: ${halfBits(mid)}`);
    }
    expect(bad.slice(0, 5)).toEqual([]);
    expect(ties).toBeGreaterThan(60000);
  });

  it("ends the range at 65504, flushes below 2^-25 to zero, keeps signs, NaN and infinity", () => {
    expect(F16_MAX).toBe(halfValue(0x7bff));
    expect(roundHalf(65519)).toBe(65504);
    expect(halfBits(65520)).toBe(0x7c00); // the midpoint to the next (absent) value: infinity
    expect(halfBits(-1e6)).toBe(0xfc00);
    expect(halfBits(2 ** -24)).toBe(1);
    expect(halfBits(2 ** -25)).toBe(0); // tie to even (0)
    expect(halfBits(2 ** -25 * 1.5)).toBe(1);
    expect(halfBits(-(2 ** -26))).toBe(0x8000);
    expect(Number.isNaN(halfValue(halfBits(Number.NaN)))).toBe(true);
    expect(roundHalf(0.1)).toBe(0.0999755859375);
    expect(roundHalf(1 / 3)).toBe(0.333251953125);
    expect([...roundHalfArray([1, 2049, 2051])]).toEqual([1, 2048, 2052]);
  });

  it("maxAbs counts NaN as infinite", () => {
    expect(maxAbs([1, -70000, 3])).toBe(70000);
    expect(maxAbs([1, Number.NaN])).toBe(Number.POSITIVE_INFINITY);
    expect(maxAbs([])).toBe(0);
  });
});
