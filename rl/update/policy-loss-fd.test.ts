// Every policy loss through the whole minibatch loss (rl/update/minibatch-loss.ts minibatchLoss: the policy term
// with its own or rl.loss_agg's weights, KL to the reference in the loss, the entropy bonus and
// VAPO's positive-example LM loss): the gradient it applies to each token's log-prob matches
// central finite differences of the loss it logs, in float64, and tokens with mask 0 get
// exactly zero gradient. Also the regression tests of the three fixes of issue 25 (VAPO's
// logged value, reinforce-pp-baseline's singleton groups, the clamped actor/ppo_kl).
// `npx vitest run --project unit rl/update/policy-loss-fd.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, POLICY_LOSS_NAMES, type RunConfig } from "../../config";
import { ADVANTAGE, withAdvantageDefaults } from "../algos/advantage";
import { POLICY_LOSS, positiveLm } from "../algos/losses";
import { actorMetrics, topEntropyMask } from "../algos/masks";
import { flatten, unflatten } from "../algos/types";
import { type MinibatchInput, minibatchLoss } from "./minibatch-loss";

function config(policyLoss: string, over: object = {}): RunConfig {
  return mergeConfig(
    defaultRunConfig(),
    mergeConfig(
      {
        rl: {
          policy_loss: policyLoss,
          loss_agg: "seq-mean-token-mean",
          kl: { estimator: "k3", coef: 0.05, in: "loss" },
          entropy_coef: 0.01,
          positive_lm_coef: 0.1,
          clip_eps_low: 0.2,
          clip_eps_high: 0.28,
          // Bands and fractions that select a token or two on this small batch, away from the edges.
          clip_cov: { ratio: 0.2, lb: 0.05, ub: 5 },
          kl_cov: { ratio: 0.2, coef: 0.7 },
        },
      },
      over,
    ),
  );
}

// Three rows (lengths 5, 1, 4, one all-masked row of 3): a tool token and padding with mask 0,
// a fractional mask (a trajectory scaled by a filter), row-constant advantages (outcome
// estimators), log-ratios inside and outside the clip but away from its edges.
const X: MinibatchInput = {
  logprob: [[-0.9, -1.7, -0.4, -2.2, -1.1], [-0.6], [-1.3, -0.2, -2.6, -0.8], [-1, -1, -1]],
  oldLogprob: [[-1.05, -1.52, -0.1, -2.0, -1.46], [-0.71], [-1.0, -0.31, -2.45, -0.66], [-2, -2, -2]],
  advantages: [[0.9, 0.9, 0.9, 0.9, 0.9], [-1.3], [0.4, 0.4, 0.4, 0.4], [5, 5, 5]],
  mask: [[1, 1, 0, 1, 1], [1], [0.5, 0.5, 0.5, 0], [0, 0, 0]],
  entropy: [[1.2, 0.8, 3, 0.5, 0.9], [1.1], [0.4, 0.7, 0.3, 2], [1, 1, 1]],
  postTool: [[0, 0, 0, 1, 1], [0], [0, 0, 0, 0], [0, 0, 0]],
  refLogprob: [[-1.0, -1.6, -0.3, -2.1, -1.2], [-0.5], [-1.2, -0.25, -2.5, -0.7], [-1, -1, -1]],
  correct: [true, false, true, false],
};

const shift = (rows: ArrayLike<number>[], b: number, t: number, h: number) =>
  rows.map((r, i) => Float64Array.from(r, (v, j) => (i === b && j === t ? v + h : v)));

// The same check with the rollout correction's IS weights (constants of the update, rl/update/sampler-mismatch.ts)
// and the top-entropy selection (half the valid tokens keep their policy term).
const VARIANTS: { label: string; over: object; x: MinibatchInput }[] = [
  { label: "", over: {}, x: X },
  {
    label: " with IS weights and top_entropy_quantile 0.5",
    over: { top_entropy_quantile: 0.5 },
    x: { ...X, isWeights: [[0.8, 1.3, 1, 2, 0.5], [1.1], [0.9, 1.7, 0.6, 1], [1, 1, 1]] },
  },
];

/**
 * GSPO-token's policy-term gradient written out (verl `gspo`): log s_it = sg[log s_i] + lp_t −
 * sg[lp_t], so d/dlp_t of −A_t·s_it·is_t·sel_t·w_t is −A_t·s_i·is_t·sel_t·w_t, w the
 * seq-mean-token-mean weight m_t/(Σ_row m·|B'|). Written for unclipped rows (asserted).
 */
function gspoTokenGrad(c: RunConfig, x: MinibatchInput): number[][] {
  const sel = unflatten(
    topEntropyMask(flatten(x.entropy), flatten(x.mask), c.rl.top_entropy_quantile),
    x.mask.map((m) => m.length),
  );
  const rowsWithTokens = x.mask.filter((m) => Array.from(m).some((v) => v > 0)).length;
  return x.mask.map((m, b) => {
    let len = 0;
    let sumD = 0;
    for (let t = 0; t < m.length; t++) {
      len += m[t];
      sumD += m[t] * (x.logprob[b][t] - x.oldLogprob[b][t]);
    }
    const s = len > 0 ? Math.exp(sumD / len) : 1;
    if (len > 0 && (s < 1 - c.rl.clip_eps_low || s > 1 + c.rl.clip_eps_high)) throw new Error("row clipped");
    return Array.from(m, (mt, t) =>
      mt === 0
        ? 0
        : (-x.advantages[b][t] * s * (x.isWeights?.[b][t] ?? 1) * sel[b][t] * mt) / (len * rowsWithTokens),
    );
  });
}

describe("finite differences through minibatchLoss", () => {
  for (const name of POLICY_LOSS_NAMES)
    for (const { label, over, x: X } of VARIANTS) {
      it(`${name}${label}: dL/dlp matches central differences; mask-0 tokens get exactly 0`, () => {
        const c = config(name, { rl: over });
        const out = minibatchLoss(c, X);
        expect(Number.isFinite(out.loss)).toBe(true);
        const h = 1e-6;
        const bad: string[] = [];
        X.mask.forEach((m, b) => {
          for (let t = 0; t < m.length; t++) {
            const g = out.dlogp[b][t];
            if (m[t] === 0) {
              if (g !== 0) bad.push(`(${b},${t}) mask 0 has gradient ${g}`);
              continue;
            }
            // CISPO's weight is a stop-gradient of the ratio: its applied gradient is that of the
            // loss with the weight frozen, so move lp_old with lp (the weight stays put; nothing
            // else in the loss reads lp_old).
            const moveOld = name === "cispo";
            // GSPO-token with per-token IS weights: its stop-gradients make the gradient differ
            // from the value's derivative by design (verl's form), so its policy term is checked
            // against the analytic gradient and only the other terms by differences.
            const analytic = name === "gspo-token" && X.isWeights !== undefined;
            const at = (e: number) => {
              const o = minibatchLoss(c, {
                ...X,
                logprob: shift(X.logprob, b, t, e),
                oldLogprob: moveOld ? shift(X.oldLogprob, b, t, e) : X.oldLogprob,
              });
              return analytic ? o.loss - o.metrics["actor/pg_loss"] : o.loss;
            };
            const fd = (at(h) - at(-h)) / (2 * h) + (analytic ? gspoTokenGrad(c, X)[b][t] : 0);
            if (!(Math.abs(fd - g) <= 1e-7 + 1e-5 * Math.abs(fd))) bad.push(`(${b},${t}) fd ${fd} vs ${g}`);
          }
        });
        expect(bad).toEqual([]);
      });
    }

  it("the batch exercises each loss's special branch", () => {
    const flat = (rows: ArrayLike<number>[]) => rows.flatMap((r) => Array.from(r));
    const input = {
      logprob: flat(X.logprob),
      oldLogprob: flat(X.oldLogprob),
      advantages: flat(X.advantages),
      mask: flat(X.mask),
      lengths: X.mask.map((m) => m.length),
    };
    const opts = {
      epsLow: 0.2,
      epsHigh: 0.28,
      dualClipC: null,
      clipCov: { ratio: 0.2, lb: 0.05, ub: 5 },
      klCov: { ratio: 0.2, coef: 0.7 },
    };
    // PPO clips some token (so a zero-gradient branch is crossed), Clip-Cov and KL-Cov select one.
    expect(POLICY_LOSS["ppo-clip"](input, opts).clipped.some((x) => x === 1)).toBe(true);
    expect(POLICY_LOSS["clip-cov"](input, opts).selected!.some((x) => x === 1)).toBe(true);
    expect(POLICY_LOSS["kl-cov"](input, opts).selected!.some((x) => x === 1)).toBe(true);
    expect(POLICY_LOSS.gmpo(input, opts).clipped.some((x) => x === 1)).toBe(true);
    expect(POLICY_LOSS.cispo(input, opts).clipped.some((x) => x === 1)).toBe(true);
  });

  it("GSPO, GMPO and SAPO aggregate by their own rule whatever rl.loss_agg says", () => {
    for (const name of ["gspo", "gspo-token", "gmpo", "sapo"]) {
      const a = minibatchLoss(config(name, { rl: { loss_agg: "token-mean" } }), X);
      const b = minibatchLoss(config(name, { rl: { loss_agg: "seq-mean-token-sum" } }), X);
      expect(a.metrics["actor/pg_loss"]).toBe(b.metrics["actor/pg_loss"]);
    }
    const a = minibatchLoss(config("cispo", { rl: { loss_agg: "token-mean" } }), X);
    const b = minibatchLoss(config("cispo", { rl: { loss_agg: "seq-mean-token-sum" } }), X);
    expect(a.metrics["actor/pg_loss"]).not.toBe(b.metrics["actor/pg_loss"]);
  });
});

describe("issue 25 fixes", () => {
  it("VAPO positive-example LM loss logs the masked value: mask [0.5, 0.5], lp [−1, −2] → 1.5", () => {
    const at = (lp0: number) => positiveLm([{ logprob: [lp0, -2], mask: [0.5, 0.5], correct: true }]);
    const r = at(-1);
    expect(r.loss).toBeCloseTo(1.5, 12);
    expect(Array.from(r.grad[0])).toEqual([-0.5, -0.5]);
    // The logged value is the function whose gradient is applied.
    const h = 1e-6;
    expect((at(-1 + h).loss - at(-1 - h).loss) / (2 * h)).toBeCloseTo(-0.5, 8);
  });

  it("reinforce-pp-baseline honours rl.singleton_group: raw keeps a singleton's reward before whitening", () => {
    // A singleton group (reward 2) and a pair (1, 0), one token each. Before whitening: raw
    // [2, 0.5, −0.5], zero [0, 0.5, −0.5]; then the batch whitening (sample variance).
    const batch = [
      { groupId: "s", reward: 2, mask: [1] },
      { groupId: "g", reward: 1, mask: [1] },
      { groupId: "g", reward: 0, mask: [1] },
    ];
    const fn = ADVANTAGE["reinforce-pp-baseline"];
    const raw = fn(batch, withAdvantageDefaults({ singletonGroup: "raw" }));
    // mean 2/3, sample variance 114/72 → (x − 2/3)/sqrt(114/72 + 1e-8)
    const sd = Math.sqrt(114 / 72 + 1e-8);
    const want = [2, 0.5, -0.5].map((x) => (x - 2 / 3) / sd);
    raw.advantages.forEach((a, i) => {
      expect(a[0]).toBeCloseTo(want[i], 9);
    });
    expect(raw.advantages[0][0]).toBeCloseTo(1.059626, 6);
    const zero = fn(batch, withAdvantageDefaults({ singletonGroup: "zero" }));
    // [0, 0.5, −0.5]: mean 0, sample sd 0.5 → [0, 1, −1].
    [0, 1, -1].forEach((w, i) => {
      expect(zero.advantages[i][0]).toBeCloseTo(w, 6);
    });
    // Only singletons, raw: rewards [1, 3] whiten to ±1/√2.
    const two = fn(
      [
        { groupId: "a", reward: 1, mask: [1] },
        { groupId: "b", reward: 3, mask: [1] },
      ],
      withAdvantageDefaults({ singletonGroup: "raw" }),
    );
    expect(two.advantages[0][0]).toBeCloseTo(-Math.SQRT1_2, 6);
    expect(two.advantages[1][0]).toBeCloseTo(Math.SQRT1_2, 6);
  });

  it("actor/ppo_kl averages the log-ratio clamped at ±20, as the loss uses it (verl)", () => {
    // lp − lp_old = 30 (clamped to 20) and 0.1: ppo_kl = −(20 + 0.1)/2, not −(30 + 0.1)/2.
    const input = { logprob: [0, 0.1], oldLogprob: [-30, 0], advantages: [1, 1], mask: [1, 1], lengths: [2] };
    const opts = { epsLow: 0.2, epsHigh: 0.2, dualClipC: null };
    for (const name of POLICY_LOSS_NAMES.filter((n) => n !== "kl-cov"))
      expect(POLICY_LOSS[name](input, opts).metrics["actor/ppo_kl"], name).toBeCloseTo(-10.05, 12);
    expect(actorMetrics(input)["actor/ppo_kl"]).toBeCloseTo(-10.05, 12);
    const m = minibatchLoss(config("ppo-clip"), {
      logprob: [[0, 0.1]],
      oldLogprob: [[-30, 0]],
      advantages: [[1, 1]],
      mask: [[1, 1]],
      entropy: [[1, 1]],
      postTool: [[0, 0]],
    });
    expect(m.metrics["actor/ppo_kl"]).toBeCloseTo(-10.05, 12);
    // KL-Cov logs its own measure, the mean |δ| (verl's), and minibatchLoss keeps it.
    const k = minibatchLoss(config("kl-cov"), {
      logprob: [[0, 0.1]],
      oldLogprob: [[-30, 0]],
      advantages: [[1, 1]],
      mask: [[1, 1]],
      entropy: [[1, 1]],
      postTool: [[0, 0]],
    });
    expect(k.metrics["actor/ppo_kl"]).toBeCloseTo(15.05, 12);
  });
});

describe("issue 36: verl's numbers for the sequence-ratio losses with rollout IS weights", () => {
  // One row, mask [1, 1], lp = old = −1, A = [1, 2], IS weights [0.5, 1.5], token-mean.
  const one: MinibatchInput = {
    logprob: [[-1, -1]],
    oldLogprob: [[-1, -1]],
    advantages: [[1, 2]],
    mask: [[1, 1]],
    entropy: [[1, 1]],
    postTool: [[0, 0]],
    isWeights: [[0.5, 1.5]],
  };
  const plain = (name: string) =>
    mergeConfig(defaultRunConfig(), {
      rl: {
        policy_loss: name,
        loss_agg: "token-mean",
        kl: { coef: 0 },
        entropy_coef: 0,
        positive_lm_coef: 0,
      },
    });

  it("gspo-token multiplies each token's term by its own weight: −1.75, dL/dlp [−0.25, −1.5]", () => {
    // verl: mean(−A·s·w) = (−1·0.5 − 2·1.5)/2; the gradient flows through each token's own lp.
    const out = minibatchLoss(plain("gspo-token"), one);
    expect(out.loss).toBeCloseTo(-1.75, 12);
    expect(out.dlogp[0][0]).toBeCloseTo(-0.25, 12);
    expect(out.dlogp[0][1]).toBeCloseTo(-1.5, 12);
  });

  it("gmpo weights a row by the geometric mean of its IS weights: −1.5·sqrt(0.75) = −1.29904", () => {
    const out = minibatchLoss(plain("gmpo"), one);
    const g = Math.sqrt(0.75);
    expect(out.loss).toBeCloseTo(-1.5 * g, 5); // verl's log(w + 1e-10): equal to ~1e-10
    expect(out.loss).toBeCloseTo(-1.29904, 5);
    // d/dlp_t of −Ā·exp(mean δ)·g = −Ā·g/2 for each token.
    expect(out.dlogp[0][0]).toBeCloseTo((-1.5 * g) / 2, 8);
    expect(out.dlogp[0][1]).toBeCloseTo((-1.5 * g) / 2, 8);
    // GMPO's value is a function of every lp of the row, so differences check its gradient.
    const h = 1e-6;
    const at = (e: number) => minibatchLoss(plain("gmpo"), { ...one, logprob: [[-1 + e, -1]] }).loss;
    expect((at(h) - at(-h)) / (2 * h)).toBeCloseTo(out.dlogp[0][0], 8);
  });
});
