// GPU test: RoPE forward/backward in place on the q and k slices of a qkv block vs the reference
// (head size 24, T=7 positions with gaps up to 127), and forward-then-backward is the identity;
// grouped-query slices (4 q heads, 2 k heads) at positions up to 2047 with base 1e6 (Qwen's).
// Run: npx vitest run --project gpu kernels/rope
import { describe, it } from "vitest";
import * as R from "./reference";
import { ropeBackward, ropeForward } from "./rope";
import { assertClose, gpuRuntime, randn, TOL } from "./testing";

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
    for (const s of shapes) ropeForward(rt, enc, gx, gpos, s);
    rt.submit(enc);
    // atol x4: the GPU's pow/sin/cos on angles up to 127 rad are a few ulps off
    assertClose("rope forward", await rt.read(gx), ref, { atol: TOL.fwd.atol * 4 });
    enc = rt.device.createCommandEncoder();
    for (const s of shapes) ropeBackward(rt, enc, gx, gpos, s);
    rt.submit(enc);
    assertClose("rope backward(forward(x)) = x", await rt.read(gx), x, { atol: TOL.fwd.atol * 4 });
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
    for (const s of shapes) ropeForward(rt, enc, gx, rt.tensor(pos), s);
    rt.submit(enc);
    // an f32 angle of ~2047 rad carries ~1e-4 rad of rounding (ulp 1.2e-4), in PyTorch as here
    assertClose("rope forward, long positions", await rt.read(gx), ref, { atol: 5e-4 });
  });
});
