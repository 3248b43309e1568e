// The sampler-trainer mismatch and its correction (rl/update/sampler-mismatch.ts, ALGORITHMS.md §13):
// the trainer's truncated log-prob against the sampler's own distribution (sampleDistribution),
// the CPU decode path against the training forward (diff about 0, with and without top-k/top-p),
// a perturbed sampler, the IS weights and rejection at the thresholds' edges on §13's worked
// batch (token, sequence, geometric), and the weighted and top-entropy policy loss.
// `npx vitest run --project unit rl/update/sampler-mismatch.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import { type SampleParams, sampleDistribution } from "../../kernels/reference";
import { assertClose } from "../../kernels/testing";
import type { GenerationSession, SamplingOptions } from "../../model/api";
import { modelConfig } from "../../model/config";
import { CpuModel } from "../../model/cpu";
import { generate } from "../../model/generate";
import { encode } from "../../model/tokenizer";
import { topEntropyMask } from "../algos/masks";
import { scoreAll } from "./minibatch-loop";
import { type MinibatchInput, minibatchLoss } from "./minibatch-loss";
import { keptLogMass, mismatchMetrics, type RolloutCorrection, rolloutCorrection } from "./sampler-mismatch";

const close = (label: string, got: ArrayLike<number>, ref: ArrayLike<number>, atol = 1e-6) =>
  assertClose(label, got, ref, { atol, rtol: 0 });

// §13's worked batch, read here as old = the trainer's log-probs, LP = the sampler's.
const M = [
  [1, 1, 0, 1],
  [1, 1, 1, 0],
];
const OLD = [
  [-1.0, -2.0, -0.5, -1.5],
  [-0.75, -1.2, -2.5, 0.0],
];
const LP = [
  [-0.8, -2.1, -0.9, -1.0],
  [-0.9, -1.0, -2.0, 0.0],
];
// old − lp on mask-1 tokens: [[-0.2, 0.1, ·, -0.5], [0.15, -0.2, -0.5, ·]];
// token ratios exp(·): [[0.818731, 1.105171, ·, 0.606531], [1.161834, 0.818731, 0.606531, ·]];
// sequence products: exp(-0.6) = 0.548812, exp(-0.55) = 0.576950;
// geometric: exp(-0.6/3) = 0.818731, exp(-0.55/3) = 0.832491.
const corr = (over: Partial<RolloutCorrection>): RolloutCorrection => ({
  rollout_is: "none",
  rollout_is_threshold: 2,
  rollout_rs: "none",
  rollout_rs_threshold: null,
  rollout_rs_threshold_lower: null,
  ...over,
});

describe("keptLogMass: the sampler's kept set", () => {
  it("log q(v) = log p(v) − log(kept mass) on kept tokens, excluded exactly where q = 0", () => {
    const V = 45; // not a power of two, with ties
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (const s of [
      { temperature: 0.7, topK: 5, topP: 1 },
      { temperature: 1, topK: 0, topP: 0.9 },
      { temperature: 1.3, topK: 12, topP: 0.5 },
      { temperature: 1, topK: 0, topP: 0.01 }, // only the top token (or its ties)
    ]) {
      for (let trial = 0; trial < 20; trial++) {
        const row = Float32Array.from({ length: V }, () => Math.round((rnd() * 8 - 4) * 4) / 4);
        const q = sampleDistribution(row, V, { ...s, seed: 0, step: 0 } as SampleParams);
        const { logMass, thr } = keptLogMass(row, V, s);
        let mx = -Infinity;
        for (const x of row) mx = Math.max(mx, x);
        let z = 0;
        for (const x of row) z += Math.exp((x - mx) / s.temperature);
        for (let v = 0; v < V; v++) {
          const key = new Uint32Array(new Float32Array([row[v]]).buffer)[0];
          const ordered = (key & 0x80000000 ? ~key : key | 0x80000000) >>> 0;
          expect(ordered >= thr, `v=${v}`).toBe(q[v] > 0);
          if (q[v] > 0) {
            const lp = (row[v] - mx) / s.temperature - Math.log(z);
            expect(Math.abs(lp - logMass - Math.log(q[v]))).toBeLessThan(1e-12);
          }
        }
      }
    }
  });

  it("no truncation keeps all the mass", () => {
    expect(keptLogMass(Float32Array.from([1, 2, 3]), 3, { temperature: 1, topK: 0, topP: 1 }).logMass).toBe(
      0,
    );
  });
});

describe("mismatch metrics", () => {
  it("mean and max |old − lp| and the ratio stats over mask-1 tokens only", () => {
    const m = mismatchMetrics(OLD, LP, M);
    expect(m["rollout/logprob_diff_mean"]).toBeCloseTo((0.2 + 0.1 + 0.5 + 0.15 + 0.2 + 0.5) / 6, 12);
    expect(m["rollout/logprob_diff_max"]).toBeCloseTo(0.5, 12);
    const r = [0.818731, 1.105171, 0.606531, 1.161834, 0.818731, 0.606531];
    expect(m["rollout/is_ratio_mean"]).toBeCloseTo(r.reduce((a, b) => a + b) / 6, 6);
    expect(m["rollout/is_ratio_min"]).toBeCloseTo(0.606531, 6);
    expect(m["rollout/is_ratio_max"]).toBeCloseTo(1.161834, 6);
    expect(m["rollout/trunc_dropped_frac"]).toBe(0);
  });

  it("a token the trainer's truncation drops: ratio 0, out of the diff stats, counted", () => {
    const m = mismatchMetrics([[Number.NEGATIVE_INFINITY, -1]], [[-0.5, -1]], [[1, 1]]);
    expect(m["rollout/trunc_dropped_frac"]).toBe(0.5);
    expect(m["rollout/is_ratio_min"]).toBe(0);
    expect(m["rollout/logprob_diff_max"]).toBe(0);
    expect(mismatchMetrics([[0]], [[0]], [[0]])).toEqual({});
  });
});

describe("rollout correction at the thresholds' edges (§13 worked batch)", () => {
  it("token IS, truncate: weights above C become C, the others stay", () => {
    const at = (C: number) =>
      rolloutCorrection(OLD, LP, M, corr({ rollout_is: "token", rollout_is_threshold: C }));
    const a = at(1.1); // 1.105171 and 1.161834 are just above
    close(
      "w(1.1) rows",
      [...a.weights![0], ...a.weights![1]],
      [0.818731, 1.1, 1, 0.606531, 1.1, 0.818731, 0.606531, 1],
    );
    expect(a.metrics["rollout/is_truncated_frac"]).toBeCloseTo(2 / 6, 12);
    const b = at(1.17); // just above the largest ratio: nothing truncated
    close(
      "w(1.17)",
      [...b.weights![0], ...b.weights![1]],
      [0.818731, 1.105171, 1, 0.606531, 1.161834, 0.818731, 0.606531, 1],
    );
    expect(b.metrics["rollout/is_truncated_frac"]).toBe(0);
    expect(b.keep).toBeUndefined();
  });

  it("sequence IS: the product of the row's ratios on every token, truncated", () => {
    const a = rolloutCorrection(OLD, LP, M, corr({ rollout_is: "sequence", rollout_is_threshold: 0.56 }));
    // row 0: 0.548812 < 0.56 stays; row 1: 0.576950 > 0.56 → 0.56; mask-0 tokens weight 1
    close("w", [...a.weights![0], ...a.weights![1]], [0.548812, 0.548812, 1, 0.548812, 0.56, 0.56, 0.56, 1]);
    expect(a.metrics["rollout/is_truncated_frac"]).toBeCloseTo(3 / 6, 12);
  });

  it("token rejection outside [lower, upper]: the lower edge just above and below 0.606531", () => {
    const rs = (lower: number) =>
      rolloutCorrection(
        OLD,
        LP,
        M,
        corr({ rollout_rs: "token", rollout_rs_threshold: 1.2, rollout_rs_threshold_lower: lower }),
      );
    const a = rs(0.6066);
    expect([...a.keep![0], ...a.keep![1]]).toEqual([1, 1, 1, 0, 1, 1, 0, 1]);
    expect(a.metrics["rollout/rs_masked_frac"]).toBeCloseTo(2 / 6, 12);
    expect([...rs(0.6065).keep![0], ...rs(0.6065).keep![1]]).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    // the upper edge: 1.161834 rejected at 1.16, kept at 1.17; default lower = 1/upper
    const up = rolloutCorrection(OLD, LP, M, corr({ rollout_rs: "token", rollout_rs_threshold: 1.16 }));
    // 1/1.16 = 0.862069: 0.818731 and 0.606531 fall below too
    expect([...up.keep![0], ...up.keep![1]]).toEqual([0, 1, 1, 0, 0, 0, 0, 1]);
    expect(up.weights).toBeUndefined();
  });

  it("sequence and geometric rejection take the whole row", () => {
    const seq = rolloutCorrection(
      OLD,
      LP,
      M,
      corr({ rollout_rs: "sequence", rollout_rs_threshold_lower: 0.56 }),
    );
    expect([...seq.keep![0], ...seq.keep![1]]).toEqual([0, 0, 1, 0, 1, 1, 1, 1]);
    expect(seq.metrics["rollout/rs_masked_frac"]).toBeCloseTo(3 / 6, 12);
    const geo = (lower: number) =>
      rolloutCorrection(OLD, LP, M, corr({ rollout_rs: "geometric", rollout_rs_threshold_lower: lower }))
        .keep!;
    expect([...geo(0.82)[0], ...geo(0.82)[1]]).toEqual([0, 0, 1, 0, 1, 1, 1, 1]); // 0.818731 < 0.82 < 0.832491
    expect([...geo(0.84)[0], ...geo(0.84)[1]]).toEqual([0, 0, 1, 0, 0, 0, 0, 1]);
    expect([...geo(0.81)[0], ...geo(0.81)[1]]).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
  });
});

function lossConfig(over: object): RunConfig {
  return mergeConfig(defaultRunConfig(), { rl: { clip_eps_low: 0.2, clip_eps_high: 0.28, ...over } });
}
const ADV = [
  [1, 1, 1, 1],
  [-0.5, -0.5, -0.5, -0.5],
];
// PPO clip on §13's batch with lp = the current policy, old = the old policy (token-mean):
// grad [[−0.203567, −0.150806, 0, 0], [0.071726, 0.101784, 0.137393, 0]].
const PPO_GRAD = [-0.203567, -0.150806, 0, 0, 0.071726, 0.101784, 0.137393, 0];
const input = (over: Partial<MinibatchInput> = {}): MinibatchInput => ({
  logprob: LP,
  entropy: [
    [0.5, 0.9, 2.0, 0.1],
    [0.9, 0.3, 0.7, 5.0],
  ],
  mask: M,
  oldLogprob: OLD,
  advantages: ADV,
  postTool: M.map((m) => m.map(() => 0)),
  ...over,
});
const gradOf = (c: RunConfig, x: MinibatchInput) => {
  const g = minibatchLoss(c, x);
  return { ...g, flat: [...g.dlogp[0], ...g.dlogp[1]] };
};

describe("the corrected and selected policy loss", () => {
  it("IS weights multiply PPO's per-token gradient (§13 grad x the C = 1.1 weights); mask-0 exactly 0", () => {
    const w = rolloutCorrection(OLD, LP, M, corr({ rollout_is: "token", rollout_is_threshold: 1.1 }))
      .weights!;
    const c = lossConfig({});
    close("no weights", gradOf(c, input()).flat, PPO_GRAD);
    const g = gradOf(c, input({ isWeights: w }));
    const wf = [...w[0], ...w[1]];
    close(
      "weighted",
      g.flat,
      PPO_GRAD.map((x, i) => x * wf[i]),
    );
    expect(Object.is(g.flat[2], 0) || Object.is(g.flat[2], -0)).toBe(true);
    expect(g.flat[7]).toBe(0);
  });

  it("rejected tokens (mask narrowed by keep) get exactly zero gradient and leave the denominator", () => {
    const keep = rolloutCorrection(
      OLD,
      LP,
      M,
      corr({ rollout_rs: "token", rollout_rs_threshold: 1.2, rollout_rs_threshold_lower: 0.6066 }),
    ).keep!;
    const mask = M.map((m, b) => m.map((x, t) => x * keep[b][t]));
    const g = gradOf(lossConfig({}), input({ mask }));
    // 4 tokens left of 6: the kept tokens' token-mean gradients scale by 6/4
    close(
      "rs",
      g.flat,
      PPO_GRAD.map((x, i) => ([3, 6].includes(i) ? 0 : (x * 6) / 4)),
    );
    expect(g.flat[6]).toBe(0);
  });

  it("top-entropy tokens only: derived by hand from the entropies, ties by position", () => {
    // valid entropies (mask 1) by flat index: 0:0.5 1:0.9 3:0.1 4:0.9 5:0.3 6:0.7
    const ent = [0.5, 0.9, 2.0, 0.1, 0.9, 0.3, 0.7, 5.0];
    const mk = [1, 1, 0, 1, 1, 1, 1, 0];
    // q = 0.5: ceil(3) = 3 tokens: 0.9 (1), 0.9 (4), 0.7 (6)
    expect([...topEntropyMask(ent, mk, 0.5)]).toEqual([0, 1, 0, 0, 1, 0, 1, 0]);
    // q = 0.1: ceil(0.6) = 1: the tie at 0.9 goes to the earlier position
    expect([...topEntropyMask(ent, mk, 0.1)]).toEqual([0, 1, 0, 0, 0, 0, 0, 0]);
    expect([...topEntropyMask(ent, mk, 1)]).toEqual(mk);
    expect(() => topEntropyMask(ent, mk, 0)).toThrow(/top_entropy_quantile/);
    const g = gradOf(lossConfig({ top_entropy_quantile: 0.5 }), input());
    close(
      "q=0.5",
      g.flat,
      PPO_GRAD.map((x, i) => ([1, 4, 6].includes(i) ? x : 0)),
    );
    expect(g.metrics["actor/entropy_selected_frac"]).toBeCloseTo(0.5, 12);
    for (const i of [0, 2, 3, 5, 7]) expect(Math.abs(g.flat[i])).toBe(0);
  });
});

describe("decode path vs training forward on the CPU backend", () => {
  const small = modelConfig({ layers: 2, dModel: 16, heads: 2, context: 24 });
  const prompts = [encode("ab"), encode("12*34="), encode("q")];

  async function sampleAndScore(
    sampling: SamplingOptions,
    perturb?: (s: GenerationSession) => GenerationSession,
  ) {
    const model = new CpuModel(small, undefined, 3);
    const raw = model.startGeneration(sampling);
    const session = perturb ? perturb(raw) : raw;
    await session.prefill(prompts);
    const out = await generate(session, { maxNewTokens: 10, stop: [], context: small.context });
    const rows = prompts.map((p, b) => ({ prompt: p, response: out[b].tokens }));
    const truncation = {
      temperature: sampling.temperature,
      topK: sampling.topK ?? 0,
      topP: sampling.topP ?? 1,
    };
    const old = await scoreAll(model, rows, rows.length, small.context, {
      temperature: sampling.temperature,
      truncation,
    });
    const sampler = out.map((o) => o.logprobs);
    const mask = out.map((o) => o.tokens.map(() => 1));
    return { old, sampler, mask };
  }

  for (const s of [
    { temperature: 1, seed: 1 },
    { temperature: 0.7, seed: 2 },
    { temperature: 1, topK: 5, seed: 3 },
    { temperature: 0.8, topP: 0.8, seed: 4 },
    { temperature: 1.2, topK: 20, topP: 0.9, seed: 5 },
  ]) {
    it(`agree to float precision at ${JSON.stringify(s)}`, async () => {
      const { old, sampler, mask } = await sampleAndScore(s);
      const trainer = old.truncLogp ?? old.logp;
      close(
        "trainer vs sampler",
        trainer.flatMap((r) => [...r]),
        sampler.flat(),
        1e-5,
      );
      const m = mismatchMetrics(trainer, sampler, mask);
      expect(m["rollout/logprob_diff_max"]).toBeLessThan(1e-5);
      expect(Math.abs(m["rollout/is_ratio_mean"] - 1)).toBeLessThan(1e-5);
      if (s.topK || s.topP) {
        // scored without the truncation, the "mismatch" would be −log(kept mass) > 0
        const naive = mismatchMetrics(old.logp, sampler, mask);
        expect(naive["rollout/is_ratio_mean"]).toBeLessThan(0.999);
      }
    });
  }

  it("a sampler that reports log-probs 0.1 too high shows diff 0.1 and ratio exp(−0.1)", async () => {
    const shifted = (inner: GenerationSession): GenerationSession => ({
      prefill: (p) => inner.prefill(p),
      append: (b, t) => inner.append(b, t),
      lengths: () => inner.lengths(),
      finish: () => inner.finish(),
      decode: async (active) => {
        const r = await inner.decode(active);
        return { tokens: r.tokens, logprobs: r.logprobs.map((x) => x + 0.1) };
      },
    });
    const { old, sampler, mask } = await sampleAndScore({ temperature: 1, topK: 8, seed: 6 }, shifted);
    const m = mismatchMetrics(old.truncLogp!, sampler, mask);
    expect(Math.abs(m["rollout/logprob_diff_mean"] - 0.1)).toBeLessThan(1e-5);
    expect(Math.abs(m["rollout/logprob_diff_max"] - 0.1)).toBeLessThan(1e-5);
    expect(Math.abs(m["rollout/is_ratio_mean"] - Math.exp(-0.1))).toBeLessThan(1e-5);
    // truncated at C = 0.95 > exp(−0.1) = 0.904837: no weight truncated; masked below 0.95: all
    const w = rolloutCorrection(
      old.truncLogp!,
      sampler,
      mask,
      corr({
        rollout_is: "token",
        rollout_is_threshold: 0.95,
        rollout_rs: "token",
        rollout_rs_threshold: 2,
        rollout_rs_threshold_lower: 0.95,
      }),
    );
    expect(w.metrics["rollout/is_truncated_frac"]).toBe(0);
    expect(w.metrics["rollout/rs_masked_frac"]).toBe(1);
  });
});
