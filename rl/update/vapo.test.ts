// VAPO (ALGORITHMS §12) in the trainer: λ_critic = 1 makes the value target the Monte-Carlo
// return; value pretraining on the tiny CPU model logs critic/vf_loss and
// critic/vf_explained_var in rows of phase "value_pretrain", trains only the value head, and
// stops by its rule; the positive-example LM loss adds −μ/N on correct trajectories' tokens.
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type RunConfig, recipeConfig } from "../../config";
import { mergeConfig } from "../../config/edit";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { ADVANTAGE, withAdvantageDefaults } from "../algos/advantage";
import { RunLoop } from "../run/run-loop";
import { modelConfigOf, runTaskOf } from "../run/run-parts";
import { type MetricsRow, minibatchLoss, Trainer } from "../run/trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

describe("decoupled GAE", () => {
  it("λ_critic = 1: the value target is the Monte-Carlo return, whatever the values and λ_policy", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            r: fc.double({ min: -2, max: 2, noNaN: true }),
            v: fc.double({ min: -3, max: 3, noNaN: true }),
            m: fc.constantFrom(0, 1, 1),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.double({ min: 0.5, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (cells, gamma, lambdaPolicy) => {
          const mask = cells.map((c) => c.m);
          // Rewards only on policy tokens (env tokens carry none; §1 makes them transparent).
          const tokenRewards = cells.map((c) => (c.m ? c.r : 0));
          const t = { groupId: "g", reward: 0, mask, values: cells.map((c) => c.v), tokenRewards };
          const out = ADVANTAGE.gae(
            [t],
            withAdvantageDefaults({ gamma, lambda: lambdaPolicy, lambdaCritic: 1, whiten: false }),
          );
          // Monte-Carlo return over policy tokens: Σ_{k ≥ t, policy} γ^(#policy steps) r_k.
          const T = mask.length;
          let run = 0;
          const mc = new Array<number>(T);
          for (let i = T - 1; i >= 0; i--) {
            if (mask[i]) run = tokenRewards[i] + gamma * run;
            mc[i] = run;
          }
          for (let i = 0; i < T; i++) if (mask[i]) expect(out.returns![0][i]).toBeCloseTo(mc[i], 9);
        },
      ),
      { numRuns: 200 },
    );
  });
});

function vapoTiny(over: object = {}): RunConfig {
  return mergeConfig(
    mergeConfig(recipeConfig("vapo"), {
      seed: 5,
      model: { layers: 1, d_model: 16, heads: 2, context: 96 },
      sft: { steps: 0 },
      rl: {
        prompts_per_step: 2,
        group_size: 2,
        epochs: 1,
        minibatches: 1,
        lr: 1e-2,
        value_pretrain: { steps: 3, stop_explained_var: null },
      },
      // Returns with spread, so the explained variance is defined.
      rewards: { custom_js: "(x) => x.text.charCodeAt(0) % 3" },
      sampling: { max_new_tokens: 16 },
      task: { eval_size: 2 },
      stop: { max_steps: 1 },
    }),
    over,
  );
}

function makeTrainer(c: RunConfig) {
  return new Trainer(c, {
    policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
    task: runTaskOf(c),
    sandbox,
    clock: () => 0,
  });
}

describe("VAPO value pretraining", () => {
  it("a headless tiny vapo run logs explained variance in value_pretrain rows, then RL rows", async () => {
    const c = vapoTiny();
    const rows: MetricsRow[] = [];
    const events: string[] = [];
    await new RunLoop(makeTrainer(c), {
      row: (r) => rows.push(r),
      event: (e) => events.push(`${e.kind}:${e.message}`),
    }).run();
    const vp = rows.filter((r) => r.phase === "value_pretrain");
    expect(vp.map((r) => r.step)).toEqual([0, 1, 2]);
    for (const r of vp) {
      expect(typeof r["critic/vf_loss"]).toBe("number");
      expect(typeof r["critic/vf_explained_var"]).toBe("number");
      expect(Number.isFinite(r["critic/vf_explained_var"] as number)).toBe(true);
      expect(r).not.toHaveProperty(["actor/pg_loss"]);
    }
    // The value head starts at 0: explained variance 1 − Var(R)/Var(R) = 0 at step 0.
    expect(vp[0]["critic/vf_explained_var"]).toBeCloseTo(0, 9);
    expect(events).toContain("info:value pretraining done after 3 steps");
    // The RL rows come after (the RL step, then the final evaluation row).
    const firstRl = rows.findIndex((r) => r.phase === "rl");
    expect(firstRl).toBeGreaterThan(rows.lastIndexOf(vp[2]));
    const rl = rows.filter((r) => r.phase === "rl" && "reward/mean" in r);
    expect(rl).toHaveLength(1);
    expect(rl[0]).toHaveProperty(["critic/vf_loss"]);
    expect(rl[0]).toHaveProperty(["actor/positive_lm_loss"]);
  });

  it("trains only the value head: the policy's weights stay as they were", async () => {
    const tr = makeTrainer(vapoTiny());
    const layout = tr.policy.layout;
    const before = await tr.policy.getWeights();
    await tr.valuePretrainStep();
    await tr.valuePretrainStep();
    const after = await tr.policy.getWeights();
    let headChanged = false;
    for (const t of layout.tensors) {
      const a = before.subarray(t.offset, t.offset + t.size);
      const b = after.subarray(t.offset, t.offset + t.size);
      if (t.name.startsWith("value_head")) headChanged ||= a.some((x, i) => x !== b[i]);
      else expect([...b], t.name).toEqual([...a]);
    }
    expect(headChanged).toBe(true);
  });

  it("stops early once the explained variance reaches stop_explained_var", async () => {
    // EV of the zero-initialised head is 0 >= -0.5 after the first step.
    const tr = makeTrainer(vapoTiny({ rl: { value_pretrain: { steps: 10, stop_explained_var: -0.5 } } }));
    expect(tr.needsValuePretrain).toBe(true);
    await tr.valuePretrainStep();
    expect(tr.valuePretrainFinished).toBe(true);
    expect(tr.needsValuePretrain).toBe(false);
  });

  it("is skipped without a value head", () => {
    const tr = makeTrainer(vapoTiny({ rl: { advantage: "grpo" } }));
    expect(tr.needsValuePretrain).toBe(false);
  });
});

describe("positive-example LM loss in the minibatch loss", () => {
  it("adds −μ/N to dlogp on the tokens of correct trajectories only", () => {
    const c = mergeConfig(recipeConfig("vapo"), { rl: { positive_lm_coef: 0.1 } });
    const base = {
      logprob: [
        [-1, -2],
        [-1, -1, -1],
      ],
      entropy: [
        [1, 1],
        [1, 1, 1],
      ],
      mask: [
        [1, 1],
        [1, 0, 1],
      ],
      oldLogprob: [
        [-1, -2],
        [-1, -1, -1],
      ],
      advantages: [
        [0, 0],
        [0, 0, 0],
      ],
      postTool: [
        [0, 0],
        [0, 0, 0],
      ],
    };
    const off = minibatchLoss(c, base);
    const on = minibatchLoss(c, { ...base, correct: [true, false] });
    // N = 2 policy tokens of the one correct trajectory; loss = −(−1 −2)/2 = 1.5.
    expect(on.metrics["actor/positive_lm_loss"]).toBeCloseTo(1.5, 12);
    expect(on.loss - off.loss).toBeCloseTo(0.15, 12);
    expect(on.dlogp[0][0] - off.dlogp[0][0]).toBeCloseTo(-0.05, 12);
    expect(on.dlogp[0][1] - off.dlogp[0][1]).toBeCloseTo(-0.05, 12);
    for (let j = 0; j < 3; j++) expect(on.dlogp[1][j] - off.dlogp[1][j]).toBeCloseTo(0, 15);
  });
});
