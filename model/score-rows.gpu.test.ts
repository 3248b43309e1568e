// GPU test of the head over scored rows only (ScoreBatch.scoreFrom, model/head.ts scoredSpans):
// against the same model scoring every row (GpuModel.headAllRows), the scored positions' logp and
// entropy are equal within 1e-5 (a span of at most 8 rows runs the head as linear-rows.wgsl, the
// decode kernel, whose vec4 sums round differently from the tiled matmul's; measured 5e-7) and
// the gradients within STYLE's tolerance (the head's weight gradient sums other chunks), the skipped positions come back 0, and a chunked
// head (a lowered binding limit) still skips them. Run: npx vitest run --project gpu model/score-rows
import { describe, expect, it } from "vitest";
import { assertClose, limitedRuntime, randInt, randn, TOL } from "../kernels/testing";
import { packSequences } from "../rl/update/score-batch";
import { modelConfig } from "./config";
import { GpuModel } from "./gpu";
import { scoredSpans } from "./head";

describe("head over scored rows", () => {
  it("scoredSpans: one span per sequence from its first scored row, aligned down, merged", () => {
    // C = 48: rows of x are 256-byte aligned every 4 rows
    expect(scoredSpans(3, 10, 48, Int32Array.from([3, 0, 7]))).toEqual([
      [0, 20],
      [24, 30],
    ]);
    expect(scoredSpans(2, 10, 64, Int32Array.from([0, 0]))).toBeUndefined();
    expect(scoredSpans(2, 10, 64, undefined)).toBeUndefined();
    expect(scoredSpans(2, 10, 64, Int32Array.from([10, 4]))).toEqual([[14, 20]]);
  });

  it("gives the all-rows head's logp, entropy and gradients where scored, 0 elsewhere", async () => {
    const config = modelConfig({ layers: 1, dModel: 48, heads: 2, context: 16, vocab: 400 });
    // 64 KiB bindings: the head cuts W (75 KiB) into vocabulary slices, chunks of 40 rows at most
    const rt = await limitedRuntime({ maxBindingBytes: 64 * 1024 });
    const rows = [3, 9, 5].map((p, i) => ({
      prompt: Array.from(randInt(p, config.vocab, 40 + i)),
      response: Array.from(randInt(14 - p, config.vocab, 50 + i)),
    }));
    const { batch, index } = packSequences(rows, config.context);
    expect([...(batch.scoreFrom ?? [])]).toEqual([2, 8, 4]);
    const N = batch.B * batch.T;
    const dlogp = new Float32Array(N);
    const dent = new Float32Array(N);
    const noise = randn(2 * N, 3);
    for (const idx of index)
      for (const i of idx)
        if (i >= 0) {
          dlogp[i] = noise[i];
          dent[i] = noise[N + i];
        }
    const run = async (all: boolean) => {
      const m = new GpuModel(rt, config, undefined, 5);
      m.headAllRows = all;
      m.zeroGrad();
      const out = await m.forwardScore(batch);
      await m.backward({ dlogp, dentropy: dent });
      const grads = await m.getGrads();
      m.dispose();
      return { ...out, grads };
    };
    const all = await run(true);
    const some = await run(false);
    const spans = scoredSpans(batch.B, batch.T, config.dModel, batch.scoreFrom) ?? [];
    const inSpan = (i: number) => spans.some(([a, b]) => i >= a && i < b);
    for (let i = 0; i < N; i++) {
      if (inSpan(i)) {
        expect(Math.abs(some.logp[i] - all.logp[i])).toBeLessThan(1e-5);
        expect(Math.abs(some.entropy[i] - all.entropy[i])).toBeLessThan(1e-5);
      } else {
        expect(some.logp[i]).toBe(0);
        expect(some.entropy[i]).toBe(0);
      }
    }
    for (const idx of index) for (const i of idx) if (i >= 0) expect(inSpan(i)).toBe(true);
    // the head's dW sums rows chunk by chunk, and the chunks differ: equal to rounding, not bit for bit
    assertClose("gradients", some.grads, all.grads, TOL.grad);
  });
});
