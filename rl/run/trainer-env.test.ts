// The trainer on a multi-turn environment (FrozenLake, chatml-turns): SFT on the solver's
// episodes lowers the loss; an RL step with GiGPO trains each turn's action tokens with the
// advantage of its anchor-state step group (recomputed here from the logged step rows); and
// evaluation reports the success rate (a scripted policy that plays the solver's moves on the
// eval seeds scores 1, one that writes nonsense scores 0).
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import type { PolicyModel } from "../../model/api";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { type FrozenLakeState, makeFrozenLakeTask, solveLake } from "../../tasks/frozenlake";
import { ScriptedPolicy } from "../../testing/scripted-policy";
import { ADVANTAGE, withAdvantageDefaults } from "../algos/advantage";
import { modelConfigOf, runTaskOf } from "./run-parts";
import { Trainer } from "./trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

function lakeConfig(over: object = {}): RunConfig {
  return mergeConfig(
    mergeConfig(defaultRunConfig(), {
      seed: 3,
      model: { layers: 1, d_model: 16, heads: 2, context: 320 },
      task: { name: "frozenlake", template: "chatml-turns", options: { maxSteps: 3 }, eval_size: 3 },
      sft: { steps: 10, batch: 2, lr: 1e-2, warmup_steps: 1 },
      rl: { prompts_per_step: 2, group_size: 3, epochs: 1, minibatches: 1, advantage: "gigpo" },
      sampling: { max_new_tokens: 12 },
      stop: { max_steps: 1 },
    }),
    over,
  );
}

function cpuTrainer(c: RunConfig) {
  return new Trainer(c, {
    policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
    task: runTaskOf(c),
    sandbox,
    clock: () => 0,
  });
}

describe("Trainer on FrozenLake", () => {
  it("SFT on the solver's episodes lowers the loss", async () => {
    const tr = cpuTrainer(lakeConfig());
    const losses: number[] = [];
    for (let i = 0; i < 10; i++) losses.push(Number((await tr.sftStep()).row.loss));
    for (const l of losses) expect(Number.isFinite(l)).toBe(true);
    const head = (losses[0] + losses[1]) / 2;
    const tail = (losses[8] + losses[9]) / 2;
    expect(tail).toBeLessThan(head * 0.8);
  });

  it("a GiGPO step gives each turn's tokens its episode + anchor-state step advantage", async () => {
    const c = lakeConfig();
    const tr = cpuTrainer(c);
    const out = await tr.rlStep();
    expect(out.row["env/steps_mean"]).toBeGreaterThan(0);
    expect(out.row).toHaveProperty(["env/success_rate"]);
    expect(out.row).toHaveProperty(["actor/pg_loss"]);
    expect(out.samples).toHaveLength(6);
    const g = c.rl.gigpo;
    const expected = ADVANTAGE.gigpo(
      out.samples.map((s) => ({ groupId: s.groupId, reward: s.reward, mask: s.mask, steps: s.steps })),
      withAdvantageDefaults({
        stdEps: c.rl.std_eps,
        std: c.rl.std,
        gigpo: {
          ...withAdvantageDefaults().gigpo,
          stepWeight: g.step_weight,
          gamma: g.gamma,
          norm: g.norm,
          episodeStats: g.episode_stats,
        },
      }),
    );
    let nonZero = 0;
    out.samples.forEach((s, i) => {
      expect(s.steps?.length).toBeGreaterThan(0);
      expect(s.reward).toBeCloseTo(
        s.steps!.reduce((a, r) => a + r.reward, 0),
        12,
      );
      // Step ranges cover exactly the policy tokens.
      const covered = new Array<number>(s.tokens.length).fill(0);
      for (const r of s.steps!) for (let k = r.start; k < r.end; k++) covered[k] = 1;
      expect(covered).toEqual(s.mask);
      s.advantages.forEach((a, k) => {
        expect(a).toBeCloseTo(expected.advantages[i][k], 12);
        if (s.mask[k] === 0) expect(a).toBe(0);
        if (a !== 0) nonZero++;
      });
    });
    // Turns at different depths of the same start state differ in step return: some signal.
    expect(nonZero).toBeGreaterThan(0);
  });

  it("evaluation reports the success rate of episodes on the eval seeds", async () => {
    const c = lakeConfig({ model: { context: 1024 } });
    const task = makeFrozenLakeTask({ maxSteps: 3 });
    const seeds = task.evalSeeds(3);
    const paths = seeds.map((seed) => {
      const env = task.make();
      env.reset(seed);
      return solveLake(env.state() as FrozenLakeState)!;
    });
    const scripted = (scripts: string[][]) => {
      const p = new ScriptedPolicy(scripts, 1024);
      return {
        config: { context: 1024, valueHead: false },
        startGeneration: (s) => p.startGeneration(s),
      } as Pick<PolicyModel, "startGeneration"> as PolicyModel;
    };
    const solver = new Trainer(c, {
      policy: scripted(paths.map((path) => path.map((a) => `<answer>${a}</answer><|im_end|>`))),
      task: runTaskOf(c),
      sandbox,
    });
    const solved = await solver.evaluate();
    // Paths longer than maxSteps cannot finish; the rest reach the goal.
    const reachable = paths.filter((p) => p.length <= 3).length / paths.length;
    expect(solved["val/acc"]).toBeCloseTo(reachable, 12);
    expect(solved["val/acc_sampled"]).toBeCloseTo(reachable, 12);
    expect(solved["val/acc/all"]).toBeCloseTo(reachable, 12);
    expect(reachable).toBeGreaterThan(0);
    const lost = new Trainer(c, { policy: scripted([["no idea<|im_end|>"]]), task: runTaskOf(c), sandbox });
    const none = await lost.evaluate();
    expect(none["val/acc"]).toBe(0);
    expect(none["val/env_steps_mean"]).toBe(3);
    expect(none["val/env_return_mean"]).toBeCloseTo(-0.3, 12);
  });

  it("refuses a context that cannot hold the prompt, naming the field", async () => {
    const tr = cpuTrainer(lakeConfig({ model: { context: 96 } }));
    await expect(tr.rlStep()).rejects.toThrow(/model\.context/);
  });
});
