// GPU test: the sampler vs sampleRef. Exact token equality is not required where u lands within
// rounding of a CDF boundary: each GPU token must be in the kept set with the right log-prob, and
// equal to the reference's pick unless u lies within 1e-5 of its float64 CDF interval; plus
// greedy, top-k/top-p membership, seed reproducibility, and a frequency check.
// Run: npx vitest run --project gpu kernels/sample
import { describe, expect, it } from "vitest";
import * as R from "./reference";
import type { Runtime } from "./runtime";
import { sample } from "./sample";
import { gpuRuntime, randn } from "./testing";

async function runGpu(rt: Runtime, logits: Float32Array, B: number, V: number, s: R.SampleParams) {
  const [tok, lp] = [rt.tensor(B), rt.tensor(B)];
  const enc = rt.device.createCommandEncoder();
  sample(rt, enc, tok, lp, rt.tensor(logits), B, V, s);
  rt.submit(enc);
  return [new Int32Array((await rt.readU32(tok)).buffer), await rt.read(lp)] as const;
}

async function checkCase(B: number, V: number, s: R.SampleParams, scale = 2) {
  const rt = await gpuRuntime();
  const logits = randn(B * V, s.seed + 100, scale);
  const [tok, lp] = await runGpu(rt, logits, B, V, s);
  const rtok = new Int32Array(B);
  R.sampleRef(rtok, new Float64Array(B), logits, B, V, s);
  let mismatches = 0;
  for (let b = 0; b < B; b++) {
    const q = R.sampleDistribution(logits.subarray(b * V, (b + 1) * V), V, s);
    const t = tok[b];
    expect(q[t]).toBeGreaterThan(0); // inside the top-k / top-p set
    expect(Math.abs(lp[b] - Math.log(q[t]))).toBeLessThanOrEqual(1e-4 + 1e-4 * Math.abs(Math.log(q[t])));
    if (t === rtok[b]) continue;
    // a disagreement is allowed only where u sits within rounding of the GPU token's CDF interval
    mismatches++;
    let before = 0;
    for (let v = 0; v < t; v++) before += q[v];
    const u = R.sampleUniform(s.seed, s.step, b);
    expect(u).toBeGreaterThanOrEqual(before - 1e-5);
    expect(u).toBeLessThanOrEqual(before + q[t] + 1e-5);
  }
  expect(mismatches).toBeLessThanOrEqual(Math.ceil(B / 100));
  return tok;
}

describe("sample", () => {
  it("greedy: the first argmax, log-prob 0", async () => {
    const rt = await gpuRuntime();
    const [B, V] = [5, 300];
    const logits = randn(B * V, 1);
    logits[2 * V + 7] = 50;
    logits[2 * V + 9] = 50; // a tie: the lower index wins
    const [tok, lp] = await runGpu(rt, logits, B, V, { temperature: 0, topK: 0, topP: 1, seed: 1, step: 0 });
    for (let b = 0; b < B; b++) {
      let best = 0;
      for (let v = 1; v < V; v++) if (logits[b * V + v] > logits[b * V + best]) best = v;
      expect(tok[b]).toBe(best);
      expect(lp[b]).toBe(0);
    }
    expect(tok[2]).toBe(7);
  });
  it("temperature 1, V=65", () => checkCase(200, 65, { temperature: 1, topK: 0, topP: 1, seed: 3, step: 0 }));
  it("temperature 0.7, top-k 5, V=1000", () =>
    checkCase(64, 1000, { temperature: 0.7, topK: 5, topP: 1, seed: 4, step: 2 }));
  it("top-p 0.9, V=107", () => checkCase(200, 107, { temperature: 1, topK: 0, topP: 0.9, seed: 5, step: 1 }));
  it("top-k 20 and top-p 0.5 together, large logits", () =>
    checkCase(64, 107, { temperature: 1.3, topK: 20, topP: 0.5, seed: 6, step: 9 }, 30));

  it("a seed reproduces the tokens, another seed or step changes them", async () => {
    const s = { temperature: 1, topK: 0, topP: 1, seed: 11, step: 0 };
    const a = await checkCase(128, 65, s);
    const b = await checkCase(128, 65, s);
    expect(Array.from(a)).toEqual(Array.from(b));
    const c = await checkCase(128, 65, { ...s, step: 1 });
    expect(Array.from(c)).not.toEqual(Array.from(a));
  });

  it("per-row steps draw what one step per row would (k tokens per submit)", async () => {
    const rt = await gpuRuntime();
    const [B, V] = [37, 65];
    const logits = rt.tensor(randn(B * V, 21, 2));
    const steps = Uint32Array.from({ length: B }, (_, b) => (b * 7) % 11);
    const s = { temperature: 1, topK: 0, topP: 0.95, seed: 12, step: 5 };
    const [tok, lp, one, onelp] = [rt.tensor(B), rt.tensor(B), rt.tensor(B), rt.tensor(B)];
    let enc = rt.device.createCommandEncoder();
    sample(rt, enc, tok, lp, logits, B, V, s, {}, rt.tensor(steps));
    rt.submit(enc);
    const got = await rt.readU32(tok);
    const gotLp = await rt.read(lp);
    for (const k of new Set(steps)) {
      enc = rt.device.createCommandEncoder();
      sample(rt, enc, one, onelp, logits, B, V, { ...s, step: s.step + k });
      rt.submit(enc);
      const want = await rt.readU32(one);
      const wantLp = await rt.read(onelp);
      for (let b = 0; b < B; b++) {
        if (steps[b] !== k) continue;
        expect(got[b]).toBe(want[b]);
        expect(gotLp[b]).toBe(wantLp[b]);
      }
    }
    // and the reference agrees on the per-row counter
    const ref = new Int32Array(B);
    R.sampleRef(ref, new Float64Array(B), await rt.read(logits), B, V, { ...s, rowStep: steps });
    const agree = ref.filter((t, b) => t === got[b]).length;
    expect(agree).toBeGreaterThanOrEqual(B - 1);
  });

  it("token frequencies follow softmax(logits / T)", async () => {
    const rt = await gpuRuntime();
    const [B, V] = [4000, 4];
    const row = Float32Array.from([0, 1, 2, -1]);
    const logits = new Float32Array(B * V);
    for (let b = 0; b < B; b++) logits.set(row, b * V);
    const [tok] = await runGpu(rt, logits, B, V, { temperature: 2, topK: 0, topP: 1, seed: 7, step: 0 });
    const z = Array.from(row, (x) => Math.exp(x / 2));
    const zs = z.reduce((x, y) => x + y);
    for (let v = 0; v < V; v++) {
      const freq = tok.filter((t) => t === v).length / B;
      expect(Math.abs(freq - z[v] / zs)).toBeLessThan(0.03); // ~4 sigma at B=4000
    }
  });
});
