// GPU tests: causal attention forward/backward vs reference.ts (T=7, head size 24, left- and
// right-padded masks, large logits), determinism, and decode attention over a KV cache written
// by kvCacheWrite, checked against the reference and against full attention at the last position;
// grouped-query attention (6 query heads over 2 or 1 key/value heads) forward, backward and decode;
// the blocked and tiled training kernels at pretrained shapes: T not a multiple of any
// block or tile (1, 17, 127, 513), head sizes 64, 128 and 23, GQA ratios 1, 3 and 7, causal and
// padded, the tiled one under a lowered workgroup-memory limit.
// Run: npx vitest run --project gpu kernels/attention
import { beforeAll, describe, expect, it } from "vitest";
import {
  attentionBackward,
  attentionForward,
  decodeAttention,
  kvCacheWrite,
  tiledShape,
  trainKernel,
} from "./attention";
import * as R from "./reference";
import type { Runtime } from "./runtime";
import { assertClose, bitEqual, planRuntime, randn, TOL } from "./testing";

async function attnCase(
  rt: Runtime,
  B: number,
  T: number,
  C: number,
  NH: number,
  mask: Uint32Array | null,
  qscale: number,
  KVH = NH,
) {
  const row = C + (2 * KVH * C) / NH; // [q | k | v]
  const qkv = randn(B * T * row, 1);
  for (let i = 0; i < B * T; i++) for (let c = 0; c < C; c++) qkv[i * row + c] *= qscale;
  const dout = randn(B * T * C, 2);
  const out = new Float32Array(B * T * C);
  const lse = new Float32Array(B * NH * T);
  R.attentionForwardRef(out, lse, qkv, mask, B, T, C, NH, KVH);
  const dqkv = randn(B * T * row, 3);
  const gdqkv = rt.tensor(dqkv);
  R.attentionBackwardRef(dqkv, dout, qkv, out, lse, mask, B, T, C, NH, KVH);
  const [gout, glse, gqkv, scratch] = [
    rt.tensor(B * T * C),
    rt.tensor(B * NH * T),
    rt.tensor(qkv),
    rt.tensor(B * NH * T),
  ];
  const gmask = mask ? rt.tensor(mask) : null;
  const enc = rt.device.createCommandEncoder();
  attentionForward(rt, enc, gout, glse, gqkv, gmask, B, T, C, NH, KVH);
  attentionBackward(rt, enc, gdqkv, scratch, rt.tensor(dout), gqkv, gout, glse, gmask, B, T, C, NH, KVH);
  rt.submit(enc);
  const hs = C / NH;
  const k = Math.max(1, qscale) * Math.sqrt(NH / KVH); // a kv head's gradient sums NH/KVH heads
  assertClose("attention out", await rt.read(gout), out, { atol: TOL.fwd.atol * Math.sqrt(T * hs) * k });
  assertClose("attention lse", await rt.read(glse), lse, { atol: TOL.fwd.atol * Math.sqrt(hs) * k });
  const got = await rt.read(gdqkv);
  assertClose("attention dqkv", got, dqkv, { atol: TOL.grad.atol * Math.sqrt(T * hs) * k });
  return got;
}

// both kernels whatever the adapter: attention.wgsl's loops and attention-gen.ts's unrolled ones
// (the fallback "loop" kernel; the blocked and tiled ones are tested below)
let unrolled = false;
async function runtime(): Promise<Runtime> {
  return planRuntime({ matmul: unrolled ? "unrolled" : "tiled", attention: "loop" });
}

describe.each([false, true])("attention (unrolled %s)", (u) => {
  beforeAll(() => {
    unrolled = u;
  });
  it("T=7, head size 24, no mask", async () => void (await attnCase(await runtime(), 2, 7, 48, 2, null, 1)));
  it("left and right padding masks, a fully masked query", async () => {
    const T = 7;
    const mask = new Uint32Array(3 * T).fill(1);
    mask[0] = mask[1] = 0; // left padded sequence 0: its first two queries see no key
    mask[T + 5] = mask[T + 6] = 0; // right padded sequence 1
    await attnCase(await runtime(), 3, T, 48, 2, mask, 1);
  });
  it("grouped-query: 6 heads of 8 over 2 kv heads, padded; over 1 kv head", async () => {
    const T = 7;
    const mask = new Uint32Array(2 * T).fill(1);
    mask[T + 6] = 0;
    await attnCase(await runtime(), 2, T, 48, 6, mask, 1, 2);
    await attnCase(await runtime(), 1, T, 48, 6, null, 1, 1);
  });
  it("grouped-query decode over a KV cache of 2 kv heads", async () => {
    const rt = await runtime();
    const [B, T, C, NH, KVH, Tmax] = [2, 5, 48, 6, 2, 8];
    const KV = (KVH * C) / NH;
    const row = C + 2 * KV;
    const qkv = randn(B * T * row, 11);
    const full = new Float32Array(B * T * C);
    R.attentionForwardRef(full, new Float32Array(B * NH * T), qkv, null, B, T, C, NH, KVH);
    const [kc, vc] = [rt.tensor(B * Tmax * KV), rt.tensor(B * Tmax * KV)];
    const enc = rt.device.createCommandEncoder();
    const rows = (t: number) => {
      const r = new Float32Array(B * row);
      for (let b = 0; b < B; b++) r.set(qkv.subarray((b * T + t) * row, (b * T + t + 1) * row), b * row);
      return r;
    };
    for (let t = 0; t < T; t++) {
      const slot = rt.tensor(new Uint32Array(B).fill(t));
      kvCacheWrite(rt, enc, kc, vc, rt.tensor(rows(t)), slot, B, Tmax, C, NH, undefined, KVH);
    }
    const gout = rt.tensor(B * C);
    const lens = rt.tensor(new Uint32Array(B).fill(T));
    decodeAttention(
      rt,
      enc,
      gout,
      rt.tensor(rows(T - 1)),
      kc,
      vc,
      lens,
      null,
      B,
      Tmax,
      C,
      NH,
      undefined,
      KVH,
    );
    rt.submit(enc);
    const atLast = new Float32Array(B * C);
    for (let b = 0; b < B; b++) atLast.set(full.subarray((b * T + T - 1) * C, (b * T + T) * C), b * C);
    assertClose("GQA decode vs full attention", await rt.read(gout), atLast, {
      atol: TOL.fwd.atol * Math.sqrt(T * C),
    });
    const kcache = await rt.read(kc);
    for (let b = 0; b < B; b++)
      for (let t = 0; t < T; t++)
        for (let c = 0; c < KV; c++)
          expect(kcache[(b * Tmax + t) * KV + c]).toBe(qkv[(b * T + t) * row + C + c]);
  });
  it("large logits (q scaled by 30)", async () =>
    void (await attnCase(await runtime(), 2, 7, 48, 2, null, 30)));
  it("T=33, 4 heads of 8, bit-identical on repeated runs", async () => {
    const rt = await runtime();
    expect(
      bitEqual(await attnCase(rt, 1, 33, 32, 4, null, 1), await attnCase(rt, 1, 33, 32, 4, null, 1)),
    ).toBe(true);
  });

  it("decode over a KV cache matches the reference and full attention", async () => {
    const rt = await runtime();
    const [B, T, C, NH, Tmax] = [3, 7, 48, 2, 9];
    const qkv = randn(B * T * 3 * C, 7);
    const mask = new Uint32Array(B * T).fill(1);
    mask[T] = 0; // sequence 1 left padded by one
    const full = new Float32Array(B * T * C);
    R.attentionForwardRef(full, new Float32Array(B * NH * T), qkv, mask, B, T, C, NH);
    const [kc, vc] = [rt.tensor(B * Tmax * C), rt.tensor(B * Tmax * C)];
    const cmask = new Uint32Array(B * Tmax);
    const enc = rt.device.createCommandEncoder();
    for (let t = 0; t < T; t++) {
      const row = new Float32Array(B * 3 * C);
      for (let b = 0; b < B; b++)
        row.set(qkv.subarray((b * T + t) * 3 * C, (b * T + t + 1) * 3 * C), b * 3 * C);
      kvCacheWrite(rt, enc, kc, vc, rt.tensor(row), rt.tensor(new Uint32Array(B).fill(t)), B, Tmax, C, NH);
      for (let b = 0; b < B; b++) cmask[b * Tmax + t] = mask[b * T + t];
    }
    const last = new Float32Array(B * 3 * C);
    for (let b = 0; b < B; b++)
      last.set(qkv.subarray((b * T + T - 1) * 3 * C, (b * T + T) * 3 * C), b * 3 * C);
    const lens = new Uint32Array([T, T, T - 2]); // sequence 2 reads only its first 5 cache slots
    const gout = rt.tensor(B * C);
    decodeAttention(
      rt,
      enc,
      gout,
      rt.tensor(last),
      kc,
      vc,
      rt.tensor(lens),
      rt.tensor(cmask),
      B,
      Tmax,
      C,
      NH,
    );
    rt.submit(enc);
    const got = await rt.read(gout);
    const kcache = await rt.read(kc);
    const vcache = await rt.read(vc);
    const ref = new Float32Array(B * C);
    R.decodeAttentionRef(ref, last, kcache, vcache, lens, cmask, B, Tmax, C, NH, 3 * C);
    assertClose("decode vs reference", got, ref, { atol: TOL.fwd.atol * Math.sqrt(T * C) });
    const atLast = new Float32Array(2 * C);
    for (let b = 0; b < 2; b++) atLast.set(full.subarray((b * T + T - 1) * C, (b * T + T) * C), b * C);
    assertClose("decode vs full attention", got.subarray(0, 2 * C), atLast, {
      atol: TOL.fwd.atol * Math.sqrt(T * C),
    });
    for (let b = 0; b < B; b++)
      for (let t = 0; t < T; t++)
        for (let c = 0; c < C; c++)
          expect(kcache[(b * Tmax + t) * C + c]).toBe(qkv[(b * T + t) * 3 * C + C + c]);
  });
});

describe.each(["blocked", "tiled"] as const)("%s training attention at pretrained shapes", (kernel) => {
  // 4 KiB of workgroup memory (a quarter of WebGPU's default): tiles of 3 keys at head size 128, 7
  // at 64, 20 at 23, so no T is a multiple of the tile
  const runtime = async (storage = 4096) => {
    return planRuntime({ attention: kernel }, { maxWorkgroupStorageBytes: storage });
  };
  const padded = (B: number, T: number, left: number, right: number) => {
    const m = new Uint32Array(B * T).fill(1);
    for (let i = 0; i < Math.min(left, T); i++) m[i] = 0; // sequence 0 left padded
    for (let i = 0; i < Math.min(right, T); i++) m[(B - 1) * T + T - 1 - i] = 0; // the last right padded
    return m;
  };
  it("T=1 and T=17: head sizes 64 and 23, GQA ratios 1 and 3, padded", async () => {
    const rt = await runtime();
    await attnCase(rt, 2, 1, 128, 2, null, 1, 2);
    await attnCase(rt, 2, 17, 69, 3, padded(2, 17, 3, 4), 1, 1);
  });
  it("T=127: head size 128, GQA ratio 7 (7 heads over 1), left padded", async () => {
    await attnCase(await runtime(), 1, 127, 896, 7, padded(1, 127, 5, 0), 1, 1);
  });
  it("T=513: SmolLM2's head size and GQA ratio (3 heads of 64 over 1), right padded, large logits", async () => {
    const rt = await runtime(kernel === "tiled" ? 16384 : 4096);
    await attnCase(rt, 1, 513, 192, 3, padded(1, 513, 0, 40), 4, 1);
  });
  it("T=41: the lab-made Llama's heads (4 of 12 over 2) and head size 6, small enough to compile as constants", async () => {
    const rt = await runtime();
    await attnCase(rt, 3, 41, 48, 4, padded(3, 41, 2, 5), 1, 2);
    await attnCase(rt, 2, 41, 18, 3, null, 1, 3);
  });
  if (kernel === "tiled")
    it("runs the blocked kernel where the adapter's workgroup memory holds no tile", async () => {
      expect(tiledShape(128, 1, 1024)).toBeNull();
      const rt = await runtime(1024);
      expect(trainKernel(rt, 128, 1)).toBe("blocked");
      expect(trainKernel(await runtime(4096), 128, 1)).toBe("tiled");
    });
});
