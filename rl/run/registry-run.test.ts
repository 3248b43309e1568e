// CI over the registries: every entry a RunConfig can select (advantage estimators, policy
// losses, KL estimators in the loss and in the reward, aggregation modes, filters with both
// refill modes, shaping, reward terms incl. custom-js, the aux loss, the turn-discount return)
// and every recipe of config/presets.ts runs two RL steps on the tiny CPU model with the real
// sandbox, on a task that suits it (arithmetic; frozenlake for the multi-turn estimators;
// function-calling for ToolRL and Tool-N1). Each row must be finite and carry the keys that
// its choice logs. A registry entry without a case here fails the coverage test.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, RECIPES, type RunConfig, recipeConfig } from "../../config";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { REGISTRIES } from "../algos/registry";
import { RunLoop } from "./run-loop";
import { modelConfigOf, runTaskOf } from "./run-parts";
import { type MetricsRow, Trainer } from "./trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

const TINY = {
  seed: 11,
  model: { layers: 1, d_model: 16, heads: 2, context: 160 },
  sft: { steps: 0, batch: 2, warmup_steps: 0 },
  sampling: { max_new_tokens: 12 },
  stop: { max_steps: 2 },
  filters: { max_gen_rounds: 2 },
  task: { eval_size: 2 },
};
const TINY_RL = { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1 };
const FROZENLAKE = {
  model: { context: 300 },
  task: { name: "frozenlake", template: "chatml-turns", options: { maxSteps: 2 }, eval_size: 2 },
};
// Its system prompt lists every tool (~1300 tokens): one prompt, short answers, and (for time)
// two bare RL steps instead of the whole loop.
const FUNCTION_CALLING = {
  model: { d_model: 8, heads: 1, context: 1330 },
  rl: { prompts_per_step: 1 },
  sft: { steps: 0 },
  sampling: { max_new_tokens: 6 },
  task: { eval_size: 1 },
};
// A reward with spread inside a group (response length), so filters and baselines have work.
const SPREAD_REWARD = { rewards: { custom_js: "(x) => x.responseLength / 12", custom_js_weight: 1 } };

interface Case {
  name: string;
  config: RunConfig;
  /** Run through RunLoop (SFT, value pretraining, eval) rather than two bare RL steps. */
  loop?: boolean;
  /** Keys every row must have, besides the rollout keys. */
  keys: string[];
}

function tiny(...overrides: object[]): RunConfig {
  let c = mergeConfig(defaultRunConfig(), { ...TINY, rl: TINY_RL });
  for (const o of overrides) c = mergeConfig(c, o);
  return c;
}

const UPDATE_KEYS = [
  "actor/pg_loss",
  "actor/entropy",
  "actor/grad_norm",
  "actor/ppo_kl",
  // the sampler-trainer mismatch, on every RL update (rl/update/sampler-mismatch.ts)
  "rollout/logprob_diff_mean",
  "rollout/logprob_diff_max",
  "rollout/is_ratio_mean",
];

function entryCases(): Case[] {
  const cases: Case[] = [];
  const add = (name: string, config: RunConfig, keys: string[] = []) => cases.push({ name, config, keys });
  for (const name of Object.keys(REGISTRIES.advantage)) {
    const multiTurn = name === "gigpo";
    const keys = name === "gae" ? ["critic/vf_loss"] : [];
    add(
      `advantage: ${name}`,
      tiny(SPREAD_REWARD, { rl: { advantage: name } }, multiTurn ? FROZENLAKE : {}),
      multiTurn ? [...keys, "env/success_rate", "env/steps_mean"] : keys,
    );
  }
  add(
    "advantage: reinforce-history (EMA)",
    tiny(SPREAD_REWARD, { rl: { advantage: "reinforce-history", history_ema: 0.9 } }),
  );
  for (const name of Object.keys(REGISTRIES["policy-loss"]))
    add(`policy-loss: ${name}`, tiny(SPREAD_REWARD, { rl: { policy_loss: name } }));
  // The rollout correction and the token selection (config fields, not registries).
  const truncated = { sampling: { temperature: 0.8, top_k: 20, top_p: 0.9 } };
  for (const level of ["token", "sequence"])
    add(
      `rollout_correction: is ${level}, rs ${level} (top-k/top-p sampling)`,
      tiny(SPREAD_REWARD, truncated, {
        rl: { rollout_correction: { rollout_is: level, rollout_rs: level, rollout_rs_threshold: 1.5 } },
      }),
      ["rollout/is_truncated_frac", "rollout/rs_masked_frac"],
    );
  add(
    "rollout_correction: rs geometric",
    tiny(SPREAD_REWARD, { rl: { rollout_correction: { rollout_rs: "geometric" } } }),
    ["rollout/rs_masked_frac"],
  );
  add("top_entropy_quantile 0.2", tiny(SPREAD_REWARD, { rl: { top_entropy_quantile: 0.2 } }), [
    "actor/entropy_selected_frac",
  ]);
  for (const name of Object.keys(REGISTRIES.kl)) {
    add(
      `kl: ${name} in loss`,
      tiny(SPREAD_REWARD, { rl: { kl: { estimator: name, coef: 0.01, in: "loss" } } }),
      ["actor/kl_ref"],
    );
    add(
      `kl: ${name} in reward`,
      tiny(SPREAD_REWARD, {
        rl: { advantage: "reinforce-pp", kl: { estimator: name, coef: 0.01, in: "reward" } },
      }),
      ["actor/kl_ref"],
    );
  }
  for (const name of Object.keys(REGISTRIES.agg))
    add(`agg: ${name}`, tiny(SPREAD_REWARD, { rl: { loss_agg: name } }));
  for (const name of Object.keys(REGISTRIES.filter)) {
    const options =
      name === "starpo-variance" ? { p: 0.5 } : name === "dapo-dynamic-sampling" ? { metric: "reward" } : {};
    for (const refill of ["resample", "duplicate"])
      add(
        `filter: ${name} (${refill})`,
        tiny(SPREAD_REWARD, { filters: { list: [{ name, options }], refill } }),
      );
  }
  for (const name of Object.keys(REGISTRIES.shaping))
    add(`shaping: ${name}`, tiny(SPREAD_REWARD, { shaping: { kind: name, restrict_to_post_tool: false } }));
  for (const name of Object.keys(REGISTRIES.reward)) {
    // env is an episode's return: it runs on an environment.
    const custom =
      name === "custom-js"
        ? { rewards: { custom_js: "(x) => x.text.length % 3" } }
        : name === "env"
          ? FROZENLAKE
          : {};
    add(`reward: ${name}`, tiny(custom, { rewards: { terms: [{ name, weight: 1, options: {} }] } }), [
      `reward/${name}/mean`,
    ]);
  }
  for (const name of Object.keys(REGISTRIES["aux-loss"])) {
    if (name !== "positive-lm") throw new Error(`aux-loss: no config field selects "${name}"`);
    add(
      `aux-loss: ${name}`,
      tiny(
        { rewards: { custom_js: "(x) => x.responseLength > 8 ? 1 : 0" } },
        { rl: { positive_lm_coef: 0.1 } },
      ),
      ["actor/positive_lm_loss"],
    );
  }
  for (const name of Object.keys(REGISTRIES.return)) {
    if (name !== "turn-discount") throw new Error(`return: no config field selects "${name}"`);
    add(`return: ${name}`, tiny(FROZENLAKE, { rl: { advantage: "reinforce-pp", turn_gamma: 0.4 } }), [
      "env/success_rate",
    ]);
  }
  return cases;
}

/** Which task a recipe runs on here: multi-turn recipes on FrozenLake; the rest as they say. */
function recipeCase(name: string): Case {
  const base = recipeConfig(name);
  const multiTurn =
    base.rl.advantage === "gigpo" || base.filters.list.some((f) => f.name === "starpo-variance");
  const overrides: object[] = [{ ...TINY, rl: TINY_RL, sft: { steps: 1, batch: 2, warmup_steps: 0 } }];
  if (multiTurn) overrides.push(FROZENLAKE);
  // StarPO-S keeps floor(0.25 x groups): four groups keep one.
  if (name === "starpo-s") overrides.push({ rl: { prompts_per_step: 4 } });
  if (base.task.name === "function-calling") overrides.push(FUNCTION_CALLING);
  if (base.rl.value_pretrain.steps > 0) overrides.push({ rl: { value_pretrain: { steps: 1 } } });
  let c = base;
  for (const o of overrides) c = mergeConfig(c, o);
  const keys: string[] = [];
  if (c.rl.advantage === "gae") keys.push("critic/vf_loss");
  if (multiTurn) keys.push("env/success_rate");
  // Function calling logs ToolRL's two parts and the valid first calls, whatever the reward.
  if (base.task.name === "function-calling")
    keys.push("toolrl/format_mean", "toolrl/call_mean", "tool/valid_call_rate");
  return { name: `recipe: ${name}`, config: c, keys, loop: base.task.name !== "function-calling" };
}

const ROLLOUT_KEYS = [
  "reward/mean",
  "acc/mean",
  "response_length/mean",
  "filter/kept_frac",
  "groups/zero_std_frac",
  "groups/zero_std_frac_all_correct",
  "groups/zero_std_frac_all_wrong",
  "actor/lr",
  "timing/rollout_s",
  "timing/train_s",
];

function checkRow(row: MetricsRow, c: Case): void {
  for (const [k, v] of Object.entries(row))
    if (typeof v === "number") expect(Number.isFinite(v), `${c.name}: ${k} = ${v}`).toBe(true);
  if (row.phase !== "rl" || !("reward/mean" in row)) return;
  for (const k of ROLLOUT_KEYS) expect(row, `${c.name}: ${k}`).toHaveProperty([k]);
  // A step whose filters kept nothing trains on nothing (and says so with kept_frac 0).
  if (Number(row["filter/kept_frac"]) > 0)
    for (const k of [...UPDATE_KEYS, ...c.keys]) expect(row, `${c.name}: ${k}`).toHaveProperty([k]);
}

function makeTrainer(c: RunConfig): Trainer {
  return new Trainer(c, {
    policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
    task: runTaskOf(c),
    sandbox,
    clock: () => 0,
  });
}

describe("every registry entry runs two RL steps on the tiny model", () => {
  it("has a case for every entry of every registry", () => {
    const names = new Set(entryCases().map((c) => c.name.split(/[ (]/).slice(0, 2).join(" ")));
    for (const [registry, table] of Object.entries(REGISTRIES))
      for (const name of Object.keys(table))
        expect(names, `${registry}: ${name}`).toContain(`${registry}: ${name}`);
  });

  it("sample records carry each token's rollout ratio and the tokens a selection rule picked", async () => {
    const tr = makeTrainer(tiny(SPREAD_REWARD, { rl: { top_entropy_quantile: 0.5 } }));
    const { samples } = await tr.rlStep();
    expect(samples.length).toBeGreaterThan(0);
    let picked = 0;
    for (const s of samples) {
      expect(s.ratio).toHaveLength(s.tokens.length);
      expect(s.selected).toHaveLength(s.tokens.length);
      s.ratio!.forEach((r, i) => {
        // the CPU decode path and the training forward agree: ratio 1 to float precision
        expect(Math.abs(r - 1), `ratio ${i}`).toBeLessThan(1e-4);
        if (s.selected![i]) expect(s.mask[i]).toBe(1);
      });
      picked += s.selected!.filter((x) => x === 1).length;
    }
    expect(picked).toBeGreaterThan(0);
  });

  for (const c of entryCases()) {
    it(c.name, async () => {
      const tr = makeTrainer(c.config);
      const rows = [(await tr.rlStep()).row, (await tr.rlStep()).row];
      expect(rows.map((r) => r.step)).toEqual([0, 1]);
      for (const row of rows) checkRow(row, c);
    });
  }
});

describe("every recipe runs headless (SFT step, value pretraining where set, two RL steps, eval)", () => {
  for (const name of Object.keys(RECIPES)) {
    const c = recipeCase(name);
    it(c.name, async () => {
      if (!c.loop) {
        const tr = makeTrainer(c.config);
        for (let i = 0; i < 2; i++) checkRow((await tr.rlStep()).row, c);
        return;
      }
      const rows: MetricsRow[] = [];
      const errors: string[] = [];
      await new RunLoop(makeTrainer(c.config), {
        row: (r) => rows.push(r),
        event: (e) => {
          if (e.kind === "error") errors.push(e.message);
        },
      }).run();
      expect(errors).toEqual([]);
      expect(rows.filter((r) => r.phase === "sft")).toHaveLength(1);
      const rl = rows.filter((r) => r.phase === "rl" && "reward/mean" in r);
      expect(rl).toHaveLength(2);
      if (c.config.rl.value_pretrain.steps > 0)
        expect(rows.filter((r) => r.phase === "value_pretrain")).toHaveLength(1);
      expect(rows[rows.length - 1]).toHaveProperty(["val/acc"]);
      for (const row of rows) checkRow(row, c);
    });
  }
});
