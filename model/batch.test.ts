// Unit tests of packing sequences into a right-padded ScoreBatch.
import { describe, expect, it } from "vitest";
import { gather, packBatch, scatter } from "./batch";
import { modelConfig } from "./config";
import { CpuModel } from "./cpu";

describe("packBatch", () => {
  it("shifts targets, pads on the right and marks valid positions", () => {
    const p = packBatch([
      [5, 6, 7, 8],
      [9, 10],
    ]);
    expect(p.batch.T).toBe(3);
    expect([...p.batch.tokens]).toEqual([5, 6, 7, 9, 0, 0]);
    expect([...p.batch.targets]).toEqual([6, 7, 8, 10, 0, 0]);
    expect([...p.valid]).toEqual([1, 1, 1, 1, 0, 0]);
    const grid = scatter(p, [[1, 2, 3], [4]]);
    expect([...grid]).toEqual([1, 2, 3, 4, 0, 0]);
    expect(gather(p, grid)).toEqual([[1, 2, 3], [4]]);
    expect(() => packBatch([[1, 2, 3]], 1)).toThrow(/T \+ 1/);
  });

  it("right padding leaves each sequence's log-probs as if it were alone", async () => {
    const model = new CpuModel(modelConfig({ layers: 1, dModel: 16, heads: 2, context: 16 }), undefined, 2);
    const seqs = [
      [3, 4, 5, 6, 7, 8],
      [9, 10, 11],
    ];
    const both = packBatch(seqs);
    const all = gather(both, (await model.forwardScore(both.batch)).logp);
    const alone = packBatch([seqs[1]]);
    const one = gather(alone, (await model.forwardScore(alone.batch)).logp);
    expect(all[1].map((x) => x.toFixed(5))).toEqual(one[0].map((x) => x.toFixed(5)));
  });
});
