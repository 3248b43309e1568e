// GPU test: the matmul kernels (tiled matmul.wgsl, the subgroup kernel of matmul-subgroup.ts where
// the adapter runs it, and the unrolled matmul-gen.ts shaders, whatever the adapter) in every form (A·B, A·Bᵀ, Aᵀ·B, Aᵀ·Bᵀ, batched, bias, accumulate, aligned and not,
// views at offsets) against matmulRef on odd shapes, the small-M A·Bᵀ kernel (matvec.wgsl) that
// decoding uses, and the linear layer pair. Run: npx vitest run --project gpu kernels/matmul
import { beforeAll, describe, expect, it } from "vitest";
import { biasBackward, matmul, matmulBackward, matmulForward } from "./matmul";
import { subgroupMatmulSize } from "./matmul-subgroup";
import { type MatmulShape, matmulBackwardRef, matmulForwardRef, matmulRef } from "./reference";
import { alignFloats, view } from "./runtime";
import { assertClose, bitEqual, gpuRuntime, planRuntime, randn, TOL } from "./testing";

let kernel: "tiled" | "subgroup" | "unrolled" = "tiled";

async function runtime() {
  return planRuntime({
    matmul: kernel === "unrolled" ? "unrolled" : "tiled",
    subgroupMatmul: kernel === "subgroup",
  });
}

async function check(s: MatmulShape, withBias: boolean, seed: number) {
  const rt = await runtime();
  const batch = s.batch ?? 1;
  const a = randn(batch * s.M * s.K, seed);
  const b = randn(batch * s.K * s.N, seed + 1);
  const bias = withBias ? randn(s.N, seed + 2) : null;
  const out0 = randn(batch * s.M * s.N, seed + 3);
  const shape = { ...s, strideA: s.M * s.K, strideB: s.K * s.N, strideOut: s.M * s.N };
  const ref = out0.slice();
  matmulRef(ref, a, b, bias, shape);
  const out = rt.tensor(out0);
  const enc = rt.device.createCommandEncoder();
  matmul(rt, enc, out, rt.tensor(a), rt.tensor(b), bias ? rt.tensor(bias) : null, shape);
  rt.submit(enc);
  const got = await rt.read(out);
  assertClose(`matmul ${JSON.stringify(s)}`, got.subarray(0, ref.length), ref, {
    atol: TOL.fwd.atol * Math.sqrt(s.K),
    rtol: TOL.fwd.rtol,
  });
  return got;
}

describe("matvec (A·Bᵀ with at most 8 rows)", () => {
  it("matches the reference for 1, 3 and 8 rows, K below and above the workgroup, with and without bias", async () => {
    kernel = "tiled";
    for (const M of [1, 3, 8])
      for (const K of [24, 577]) await check({ M, N: 100, K, transB: true }, M !== 3, 20 + M + K);
  });

  it("a view at an offset, a folded grid (N > 65535) and the tiled kernel agree", async () => {
    const rt = await gpuRuntime();
    const [M, N, K] = [2, 70_000, 8];
    const a = randn(M * K, 31);
    const b = randn(N * K, 32);
    const ref = new Float32Array(M * N);
    matmulRef(ref, a, b, null, { M, N, K, transB: true });
    const flat = rt.tensor(64 + M * K);
    const av = { buffer: flat.buffer, offset: 256, size: M * K * 4 };
    rt.upload(av, a);
    const gb = rt.tensor(b);
    const run = async (matvec: boolean) => {
      const r = await planRuntime({ matmul: "tiled", smallRows: matvec ? 8 : 0 });
      const out = rt.tensor(M * N);
      const enc = rt.device.createCommandEncoder();
      matmul(r, enc, out, av, gb, null, { M, N, K, transB: true });
      r.submit(enc);
      return rt.read(out);
    };
    const [mv, tiled] = [await run(true), await run(false)];
    assertClose("matvec", mv, ref, { atol: TOL.fwd.atol * Math.sqrt(K) });
    assertClose("matvec vs tiled", mv, tiled, { atol: TOL.fwd.atol * Math.sqrt(K) });
  });
});

describe("the subgroup kernel (matmul-subgroup.ts)", () => {
  // bit for bit against matmul.wgsl in each form it serves, at odd row counts, columns not a
  // multiple of a workgroup's, batched, accumulating, with bias and alpha, at a view offset
  const forms: [string, MatmulShape, boolean][] = [
    ["A·Bᵀ (a forward)", { M: 45, N: 68, K: 36, transB: true }, true],
    ["A·B (an input gradient), batched, alpha", { M: 13, N: 260, K: 52, batch: 3, alpha: 0.5 }, false],
    [
      "Aᵀ·B (a weight gradient), accumulating",
      { M: 68, N: 20, K: 72, transA: true, accumulate: true },
      false,
    ],
    ["A·Bᵀ, N past 64 lanes x 4", { M: 9, N: 1028, K: 8, transB: true, accumulate: true }, true],
  ];
  it.each(forms)("%s equals matmul.wgsl bit for bit", async (_, s, withBias) => {
    const rt = await planRuntime({ matmul: "tiled", subgroupMatmul: true });
    const sg = subgroupMatmulSize(rt);
    if (!sg) return; // not this adapter's kernel (it runs on lavapipe); the tiled tests cover it
    const batch = s.batch ?? 1;
    const shape = { ...s, strideA: s.M * s.K, strideB: s.K * s.N, strideOut: s.M * s.N };
    const a = rt.tensor(randn(batch * s.M * s.K + 64, 40));
    const av = view(a.buffer, 64, batch * s.M * s.K); // 256 bytes in: a view at an offset
    const b = rt.tensor(randn(batch * s.K * s.N, 41));
    const bias = withBias ? rt.tensor(randn(s.N, 42)) : null;
    const out0 = randn(batch * s.M * s.N, 43);
    const run = async (subgroup: boolean) => {
      const rt = await planRuntime({ matmul: "tiled", subgroupMatmul: subgroup });
      const codes: string[] = [];
      const pipeline = rt.pipeline.bind(rt);
      rt.pipeline = (code, entry, constants) => {
        codes.push(code);
        return pipeline(code, entry, constants);
      };
      const out = rt.tensor(out0);
      const enc = rt.device.createCommandEncoder();
      matmul(rt, enc, out, av, b, bias, shape);
      rt.submit(enc);
      rt.pipeline = pipeline;
      return { got: await rt.read(out), ran: codes.some((c) => c.includes("subgroupBroadcast")) };
    };
    const tiled = await run(false);
    const sub = await run(true);
    expect(tiled.ran).toBe(false);
    expect(sub.ran).toBe(true);
    expect(bitEqual(sub.got, tiled.got)).toBe(true);
    const ref = out0.slice();
    matmulRef(ref, await rt.read(av), await rt.read(b), bias ? await rt.read(bias) : null, shape);
    assertClose(`subgroup ${JSON.stringify(s)}`, sub.got, ref, {
      atol: TOL.fwd.atol * Math.sqrt(s.K),
      rtol: TOL.fwd.rtol,
    });
  });
  it("leaves what it cannot take to matmul.wgsl (K, or a contiguous side, not a multiple of 4)", async () => {
    kernel = "subgroup";
    await check({ M: 45, N: 33, K: 65 }, false, 50);
    await check({ M: 45, N: 65, K: 37, transB: true }, true, 51);
    await check({ M: 70, N: 29, K: 44, transA: true, accumulate: true }, false, 52);
    await check({ M: 45, N: 33, K: 24 }, true, 53);
  });
});

describe.each(["tiled", "subgroup", "unrolled"] as const)("matmul (%s)", (k) => {
  beforeAll(() => {
    kernel = k;
  });
  it("A·B on 45x65 by 65x33 (not tile multiples)", () => check({ M: 45, N: 33, K: 65 }, false, 1));
  it("A·Bᵀ with bias", () => check({ M: 45, N: 65, K: 37, transB: true }, true, 2));
  it("Aᵀ·B accumulating", () => check({ M: 70, N: 29, K: 45, transA: true, accumulate: true }, false, 3));
  it("Aᵀ·Bᵀ, batched, alpha", () =>
    check({ M: 7, N: 24, K: 24, transA: true, transB: true, batch: 3, alpha: 0.5 }, false, 4));
  it("a larger square, 130x130x130", () => check({ M: 130, N: 130, K: 130 }, false, 5));
  // K, N (and M for Aᵀ) multiples of 4: the vec4-load shaders
  it("aligned A·B, batched, bias, alpha (vec4 loads)", () =>
    check({ M: 45, N: 68, K: 36, batch: 2, alpha: 0.25 }, true, 7));
  it("aligned A·Bᵀ accumulating (vec4 loads)", () =>
    check({ M: 70, N: 33, K: 132, transB: true, accumulate: true }, false, 8));
  it("aligned Aᵀ·B, batched (vec4 loads)", () =>
    check({ M: 68, N: 20, K: 72, transA: true, batch: 3 }, true, 9));
  it("aligned Aᵀ·Bᵀ (vec4 loads)", () =>
    check({ M: 12, N: 76, K: 8, transA: true, transB: true }, false, 10));
  it("one column and one row (N = 1, M = 1)", async () => {
    await check({ M: 45, N: 1, K: 24, transB: true }, true, 11);
    await check({ M: 1, N: 100, K: 64, transB: true }, true, 12);
  });
  it("views at offsets inside one buffer", async () => {
    const rt = await runtime();
    const s = { M: 37, N: 44, K: 20, transB: true };
    const a = randn(s.M * s.K, 30);
    const b = randn(s.N * s.K, 31);
    const ref = new Float32Array(s.M * s.N);
    matmulRef(ref, a, b, null, s);
    const buf = rt.buffer(64 + alignFloats(a.length) + alignFloats(b.length) + s.M * s.N);
    const va = view(buf, 64, a.length);
    const vb = view(buf, 64 + alignFloats(a.length), b.length);
    const vo = view(buf, 64 + alignFloats(a.length) + alignFloats(b.length), s.M * s.N);
    rt.upload(va, a);
    rt.upload(vb, b);
    const enc = rt.device.createCommandEncoder();
    matmul(rt, enc, vo, va, vb, null, s);
    rt.submit(enc);
    assertClose("matmul at offsets", await rt.read(vo), ref, {
      atol: TOL.fwd.atol * Math.sqrt(s.K),
      rtol: TOL.fwd.rtol,
    });
  });
  it("is bit-identical on repeated runs", async () => {
    const s = { M: 45, N: 65, K: 77 };
    expect(bitEqual(await check(s, true, 6), await check(s, true, 6))).toBe(true);
  });

  it("linear layer forward and backward match the reference", async () => {
    const rt = await runtime();
    const [N, C, OC] = [45, 24, 65];
    const inp = randn(N * C, 10);
    const w = randn(OC * C, 11);
    const bias = randn(OC, 12);
    const dout = randn(N * OC, 13);
    const out = new Float32Array(N * OC);
    matmulForwardRef(out, inp, w, bias, N, C, OC);
    const dinp = randn(N * C, 14);
    const dw = randn(OC * C, 15);
    const db = randn(OC, 16);
    const [gdinp, gdw, gdb] = [rt.tensor(dinp), rt.tensor(dw), rt.tensor(db)];
    matmulBackwardRef(dinp, dw, db, dout, inp, w, N, C, OC);
    const gout = rt.tensor(N * OC);
    const [ginp, gw, gdout] = [rt.tensor(inp), rt.tensor(w), rt.tensor(dout)];
    const enc = rt.device.createCommandEncoder();
    matmulForward(rt, enc, gout, ginp, gw, rt.tensor(bias), N, C, OC);
    matmulBackward(rt, enc, gdinp, gdw, gdb, gdout, ginp, gw, N, C, OC);
    rt.submit(enc);
    assertClose("linear out", await rt.read(gout), out, { atol: TOL.fwd.atol * Math.sqrt(C) });
    assertClose("linear dinp", await rt.read(gdinp), dinp, { atol: TOL.grad.atol * Math.sqrt(OC) });
    assertClose("linear dweight", await rt.read(gdw), dw, { atol: TOL.grad.atol * Math.sqrt(N) });
    assertClose("linear dbias", await rt.read(gdb), db, { atol: TOL.grad.atol * Math.sqrt(N) });
  });

  it("bias backward alone", async () => {
    const rt = await runtime();
    const dout = randn(7 * 300, 20);
    const db = new Float32Array(300);
    for (let n = 0; n < 7; n++) for (let o = 0; o < 300; o++) db[o] += dout[n * 300 + o];
    const g = rt.tensor(300);
    const enc = rt.device.createCommandEncoder();
    biasBackward(rt, enc, g, rt.tensor(dout), 7, 300);
    rt.submit(enc);
    assertClose("dbias", await rt.read(g), db, TOL.grad);
  });
});
