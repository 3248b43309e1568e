// The matmul tile chooser (kernels/autotune.ts) on injected timings: deterministic, the default
// kept within the noise margin, ties to the earlier candidate; and the override's parsing.
// Run: npx vitest run --project unit kernels/autotune
import { describe, expect, it } from "vitest";
import { chooseTile, MATMUL_TILES, parseTile, TUNE_MARGIN, tileName } from "./autotune";

const at = (...ms: number[][]) => MATMUL_TILES.slice(0, ms.length).map((tile, i) => ({ tile, ms: ms[i] }));

describe("chooseTile", () => {
  it("picks the candidate with the smallest median, the same every time", () => {
    const times = at([10, 11, 30], [9, 50, 8.5], [6, 6.2, 100], [7, 7, 7]);
    const a = chooseTile(times);
    expect(tileName(a.tile)).toBe(tileName(MATMUL_TILES[2]));
    expect(a.medians[tileName(MATMUL_TILES[2])]).toBe(6.2);
    expect(a.medians[tileName(MATMUL_TILES[0])]).toBe(11);
    for (let i = 0; i < 5; i++) expect(chooseTile(times)).toEqual(a);
  });

  it("keeps the default unless another beats it by more than the margin", () => {
    const within = 10 * (1 - TUNE_MARGIN) + 0.01;
    expect(chooseTile(at([10, 10, 10], [within, within, within])).tile).toEqual(MATMUL_TILES[0]);
    const beyond = 10 * (1 - TUNE_MARGIN) - 0.01;
    expect(chooseTile(at([10, 10, 10], [beyond, beyond, beyond])).tile).toEqual(MATMUL_TILES[1]);
  });

  it("breaks ties toward the earlier candidate and skips candidates without times", () => {
    expect(chooseTile(at([10], [5], [5], [5])).tile).toEqual(MATMUL_TILES[1]);
    expect(chooseTile(at([], [Number.NaN], [4])).tile).toEqual(MATMUL_TILES[2]);
    expect(() => chooseTile(at([], [Number.POSITIVE_INFINITY]))).toThrow(/no candidate/);
  });
});

describe("parseTile", () => {
  it("reads a candidate and refuses anything else, naming the candidates", () => {
    expect(parseTile("16x8")).toEqual([16, 8]);
    expect(parseTile(" 8 x 8 ")).toEqual([8, 8]);
    expect(() => parseTile("7x9")).toThrow(/not one of the candidates 8x8, 16x8/);
    expect(() => parseTile("big", "LAB_MATMUL_TILE")).toThrow(/LAB_MATMUL_TILE "big"/);
  });
});
