// The policy losses after the seeds (ALGORITHMS.md §13): GSPO, GSPO-token, GMPO, CISPO, SAPO,
// Clip-Cov and KL-Cov on §13's worked batch (loss, per-token gradient dL/dlp, clip fractions,
// the reference numbers computed with verl's own functions in float64), then edge cases: an
// all-masked row, a one-token response, ratios far outside the clip, a group with equal
// rewards, mask-0 tokens, Clip-Cov's deterministic choice, GSPO vs GSPO-token with per-token
// advantages. Finite differences through the whole minibatch loss are in
// rl/update/policy-loss-fd.test.ts. `npx vitest run --project unit rl/algos/policy-losses.test.ts`.
import { describe, expect, it } from "vitest";
import { assertClose } from "../../kernels/testing.ts";
import { aggregate, POLICY_LOSS, type PolicyLossInput, type PolicyLossOptions } from "./losses.ts";
import { flatten } from "./types.ts";

/** STYLE.md's one rule (kernels/testing.ts): |got − ref| ≤ atol; the worked numbers have 6 decimals. */
const close = (label: string, got: ArrayLike<number>, ref: ArrayLike<number>, atol = 1e-6) =>
  assertClose(label, got, ref, { atol, rtol: 0 });

const isZero = (x: number) => x === 0 || Object.is(x, -0);

// §13's worked batch: 2 responses x 4 positions; row 0 position 3 is a tool-output token, row 1
// position 4 is padding.
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
const ADV = [
  [1, 1, 1, 1],
  [-0.5, -0.5, -0.5, -0.5],
];
const OPTS: PolicyLossOptions = {
  epsLow: 0.2,
  epsHigh: 0.28,
  dualClipC: null,
  sapo: { tauPos: 1.0, tauNeg: 1.05 },
  clipCov: { ratio: 0.2, lb: 0.4, ub: 5 },
  klCov: { ratio: 0.2, coef: 1 },
};

function batch(lp = LP, old = OLD, adv = ADV, mask = M): PolicyLossInput {
  return {
    logprob: flatten(lp),
    oldLogprob: flatten(old),
    advantages: flatten(adv),
    mask: flatten(mask),
    lengths: mask.map((m) => m.length),
  };
}

/** The aggregated loss and dL/dlp: the loss's own weights, else token-mean (§13's default). */
function run(name: string, input: PolicyLossInput, opts: PolicyLossOptions = OPTS) {
  const out = POLICY_LOSS[name](input, opts);
  let n = 0;
  for (let i = 0; i < input.mask.length; i++) n += input.mask[i];
  const w = out.weights ?? Float64Array.from(input.mask, (m) => m / n);
  return { out, loss: aggregate(out.loss, w), grad: out.grad.map((g, i) => g * w[i]) };
}

const NEW = ["gspo", "gspo-token", "gmpo", "cispo", "sapo", "clip-cov", "kl-cov"];

describe("§13 worked batch", () => {
  const want: Record<string, { loss: number; grad: number[]; clip: number; lower?: number; kl?: number }> = {
    "ppo-clip": {
      loss: -0.256804,
      grad: [-0.203567, -0.150806, 0, 0, 0.071726, 0.101784, 0.137393, 0],
      clip: 0.166667,
      kl: -0.191667,
    },
    gspo: {
      loss: -0.310398,
      grad: [-0.203567, -0.203567, 0, -0.203567, 0.100101, 0.100101, 0.100101, 0],
      clip: 0,
    },
    "gspo-token": {
      loss: -0.310398,
      grad: [-0.203567, -0.203567, 0, -0.203567, 0.100101, 0.100101, 0.100101, 0],
      clip: 0,
    },
    gmpo: {
      loss: -0.267216,
      grad: [-0.189173, -0.189173, 0, 0, 0.100101, 0.100101, 0.100101, 0],
      clip: 0.166667,
      lower: 0.166667,
    },
    cispo: {
      loss: 0.31321,
      grad: [-0.203567, -0.150806, 0, -0.213333, 0.071726, 0.101784, 0.106667, 0],
      clip: 0.333333,
    },
    sapo: {
      loss: -0.59035,
      grad: [-0.201093, -0.150465, 0, -0.24779, 0.071343, 0.100421, 0.122613, 0],
      clip: 0,
    },
    "clip-cov": {
      loss: -0.394197,
      grad: [-0.203567, -0.150806, 0, 0, 0.071726, 0.101784, 0, 0],
      clip: 0.166667,
    },
    "kl-cov": {
      loss: -0.234924,
      grad: [-0.203567, -0.150806, 0, -0.274787, 0.071726, 0.101784, 0.30406, 0],
      clip: 0,
      kl: 0.275,
    },
  };
  for (const [name, w] of Object.entries(want)) {
    it(`${name}: loss, gradient, clip fractions`, () => {
      const { out, loss, grad } = run(name, batch());
      close(`${name} loss`, [loss], [w.loss]);
      close(`${name} grad`, grad, w.grad);
      for (const i of [2, 7]) expect(isZero(grad[i]), `${name}: mask-0 token ${i}`).toBe(true);
      close(`${name} pg_clipfrac`, [out.metrics["actor/pg_clipfrac"]], [w.clip]);
      close(`${name} pg_clipfrac_lower`, [out.metrics["actor/pg_clipfrac_lower"]], [w.lower ?? 0]);
      close(`${name} ppo_kl`, [out.metrics["actor/ppo_kl"]], [w.kl ?? -0.191667]);
    });
  }

  it("GSPO row 0: s = exp((0.2 − 0.1 + 0.5)/3), inside the clip, each token −A·s/3/2", () => {
    const s = Math.exp(0.6 / 3);
    close("grad", run("gspo", batch()).grad.slice(0, 2), [-s / 6, -s / 6], 1e-12);
  });

  it("Clip-Cov and KL-Cov pick row 1 position 3 (covariance 0.525)", () => {
    expect(Array.from(POLICY_LOSS["clip-cov"](batch(), OPTS).selected!)).toEqual([0, 0, 0, 0, 0, 0, 1, 0]);
    expect(Array.from(POLICY_LOSS["kl-cov"](batch(), OPTS).selected!)).toEqual([0, 0, 0, 0, 0, 0, 1, 0]);
  });

  it("the sequence-level losses refuse to run without row lengths", () => {
    const { lengths: _, ...flat } = batch();
    for (const name of ["gspo", "gspo-token", "gmpo", "sapo"])
      expect(() => POLICY_LOSS[name](flat, OPTS)).toThrow(/row lengths/);
    expect(() => POLICY_LOSS.gspo({ ...flat, lengths: [4, 3] }, OPTS)).toThrow(/sum to 7, not 8/);
  });
});

describe("§13 edge cases", () => {
  it("an all-masked row adds nothing, except to GMPO's plain mean over rows", () => {
    const base = batch();
    const withEmpty = batch(
      [...LP, [-3, -3, -3]],
      [...OLD, [-1, -1, -1]],
      [...ADV, [2, 2, 2]],
      [...M, [0, 0, 0]],
    );
    for (const name of NEW) {
      const a = run(name, base);
      const b = run(name, withEmpty);
      for (const g of b.grad.slice(8)) expect(isZero(g), `${name}: empty row gradient`).toBe(true);
      for (const l of b.out.loss.slice(8)) expect(isZero(l), `${name}: empty row loss`).toBe(true);
      // GMPO averages over all rows (torch.mean in verl): 2 of 3 rows carry the loss.
      const scale = name === "gmpo" ? 2 / 3 : 1;
      close(`${name} loss`, [b.loss], [a.loss * scale], 1e-12);
      close(
        `${name} grad`,
        b.grad.slice(0, 8),
        a.grad.map((g) => g * scale),
        1e-12,
      );
    }
  });

  it("a one-token response: each loss in closed form", () => {
    const d = 0.1;
    const lp = -0.7;
    const A = 0.6;
    const one = batch([[lp]], [[lp - d]], [[A]], [[1]]);
    const r = Math.exp(d);
    const sig = 1 / (1 + Math.exp(-(r - 1)));
    const want: Record<string, [number, number]> = {
      // One token: the sequence ratio is the token ratio (inside 0.8..1.28).
      gspo: [-A * r, -A * r],
      "gspo-token": [-A * r, -A * r],
      gmpo: [-A * r, -A * r],
      cispo: [-r * A * lp, -r * A],
      sapo: [-A * 4 * sig, -A * 4 * sig * (1 - sig) * r],
      // Covariance is 0 for a lone token: below lb = 0.4, so nothing is removed.
      "clip-cov": [-A * r, -A * r],
      // n = max(1, floor(0.2·1)) = 1: the lone token gets κ·|δ|.
      "kl-cov": [-A * r + d, -A * r + 1],
    };
    for (const [name, [l, g]] of Object.entries(want)) {
      const out = run(name, one);
      close(`${name} loss`, [out.loss], [l], 1e-12);
      close(`${name} grad`, out.grad, [g], 1e-12);
    }
  });

  it("ratios far outside the clip stay finite; the clipped side has no gradient, CISPO keeps one", () => {
    // Row 0: A > 0 with δ = +30 (ratio clamped at e^20); row 1: A < 0 with δ = −30.
    const far = batch(
      [
        [0, -1],
        [-31, -1],
      ],
      [
        [-30, -1.05],
        [-1, -0.95],
      ],
      [
        [1, 1],
        [-1, -1],
      ],
      [
        [1, 1],
        [1, 1],
      ],
    );
    for (const name of NEW) {
      const { out, loss, grad } = run(name, far);
      expect(Number.isFinite(loss), `${name}: loss ${loss}`).toBe(true);
      for (const g of grad) expect(Number.isFinite(g), `${name}: grad`).toBe(true);
      expect(out.metrics["actor/ppo_kl"], `${name}: ppo_kl`).toBeLessThanOrEqual(20);
    }
    // Token-level: the far tokens are clipped (0 gradient) in clip-cov; CISPO scales by 1.28 / 0.8.
    close("clip-cov far", [run("clip-cov", far).grad[0], run("clip-cov", far).grad[2]], [0, 0], 0);
    const c = run("cispo", far);
    close("cispo far", [c.grad[0], c.grad[2]], [(-1.28 * 1) / 4, (-0.8 * -1) / 4], 1e-12);
    expect(c.out.metrics["actor/pg_clipfrac"]).toBe(0.5);
    // SAPO's gate is flat there (the clamp at ±20 has no gradient either).
    close("sapo far", [run("sapo", far).grad[0], run("sapo", far).grad[2]], [0, 0], 0);
    // GSPO: row 0's mean log-ratio is (30 + 0.05)/2 > 10 (capped at e^10) and clipped; row 1's
    // (−30 − 0.05)/2 with A < 0: the lower clip wins, no gradient.
    for (const name of ["gspo", "gspo-token"]) close(`${name} far`, run(name, far).grad, [0, 0, 0, 0], 0);
    // KL-Cov has no clip: −A·ρ's gradient vanishes at the ±20 clamp, κ·|δ| keeps pulling back.
    expect(Number.isFinite(run("kl-cov", far).loss)).toBe(true);
  });

  it("a group with equal rewards (A = 0): no loss, no gradient; KL-Cov still picks one token", () => {
    const zero = batch(LP, OLD, [
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ]);
    for (const name of NEW.filter((n) => n !== "kl-cov")) {
      const { loss, grad } = run(name, zero);
      expect(isZero(loss), `${name}: loss ${loss}`).toBe(true);
      for (const g of grad) expect(isZero(g), `${name}: grad`).toBe(true);
    }
    // Every covariance is 0: the tie goes to the first valid token (row 0, δ = 0.2), as torch.topk
    // may not; with ratio 0.2 on 6 tokens n = 1.
    const k = run("kl-cov", zero);
    expect(Array.from(k.out.selected!)).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    close("kl-cov A=0", [k.loss, ...k.grad], [0.2 / 6, 1 / 6, 0, 0, 0, 0, 0, 0, 0], 1e-12);
  });

  it("mask-0 tokens get exactly zero loss and gradient whatever their values", () => {
    // Position 2 of row 0 and 3 of row 1 are masked with extreme ratios and advantages.
    const wild = batch(
      [
        [-0.8, -2.1, 9, -1.0],
        [-0.9, -1.0, -2.0, -40],
      ],
      [
        [-1.0, -2.0, -9, -1.5],
        [-0.75, -1.2, -2.5, 3],
      ],
      [
        [1, 1, 50, 1],
        [-0.5, -0.5, -0.5, -50],
      ],
    );
    for (const name of NEW) {
      const a = run(name, wild);
      for (const i of [2, 7]) {
        expect(isZero(a.grad[i]), `${name}: grad ${i}`).toBe(true);
        expect(isZero(a.out.loss[i]), `${name}: loss ${i}`).toBe(true);
        expect(isZero(a.out.gradAdv[i]), `${name}: gradAdv ${i}`).toBe(true);
      }
      // Their values do not leak into the others (covariance means, sequence ratios, Ā).
      close(`${name} unaffected`, [a.loss], [run(name, batch()).loss], 1e-12);
    }
  });
});

describe("§13 choices", () => {
  it("GSPO uses the sequence advantage Ā; GSPO-token keeps each token's A (they agree for constant A)", () => {
    const A = [[1, -1, 0.5]];
    const x = batch([[-1, -1, -1]], [[-1.02, -0.99, -1.01]], A, [[1, 1, 1]]);
    const s = Math.exp((0.02 - 0.01 + 0.01) / 3);
    const aBar = 0.5 / 3;
    close("gspo", run("gspo", x).grad, [(-aBar * s) / 3, (-aBar * s) / 3, (-aBar * s) / 3], 1e-12);
    close("gspo-token", run("gspo-token", x).grad, [-s / 3, s / 3, (-0.5 * s) / 3], 1e-12);
    close("gspo loss", [run("gspo", x).loss], [-aBar * s], 1e-12);
    close("gspo-token loss", [run("gspo-token", x).loss], [(-s * (1 - 1 + 0.5)) / 3], 1e-12);
  });

  it("GMPO: a row's ratio is the geometric mean of its sign-aware clipped token ratios", () => {
    // A > 0: δ = [0.5, −0.5] → δ* = [0.28 (clipped), −0.5 (kept: the lower side is not clipped for A > 0)].
    const x = batch([[0.5, -0.5]], [[0, 0]], [[2, 2]], [[1, 1]]);
    const rho = Math.exp((0.28 - 0.5) / 2);
    const { out, loss, grad } = run("gmpo", x);
    close("loss", [loss], [-2 * rho], 1e-12);
    close("grad", grad, [0, (-2 * rho) / 2], 1e-12);
    // verl's metric counts every token with δ outside the range by the sign of A, also token 1,
    // whose unclipped δ the sign-aware min keeps.
    expect(out.metrics["actor/pg_clipfrac"]).toBe(1);
    expect(out.metrics["actor/pg_clipfrac_lower"]).toBe(0);
  });

  it("Clip-Cov picks the largest covariances first, ties by position, and replays", () => {
    // One row, ratio 1 everywhere (nothing PPO-clipped); mean(A) = 0 and lp − mean(lp) = dev, so
    // the covariances are A·dev = [2, 3, 3, 0.5, 4, 6, 0.2, −1.7].
    const A = [1, 1, 1, 1, -1, -1, -1, -1];
    const dev = [2, 3, 3, 0.5, -4, -6, -0.2, 1.7];
    const lp = dev.map((d) => d - 3);
    const x = batch([lp], [lp], [A], [A.map(() => 1)]);
    const opts = { ...OPTS, clipCov: { ratio: 0.25, lb: 1, ub: 5 } }; // n = floor(0.25·8) = 2
    const a = POLICY_LOSS["clip-cov"](x, opts);
    // Candidates in (1, 5): positions 0 (2), 1 (3), 2 (3), 4 (4); the top two are 4 and then the
    // tie at 3, broken by position: 1.
    expect(Array.from(a.selected!)).toEqual([0, 1, 0, 0, 1, 0, 0, 0]);
    expect(Array.from(POLICY_LOSS["clip-cov"](x, opts).selected!)).toEqual(Array.from(a.selected!));
    for (const i of [1, 4]) expect(isZero(a.grad[i])).toBe(true);
    expect(a.grad[0]).not.toBe(0);
    expect(a.metrics["actor/pg_clipfrac"]).toBeCloseTo(2 / 8, 12);
  });

  it("Clip-Cov never removes a token that PPO already clipped", () => {
    // Token 0 has the largest covariance but ratio e^0.5 > 1.28 with A > 0: PPO clipped it.
    const x = batch([[0.5, -1.6, 0, 0]], [[0, -1.7, 0, 0]], [[1, 1, -1, -1]], [[1, 1, 1, 1]]);
    const out = POLICY_LOSS["clip-cov"](x, { ...OPTS, clipCov: { ratio: 0.25, lb: 0.1, ub: 5 } });
    expect(out.clipped[0]).toBe(1);
    expect(out.selected![0]).toBe(0);
  });

  it("options are validated", () => {
    expect(() => POLICY_LOSS.sapo(batch(), { ...OPTS, sapo: { tauPos: 0, tauNeg: 1 } })).toThrow(/tau/);
    expect(() => POLICY_LOSS["clip-cov"](batch(), { ...OPTS, clipCov: { ratio: 0, lb: 1, ub: 5 } })).toThrow(
      /ratio/,
    );
    expect(() => POLICY_LOSS["kl-cov"](batch(), { ...OPTS, klCov: { ratio: 0, coef: 1 } })).toThrow(/ratio/);
  });
});
