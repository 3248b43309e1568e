// Unit tests of the benchmark runner's pure parts: arguments, the report's adapter, stale rows
// of a failed group, row arithmetic (makeRow) and the markdown table.
import { describe, expect, it } from "vitest";
import { interpolate, trainStepFlops } from "./page/model-math";
import { type BenchRow, makeRow, toMarkdown } from "./report";
import { type GroupResult, parseArgs, pickAdapter, staleRows } from "./run";

const gpuA = { vendor: "google", architecture: "swiftshader", description: "SwiftShader" };
const dawn = { vendor: "mesa", architecture: "", description: "llvmpipe" };

describe("parseArgs", () => {
  it("runs the default groups when none is named (baseline and peers only when named) and reads --quick", () => {
    expect(parseArgs([])).toEqual({ quick: false, groups: ["kernels", "model", "sandbox", "rl", "shapes"] });
    expect(parseArgs(["peers", "baseline"]).groups).toEqual(["peers", "baseline"]);
    expect(parseArgs(["--quick", "model", "rl", "model"])).toEqual({ quick: true, groups: ["model", "rl"] });
  });
  it("names the groups when given an unknown argument", () => {
    expect(() => parseArgs(["modle"])).toThrow(/kernels, model, sandbox, rl/);
  });
});

describe("pickAdapter", () => {
  const r = (group: GroupResult["group"], adapter?: typeof gpuA): GroupResult => ({
    group,
    rows: [],
    adapter,
    seconds: 1,
  });
  it("prefers the browser adapter of kernels or model", () => {
    expect(pickAdapter([r("rl", dawn), r("model", gpuA)])).toBe(gpuA);
  });
  it("keeps the previous adapter when only Node groups ran", () => {
    expect(pickAdapter([r("rl", dawn), r("sandbox")], gpuA)).toBe(gpuA);
    expect(pickAdapter([r("rl", dawn)])).toBe(dawn);
    expect(pickAdapter([r("sandbox")]).vendor).toBe("unknown");
  });
});

describe("staleRows", () => {
  it("keeps only the failed group's rows and says why", () => {
    const rows: BenchRow[] = [
      makeRow({ id: "a", group: "model", ours: [1], baseline: [2], unit: "s", better: "lower", note: "x" }),
      makeRow({ id: "b", group: "rl", ours: [1], baseline: [1], unit: "s", better: "lower" }),
    ];
    const s = staleRows(rows, "model", "boom\nstack", "2026-01-01");
    expect(s.map((r) => r.id)).toEqual(["a"]);
    expect(s[0].note).toBe("STALE (from 2026-01-01; this run's model group failed: boom); x");
    expect(s[0].ours).toBe(1);
  });
});

describe("makeRow and the table", () => {
  it("ratio is how many times better ours is, for rates and for times", () => {
    const rate = makeRow({
      id: "r",
      group: "g",
      ours: [4, 2, 6],
      baseline: [1, 1],
      unit: "x/s",
      better: "higher",
    });
    expect(rate).toMatchObject({ ours: 4, baseline: 1, ratio: 4, reps: 3, spread: 1 });
    const time = makeRow({ id: "t", group: "g", ours: [2], baseline: [6], unit: "s", better: "lower" });
    expect(time.ratio).toBe(3);
    const md = toMarkdown({ date: "d", adapter: gpuA, rows: [rate, time] });
    expect(md).toContain("| r | 4.00 | 1.00 | x/s | 4.00 | 3 | 100% |  |");
  });
});

describe("model bench arithmetic", () => {
  it("interpolates recompute times linearly and through the origin below the first point", () => {
    expect(interpolate([10, 20], [100, 300], 15)).toBe(200);
    expect(interpolate([10, 20], [100, 300], 30)).toBe(500);
    expect(interpolate([10], [100], 5)).toBe(50);
    expect(interpolate([10, 20], [100, 300], 0)).toBe(0);
  });
  it("counts the demo train step at about 6 x params x tokens", () => {
    const c = { layers: 3, dModel: 128, vocab: 107 };
    const f = trainStepFlops(c, 16, 128);
    const params = 3 * 12 * 128 * 128 + 128 * 107;
    expect(f / (6 * params * 16 * 128)).toBeGreaterThan(1);
    expect(f / (6 * params * 16 * 128)).toBeLessThan(1.2);
  });
});
