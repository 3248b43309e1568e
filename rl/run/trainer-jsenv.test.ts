// The trainer on a JavaScript environment (task "env", the kv-lookup template): evaluation's
// val/acc is the final check's success rate on the eval seeds (a scripted policy that calls
// the tool and answers with its output scores 1, one that answers without looking scores 0),
// the tool's output is masked from the loss like any inserted token, the episode's return is
// the `env` reward term, weighted like the others when rewards.terms lists it, and SFT on the
// template's scripted demonstrations trains.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import type { PolicyModel } from "../../model/api";
import { CpuModel } from "../../model/cpu";
import { decode } from "../../model/tokenizer";
import { InProcessSandbox } from "../../sandbox/run-code";
import { prepareEnvEngine } from "../../tasks/env-api/engine";
import type { JsEnvTask } from "../../tasks/env-api/js-env";
import { ScriptedPolicy } from "../../testing/scripted-policy";
import { envRollout } from "../rollout/env-episodes";
import { modelConfigOf, runTaskOf } from "./run-parts";
import { Trainer } from "./trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
  await prepareEnvEngine();
}, 240_000);

function kvConfig(over: object = {}): RunConfig {
  return mergeConfig(
    mergeConfig(defaultRunConfig(), {
      seed: 5,
      model: { layers: 1, d_model: 16, heads: 2, context: 256 },
      task: {
        name: "env",
        template: "chatml-turns",
        options: { api_version: 1, template: "kv-lookup" },
        eval_size: 4,
      },
      sft: { steps: 6, batch: 2, lr: 1e-2, warmup_steps: 1 },
      rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1 },
      sampling: { max_new_tokens: 60 },
      stop: { max_steps: 1 },
    }),
    over,
  );
}

const scripted = (scripts: string[][]) => {
  const p = new ScriptedPolicy(scripts, 256);
  return {
    config: { context: 256, valueHead: false },
    startGeneration: (s) => p.startGeneration(s),
  } as Pick<PolicyModel, "startGeneration"> as PolicyModel;
};

/** The scripted policy's turns on each eval seed, as the model would write them. */
function solverScripts(c: RunConfig): string[][] {
  const task = runTaskOf(c) as JsEnvTask;
  return task.evalSeeds(c.task.eval_size).map((seed) => {
    const env = task.make();
    env.reset(seed);
    const turns: string[] = [];
    for (;;) {
      const t = env.policyTurn();
      turns.push(`${t}<|im_end|>`);
      if (env.step(t).done) return turns;
    }
  });
}

describe("Trainer on a JS environment", () => {
  it("val/acc is the check's success rate on the eval seeds", async () => {
    const c = kvConfig();
    const solved = await new Trainer(c, {
      policy: scripted(solverScripts(c)),
      task: runTaskOf(c),
      sandbox,
    }).evaluate();
    expect(solved["val/acc"]).toBe(1);
    const guess = await new Trainer(c, {
      policy: scripted([["<answer>42</answer><|im_end|>"]]),
      task: runTaskOf(c),
      sandbox,
    }).evaluate();
    expect(guess["val/acc"]).toBe(0);
  });

  it("the tool's output is masked from the loss: environment tokens, as tool responses are", async () => {
    const c = kvConfig();
    const task = runTaskOf(c) as JsEnvTask;
    const call = '<tool_call>{"name":"lookup","arguments":{"key":"a"}}</tool_call>';
    const policy = new ScriptedPolicy([[`${call}<|im_end|>`, "<answer>1</answer><|im_end|>"]], 256);
    const [ep] = await envRollout(policy, task, [11], {
      sampling: { temperature: 1, seed: 1 },
      maxNewTokensPerTurn: 60,
    });
    const env = task.make();
    env.reset(11);
    const value = (env.state() as { table: Record<string, number> }).table.a;
    const part = (m: number) => decode(ep.traj.tokens.filter((_, k) => ep.traj.mask[k] === m));
    expect(part(0)).toContain(`<tool_response>${value}</tool_response>`);
    expect(part(1)).toBe(`${call}<|im_end|><answer>1</answer><|im_end|>`);
    expect(ep.steps).toHaveLength(2);
  });

  it("an RL step weights the env term like the others", async () => {
    const c = kvConfig({
      rewards: {
        terms: [
          { name: "env", weight: 0.5, options: {} },
          { name: "format", weight: 0.25, options: {} },
        ],
      },
    });
    const tr = new Trainer(c, {
      policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
      task: runTaskOf(c),
      sandbox,
      clock: () => 0,
    });
    const out = await tr.rlStep();
    expect(out.samples).toHaveLength(4);
    for (const s of out.samples) {
      expect(Object.keys(s.rewardTerms).sort()).toEqual(["env", "format"]);
      expect(s.reward).toBeCloseTo(0.5 * s.rewardTerms.env + 0.25 * s.rewardTerms.format, 12);
    }
  });

  it("SFT on the template's scripted demonstrations runs and lowers the loss", async () => {
    const c = kvConfig();
    const tr = new Trainer(c, {
      policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
      task: runTaskOf(c),
      sandbox,
    });
    const losses: number[] = [];
    for (let i = 0; i < 6; i++) losses.push(Number((await tr.sftStep()).row.loss));
    for (const l of losses) expect(Number.isFinite(l)).toBe(true);
    expect(losses[5]).toBeLessThan(losses[0]);
  });
});
