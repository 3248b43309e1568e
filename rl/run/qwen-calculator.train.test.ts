// The qwen-calculator recipe (public/recipes/qwen-calculator.json: Qwen2.5-0.5B-Instruct, LoRA
// rank 16 on all linear layers, the model's chat template with Hermes calls, micro-batches of 1,
// per-layer recomputation)
// runs headless for two RL steps with its model.pretrained swapped for a tiny Qwen2 folder
// written here (Qwen's 151,669-row vocabulary, GQA, q/k/v biases) and Qwen3's real tokenizer
// standing in for Qwen2.5's: the adapter trains, the base (f16-rounded: model.dtype f16) stays bit-identical.
// Run: npx vitest run --project train rl/run/qwen-calculator.train.test.ts (about a minute: Qwen's vocabulary on the CPU model, 151,669 logits a row)
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { mergeConfig, parseRunConfig, type RunConfig } from "../../config";
import { modelConfig } from "../../model/config";
import { CpuModel } from "../../model/cpu";
import { hfFiles } from "../../model/hf/write";
import { QWEN3_DIR } from "../../model/qwen3-fixture";
import { InProcessSandbox } from "../../sandbox/run-code";
import { createTrainer } from "./build-trainer";

let sandbox: InProcessSandbox;
let dir: string;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
  dir = join(mkdtempSync(join(tmpdir(), "lab-qwen2-")), "tiny-qwen2");
  mkdirSync(dir, { recursive: true });
  // A tiny Qwen2 in the Hugging Face layout, written by the lab's own exporter (model/hf/write.ts).
  const c = modelConfig({
    layers: 1,
    dModel: 8,
    heads: 2,
    kvHeads: 1,
    context: 512,
    vocab: 151669,
    norm: "rmsnorm",
    mlp: "swiglu",
    mlpSize: 12,
    qkvBias: true,
    projBias: false,
    mlpBias: false,
    positional: "rope",
    tiedEmbeddings: true,
  });
  const weights = new CpuModel(c, undefined, 4).params;
  for (const [name, bytes] of Object.entries(hfFiles(c, weights, null)))
    writeFileSync(join(dir, name), bytes);
});

describe("qwen-calculator recipe", () => {
  it("runs two RL steps with LoRA on a tiny qwen2 model: the adapter moves, the base does not", async () => {
    const recipe = JSON.parse(readFileSync("public/recipes/qwen-calculator.json", "utf8"));
    const parsed = parseRunConfig(
      mergeConfig(recipe.config, {
        model: { pretrained: dir, tokenizer: QWEN3_DIR },
        task: { eval_size: 0, eval_every: 0 },
        // entropy keeps a gradient on the adapter even when both samples earn the same reward
        rl: { prompts_per_step: 1, group_size: 2, minibatches: 1, entropy_coef: 0.01 },
        sampling: { max_new_tokens: 6 },
        stop: { max_steps: 2 },
      }),
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const config: RunConfig = parsed.config;
    expect(config.model.lora).toEqual({ rank: 16, alpha: 32, targets: "all-linear" });
    expect(config.model.dtype).toBe("f16");
    expect(config.rl.micro_batch_size).toBe(1);
    expect(config.model.gradient_checkpointing).toBe(true);
    const tr = await createTrainer(config, {
      makeModel: async (mc, w, seed) => new CpuModel(mc, w, seed),
      sandbox,
      readFile: async (p) => new Uint8Array(readFileSync(p)),
    });
    const policy = tr.policy as CpuModel;
    expect(policy.recompute).toBe(true);
    expect(policy.config).toMatchObject({ vocab: 151669, kvHeads: 1, qkvBias: true, projBias: false });
    expect(policy.lora?.layers[0].map((s) => s.target)).toEqual([
      "q_proj",
      "k_proj",
      "v_proj",
      "o_proj",
      "gate_proj",
      "up_proj",
      "down_proj",
    ]);
    // the f16 base: its linear weights rounded to f16 on load (the CPU model stores them in f32)
    expect(policy.baseStorage()).toMatchObject({ requested: "f16", halfTensors: 4, keptF32: [] });
    const base = await policy.getWeights();
    const adapter = (await policy.getAdapter())!;
    for (let s = 0; s < 2; s++) {
      const out = await tr.rlStep();
      expect(out.skipped).toBeUndefined();
    }
    expect(Buffer.from((await policy.getWeights()).buffer).equals(Buffer.from(base.buffer))).toBe(true);
    expect((await policy.getAdapter())!.some((x, i) => x !== adapter[i])).toBe(true);
  }, 480_000);
});
