// The custom JS reward (rewards.custom_js) in the sandbox: both accepted shapes (a `reward`
// declaration, a function expression), a source with no function says so instead of a
// SyntaxError, a real syntax error stays one, and a reward that throws fails with its message;
// in a training step the failures become reward/custom_error_rate and reward/custom_error.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../../config";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import type { RewardInput } from "../algos/reward-terms";
import { modelConfigOf, runTaskOf } from "../run/run-parts";
import { Trainer } from "../run/trainer";
import { NO_REWARD_FUNCTION, runCustomReward } from "./batch-rewards";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

const input = { text: "<answer>42</answer>", correct: true, toolCalls: [] } as unknown as RewardInput;
const limits = { timeoutS: 2, memoryMB: 16 };

describe("runCustomReward", () => {
  it("runs a reward declaration and a function expression", async () => {
    expect(
      await runCustomReward(sandbox, "function reward(x) { return x.correct ? 1 : 0; }", input, limits),
    ).toEqual({ ok: true, value: 1 });
    expect(await runCustomReward(sandbox, "(x) => x.text.length / 10", input, limits)).toEqual({
      ok: true,
      value: 1.9,
    });
  });

  it("says there is no function named reward, and keeps a real syntax error", async () => {
    for (const src of ["const score = (x) => 1;", "let y = 2; y + 1;", "// only a comment"]) {
      const r = await runCustomReward(sandbox, src, input, limits);
      expect(r.ok).toBe(false);
      expect(!r.ok && r.error).toContain(NO_REWARD_FUNCTION);
    }
    const bad = await runCustomReward(
      sandbox,
      "function reward(x) { return x.correct ? 1 ; }",
      input,
      limits,
    );
    expect(!bad.ok && bad.error).toMatch(/SyntaxError/);
    expect(!bad.ok && bad.error).not.toContain(NO_REWARD_FUNCTION);
  });

  it("reports a throwing reward's message", async () => {
    const r = await runCustomReward(sandbox, 'function reward() { throw new Error("boom"); }', input, limits);
    expect(!r.ok && r.error).toContain("boom");
  });

  it("turns failures during a step into reward/custom_error_rate and the first message", async () => {
    const c = mergeConfig(defaultRunConfig(), {
      seed: 3,
      model: { layers: 1, d_model: 16, heads: 2, context: 96 },
      rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1 },
      rewards: { custom_js: 'function reward(x) { throw new Error("boom in a step"); }' },
      sampling: { max_new_tokens: 8 },
    });
    const tr = new Trainer(c, {
      policy: new CpuModel(modelConfigOf(c), undefined, c.seed),
      task: runTaskOf(c),
      sandbox,
      clock: () => 0,
    });
    const { row, samples } = await tr.rlStep();
    expect(row["reward/custom_error_rate"]).toBe(1);
    expect(row["reward/custom_error"]).toContain("boom in a step");
    expect(samples.every((s) => s.customError?.includes("boom in a step"))).toBe(true);
    // The scoring pass's per-token entropy is recorded for the inspector's colouring.
    expect(samples.some((s) => s.entropy.length === s.tokens.length && s.entropy.length > 0)).toBe(true);
  });
});
