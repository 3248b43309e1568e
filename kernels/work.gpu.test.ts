// GPU tests: the work each dispatch counts (Runtime.work: dispatches, FLOPs, bytes) against
// hand-computed values, for a matmul on every kernel the plan may pick (one row: the small-rows
// kernel; 64 rows: the tiles or the subgroup kernel), an accumulating product, and causal
// attention forward and backward; and that the counts do not depend on the plan variant.
// Run: npx vitest run --project gpu kernels/work
import { describe, expect, it } from "vitest";
import { attentionBackward, attentionForward } from "./attention";
import { matmul } from "./matmul";
import { type Runtime, type WorkCounters, workSince } from "./runtime";
import { gpuRuntime, planRuntime, randn } from "./testing";

async function counted(rt: Runtime, record: (enc: GPUCommandEncoder) => void): Promise<WorkCounters> {
  const before = { ...rt.work };
  const enc = rt.device.createCommandEncoder();
  record(enc);
  rt.submit(enc);
  await rt.device.queue.onSubmittedWorkDone();
  return workSince(rt.work, before);
}

describe("counted work", () => {
  it.each([1, 64])("matmul of %i rows x 24 by 40 columns, with a bias", async (M) => {
    const [K, N] = [24, 40];
    for (const rt of [await gpuRuntime(), await planRuntime({ smallRows: 0, subgroupMatmul: false })]) {
      const [out, a, b, bias] = [
        rt.tensor(M * N),
        rt.tensor(randn(M * K, 1)),
        rt.tensor(randn(N * K, 2)),
        rt.tensor(N),
      ];
      const w = await counted(rt, (enc) => matmul(rt, enc, out, a, b, bias, { M, N, K, transB: true }));
      // 2 FLOPs a multiply-add; A, B and out once, the bias once
      expect(w).toEqual({ dispatches: 1, flops: 2 * M * N * K, bytes: 4 * (M * K + N * K + M * N + N) });
    }
  });

  it("an accumulating product reads out as well as writing it", async () => {
    const rt = await gpuRuntime();
    const [M, K, N] = [32, 16, 8];
    const [out, a, b] = [rt.tensor(M * N), rt.tensor(randn(M * K, 3)), rt.tensor(randn(K * N, 4))];
    const w = await counted(rt, (enc) => matmul(rt, enc, out, a, b, null, { M, N, K, accumulate: true }));
    expect(w).toEqual({ dispatches: 1, flops: 2 * M * N * K, bytes: 4 * (M * K + K * N + 2 * M * N) });
  });

  it("causal attention forward and backward: T(T+1)/2 pairs a head, the views bound once", async () => {
    for (const rt of [await gpuRuntime(), await planRuntime({ attention: "loop" })]) {
      const [B, T, C, NH, KVH] = [2, 7, 48, 4, 2];
      const hs = C / NH;
      const row = C + 2 * KVH * hs;
      const qkv = rt.tensor(randn(B * T * row, 5));
      const [out, lse, dqkv, scratch, dout] = [
        rt.tensor(B * T * C),
        rt.tensor(B * NH * T),
        rt.tensor(B * T * row),
        rt.tensor(B * NH * T),
        rt.tensor(randn(B * T * C, 6)),
      ];
      const product = 2 * B * NH * ((T * (T + 1)) / 2) * hs; // 2 * 2 * 4 * 28 * 12 = 5376
      expect(product).toBe(5376);
      const fwd = await counted(rt, (enc) =>
        attentionForward(rt, enc, out, lse, qkv, null, B, T, C, NH, KVH),
      );
      const f = 4;
      expect(fwd).toEqual({
        dispatches: 1,
        flops: 2 * product,
        bytes: f * (B * T * C + B * NH * T + B * T * row),
      });
      const bwd = await counted(rt, (enc) =>
        attentionBackward(rt, enc, dqkv, scratch, dout, qkv, out, lse, null, B, T, C, NH, KVH),
      );
      // backward_query binds dqkv, lse, qkv, dout, out, scratch; backward_key all but out
      const query = B * T * row + B * NH * T + B * T * row + B * T * C + B * T * C + B * NH * T;
      const key = query - B * T * C;
      expect(bwd).toEqual({ dispatches: 2, flops: 5 * product, bytes: f * (query + key) });
    }
  });
});
