// CPU test: the head's plan (model/head.ts) at the target vocabularies under lavapipe's 128 MiB
// binding limit: vocabulary slices that fit a binding, chunks of whole rows, and the bytes of
// logits the head holds bounded whatever the batch. Run: npx vitest run --project unit model/head
import { describe, expect, it } from "vitest";
import type { Runtime } from "../kernels/runtime";
import { chunkFloats, chunkRows, headChunks, headPlan } from "./head";

const limits = (bytes: number) =>
  ({ maxBindingBytes: bytes, bindingFloats: Math.floor(bytes / 256) * 64 }) as unknown as Runtime;
const lavapipe = limits(128 * 1024 * 1024);

describe("head plan", () => {
  it("slices W to one binding and bounds the logits at vocab 49,152 and 151,936", () => {
    for (const [V, C] of [
      [49152, 576], // SmolLM2-135M
      [151936, 896], // Qwen2.5-0.5B
      [151936, 1536], // Qwen2.5-1.5B
    ]) {
      const plan = headPlan(lavapipe, V, C);
      expect(plan.sliceV * C * 4).toBeLessThanOrEqual(128 * 1024 * 1024);
      for (const N of [1, 64, 8 * 512, 64 * 2048]) {
        const bytes = 2 * chunkFloats(plan, N) * 4; // logits + dlogits
        expect(bytes).toBeLessThan(256e6);
        const chunks = headChunks(plan, N);
        expect(chunks.reduce((a, c) => a + c.rows, 0)).toBe(N);
        expect(chunks.every((c, i) => c.rowBase === i * chunkRows(plan, N))).toBe(true);
      }
    }
    // 8 x 512 tokens at 151,936: 110 rows a chunk, 134 MB for both buffers (unchunked: 5 GB)
    const q = headPlan(lavapipe, 151936, 896);
    expect(chunkRows(q, 4096)).toBe(110);
    expect(headChunks(q, 4096)).toHaveLength(38);
    expect(q.sliceV).toBe(37440);
  });

  it("keeps a small batch whole and aligns partial chunks to 256-byte row offsets", () => {
    const plan = headPlan(lavapipe, 107, 128);
    expect(plan.sliceV).toBe(107);
    expect(headChunks(plan, 2048)).toHaveLength(1);
    // C = 24: 8 rows of x per 256 bytes, so chunks of a multiple of 8 rows
    const small = headPlan(limits(16 * 1024), 300, 24);
    expect(small.maxRows).toBe(13);
    expect(chunkRows(small, 40)).toBe(8);
    expect(() => headPlan(limits(8192), 5000, 24)).toThrow(/one row of 5000 logits is over/);
    expect(() => headPlan(limits(1024), 300, 24)).toThrow(/cannot bind 64 rows of W/);
  });
});
