// Baselines that live outside one group, in the trainer: ReMax (ALGORITHMS §5), one greedy
// rollout per prompt, not trained, whose reward is the group's baseline, A = R − R(greedy),
// checked against a greedy decode by an identically initialised model; and REINFORCE with a
// history baseline (§12), whose state carries from one step to the next.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../../config";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { rollout } from "../rollout/agent-loop";
import { modelConfigOf, runTaskOf } from "../run/run-parts";
import { Trainer } from "../run/trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

describe("ReMax greedy baseline", () => {
  it("A = R − R(greedy decode of the same prompt) on every policy token", async () => {
    const c = mergeConfig(defaultRunConfig(), {
      seed: 9,
      model: { layers: 1, d_model: 16, heads: 2, context: 96 },
      rl: { advantage: "remax", prompts_per_step: 2, group_size: 3, epochs: 1, minibatches: 1 },
      rewards: { terms: [], custom_js: "(x) => x.text.length / 10" },
      sampling: { max_new_tokens: 16 },
    });
    const tr = new Trainer(c, {
      policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
      task: runTaskOf(c),
      sandbox,
      clock: () => 0,
    });
    const { samples } = await tr.rlStep();
    expect(samples).toHaveLength(6);
    const twin = new CpuModel(modelConfigOf(c), undefined, c.seed);
    for (const s of samples) {
      const [greedy] = await rollout(twin, [s.promptTokens], {
        chat: tr.chat,
        sampling: { temperature: 0, seed: 1 },
        limits: {
          maxToolCalls: c.limits.max_tool_calls,
          maxNewTokens: c.sampling.max_new_tokens,
          maxToolResponseChars: c.limits.max_tool_response_chars,
          overLimitNotice: "Tool-call limit reached; answer now.",
        },
      });
      // (This seed's greedy decodes call no tool, so no sandbox is needed to replay them.)
      const b = greedy.text.length / 10;
      s.advantages.forEach((a, k) => {
        expect(a).toBeCloseTo(s.mask[k] ? s.reward - b : 0, 9);
      });
    }
  });
});

describe("reinforce-history in the trainer", () => {
  it("step 0 uses its own batch mean; step 1 the mean reward of step 0", async () => {
    const c = mergeConfig(defaultRunConfig(), {
      seed: 4,
      model: { layers: 1, d_model: 16, heads: 2, context: 96 },
      rl: { advantage: "reinforce-history", prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1 },
      rewards: { terms: [], custom_js: "(x) => x.text.length / 10" },
      sampling: { max_new_tokens: 16 },
    });
    const tr = new Trainer(c, {
      policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
      task: runTaskOf(c),
      sandbox,
      clock: () => 0,
    });
    const s0 = (await tr.rlStep()).samples;
    const s1 = (await tr.rlStep()).samples;
    expect(s0).toHaveLength(4); // the whole batch (2 groups)
    const mean0 = s0.reduce((a, s) => a + s.reward, 0) / s0.length;
    const mean1 = s1.reduce((a, s) => a + s.reward, 0) / s1.length;
    expect(mean1).not.toBeCloseTo(mean0, 6);
    for (const s of [...s0, ...s1])
      s.advantages.forEach((a, k) => {
        expect(a).toBeCloseTo(s.mask[k] ? s.reward - mean0 : 0, 9);
      });
  });
});
