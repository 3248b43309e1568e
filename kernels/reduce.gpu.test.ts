// The row reductions with subgroups (kernels/reduce-subgroup.wgsl) and their fallback (the
// workgroup tree, on a device requested without `subgroups`) against the CPU references, for
// every kernel that uses them: LayerNorm, RMSNorm, the q/k norm, the log-softmax head and the
// grad norm, forward and backward, at row lengths 1, odd, not multiples of the subgroup or the
// workgroup, and large; with one subgroup per row (lavapipe's default) and with 64 threads (8
// subgroups of 8). Lavapipe has `subgroups`, so the subgroup path runs here.
// Run: npx vitest run --project gpu kernels/reduce
import { beforeAll, describe, expect, it } from "vitest";
import { createGpu } from "./device";
import { logSoftmax } from "./logsoftmax";
import { nodeGpu } from "./node-gpu";
import { layernormBackward, layernormForward, rmsnormBackward, rmsnormForward } from "./norm";
import { gradNorm, normChunk, normParts } from "./optim";
import { qkNormBackward, qkNormForward, qkNormScratchSize } from "./qknorm";
import * as R from "./reference";
import { Runtime } from "./runtime";
import { assertClose, gpuRuntime, randInt, randn, TOL } from "./testing";

/** name, runtime: the subgroup path at its default and over 8 subgroups, the fallback. */
let configs: [string, Runtime][];
let fallback: Runtime;

beforeAll(async () => {
  const rt = await gpuRuntime();
  const plain = (await createGpu(await nodeGpu(), { optionalFeatures: [] })).device;
  fallback = new Runtime(plain);
  // one runtime for both subgroup configs, so the kernels that do not reduce compile once
  configs = [
    ["subgroups", rt],
    ["subgroups, 64 threads", new Runtime(rt.device, { reductionThreads: 64 })],
    ["fallback", fallback],
  ];
});

async function run(rt: Runtime, f: (enc: GPUCommandEncoder) => void) {
  const enc = rt.device.createCommandEncoder();
  f(enc);
  rt.submit(enc);
}

describe("the devices", () => {
  it("lavapipe's device has subgroups and uses them; the one requested without does not", async () => {
    const rt = await gpuRuntime();
    expect(rt.device.features.has("subgroups")).toBe(true);
    expect(rt.subgroups).toBe(true);
    expect(rt.subgroupSizes[0]).toBeGreaterThan(0);
    expect(fallback.device.features.has("subgroups")).toBe(false);
    expect(fallback.subgroups).toBe(false);
  });
});

async function norms(rt: Runtime, N: number, C: number, rms: boolean): Promise<Float32Array[]> {
  const inp = randn(N * C, 1 + C, 2);
  for (let i = 0; i < inp.length; i++) inp[i] += 3; // a mean to remove
  const [w, b, dout] = [randn(C, 2), randn(C, 3), randn(N * C, 4)];
  const [out, mean, rstd] = [new Float32Array(N * C), new Float32Array(N), new Float32Array(N)];
  const [dinp, dw, db] = [randn(N * C, 5), randn(C, 6), randn(C, 7)];
  const g = {
    out: rt.tensor(N * C),
    mean: rt.tensor(N),
    rstd: rt.tensor(N),
    inp: rt.tensor(inp),
    w: rt.tensor(w),
    b: rt.tensor(b),
    dout: rt.tensor(dout),
    dinp: rt.tensor(dinp),
    dw: rt.tensor(dw),
    db: rt.tensor(db),
  };
  if (rms) {
    R.rmsnormForwardRef(out, rstd, inp, w, N, C);
    R.rmsnormBackwardRef(dinp, dw, dout, inp, w, rstd, N, C);
    await run(rt, (enc) => {
      rmsnormForward(rt, enc, g.out, g.rstd, g.inp, g.w, N, C);
      rmsnormBackward(rt, enc, g.dinp, g.dw, g.dout, g.inp, g.w, g.rstd, N, C);
    });
  } else {
    R.layernormForwardRef(out, mean, rstd, inp, w, b, N, C);
    R.layernormBackwardRef(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    await run(rt, (enc) => {
      layernormForward(rt, enc, g.out, g.mean, g.rstd, g.inp, g.w, g.b, N, C);
      layernormBackward(rt, enc, g.dinp, g.dw, g.db, g.dout, g.inp, g.w, g.mean, g.rstd, N, C);
    });
    assertClose("mean", await rt.read(g.mean), mean, { atol: TOL.fwd.atol * Math.sqrt(C) });
  }
  // C = 1: LayerNorm's centred row is 0 and rstd = 1/sqrt(eps), so the input gradient is all
  // rounding of order eps^-1/2 * ulp(|x|): compared with a looser atol there
  const k = C === 1 && !rms ? 300 : 1;
  const got = [await rt.read(g.out), await rt.read(g.rstd), await rt.read(g.dinp)];
  assertClose("out", got[0], out, { atol: TOL.fwd.atol * Math.sqrt(C) });
  assertClose("rstd", got[1], rstd, { atol: TOL.fwd.atol, rtol: 1e-3 });
  assertClose("dinp", got[2], dinp, { atol: TOL.grad.atol * Math.sqrt(C) * k });
  assertClose("dweight", await rt.read(g.dw), dw, { atol: TOL.grad.atol * Math.sqrt(N) });
  return got;
}

async function head(rt: Runtime, N: number, V: number): Promise<Float32Array[]> {
  const logits = randn(N * V, 10 + V, 4);
  logits[0] = 60; // a large logit: the max must come out of the reduction exactly
  const targets = randInt(N, V, 11);
  targets[N - 1] = -1;
  const [wlp, went] = [randn(N, 12), randn(N, 13)];
  const [logp, ent, dlogits] = [new Float32Array(N), new Float32Array(N), new Float32Array(N * V)];
  R.logSoftmaxRef(logp, ent, dlogits, logits, targets, wlp, went, N, V, 1 / 0.7);
  const g = [rt.tensor(N), rt.tensor(N), rt.tensor(N * V)];
  await run(rt, (enc) =>
    logSoftmax(
      rt,
      enc,
      g[0],
      g[1],
      g[2],
      rt.tensor(logits),
      rt.tensor(targets),
      rt.tensor(wlp),
      rt.tensor(went),
      N,
      V,
      1 / 0.7,
    ),
  );
  const got = await Promise.all(g.map((v) => rt.read(v)));
  const red = Math.sqrt(V);
  assertClose("logp", got[0], logp, { atol: TOL.fwd.atol * red * 4 });
  assertClose("entropy", got[1], ent, { atol: TOL.fwd.atol * red * 4 });
  assertClose("dlogits", got[2], dlogits, { atol: TOL.grad.atol });
  return got;
}

async function qk(rt: Runtime, N: number, hs: number): Promise<Float32Array[]> {
  const s = { N, NH: 3, KVH: 1, hs, eps: 1e-6 };
  const W = (s.NH + 2 * s.KVH) * hs;
  const inp = randn(N * W, 20 + hs);
  const [qw, kw, dout] = [randn(hs, 21), randn(hs, 22), randn(N * W, 23)];
  const [dinp, dqw, dkw] = [randn(N * W, 24), randn(hs, 25), randn(hs, 26)];
  const out = new Float32Array(N * W);
  const rstd = new Float32Array(N * (s.NH + s.KVH));
  const g = [rt.tensor(N * W), rt.tensor(rstd.length), rt.tensor(dinp), rt.tensor(dqw), rt.tensor(dkw)];
  R.qkNormForwardRef(out, rstd, inp, qw, kw, N, s.NH, s.KVH, hs, s.eps);
  R.qkNormBackwardRef(dinp, dqw, dkw, dout, inp, qw, kw, rstd, N, s.NH, s.KVH, hs);
  const [ginp, gqw, gkw] = [rt.tensor(inp), rt.tensor(qw), rt.tensor(kw)];
  await run(rt, (enc) => {
    qkNormForward(rt, enc, g[0], g[1], ginp, gqw, gkw, s);
    const scratch = rt.tensor(qkNormScratchSize(s));
    qkNormBackward(rt, enc, g[2], g[3], g[4], rt.tensor(dout), ginp, gqw, gkw, g[1], scratch, s);
  });
  const got = await Promise.all(g.map((v) => rt.read(v)));
  assertClose("qk out", got[0], out, { atol: TOL.fwd.atol * Math.sqrt(hs) });
  assertClose("qk rstd", got[1], rstd, TOL.fwd);
  assertClose("qk dinp", got[2], dinp, { atol: TOL.grad.atol * Math.sqrt(hs) });
  assertClose("qk dqw", got[3], dqw, { atol: TOL.grad.atol * Math.sqrt(N * s.NH) });
  assertClose("qk dkw", got[4], dkw, { atol: TOL.grad.atol * Math.sqrt(N * s.NH) });
  return got;
}

async function norm2(rt: Runtime, n: number): Promise<Float32Array[]> {
  const g = randn(n, 30 + n);
  const chunk = normChunk(n, rt.bindingFloats);
  const [out, scratch] = [rt.tensor(1), rt.tensor(normParts([n], chunk))];
  await run(rt, (enc) => gradNorm(rt, enc, out, scratch, [rt.tensor(g)], chunk));
  const got = await rt.read(out);
  assertClose("grad norm", got, [R.gradNormRef(g, n)], { atol: 0, rtol: 1e-5 });
  return [got];
}

/** Each config against the reference (inside `f`), then each against the fallback. */
async function everywhere(label: string, f: (rt: Runtime) => Promise<Float32Array[]>) {
  const base = await f(fallback);
  for (const [name, rt] of configs) {
    if (rt === fallback) continue;
    const got = await f(rt).catch((e: Error) => {
      throw new Error(`${label}, ${name}: ${e.message}`);
    });
    got.forEach((x, i) => {
      assertClose(`${label}, ${name} vs the fallback [${i}]`, x, base[i], { atol: 1e-4, rtol: 1e-4 });
    });
  }
}

describe("subgroup reductions match the CPU reference and the fallback", () => {
  it.each([1, 7, 45, 300, 4099])("layernorm and rmsnorm, 5 rows of %i", async (C) => {
    await everywhere(`layernorm C=${C}`, (rt) => norms(rt, 5, C, false));
    await everywhere(`rmsnorm C=${C}`, (rt) => norms(rt, 5, C, true));
  });

  it.each([1, 13, 107, 1000])("log-softmax head, 6 rows of %i", async (V) => {
    await everywhere(`head V=${V}`, (rt) => head(rt, 6, V));
  });

  it.each([1, 12, 65])("q/k norm, 9 rows, heads of %i", async (hs) => {
    await everywhere(`qknorm hs=${hs}`, (rt) => qk(rt, 9, hs));
  });

  it.each([1, 77, 70001])("grad norm over %i floats", async (n) => {
    await everywhere(`grad norm n=${n}`, (rt) => norm2(rt, n));
  });
});
