// Worked numbers of ALGORITHMS.md §1, §2, §4, §12 for policy losses, KL estimators,
// aggregation weights, the clipped value loss and the aux losses; gradients checked by
// central finite differences in float64; fast-check properties. `npx vitest run rl/algos/`.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AGG,
  aggregate,
  entropyTerm,
  explainedVariance,
  KL,
  k1,
  k2,
  k3,
  klTerm,
  POLICY_LOSS,
  positiveLm,
  valueLoss,
  valuePretrainDone,
} from "./losses.ts";
import { flatten } from "./types.ts";

const ppo = (
  A: number,
  rho: number,
  o: Partial<{ epsLow: number; epsHigh: number; dualClipC: number | null }> = {},
) =>
  POLICY_LOSS["ppo-clip"](
    { logprob: [Math.log(rho)], oldLogprob: [0], advantages: [A], mask: [1] },
    { epsLow: 0.2, epsHigh: 0.2, dualClipC: null, ...o },
  );

describe("ppo-clip (§1, §4)", () => {
  it("reproduces the worked numbers", () => {
    expect(ppo(1, 1.5).loss[0]).toBeCloseTo(-1.2, 12);
    expect(ppo(1, 1.5).clipped[0]).toBe(1);
    expect(ppo(-1, 0.5).loss[0]).toBeCloseTo(0.8, 12);
    const dual = ppo(-1, 5, { dualClipC: 3 });
    expect(dual.loss[0]).toBeCloseTo(3, 12);
    expect(dual.clippedLower[0]).toBe(1);
    expect(dual.metrics["actor/pg_clipfrac_lower"]).toBe(1);
    expect(ppo(-1, 5).loss[0]).toBeCloseTo(5, 12);
    // clip-higher: 1.25 is inside 1 + 0.28
    expect(ppo(1, 1.25, { epsHigh: 0.28 }).loss[0]).toBeCloseTo(-1.25, 12);
    expect(ppo(1, 1.25).loss[0]).toBeCloseTo(-1.2, 12);
    // A = 0 and the on-policy first step
    expect(ppo(0, 1.7).loss[0]).toBeCloseTo(0, 12);
    expect(ppo(0.3, 1).loss[0]).toBeCloseTo(-0.3, 12);
    expect(ppo(0.3, 1).grad[0]).toBeCloseTo(-0.3, 12);
  });

  it("masks tokens and reports masked-mean metrics", () => {
    const out = POLICY_LOSS["ppo-clip"](
      {
        logprob: [Math.log(1.5), 0, -0.1, 0],
        oldLogprob: [0, 0, 0, 0],
        advantages: [1, 1, 1, 1],
        mask: [1, 1, 1, 0],
      },
      { epsLow: 0.2, epsHigh: 0.2, dualClipC: 3 },
    );
    expect(out.loss[3]).toBe(0);
    expect(out.metrics["actor/pg_clipfrac"]).toBeCloseTo(1 / 3, 12);
    expect(out.metrics["actor/ppo_kl"]).toBeCloseTo((-Math.log(1.5) + 0 + 0.1) / 3, 12);
    expect(() =>
      POLICY_LOSS["ppo-clip"](
        { logprob: [0], oldLogprob: [0], advantages: [1], mask: [1] },
        { epsLow: 0.2, epsHigh: 0.2, dualClipC: 1 },
      ),
    ).toThrow(/c must be > 1/);
  });

  it("property: gradient matches finite differences and is zero where clipped", () => {
    fc.assert(
      fc.property(
        fc.double({ min: -2, max: 2, noNaN: true }),
        fc.double({ min: -2, max: 2, noNaN: true }),
        fc.double({ min: -3, max: 3, noNaN: true }),
        fc.constantFrom(null, 3),
        (lp, lpOld, A, c) => {
          const o = { epsLow: 0.2, epsHigh: 0.28, dualClipC: c };
          const f = (x: number) =>
            POLICY_LOSS["ppo-clip"]({ logprob: [x], oldLogprob: [lpOld], advantages: [A], mask: [1] }, o);
          const out = f(lp);
          if (out.clipped[0] || out.clippedLower[0]) expect(out.grad[0]).toBe(0);
          const h = 1e-6;
          const rho = Math.exp(lp - lpOld);
          // Skip points within h of a kink (the clip bounds or the dual-clip switch).
          const nearKink =
            Math.abs(rho - 0.8) < 1e-4 ||
            Math.abs(rho - 1.28) < 1e-4 ||
            (c !== null && Math.abs(rho - c) < 1e-3);
          if (!nearKink) {
            const fd = (f(lp + h).loss[0] - f(lp - h).loss[0]) / (2 * h);
            expect(out.grad[0]).toBeCloseTo(fd, 4);
            const fa = (a: number) =>
              POLICY_LOSS["ppo-clip"]({ logprob: [lp], oldLogprob: [lpOld], advantages: [a], mask: [1] }, o)
                .loss[0];
            if (Math.abs(A) > 1e-3) expect(out.gradAdv[0]).toBeCloseTo((fa(A + h) - fa(A - h)) / (2 * h), 4);
          }
        },
      ),
    );
  });
});

describe("vanilla-pg (§12)", () => {
  it("is −A·lp with gradient −A", () => {
    const out = POLICY_LOSS["vanilla-pg"](
      { logprob: [-0.5, -2], oldLogprob: [-0.4, -2], advantages: [2, -1], mask: [1, 0] },
      { epsLow: 0.2, epsHigh: 0.2, dualClipC: null },
    );
    expect(Array.from(out.loss)).toEqual([1, 0]);
    expect(Array.from(out.grad)).toEqual([-2, 0]);
    expect(out.metrics["actor/ppo_kl"]).toBeCloseTo(0.1, 12);
  });
});

describe("kl (§0, §2)", () => {
  it("reproduces the worked numbers", () => {
    expect(k3(-1, -1.5).value).toBeCloseTo(0.106531, 6);
    expect(k1(-1, -1.5).value).toBeCloseTo(0.5, 12);
    expect(k2(-1, -1.5).value).toBeCloseTo(0.125, 12);
    expect(k3(-1, -1).value).toBe(0);
  });

  it("gradients match finite differences; k3 clamps", () => {
    for (const [name, fn] of Object.entries(KL)) {
      for (const [lp, ref] of [
        [-1, -1.5],
        [-0.2, -3],
        [-4, -0.5],
      ]) {
        const h = 1e-6;
        const fd = (fn(lp + h, ref).value - fn(lp - h, ref).value) / (2 * h);
        expect(fn(lp, ref).grad, `${name}(${lp},${ref})`).toBeCloseTo(fd, 5);
      }
    }
    expect(k3(-30, 0)).toEqual({ value: 10, grad: 0 });
  });

  it("property: k3 >= 0", () => {
    fc.assert(
      fc.property(
        fc.double({ min: -50, max: 0, noNaN: true }),
        fc.double({ min: -50, max: 0, noNaN: true }),
        (a, b) => {
          expect(k3(a, b).value).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  it("klTerm scales by coef and skips env tokens", () => {
    const t = klTerm("k1", [-1, -1], [-1.5, -1.5], [1, 0], 0.1);
    expect(Array.from(t.value)).toEqual([0.05, 0]);
    expect(Array.from(t.grad)).toEqual([0.1, 0]);
    expect(() => klTerm("k9", [0], [0], [1], 1)).toThrow(/unknown KL/);
  });
});

describe("agg (§0, §2)", () => {
  const masks = [
    [1, 1],
    [1, 1, 1, 1],
  ];
  const loss = flatten([
    [1, 1],
    [2, 2, 2, 2],
  ]);
  const L = (mode: keyof typeof AGG, o = {}) => aggregate(loss, flatten(AGG[mode](masks, o)));

  it("reproduces the worked numbers", () => {
    expect(L("seq-mean-token-mean")).toBeCloseTo(1.5, 12);
    expect(L("token-mean")).toBeCloseTo(10 / 6, 12);
    expect(L("seq-mean-token-sum-norm", { lMax: 4 })).toBeCloseTo(1.25, 12);
    expect(L("seq-mean-token-sum")).toBeCloseTo(5, 12);
  });

  it("seq-mean-token-sum counts a fully masked row in |B| (verl's agg_loss would not)", () => {
    // Rows [1, 1] (ℓ 1) and a rejected [0, 0]: (2 + 0)/2 = 1; verl's masked seq-mean gives 2/1.
    const w = flatten(
      AGG["seq-mean-token-sum"](
        [
          [1, 1],
          [0, 0],
        ],
        {},
      ),
    );
    expect(aggregate([1, 1, 1, 1], w)).toBe(1);
    // seq-mean-token-mean leaves the fully masked row out of |B'|.
    const m = flatten(
      AGG["seq-mean-token-mean"](
        [
          [1, 1],
          [0, 0],
        ],
        {},
      ),
    );
    expect(aggregate([1, 1, 1, 1], m)).toBe(1);
    expect(aggregate([1, 1, 3, 3], m)).toBe(1);
  });

  it("empty masks contribute nothing and never divide by zero", () => {
    const w = AGG["seq-mean-token-mean"](
      [
        [0, 0],
        [1, 1],
      ],
      {},
    );
    expect(Array.from(flatten(w))).toEqual([0, 0, 0.5, 0.5]);
    expect(Array.from(flatten(AGG["token-mean"]([[0, 0]], {})))).toEqual([0, 0]);
    expect(() => AGG["seq-mean-token-sum-norm"](masks, {})).toThrow(/lMax/);
    expect(() => AGG["seq-mean-token-sum-norm"](masks, { lMax: 3 })).toThrow(/more than lMax/);
  });

  it("mini-batch totals override micro-batch counts", () => {
    const w = AGG["token-mean"]([[1, 1]], { totalTokens: 8 });
    expect(Array.from(w[0])).toEqual([0.125, 0.125]);
  });

  it("property: weights sum to 1 (token-mean, seq-mean-token-mean) and |B|-scaled for the others", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.constantFrom<number>(0, 1), { minLength: 1, maxLength: 6 }), {
          minLength: 1,
          maxLength: 6,
        }),
        (ms) => {
          const total = ms.flat().reduce((a, b) => a + b, 0);
          const nonEmpty = ms.filter((m) => m.some((x) => x === 1)).length;
          const s = (mode: keyof typeof AGG, o = {}) => flatten(AGG[mode](ms, o)).reduce((a, b) => a + b, 0);
          expect(s("token-mean")).toBeCloseTo(total > 0 ? 1 : 0, 9);
          expect(s("seq-mean-token-mean")).toBeCloseTo(nonEmpty > 0 ? 1 : 0, 9);
          expect(s("seq-mean-token-sum")).toBeCloseTo(total / ms.length, 9);
          expect(s("seq-mean-token-sum-norm", { lMax: 6 })).toBeCloseTo(total / (ms.length * 6), 9);
          // weights are zero exactly where the mask is zero
          const w = flatten(AGG["token-mean"](ms, {}));
          ms.flat().forEach((m, i) => {
            if (m === 0) expect(w[i]).toBe(0);
          });
        },
      ),
    );
  });
});

describe("value loss (§1)", () => {
  it("reproduces the worked number", () => {
    const v = valueLoss({ values: [1.2], oldValues: [0.5], returns: [1.0], mask: [1] }, 0.5);
    expect(v.loss[0]).toBeCloseTo(0.02, 12);
    expect(v.grad[0]).toBeCloseTo(0.2, 12);
    expect(v.clipfrac).toBe(0);
  });

  it("clipped branch has zero gradient; masked tokens give nothing", () => {
    // V_old 0.5, V_new 0.0, R 1.0, ε 0.2 → V_c 0.3: (0−1)² = 1 > (0.3−1)² = 0.49 → unclipped
    const a = valueLoss({ values: [0.0, 9], oldValues: [0.5, 0], returns: [1.0, 0], mask: [1, 0] }, 0.2);
    expect(a.loss[0]).toBeCloseTo(0.5, 12);
    expect(a.grad[0]).toBeCloseTo(-1, 12);
    expect(a.loss[1]).toBe(0);
    // V_old 0, V_new 1.0, R 1.1, ε 0.2 → V_c 0.2: (−0.1)² < (−0.9)² → clipped, no gradient
    const b = valueLoss({ values: [1.0], oldValues: [0], returns: [1.1], mask: [1] }, 0.2);
    expect(b.loss[0]).toBeCloseTo(0.405, 12);
    expect(b.grad[0]).toBe(0);
    expect(b.clipfrac).toBe(1);
  });

  it("explained variance and the value-pretraining stop rule (§12)", () => {
    expect(explainedVariance([1, 2, 3], [1, 2, 3], [1, 1, 1])).toBeCloseTo(1, 12);
    expect(explainedVariance([1, 2, 3], [2, 2, 2], [1, 1, 1])).toBeCloseTo(0, 12);
    expect(explainedVariance([1, 1], [0, 0], [1, 1])).toBeNaN();
    const cfg = { steps: 100, stopExplainedVar: 0.8 };
    expect(valuePretrainDone(5, 0.5, cfg)).toBe(false);
    expect(valuePretrainDone(5, 0.85, cfg)).toBe(true);
    expect(valuePretrainDone(100, 0.1, cfg)).toBe(true);
    expect(valuePretrainDone(5, 0.99, { steps: 100, stopExplainedVar: null })).toBe(false);
  });
});

describe("entropy and positive-lm (§1, §12)", () => {
  it("entropy term", () => {
    const e = entropyTerm([1, 2, 9], [0.5, 0.5, 0], 0.01);
    expect(e.loss).toBeCloseTo(-0.015, 12);
    expect(Array.from(e.gradH)).toEqual([-0.005, -0.005, -0]);
  });

  it("positive-lm averages NLL over correct trajectories' policy tokens", () => {
    const r = positiveLm([
      { logprob: [-1, -2, -5], mask: [1, 1, 0], correct: true },
      { logprob: [-3, -3], mask: [1, 1], correct: false },
      { logprob: [-0.5, -0.5], mask: [0, 1], correct: true },
    ]);
    expect(r.loss).toBeCloseTo(3.5 / 3, 12);
    expect(Array.from(r.grad[0])).toEqual([-1 / 3, -1 / 3, 0]);
    expect(Array.from(r.grad[1])).toEqual([0, 0]);
    expect(positiveLm([{ logprob: [-1], mask: [1], correct: false }]).loss).toBe(0);
  });
});
