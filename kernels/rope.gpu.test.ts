// GPU test: RoPE forward/backward in place on the q and k slices of a qkv block vs the reference
// (head size 24, T=7 positions with gaps up to 127), and forward-then-backward is the identity;
// grouped-query slices (4 q heads, 2 k heads) at positions up to 2047 with base 1e6 (Qwen's);
// every pair of a 128-wide head at every position below 8,192, both kernels (rope.wgsl and
// rope-append.wgsl), within 1e-6 of the rotation in float64; a position past the table is NaN.
// Run: npx vitest run --project gpu kernels/rope
import { describe, expect, it } from "vitest";
import { ropeAppend } from "./decode";
import * as R from "./reference";
import { ropeAngles, ropeBackward, ropeForward } from "./rope";
import { assertClose, gpuRuntime, randn, TOL } from "./testing";

/** x rotated to positions 0..N-1 (one head of hs per row), every step in float64. */
function rotated64(x: Float32Array, N: number, hs: number, base: number): Float64Array {
  const half = hs / 2;
  const out = new Float64Array(N * hs);
  for (let n = 0; n < N; n++)
    for (let i = 0; i < half; i++) {
      const a = n * base ** ((-2 * i) / hs);
      const [c, s] = [Math.cos(a), Math.sin(a)];
      const [x0, x1] = [x[n * hs + i], x[n * hs + i + half]];
      out[n * hs + i] = x0 * c - x1 * s;
      out[n * hs + i + half] = x0 * s + x1 * c;
    }
  return out;
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return Number.isNaN(m) ? Number.POSITIVE_INFINITY : m;
}

describe("rope", () => {
  it("rotates q and k of qkv in place, and backward undoes it", async () => {
    const rt = await gpuRuntime();
    const [N, C, NH] = [7, 48, 2];
    const pos = Uint32Array.from([0, 1, 2, 5, 30, 64, 127]);
    const x = randn(N * 3 * C, 1);
    const ref = x.slice();
    const shapes = [0, C].map((colOffset) => ({
      N,
      nHeads: NH,
      headDim: C / NH,
      rowStride: 3 * C,
      colOffset,
      base: 10000,
    }));
    for (const s of shapes) R.ropeForwardRef(ref, pos, s);
    const gx = rt.tensor(x);
    const gpos = rt.tensor(pos);
    let enc = rt.device.createCommandEncoder();
    for (const s of shapes) ropeForward(rt, enc, gx, gpos, s, 128);
    rt.submit(enc);
    assertClose("rope forward", await rt.read(gx), ref, TOL.fwd);
    enc = rt.device.createCommandEncoder();
    for (const s of shapes) ropeBackward(rt, enc, gx, gpos, s, 128);
    rt.submit(enc);
    assertClose("rope backward(forward(x)) = x", await rt.read(gx), x, TOL.fwd);
  });

  it("GQA slices of a qkv row at positions up to 2047, base 1e6", async () => {
    const rt = await gpuRuntime();
    const [NH, KVH, hs] = [4, 2, 16];
    const row = (NH + 2 * KVH) * hs;
    const pos = Uint32Array.from([0, 3, 100, 511, 1000, 1777, 2047]);
    const N = pos.length;
    const x = randn(N * row, 2);
    const ref = x.slice();
    const shapes = [
      { N, nHeads: NH, headDim: hs, rowStride: row, colOffset: 0, base: 1e6 },
      { N, nHeads: KVH, headDim: hs, rowStride: row, colOffset: NH * hs, base: 1e6 },
    ];
    for (const s of shapes) R.ropeForwardRef(ref, pos, s);
    const gx = rt.tensor(x);
    const enc = rt.device.createCommandEncoder();
    for (const s of shapes) ropeForward(rt, enc, gx, rt.tensor(pos), s, 2048);
    rt.submit(enc);
    assertClose("rope forward, long positions", await rt.read(gx), ref, { atol: 1e-6, rtol: 0 });
  });

  it.each([10000, 1e6])(
    "base %d: every pair of a 128-wide head at every position below 8,192 within 1e-6 of float64, both kernels",
    async (base) => {
      const rt = await gpuRuntime();
      const [N, hs] = [8192, 128];
      const x = randn(N * hs, 3);
      const want = rotated64(x, N, hs, base);
      const pos = rt.tensor(Uint32Array.from({ length: N }, (_, n) => n));
      // rope.wgsl: one head per row
      const a = rt.tensor(x);
      let enc = rt.device.createCommandEncoder();
      ropeForward(rt, enc, a, pos, { N, nHeads: 1, headDim: hs, rowStride: hs, colOffset: 0, base }, N);
      rt.submit(enc);
      const viaRope = await rt.read(a);
      // rope-append.wgsl: rows of one query head, a key head and a value head; no cache slot
      const qkv = new Float32Array(N * 3 * hs);
      for (let n = 0; n < N; n++) qkv.set(x.subarray(n * hs, (n + 1) * hs), n * 3 * hs);
      const b = rt.tensor(qkv);
      const [kc, vc] = [rt.tensor(N * hs), rt.tensor(N * hs)];
      const slot = rt.tensor(new Uint32Array(N).fill(0xffffffff));
      enc = rt.device.createCommandEncoder();
      ropeAppend(rt, enc, b, kc, vc, pos, slot, {
        B: N,
        Tmax: 1,
        NH: 1,
        KVH: 1,
        headDim: hs,
        ropeBase: base,
        positions: N,
      });
      rt.submit(enc);
      const fused = await rt.read(b);
      const viaAppend = new Float32Array(N * hs);
      for (let n = 0; n < N; n++) viaAppend.set(fused.subarray(n * 3 * hs, n * 3 * hs + hs), n * hs);
      expect(maxDiff(viaRope, want), "rope.wgsl").toBeLessThan(1e-6);
      expect(maxDiff(viaAppend, want), "rope-append.wgsl").toBeLessThan(1e-6);
      // the table itself: the float64 angle's cos and sin rounded once
      const t = ropeAngles(base, hs, N);
      const at = (8191 * (hs / 2) + 0) * 2;
      expect(t[at]).toBe(Math.fround(Math.cos(8191)));
      expect(t[at + 1]).toBe(Math.fround(Math.sin(8191)));
    },
  );

  it("a position past the table rotates to NaN, never to a wrong angle", async () => {
    const rt = await gpuRuntime();
    const x = rt.tensor(randn(2 * 8, 4));
    const enc = rt.device.createCommandEncoder();
    const s = { N: 2, nHeads: 1, headDim: 8, rowStride: 8, colOffset: 0, base: 10000 };
    ropeForward(rt, enc, x, rt.tensor(Uint32Array.from([3, 40])), s, 16);
    rt.submit(enc);
    const out = await rt.read(x);
    expect(out.subarray(0, 8).every(Number.isFinite)).toBe(true);
    expect(out.subarray(8).every(Number.isNaN)).toBe(true);
  });
});
