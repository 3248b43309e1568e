// GPU tests: the fused log-softmax head (log-prob, entropy, gradient of the weighted sum) vs
// logSoftmaxRef on a 45x65 vocabulary block with ignored targets, a temperature, and huge logits;
// and AdamW, global grad norm, clip-by-norm vs their references, repeated runs bit-identical.
// Run: npx vitest run --project gpu kernels/head
import { describe, expect, it } from "vitest";
import { logSoftmax } from "./logsoftmax";
import { adamw, clipByNorm, gradNorm, normChunk, normParts } from "./optim";
import * as R from "./reference";
import type { Runtime } from "./runtime";
import { assertClose, bitEqual, gpuRuntime, randInt, randn, TOL } from "./testing";

async function headCase(rt: Runtime, N: number, V: number, scale: number, invTemp: number) {
  const logits = randn(N * V, 1, scale);
  const targets = randInt(N, V, 2);
  targets[0] = -1;
  targets[5] = -100;
  const wlp = randn(N, 3);
  const went = randn(N, 4);
  const [logp, ent, dl] = [new Float32Array(N), new Float32Array(N), new Float32Array(N * V)];
  R.logSoftmaxRef(logp, ent, dl, logits, targets, wlp, went, N, V, invTemp);
  const [glogp, gent, gdl] = [rt.tensor(N), rt.tensor(N), rt.tensor(randn(N * V, 9))];
  const enc = rt.device.createCommandEncoder();
  logSoftmax(
    rt,
    enc,
    glogp,
    gent,
    gdl,
    rt.tensor(logits),
    rt.tensor(targets),
    rt.tensor(wlp),
    rt.tensor(went),
    N,
    V,
    invTemp,
  );
  rt.submit(enc);
  const atol = TOL.fwd.atol * Math.sqrt(V);
  assertClose("logp", logp, await rt.read(glogp), atol * Math.max(1, scale * invTemp));
  assertClose("entropy", ent, await rt.read(gent), atol * Math.max(1, scale * invTemp));
  const got = await rt.read(gdl);
  assertClose("dlogits", dl, got, TOL.grad.atol * Math.max(1, scale * invTemp));
  return got;
}

describe("log-softmax head", () => {
  it("45 rows x 65 vocab, ignored targets", async () =>
    void (await headCase(await gpuRuntime(), 45, 65, 2, 1)));
  it("V=1000 > workgroup, temperature 0.7", async () =>
    void (await headCase(await gpuRuntime(), 7, 1000, 3, 1 / 0.7)));
  it("huge logits (std 1000) stay finite and exact", async () =>
    void (await headCase(await gpuRuntime(), 7, 65, 1000, 1)));
  it("is bit-identical on repeated runs", async () => {
    const rt = await gpuRuntime();
    expect(bitEqual(await headCase(rt, 45, 300, 2, 1), await headCase(rt, 45, 300, 2, 1))).toBe(true);
  });
});

describe("optimizer", () => {
  it("AdamW matches the reference over 3 steps with live hyperparameter edits", async () => {
    const rt = await gpuRuntime();
    const n = 1000;
    const [p, m, v] = [randn(n, 10), new Float32Array(n), new Float32Array(n)];
    const [gp, gm, gv] = [rt.tensor(p), rt.tensor(n), rt.tensor(n)];
    const enc = rt.device.createCommandEncoder();
    for (let step = 1; step <= 3; step++) {
      const g = randn(n, 20 + step);
      const h = { lr: 1e-2 * step, beta1: 0.9, beta2: 0.98, eps: 1e-8, weightDecay: 0.01 * step, step };
      R.adamwRef(p, g, m, v, n, h);
      // the grads must be uploaded between submits: one encoder records all three steps here,
      // so each step gets its own gradient buffer
      const gstep = rt.tensor(g);
      adamw(rt, enc, gp, gstep, gm, gv, n, h);
    }
    rt.submit(enc);
    assertClose("adamw params", p, await rt.read(gp), TOL.grad.atol);
    assertClose("adamw m", m, await rt.read(gm), TOL.grad.atol);
    assertClose("adamw v", v, await rt.read(gv), TOL.grad.atol);
  });

  it("grad norm (two-stage) and clip-by-norm without readback, on a view of a flat buffer", async () => {
    const rt = await gpuRuntime();
    const n = 100_003;
    const g = randn(n, 30, 0.01);
    const flat = rt.tensor(n + 64);
    const gview = { buffer: flat.buffer, offset: 256, size: n * 4 };
    rt.upload(gview, g);
    const chunk = normChunk(n, rt.bindingFloats);
    const [out, scratch] = [rt.tensor(4), rt.tensor(normParts([n], chunk))];
    const run = async () => {
      rt.upload(gview, g);
      const enc = rt.device.createCommandEncoder();
      gradNorm(rt, enc, out, scratch, [gview], chunk);
      clipByNorm(rt, enc, gview, out, n, 1.0);
      rt.submit(enc);
      return [(await rt.read(out))[0], await rt.read(gview)] as const;
    };
    const [norm, clipped] = await run();
    const ref = R.gradNormRef(g, n);
    expect(Math.abs(norm - ref)).toBeLessThanOrEqual(TOL.fwd.atol * Math.sqrt(n) + 1e-3 * ref);
    const s = R.clipScale(ref, 1.0);
    expect(s).toBeLessThan(1);
    assertClose(
      "clipped",
      g.map((x) => x * s),
      clipped,
      TOL.fwd.atol,
    );
    const [norm2, clipped2] = await run();
    expect(bitEqual([norm], [norm2])).toBe(true);
    expect(bitEqual(clipped, clipped2)).toBe(true);
  });
});
