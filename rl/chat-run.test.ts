// A run in a model's own chat format, from the config: model.tokenizer names Qwen3's
// tokenizer folder and task.template "model" its Jinja template, so rl/session.ts builds the
// chat format, sizes the lab model's vocabulary to the tokenizer's 151,669 ids, and the
// trainer runs SFT (turn-by-turn masks, task.tokenization_check) and RL (Hermes calls) on the
// CPU model. Samples carry each token's readable piece for the page.
// Run: `npx vitest run rl/chat-run`.
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../config";
import { CpuModel } from "../model/cpu";
import { QWEN3_DIR } from "../model/qwen3-fixture";
import { InProcessSandbox } from "../sandbox/run-code";
import { createTrainer } from "./session";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

function config(task: object, sft: object = {}): RunConfig {
  return mergeConfig(defaultRunConfig(), {
    seed: 3,
    model: { layers: 1, d_model: 8, heads: 2, context: 320, tokenizer: QWEN3_DIR },
    task: { name: "arithmetic", template: "model", eval_size: 2, eval_every: 0, ...task },
    sft: { steps: 1, batch: 1, warmup_steps: 0, ...sft },
    rl: { prompts_per_step: 1, group_size: 2, epochs: 1, minibatches: 1 },
    sampling: { max_new_tokens: 4 },
    stop: { max_steps: 1 },
  });
}

const trainerOf = (c: RunConfig) =>
  createTrainer(c, {
    makeModel: async (mc, w, seed) => new CpuModel(mc, w, seed),
    sandbox,
    readFile: async (p) => new Uint8Array(readFileSync(p)),
  });

describe("a run with Qwen3's tokenizer and chat template", () => {
  it("sizes the model to the tokenizer, runs an SFT and an RL step, and sends pieces with the samples", async () => {
    // Tool demos without reasoning hit Qwen3's think-block rewrite (counted, re-tokenized).
    const tr = await trainerOf(
      config({ tokenization_check: "warn", options: { sft: { toolRate: 1, thinkRate: 0 } } }),
    );
    expect(tr.policy.config.vocab).toBe(151669);
    expect(tr.chat.name).toBe("model");
    const sft = await tr.sftStep();
    expect(sft.row["tokenize/mismatch_turns"]).toBe(1);
    expect(Number(sft.row.loss)).toBeGreaterThan(10);
    const rl = await tr.rlStep();
    expect(rl.samples).toHaveLength(2);
    const s = rl.samples[0];
    expect(s.promptPieces).toHaveLength(s.promptTokens.length);
    expect(s.pieces).toHaveLength(s.tokens.length);
    expect(s.promptPieces!.join("")).toContain(
      '<tools>\n{"type": "function", "function": {"name": "calculator"',
    );
    expect(s.promptPieces!.slice(-3)).toEqual(["<|im_start|>", "assistant", "\n"]);
    expect(s.padId).toBe(151643);
  }, 120_000);

  it("strict: an SFT demo the template rewrites stops the step with the message named", async () => {
    const tr = await trainerOf(config({ options: { sft: { toolRate: 1, thinkRate: 0 } } }));
    await expect(tr.sftStep()).rejects.toThrow(
      /rendering through message 3 \(tool\) changes the text before it/,
    );
  });

  it("names the field when the template needs a tokenizer", async () => {
    const c = mergeConfig(config({}), { model: { tokenizer: null } });
    await expect(trainerOf(c)).rejects.toThrow(/task.template: "model" .* set model.tokenizer/);
    const missing = mergeConfig(config({}), { model: { tokenizer: "no/such/dir" } });
    await expect(trainerOf(missing)).rejects.toThrow(/no\/such\/dir\/tokenizer.json: cannot read/);
  });
});
