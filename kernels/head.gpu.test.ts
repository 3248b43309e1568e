// GPU tests: the fused log-softmax head (log-prob, entropy, gradient of the weighted sum) vs
// logSoftmaxRef on a 45x65 vocabulary block with ignored targets, a temperature, and huge logits,
// and on chunks of rows in the slice-major layout (tiny chunks and vocabulary slices), where the
// sampler must draw the same tokens as on the plain block;
// and AdamW, global grad norm, clip-by-norm vs their references, repeated runs bit-identical.
// Run: npx vitest run --project gpu kernels/head
import { describe, expect, it } from "vitest";
import {
  type LogitsChunk,
  logSoftmax,
  logSoftmaxBackward,
  logSoftmaxForward,
  sliceLogits,
  unsliceLogits,
} from "./logsoftmax";
import { adamw, gradNorm, normChunk, normParts } from "./optim";
import * as R from "./reference";
import { type Runtime, subview, windows } from "./runtime";
import { sample } from "./sample";
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
  assertClose("logp", await rt.read(glogp), logp, { atol: atol * Math.max(1, scale * invTemp) });
  assertClose("entropy", await rt.read(gent), ent, { atol: atol * Math.max(1, scale * invTemp) });
  const got = await rt.read(gdl);
  assertClose("dlogits", got, dl, { atol: TOL.grad.atol * Math.max(1, scale * invTemp) });
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

describe("log-softmax and sampler on chunks of rows and vocabulary slices", () => {
  it("equal the reference chunk by chunk (45 rows in chunks of 8, vocab 1000 in slices of 192)", async () => {
    const rt = await gpuRuntime();
    const [N, V, sliceV, rows, invTemp] = [45, 1000, 192, 8, 1 / 0.7];
    const logits = randn(N * V, 11, 3);
    const targets = randInt(N, V, 12);
    targets[9] = -1;
    const wlp = randn(N, 13);
    const went = randn(N, 14);
    const [logp, ent, dl] = [new Float32Array(N), new Float32Array(N), new Float32Array(N * V)];
    R.logSoftmaxRef(logp, ent, dl, logits, targets, wlp, went, N, V, invTemp);
    const [glogp, gent, gt, gw, ge] = [
      rt.tensor(N),
      rt.tensor(N),
      rt.tensor(targets),
      rt.tensor(wlp),
      rt.tensor(went),
    ];
    const gotD = new Float32Array(N * V);
    for (let n0 = 0; n0 < N; n0 += rows) {
      const ch: LogitsChunk = { rows: Math.min(rows, N - n0), V, sliceV, rowBase: n0 };
      const chunk = sliceLogits(logits.subarray(n0 * V, (n0 + ch.rows) * V), ch);
      expect(bitEqual(unsliceLogits(chunk, ch), logits.subarray(n0 * V, (n0 + ch.rows) * V))).toBe(true);
      const [gl, gd] = [rt.tensor(chunk), rt.tensor(chunk.length)];
      const enc = rt.device.createCommandEncoder();
      logSoftmaxForward(rt, enc, glogp, gent, gl, gt, ch, invTemp);
      logSoftmaxBackward(rt, enc, gd, gl, gt, gw, ge, ch, invTemp);
      rt.submit(enc);
      gotD.set(unsliceLogits(await rt.read(gd), ch), n0 * V);
    }
    const atol = TOL.fwd.atol * Math.sqrt(V) * 3 * invTemp;
    assertClose("logp", await rt.read(glogp), logp, { atol });
    assertClose("entropy", await rt.read(gent), ent, { atol });
    assertClose("dlogits", gotD, dl, { atol: TOL.grad.atol * 3 * invTemp });
  });

  it("the sampler draws the same tokens from slice-major chunks as from the plain block", async () => {
    const rt = await gpuRuntime();
    const [B, V, sliceV, rows] = [13, 700, 128, 4];
    const logits = randn(B * V, 21, 2);
    for (const s of [
      { temperature: 0, topK: 0, topP: 1, seed: 1, step: 0 },
      { temperature: 0.8, topK: 40, topP: 0.9, seed: 2, step: 3 },
      { temperature: 1, topK: 0, topP: 1, seed: 3, step: 1 },
    ]) {
      const [tok, lp, ctok, clp] = [rt.tensor(B), rt.tensor(B), rt.tensor(B), rt.tensor(B)];
      const enc = rt.device.createCommandEncoder();
      sample(rt, enc, tok, lp, rt.tensor(logits), B, V, s);
      for (let b0 = 0; b0 < B; b0 += rows) {
        const ch: LogitsChunk = { rows: Math.min(rows, B - b0), V, sliceV, rowBase: b0 };
        const chunk = rt.tensor(sliceLogits(logits.subarray(b0 * V, (b0 + ch.rows) * V), ch));
        sample(rt, enc, ctok, clp, chunk, ch.rows, V, s, { sliceV, rowBase: b0 });
      }
      rt.submit(enc);
      expect([...(await rt.readU32(ctok))]).toEqual([...(await rt.readU32(tok))]);
      expect(bitEqual(await rt.read(clp), await rt.read(lp))).toBe(true);
    }
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
    assertClose("adamw params", await rt.read(gp), p, TOL.grad);
    assertClose("adamw m", await rt.read(gm), m, TOL.grad);
    assertClose("adamw v", await rt.read(gv), v, TOL.grad);
  });

  it("grad norm (two-stage) and AdamW's clip-by-norm without readback, on a view of a flat buffer", async () => {
    const rt = await gpuRuntime();
    const n = 100_003;
    const g = randn(n, 30, 0.01);
    const p0 = randn(n, 31);
    const flat = rt.tensor(n + 64);
    const gview = { buffer: flat.buffer, offset: 256, size: n * 4 };
    rt.upload(gview, g);
    const chunk = normChunk(n, rt.bindingFloats);
    const [out, scratch] = [rt.tensor(4), rt.tensor(normParts([n], chunk))];
    const h = { lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.01, step: 1 };
    const run = async () => {
      const [gp, gm, gv] = [rt.tensor(p0), rt.tensor(n), rt.tensor(n)];
      const enc = rt.device.createCommandEncoder();
      gradNorm(rt, enc, out, scratch, [gview], chunk);
      adamw(rt, enc, gp, gview, gm, gv, n, h, out, 1.0);
      rt.submit(enc);
      return [(await rt.read(out))[0], await rt.read(gp), await rt.read(gm), await rt.read(gview)] as const;
    };
    const [norm, params, m, grads] = [...(await run())];
    const ref = R.gradNormRef(g, n);
    expect(Math.abs(norm - ref)).toBeLessThanOrEqual(TOL.fwd.atol * Math.sqrt(n) + 1e-3 * ref);
    const s = R.clipScale(ref, 1.0);
    expect(s).toBeLessThan(1);
    const [pr, mr, vr] = [p0.slice(), new Float32Array(n), new Float32Array(n)];
    R.adamwRef(pr, g, mr, vr, n, h, s);
    assertClose("params after the clipped step", params, pr, TOL.grad);
    // the first moment is (1 - beta1) times the clipped gradient: the clip is applied
    assertClose("m (the clipped gradient)", m, mr, TOL.fwd);
    expect(bitEqual(grads, g), "the gradients are read clipped, not rewritten").toBe(true);
    const [norm2, params2] = await run();
    expect(bitEqual([norm], [norm2])).toBe(true);
    expect(bitEqual(params, params2)).toBe(true);
    // clipping needs the norm
    expect(() => adamw(rt, rt.device.createCommandEncoder(), flat, gview, flat, flat, n, h, null, 1)).toThrow(
      /needs the norm/,
    );
  });

  it("grad norm over windows of a flat buffer (cut at its chunk) has the bits of one binding", async () => {
    const rt = await gpuRuntime();
    const n = 50_000;
    const g = randn(n, 31, 0.1);
    const buf = rt.tensor(g);
    const norm = async (maxWindow: number) => {
      const chunk = normChunk(n, maxWindow);
      const wins = windows(n, maxWindow, chunk).map(([at, len]) => subview(buf, at, len));
      const [out, scratch] = [
        rt.tensor(4),
        rt.tensor(
          normParts(
            wins.map((w) => w.size / 4),
            chunk,
          ),
        ),
      ];
      const enc = rt.device.createCommandEncoder();
      gradNorm(rt, enc, out, scratch, wins, chunk);
      rt.submit(enc);
      return { norm: (await rt.read(out))[0], windows: wins.length };
    };
    const whole = await norm(rt.bindingFloats);
    const cut = await norm(4096); // chunk 256 floats, 13 windows
    expect(whole.windows).toBe(1);
    expect(cut.windows).toBe(13);
    expect(bitEqual([cut.norm], [whole.norm])).toBe(true);
    expect(Math.abs(cut.norm - R.gradNormRef(g, n))).toBeLessThanOrEqual(1e-3 * cut.norm);
  });
});
