// The paper GPU model of bench/counts-model.ts: the per-dispatch roofline against hand-computed
// floors, the linear extrapolation in depth (exact on linear counts, and it says how far a third
// depth is off), the predicted time's overheads, and that the committed PERFORMANCE.md holds what
// the committed bench/results/counts.json renders to. Run: npx vitest run --project unit bench/counts
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type CountsReport,
  type DepthCount,
  extrapolate,
  linearityError,
  type NamedGpu,
  OVERHEADS,
  PHASES,
  phaseCount,
  predictedS,
  renderCounts,
  roofline,
  updateCountsDoc,
} from "./counts-model";
import { DOC } from "./doc-tables";

const G: NamedGpu = { id: "g", name: "G", tflops: 1, gbs: 100, source: "made up" };

describe("roofline", () => {
  it("takes the slower of compute and memory per dispatch, not of the sums", () => {
    // 1e12 FLOPs on 1 TFLOP/s: 1 s compute; 1e9 bytes at 100 GB/s: 0.01 s; and the reverse shape
    const log = [
      { label: "mm", flops: 1e12, bytes: 1e9 },
      { label: "mv", flops: 1e9, bytes: 1e11 },
    ];
    const r = roofline(log, [G]);
    expect(r.floorS.g).toBeCloseTo(1 + 1, 12); // max(1, 0.01) + max(0.001, 1)
    expect(r.computeBoundShare.g).toBeCloseTo(0.5, 12);
    // the sums' roofline would say max(1.001, 1.01) = 1.01 s
    expect(r.floorS.g).toBeGreaterThan(1.5);
  });
  it("adds each dispatch's and each readback's stated cost to the floor", () => {
    const p = phaseCount([{ label: "a", flops: 0, bytes: 1e9 }], { submits: 1, readbacks: 2 }, [G]);
    expect(p.floorS.g).toBeCloseTo(0.01, 12);
    expect(predictedS(p, G, { dispatchUs: 5, readbackMs: 1 })).toBeCloseTo(0.01 + 5e-6 + 2e-3, 12);
  });
});

const depth = (layers: number, perLayer: number, bend = 0): DepthCount => {
  const log = Array.from({ length: 2 + layers }, (_, i) => ({
    label: "x",
    flops: i < 2 ? 5e9 : perLayer * 1e9 + (i === 2 + layers - 1 ? bend : 0),
    bytes: 1e8,
  }));
  const p = phaseCount(log, { submits: 3, readbacks: 1 }, [G]);
  return { layers, wallS: layers, phases: { rollout: p, "old-logprobs": p, update: p } };
};

describe("extrapolate", () => {
  it("is exact where every layer adds the same dispatches", () => {
    const [a, b, c] = [depth(1, 2), depth(2, 2), depth(3, 2)];
    const at30 = extrapolate(a, b, "update", 30);
    expect(at30.dispatches).toBe(32);
    expect(at30.flops).toBeCloseTo(10e9 + 30 * 2e9, 0);
    expect(at30.floorS.g).toBeCloseTo(depth(30, 2).phases.update.floorS.g, 12);
    expect(linearityError(extrapolate(a, b, "update", 3), c.phases.update)).toBeLessThan(1e-12);
  });
  it("says how far a depth that is not linear is off", () => {
    const [a, b, c] = [depth(1, 2), depth(2, 2), depth(3, 2, 3e9)];
    expect(linearityError(extrapolate(a, b, "rollout", 3), c.phases.rollout)).toBeGreaterThan(0.1);
    expect(() => extrapolate(a, a, "rollout", 3)).toThrow(/two different depths/);
  });
});

describe("renderCounts and the committed document", () => {
  it("renders a model's phases, its step and the linearity check", () => {
    const r: CountsReport = {
      date: "2026-12-04T00:00:00.000Z",
      adapter: "llvmpipe",
      plan: "discrete",
      planWhy: "forced",
      gpus: [G],
      overheads: OVERHEADS,
      models: [
        { id: "m", name: "M", layers: 30, shape: "s", depths: [depth(1, 2), depth(2, 2), depth(3, 2)] },
      ],
    };
    const md = renderCounts("c.json", r);
    for (const ph of PHASES) expect(md).toContain(`| ${ph} | 32 | 1 |`);
    expect(md).toContain("| **step** | 96 | 3 |");
    expect(md).toMatch(/1 and 2 predict 3 (exactly|within a relative \d\.\de-\d+) on every count/);
  });
  it("PERFORMANCE.md holds the table bench/results/counts.json renders to (npm run bench:doc if not)", () => {
    const text = readFileSync(DOC, "utf8");
    expect(text).toContain("<!-- counts-table: bench/results/counts.json -->");
    expect(updateCountsDoc(text, (p) => readFileSync(p, "utf8"), DOC)).toBe(text);
  });
});
