import { describe, expect, it } from "vitest";
import { gatherRows, packSequences, scatterRows } from "./score-batch";

describe("packSequences", () => {
  it("right-pads rows, shifts targets, and maps response tokens to the position that scores them", () => {
    const { batch, index } = packSequences(
      [
        { prompt: [5, 6], response: [7, 8, 9] },
        { prompt: [5], response: [4] },
      ],
      16,
    );
    expect(batch.T).toBe(5);
    expect([...batch.tokens.slice(0, 5)]).toEqual([5, 6, 7, 8, 9]);
    expect([...batch.targets.slice(0, 4)]).toEqual([6, 7, 8, 9]);
    expect([...index[0]]).toEqual([1, 2, 3]);
    expect([...index[1]]).toEqual([5]);
    const flat = Float32Array.from({ length: 10 }, (_, i) => i);
    expect(gatherRows(flat, index).map((r) => [...r])).toEqual([[1, 2, 3], [5]]);
    const back = scatterRows([[1, 1, 1], [2]], index, 10);
    expect([...back]).toEqual([0, 1, 1, 1, 0, 2, 0, 0, 0, 0]);
  });
  it("marks where each row's scored positions start (its prompt's last token), at most T", () => {
    const rows = [
      { prompt: [5, 6], response: [7, 8, 9] },
      { prompt: [5], response: [4] },
      { prompt: [1, 2, 3, 4, 5, 6], response: [7] },
    ];
    expect([...(packSequences(rows, 5).batch.scoreFrom ?? [])]).toEqual([1, 0, 5]);
  });
  it("cuts rows at maxT and marks the lost response tokens", () => {
    const { batch, index } = packSequences([{ prompt: [1, 2, 3], response: [4, 5, 6] }], 4);
    expect(batch.T).toBe(4);
    expect([...index[0]]).toEqual([2, -1, -1]);
  });
});
