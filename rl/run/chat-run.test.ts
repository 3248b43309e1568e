// A run in a model's own chat format, from the config: model.pretrained names a tiny Qwen3
// folder (config.json + f32 safetensors with Qwen3's 151,669-row vocabulary, written here),
// model.tokenizer Qwen3's real tokenizer and task.template "model" its Jinja template, so
// rl/run/build-trainer.ts loads the architecture and weights, builds the chat format, and the trainer
// runs SFT (turn-by-turn masks, task.tokenization_check) and RL (Hermes calls) on the CPU
// model. Samples carry each token's readable piece for the page.
// Run: `npx vitest run rl/run/chat-run`.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import { CpuModel } from "../../model/cpu";
import { randomHfSafetensors } from "../../model/hf/fixture";
import { QWEN3_DIR } from "../../model/qwen3-fixture";
import { InProcessSandbox } from "../../sandbox/run-code";
import { createTrainer } from "./build-trainer";

// A tiny Qwen3 in the Hugging Face layout: random f32 weights (norms at 1) in one safetensors file.
const QWEN3_CONFIG = {
  model_type: "qwen3",
  hidden_size: 8,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 4,
  intermediate_size: 12,
  vocab_size: 151669,
  max_position_embeddings: 512,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  hidden_act: "silu",
  attention_bias: false,
};
function writeTinyQwen3(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "config.json"), JSON.stringify(QWEN3_CONFIG));
  writeFileSync(
    join(dir, "model.safetensors"),
    randomHfSafetensors(QWEN3_CONFIG, { context: 320, seed: 1, scale: 0.04 }),
  );
}

let sandbox: InProcessSandbox;
let qwen3Dir: string;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
  qwen3Dir = join(mkdtempSync(join(tmpdir(), "lab-qwen3-")), "tiny-qwen3");
  writeTinyQwen3(qwen3Dir);
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
  it("loads the pretrained folder, runs an SFT and an RL step, and sends pieces with the samples", async () => {
    // Tool demos without reasoning hit Qwen3's think-block rewrite (counted, re-tokenized).
    const c = config({ tokenization_check: "warn", options: { sft: { toolRate: 1, thinkRate: 0 } } });
    const tr = await trainerOf(mergeConfig(c, { model: { pretrained: qwen3Dir } }));
    expect(tr.policy.config).toMatchObject({
      vocab: 151669,
      dModel: 8,
      kvHeads: 1,
      headDim: 4,
      qkNorm: true,
    });
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
  }, 480_000);

  it("strict: an SFT demo the template rewrites stops the step with the message named", async () => {
    const tr = await trainerOf(config({ options: { sft: { toolRate: 1, thinkRate: 0 } } }));
    await expect(tr.sftStep()).rejects.toThrow(
      /rendering through message 3 \(tool\) changes the text before it/,
    );
  });

  it("a lab model takes the tokenizer's vocabulary", async () => {
    const tr = await trainerOf(config({}));
    expect(tr.policy.config).toMatchObject({ vocab: 151669, dModel: 8, layers: 1 });
  });

  it("names the field when the template needs a tokenizer, or the model has too few rows", async () => {
    const c = mergeConfig(config({}), { model: { tokenizer: null } });
    await expect(trainerOf(c)).rejects.toThrow(/task.template: "model" .* set model.tokenizer/);
    const missing = mergeConfig(config({}), { model: { tokenizer: "no/such/dir" } });
    await expect(trainerOf(missing)).rejects.toThrow(/no\/such\/dir\/tokenizer.json: cannot read/);
    const small = mergeConfig(config({}), { model: { pretrained: "model/golden/hf/qwen3", context: 32 } });
    await expect(trainerOf(small)).rejects.toThrow(
      /model.pretrained: model\/golden\/hf\/qwen3\/config.json has vocab_size 96, fewer rows than the tokenizer's 151669 ids/,
    );
  });
});
