// CPU test: every backward in reference.ts against float64 central finite differences of
// loss = sum(out * dout) with random dout (the references run in float64 here), plus the sampler
// reference's PRNG and thresholds. Run: npx vitest run --project unit kernels/reference
import { describe, expect, it } from "vitest";
import * as R from "./reference";
import { assertClose, f64, finiteDiff, randInt, randn } from "./testing";

/** Checks analytic gradient `grad` of x against finite differences of sum(forward() * dout). */
function check(
  label: string,
  x: Float64Array,
  forward: () => Float64Array,
  dout: Float64Array,
  grad: Float64Array,
) {
  const loss = () => {
    const out = forward();
    let s = 0;
    for (let i = 0; i < out.length; i++) s += out[i] * dout[i];
    return s;
  };
  const [idx, num] = finiteDiff(x, loss, 40, 7);
  assertClose(
    label,
    idx.map((i) => grad[i]),
    num,
    { atol: 1e-6, rtol: 1e-5 },
  );
}

describe("reference backward vs float64 finite differences", () => {
  it("linear layer (matmul + bias)", () => {
    const [N, C, OC] = [7, 5, 9];
    const [inp, w, b, dout] = [
      f64(randn(N * C, 1)),
      f64(randn(OC * C, 2)),
      f64(randn(OC, 3)),
      f64(randn(N * OC, 4)),
    ];
    const fwd = () => {
      const o = new Float64Array(N * OC);
      R.matmulForwardRef(o, inp, w, b, N, C, OC);
      return o;
    };
    const [di, dw, db] = [new Float64Array(N * C), new Float64Array(OC * C), new Float64Array(OC)];
    R.matmulBackwardRef(di, dw, db, dout, inp, w, N, C, OC);
    check("dinp", inp, fwd, dout, di);
    check("dweight", w, fwd, dout, dw);
    check("dbias", b, fwd, dout, db);
  });

  it("embedding", () => {
    const [N, C, V, P] = [7, 4, 5, 6];
    const tokens = randInt(N, V, 1);
    tokens[2] = -1;
    const pos = Uint32Array.from(randInt(N, P, 2));
    const [wte, wpe, dout] = [f64(randn(V * C, 3)), f64(randn(P * C, 4)), f64(randn(N * C, 5))];
    const fwd = () => {
      const o = new Float64Array(N * C);
      R.embeddingForwardRef(o, tokens, pos, wte, wpe, N, C);
      return o;
    };
    const [dwte, dwpe] = [new Float64Array(V * C), new Float64Array(P * C)];
    R.embeddingBackwardRef(dwte, dwpe, dout, tokens, pos, N, C);
    check("dwte", wte, fwd, dout, dwte);
    check("dwpe", wpe, fwd, dout, dwpe);
  });

  it("layernorm", () => {
    const [N, C] = [5, 7];
    const [inp, w, b, dout] = [
      f64(randn(N * C, 1)),
      f64(randn(C, 2)),
      f64(randn(C, 3)),
      f64(randn(N * C, 4)),
    ];
    const [mean, rstd] = [new Float64Array(N), new Float64Array(N)];
    const fwd = () => {
      const o = new Float64Array(N * C);
      R.layernormForwardRef(o, new Float64Array(N), new Float64Array(N), inp, w, b, N, C);
      return o;
    };
    R.layernormForwardRef(new Float64Array(N * C), mean, rstd, inp, w, b, N, C);
    const [di, dw, db] = [new Float64Array(N * C), new Float64Array(C), new Float64Array(C)];
    R.layernormBackwardRef(di, dw, db, dout, inp, w, mean, rstd, N, C);
    check("dinp", inp, fwd, dout, di);
    check("dweight", w, fwd, dout, dw);
    check("dbias", b, fwd, dout, db);
  });

  it("rmsnorm", () => {
    const [N, C] = [5, 7];
    const [inp, w, dout] = [f64(randn(N * C, 1)), f64(randn(C, 2)), f64(randn(N * C, 4))];
    const rstd = new Float64Array(N);
    const fwd = () => {
      const o = new Float64Array(N * C);
      R.rmsnormForwardRef(o, new Float64Array(N), inp, w, N, C);
      return o;
    };
    R.rmsnormForwardRef(new Float64Array(N * C), rstd, inp, w, N, C);
    const [di, dw] = [new Float64Array(N * C), new Float64Array(C)];
    R.rmsnormBackwardRef(di, dw, dout, inp, w, rstd, N, C);
    check("dinp", inp, fwd, dout, di);
    check("dweight", w, fwd, dout, dw);
  });

  it("residual, gelu, silu, swiglu", () => {
    const n = 30;
    const [a, b, dout] = [f64(randn(n, 1, 2)), f64(randn(n, 2)), f64(randn(n, 3))];
    const [da, db] = [new Float64Array(n), new Float64Array(n)];
    R.residualBackwardRef(da, db, dout, n);
    const res = () => {
      const o = new Float64Array(n);
      R.residualForwardRef(o, a, b, n);
      return o;
    };
    check("residual da", a, res, dout, da);
    check("residual db", b, res, dout, db);
    for (const [name, f, g] of [
      ["gelu", R.geluForwardRef, R.geluBackwardRef],
      ["silu", R.siluForwardRef, R.siluBackwardRef],
    ] as const) {
      const d = new Float64Array(n);
      g(d, a, dout, n);
      check(
        name,
        a,
        () => {
          const o = new Float64Array(n);
          f(o, a, n);
          return o;
        },
        dout,
        d,
      );
    }
    const [N, H] = [3, 5];
    const inp = f64(randn(N * 2 * H, 4, 2));
    const dsw = new Float64Array(N * 2 * H);
    R.swigluBackwardRef(dsw, inp, dout, N, H);
    check(
      "swiglu",
      inp,
      () => {
        const o = new Float64Array(N * H);
        R.swigluForwardRef(o, inp, N, H);
        return o;
      },
      dout,
      dsw,
    );
  });

  it("attention with a padding mask", () => {
    const [B, T, C, NH] = [2, 5, 8, 2];
    const qkv = f64(randn(B * T * 3 * C, 1));
    const dout = f64(randn(B * T * C, 2));
    const mask = new Uint32Array(B * T).fill(1);
    mask[0] = 0;
    mask[T + 4] = 0;
    const fwd = () => {
      const o = new Float64Array(B * T * C);
      R.attentionForwardRef(o, new Float64Array(B * NH * T), qkv, mask, B, T, C, NH);
      return o;
    };
    const out = new Float64Array(B * T * C);
    const lse = new Float64Array(B * NH * T);
    R.attentionForwardRef(out, lse, qkv, mask, B, T, C, NH);
    const d = new Float64Array(B * T * 3 * C);
    R.attentionBackwardRef(d, dout, qkv, out, lse, mask, B, T, C, NH);
    check("dqkv", qkv, fwd, dout, d);
    // the masked key's k and v get no gradient
    for (let c = C; c < 3 * C; c++) expect(d[c]).toBe(0);
  });

  it("grouped-query attention (6 query heads over 2 kv heads)", () => {
    const [B, T, C, NH, KVH] = [2, 5, 12, 6, 2];
    const row = C + (2 * KVH * C) / NH;
    const qkv = f64(randn(B * T * row, 5));
    const dout = f64(randn(B * T * C, 6));
    const fwd = () => {
      const o = new Float64Array(B * T * C);
      R.attentionForwardRef(o, new Float64Array(B * NH * T), qkv, null, B, T, C, NH, KVH);
      return o;
    };
    const out = new Float64Array(B * T * C);
    const lse = new Float64Array(B * NH * T);
    R.attentionForwardRef(out, lse, qkv, null, B, T, C, NH, KVH);
    const d = new Float64Array(B * T * row);
    R.attentionBackwardRef(d, dout, qkv, out, lse, null, B, T, C, NH, KVH);
    check("dqkv (GQA)", qkv, fwd, dout, d);
  });

  it("q/k norm (RMSNorm per head of q and k, v passed through)", () => {
    const [N, NH, KVH, hs] = [3, 2, 1, 6];
    const W = (NH + 2 * KVH) * hs;
    const [inp, qw, kw, dout] = [
      f64(randn(N * W, 7)),
      f64(randn(hs, 8)),
      f64(randn(hs, 9)),
      f64(randn(N * W, 10)),
    ];
    const rstd = new Float64Array(N * (NH + KVH));
    const fwd = () => {
      const o = new Float64Array(N * W);
      R.qkNormForwardRef(o, new Float64Array(N * (NH + KVH)), inp, qw, kw, N, NH, KVH, hs, 1e-6);
      return o;
    };
    R.qkNormForwardRef(new Float64Array(N * W), rstd, inp, qw, kw, N, NH, KVH, hs, 1e-6);
    const [di, dq, dk] = [new Float64Array(N * W), new Float64Array(hs), new Float64Array(hs)];
    R.qkNormBackwardRef(di, dq, dk, dout, inp, qw, kw, rstd, N, NH, KVH, hs);
    check("dinp", inp, fwd, dout, di);
    check("dqw", qw, fwd, dout, dq);
    check("dkw", kw, fwd, dout, dk);
  });

  it("rope (in place on a strided q/k slice)", () => {
    const s = { N: 4, nHeads: 2, headDim: 6, rowStride: 20, colOffset: 3, base: 10000 };
    const pos = Uint32Array.from([0, 3, 7, 100]);
    const x = f64(randn(s.N * s.rowStride, 1));
    const dout = f64(randn(s.N * s.rowStride, 2));
    const d = dout.slice();
    R.ropeBackwardRef(d, pos, s);
    const fwd = () => {
      const o = x.slice();
      R.ropeForwardRef(o, pos, s);
      return o;
    };
    check("rope", x, fwd, dout, d);
  });

  it("fused log-softmax head: gradient of sum(wlp*logp + went*H)", () => {
    const [N, V] = [4, 9];
    const logits = f64(randn(N * V, 1, 2));
    const targets = Int32Array.from([3, -1, 0, 8]);
    const [wlp, went] = [f64(randn(N, 2)), f64(randn(N, 3))];
    const [logp, ent, dl] = [new Float64Array(N), new Float64Array(N), new Float64Array(N * V)];
    const invTemp = 1 / 0.7;
    R.logSoftmaxRef(logp, ent, dl, logits, targets, wlp, went, N, V, invTemp);
    // loss = sum(out * dout) with out = [logp | ent] and dout = [wlp | went], masked rows dropped
    const dout = new Float64Array(2 * N);
    for (let n = 0; n < N; n++) {
      dout[n] = targets[n] < 0 ? 0 : wlp[n];
      dout[N + n] = targets[n] < 0 ? 0 : went[n];
    }
    const fwd = () => {
      const [lp, h] = [new Float64Array(N), new Float64Array(N)];
      R.logSoftmaxRef(lp, h, new Float64Array(N * V), logits, targets, wlp, went, N, V, invTemp);
      return Float64Array.from([...lp, ...h]);
    };
    check("dlogits", logits, fwd, dout, dl);
    expect(logp[1]).toBe(0);
  });
});

describe("sampler reference", () => {
  it("the PRNG is a counter: same (seed, step, row) same number, and roughly uniform", () => {
    expect(R.sampleUniform(1, 2, 3)).toBe(R.sampleUniform(1, 2, 3));
    expect(R.sampleUniform(1, 2, 3)).not.toBe(R.sampleUniform(1, 2, 4));
    let s = 0;
    for (let i = 0; i < 10000; i++) s += R.sampleUniform(42, 0, i);
    expect(Math.abs(s / 10000 - 0.5)).toBeLessThan(0.01);
  });

  it("orderedKey orders floats", () => {
    const xs = [-1e30, -2, -0.5, 0, 1e-20, 0.5, 3, 1e30];
    for (let i = 1; i < xs.length; i++) expect(R.orderedKey(xs[i])).toBeGreaterThan(R.orderedKey(xs[i - 1]));
  });

  it("top-k 1 and top-p tiny are greedy; greedy has logp 0", () => {
    const logits = Float32Array.from([0.1, 2, 0.3, 1.9]);
    for (const s of [
      { temperature: 1, topK: 1, topP: 1, seed: 1, step: 0 },
      { temperature: 1, topK: 0, topP: 1e-6, seed: 1, step: 0 },
      { temperature: 0, topK: 0, topP: 1, seed: 1, step: 0 },
    ]) {
      const [tok, lp] = [new Int32Array(1), new Float64Array(1)];
      R.sampleRef(tok, lp, logits, 1, 4, s);
      expect(tok[0]).toBe(1);
      expect(Math.abs(lp[0])).toBeLessThan(1e-12);
    }
  });
});
