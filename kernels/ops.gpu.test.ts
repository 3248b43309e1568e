// GPU tests: embedding, LayerNorm, RMSNorm (and its eps), Qwen3's q/k norm, residual, GELU, SiLU, SwiGLU, fill/axpy, each forward
// and backward against reference.ts on odd shapes (N=45 rows, C=65/24), with extreme values, and
// bit-identical on repeated runs. Run: npx vitest run --project gpu kernels/ops
import { describe, expect, it } from "vitest";
import {
  embeddingBackward,
  embeddingForward,
  groupRows,
  type RowGroups,
  type RowGroupViews,
} from "./embedding";
import { layernormBackward, layernormForward, rmsnormBackward, rmsnormForward } from "./norm";
import {
  axpy,
  fill,
  geluBackward,
  geluForward,
  residualBackward,
  residualForward,
  siluBackward,
  siluForward,
  swigluBackward,
  swigluForward,
} from "./pointwise";
import { qkNormBackward, qkNormForward, qkNormScratchSize } from "./qknorm";
import * as R from "./reference";
import type { Runtime, View } from "./runtime";
import { assertClose, bitEqual, gpuRuntime, limitedRuntime, randInt, randn, TOL } from "./testing";

async function record(rt: Runtime, f: (enc: GPUCommandEncoder) => void) {
  const enc = rt.device.createCommandEncoder();
  f(enc);
  rt.submit(enc);
}

async function embeddingCase(rt: Runtime, N: number, C: number, V: number, maxT: number) {
  const tokens = randInt(N, V, 1);
  tokens[3] = -1;
  tokens[17] = -1;
  const pos = Uint32Array.from(randInt(N, maxT, 2));
  const wte = randn(V * C, 3);
  const wpe = randn(maxT * C, 4);
  const dout = randn(N * C, 5);
  const out = new Float32Array(N * C);
  R.embeddingForwardRef(out, tokens, pos, wte, wpe, N, C);
  const dwte = randn(V * C, 6);
  const dwpe = randn(maxT * C, 7);
  const [g, gdwte, gdwpe] = [rt.tensor(N * C), rt.tensor(dwte), rt.tensor(dwpe)];
  R.embeddingBackwardRef(dwte, dwpe, dout, tokens, pos, N, C);
  const [gt, gp] = [rt.tensor(tokens), rt.tensor(pos)];
  const up = (h: RowGroups): RowGroupViews => ({
    host: h,
    keys: rt.tensor(Math.max(1, h.keys.length)),
    starts: rt.tensor(h.starts),
    order: rt.tensor(Math.max(1, h.order.length)),
  });
  const byToken = up(groupRows(tokens, N, (n) => tokens[n] < 0));
  const byPos = up(groupRows(pos, N, (n) => tokens[n] < 0));
  for (const gv of [byToken, byPos]) {
    rt.upload(gv.keys, gv.host.keys);
    rt.upload(gv.order, gv.host.order);
  }
  await record(rt, (enc) => {
    embeddingForward(rt, enc, g, gt, gp, rt.tensor(wte), rt.tensor(wpe), N, C);
    embeddingBackward(rt, enc, gdwte, rt.tensor(dout), byToken, C);
    embeddingBackward(rt, enc, gdwpe, rt.tensor(dout), byPos, C);
  });
  assertClose("embedding out", await rt.read(g), out, TOL.fwd);
  assertClose("dwte", await rt.read(gdwte), dwte, { atol: TOL.grad.atol * Math.sqrt(N) });
  assertClose("dwpe", await rt.read(gdwpe), dwpe, { atol: TOL.grad.atol * Math.sqrt(N) });
  return [await rt.read(g), await rt.read(gdwte)];
}

describe("embedding", () => {
  it("forward and backward match the reference, padding tokens included", async () => {
    await embeddingCase(await gpuRuntime(), 45, 24, 13, 9);
  });

  it("binds a table larger than the binding limit in row slices, bit-identical to one binding", async () => {
    // 300 rows of 24 floats = 28.8 KB against an 8 KiB limit: slices of 80 rows (a multiple of 8,
    // so each starts 256-byte aligned), the last one short.
    const whole = await embeddingCase(await gpuRuntime(), 45, 24, 300, 9);
    const sliced = await embeddingCase(await limitedRuntime({ maxBindingBytes: 8192 }), 45, 24, 300, 9);
    expect(bitEqual(whole[0], sliced[0])).toBe(true);
    expect(bitEqual(whole[1], sliced[1])).toBe(true);
  });

  it("groups rows by key in order, skipping padding", () => {
    const g = groupRows([5, 2, 5, -1, 2, 7], 6, (n) => n === 3);
    expect([...g.keys]).toEqual([2, 5, 7]);
    expect([...g.starts]).toEqual([0, 2, 4, 5]);
    expect([...g.order]).toEqual([1, 4, 0, 2, 5]);
  });
});

async function normCase(rt: Runtime, N: number, C: number, shift: number, rms: boolean) {
  const inp = randn(N * C, 10);
  for (let i = 0; i < inp.length; i++) inp[i] += shift;
  const w = randn(C, 11);
  const b = randn(C, 12);
  const dout = randn(N * C, 13);
  const [out, mean, rstd] = [new Float32Array(N * C), new Float32Array(N), new Float32Array(N)];
  const dinp = randn(N * C, 14);
  const dw = randn(C, 15);
  const db = randn(C, 16);
  const [gout, gmean, grstd] = [rt.tensor(N * C), rt.tensor(N), rt.tensor(N)];
  const [ginp, gw, gb, gdout] = [rt.tensor(inp), rt.tensor(w), rt.tensor(b), rt.tensor(dout)];
  const [gdinp, gdw, gdb] = [rt.tensor(dinp), rt.tensor(dw), rt.tensor(db)];
  if (rms) {
    R.rmsnormForwardRef(out, rstd, inp, w, N, C);
    R.rmsnormBackwardRef(dinp, dw, dout, inp, w, rstd, N, C);
    await record(rt, (enc) => {
      rmsnormForward(rt, enc, gout, grstd, ginp, gw, N, C);
      rmsnormBackward(rt, enc, gdinp, gdw, gdout, ginp, gw, grstd, N, C);
    });
  } else {
    R.layernormForwardRef(out, mean, rstd, inp, w, b, N, C);
    R.layernormBackwardRef(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    await record(rt, (enc) => {
      layernormForward(rt, enc, gout, gmean, grstd, ginp, gw, gb, N, C);
      layernormBackward(rt, enc, gdinp, gdw, gdb, gdout, ginp, gw, gmean, grstd, N, C);
    });
    assertClose("ln mean", await rt.read(gmean), mean, { atol: TOL.fwd.atol * Math.max(1, Math.abs(shift)) });
    assertClose("ln dbias", await rt.read(gdb), db, { atol: TOL.grad.atol * Math.sqrt(N) });
  }
  const label = rms ? "rmsnorm" : "layernorm";
  // a shifted input loses ~log2(shift) bits of the centered value in fp32, on both sides
  const k = Math.max(1, Math.abs(shift) / 10);
  assertClose(`${label} out`, await rt.read(gout), out, { atol: TOL.fwd.atol * Math.sqrt(C) * k });
  assertClose(`${label} rstd`, await rt.read(grstd), rstd, { atol: TOL.fwd.atol * k });
  assertClose(`${label} dinp`, await rt.read(gdinp), dinp, { atol: TOL.grad.atol * Math.sqrt(C) * k });
  assertClose(`${label} dweight`, await rt.read(gdw), dw, { atol: TOL.grad.atol * Math.sqrt(N) * k });
  return rt.read(gdinp);
}

describe("norms", () => {
  it("layernorm 45x65", async () => void (await normCase(await gpuRuntime(), 45, 65, 0, false)));
  it("layernorm, C=300 > workgroup, mean 100 (extreme)", async () =>
    void (await normCase(await gpuRuntime(), 7, 300, 100, false)));
  it("rmsnorm 45x65", async () => void (await normCase(await gpuRuntime(), 45, 65, 0, true)));
  it("rmsnorm C=24, shifted by 50", async () => void (await normCase(await gpuRuntime(), 7, 24, 50, true)));
  it("is bit-identical on repeated runs", async () => {
    const rt = await gpuRuntime();
    expect(bitEqual(await normCase(rt, 45, 65, 0, false), await normCase(rt, 45, 65, 0, false))).toBe(true);
  });
});

describe("rmsnorm eps and the q/k norm", () => {
  it("rmsnorm with eps 1e-6 on inputs of rms 1e-3 (eps matters)", async () => {
    const rt = await gpuRuntime();
    const [N, C] = [5, 24];
    const inp = randn(N * C, 40, 1e-3);
    const w = randn(C, 41);
    const [out, rstd] = [new Float32Array(N * C), new Float32Array(N)];
    R.rmsnormForwardRef(out, rstd, inp, w, N, C, 1e-6);
    const [gout, grstd] = [rt.tensor(N * C), rt.tensor(N)];
    await record(rt, (enc) => rmsnormForward(rt, enc, gout, grstd, rt.tensor(inp), rt.tensor(w), N, C, 1e-6));
    assertClose("rstd eps 1e-6", await rt.read(grstd), rstd, { atol: 0, rtol: 1e-4 });
    assertClose("out eps 1e-6", await rt.read(gout), out, { atol: TOL.fwd.atol, rtol: 1e-4 });
  });

  it.each([45, 300])(
    "q/k norm: %i rows, 3 q heads and 2 k, v heads of 12, forward and backward",
    async (N) => {
      const rt = await gpuRuntime();
      const s = { N, NH: 3, KVH: 2, hs: 12, eps: 1e-6 };
      const W = (s.NH + 2 * s.KVH) * s.hs;
      const inp = randn(s.N * W, 50);
      const [qw, kw, dout] = [randn(s.hs, 51), randn(s.hs, 52), randn(s.N * W, 53)];
      const [dinp, dqw, dkw] = [randn(s.N * W, 54), randn(s.hs, 55), randn(s.hs, 56)];
      const [gdinp, gdqw, gdkw] = [rt.tensor(dinp), rt.tensor(dqw), rt.tensor(dkw)];
      const out = new Float32Array(s.N * W);
      const rstd = new Float32Array(s.N * (s.NH + s.KVH));
      R.qkNormForwardRef(out, rstd, inp, qw, kw, s.N, s.NH, s.KVH, s.hs, s.eps);
      R.qkNormBackwardRef(dinp, dqw, dkw, dout, inp, qw, kw, rstd, s.N, s.NH, s.KVH, s.hs);
      const [gout, grstd, ginp, gqw, gkw] = [
        rt.tensor(s.N * W),
        rt.tensor(rstd.length),
        rt.tensor(inp),
        rt.tensor(qw),
        rt.tensor(kw),
      ];
      await record(rt, (enc) => {
        qkNormForward(rt, enc, gout, grstd, ginp, gqw, gkw, s);
        const scratch = rt.tensor(qkNormScratchSize(s)); // 300 rows: 4 partial sums per weight
        qkNormBackward(rt, enc, gdinp, gdqw, gdkw, rt.tensor(dout), ginp, gqw, gkw, grstd, scratch, s);
      });
      assertClose("qknorm out", await rt.read(gout), out, { atol: TOL.fwd.atol * Math.sqrt(s.hs) });
      assertClose("qknorm rstd", await rt.read(grstd), rstd, { atol: TOL.fwd.atol });
      assertClose("qknorm dinp", await rt.read(gdinp), dinp, { atol: TOL.grad.atol * Math.sqrt(s.hs) });
      const rows = Math.sqrt(s.N * s.NH);
      assertClose("qknorm dqw", await rt.read(gdqw), dqw, { atol: TOL.grad.atol * rows });
      assertClose("qknorm dkw", await rt.read(gdkw), dkw, { atol: TOL.grad.atol * rows });
    },
  );
});

type Unary = (rt: Runtime, rec: GPUCommandEncoder, out: View, inp: View, n: number) => void;
type UnaryBack = (rt: Runtime, rec: GPUCommandEncoder, dinp: View, inp: View, dout: View, n: number) => void;

async function unaryCase(
  name: string,
  fwd: Unary,
  bwd: UnaryBack,
  fref: (o: Float32Array, i: Float32Array, n: number) => void,
  bref: (d: Float32Array, i: Float32Array, g: Float32Array, n: number) => void,
) {
  const rt = await gpuRuntime();
  const n = 45 * 65;
  const inp = randn(n, 20, 3);
  inp[0] = 50;
  inp[1] = -50; // saturated tails
  inp[2] = 0;
  const dout = randn(n, 21);
  const out = new Float32Array(n);
  const dinp = randn(n, 22);
  const [gout, ginp, gdinp] = [rt.tensor(n), rt.tensor(inp), rt.tensor(dinp)];
  fref(out, inp, n);
  bref(dinp, inp, dout, n);
  await record(rt, (enc) => {
    fwd(rt, enc, gout, ginp, n);
    bwd(rt, enc, gdinp, ginp, rt.tensor(dout), n);
  });
  assertClose(`${name} out`, await rt.read(gout), out, TOL.fwd);
  assertClose(`${name} dinp`, await rt.read(gdinp), dinp, TOL.grad);
}

describe("pointwise", () => {
  it("gelu (tanh)", () => unaryCase("gelu", geluForward, geluBackward, R.geluForwardRef, R.geluBackwardRef));
  it("silu", () => unaryCase("silu", siluForward, siluBackward, R.siluForwardRef, R.siluBackwardRef));

  it("residual forward and backward", async () => {
    const rt = await gpuRuntime();
    const n = 45 * 65;
    const [a, b, dout] = [randn(n, 30), randn(n, 31), randn(n, 32)];
    const [da, db] = [randn(n, 33), randn(n, 34)];
    const out = new Float32Array(n);
    const [gout, gda, gdb] = [rt.tensor(n), rt.tensor(da), rt.tensor(db)];
    R.residualForwardRef(out, a, b, n);
    R.residualBackwardRef(da, db, dout, n);
    await record(rt, (enc) => {
      residualForward(rt, enc, gout, rt.tensor(a), rt.tensor(b), n);
      residualBackward(rt, enc, gda, gdb, rt.tensor(dout), n);
    });
    assertClose("residual out", await rt.read(gout), out, TOL.fwd);
    assertClose("residual da", await rt.read(gda), da, TOL.grad);
    assertClose("residual db", await rt.read(gdb), db, TOL.grad);
  });

  it("swiglu forward and backward", async () => {
    const rt = await gpuRuntime();
    const [N, H] = [45, 65];
    const inp = randn(N * 2 * H, 40, 2);
    const dout = randn(N * H, 41);
    const dinp = randn(N * 2 * H, 42);
    const out = new Float32Array(N * H);
    const [gout, gdinp, ginp] = [rt.tensor(N * H), rt.tensor(dinp), rt.tensor(inp)];
    R.swigluForwardRef(out, inp, N, H);
    R.swigluBackwardRef(dinp, inp, dout, N, H);
    await record(rt, (enc) => {
      swigluForward(rt, enc, gout, ginp, N, H);
      swigluBackward(rt, enc, gdinp, ginp, rt.tensor(dout), N, H);
    });
    assertClose("swiglu out", await rt.read(gout), out, TOL.fwd);
    assertClose("swiglu dinp", await rt.read(gdinp), dinp, TOL.grad);
  });

  it("fill and axpy on a view inside a larger buffer", async () => {
    const rt = await gpuRuntime();
    const big = rt.tensor(randn(256, 50));
    const x = randn(100, 51);
    const inner = { buffer: big.buffer, offset: 64 * 4, size: 100 * 4 };
    await record(rt, (enc) => {
      fill(rt, enc, inner, 2);
      axpy(rt, enc, inner, 0.5, rt.tensor(x), 100);
    });
    const got = await rt.read(big);
    const before = randn(256, 50);
    for (let i = 0; i < 256; i++) {
      const want = i >= 64 && i < 164 ? 2 + 0.5 * x[i - 64] : before[i];
      expect(Math.abs(got[i] - want)).toBeLessThanOrEqual(1e-6);
    }
  });
});

describe("runtime", () => {
  it("keeps each of 600 dispatches' uniforms apart in one encoder (arena spans chunks)", async () => {
    const rt = await gpuRuntime();
    const n = 600;
    const buf = rt.buffer(n * 64);
    const enc = rt.device.createCommandEncoder();
    for (let i = 0; i < n; i++) fill(rt, enc, { buffer: buf, offset: i * 256, size: 256 }, i + 0.5);
    rt.submit(enc);
    const got = await rt.read({ buffer: buf, offset: 0, size: n * 256 });
    for (let i = 0; i < n; i++) expect(got[i * 64 + 63]).toBe(i + 0.5);
  });

  it("records into an open compute pass as well as an encoder", async () => {
    const rt = await gpuRuntime();
    const [a, b, out] = [rt.tensor(randn(100, 60)), rt.tensor(randn(100, 61)), rt.tensor(100)];
    const enc = rt.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    residualForward(rt, pass, out, a, b, 100);
    pass.end();
    rt.submit(enc);
    const [ha, hb] = [randn(100, 60), randn(100, 61)];
    assertClose(
      "residual in a pass",
      await rt.read(out),
      ha.map((x, i) => x + hb[i]),
      TOL.fwd,
    );
  });
});

describe("runtime checks", () => {
  it("refuses a view that is not 256-byte aligned, with a message that says what to do", async () => {
    const rt = await gpuRuntime();
    const buf = rt.buffer(1024);
    const enc = rt.device.createCommandEncoder();
    expect(() => fill(rt, enc, { buffer: buf, offset: 4, size: 64 })).toThrow(/multiple of 256.*alignFloats/);
  });
});
