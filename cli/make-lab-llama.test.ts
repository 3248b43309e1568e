// The lab-made Llama (cli/make-lab-llama.ts, model/lab-llama.ts): the committed folder
// public/models/lab-llama is a Hugging Face model the lab reads as any other (config.json of a
// LlamaForCausalLM with grouped-query attention, a tokenizer.json @huggingface/tokenizers loads,
// a ChatML template that takes tools and renders Hermes calls turn by turn under the strict
// tokenization check, made_by in the weights and the config); the script regenerates a smaller
// sibling (--small, 2 SFT steps) the same way, and its tokenizer training is deterministic.
// Run: npx vitest run --project unit cli/make-lab-llama.test.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { jinjaChat } from "../model/chat";
import { nodeModelDir } from "../model/hf/node";
import { readHfConfig } from "../model/hf/read";
import { HfTokenizer } from "../model/hf/tokenizer";
import { LAB_LLAMA_ADDED, trainBpe } from "../model/lab-llama";
import { chatToolsOf } from "../rl/rollout/tool-protocol";
import { getTask } from "../tasks/index";
import { createRng } from "../tasks/rng";
import type { Task } from "../tasks/types";
import { tokenizerCorpus } from "./make-lab-llama";

function checkFolder(dir: string, o: { layers: number; madeBy: RegExp }) {
  const json = (f: string) => JSON.parse(readFileSync(join(dir, f), "utf8"));
  const cfg = json("config.json");
  expect(cfg).toMatchObject({ model_type: "llama", num_key_value_heads: 2, num_hidden_layers: o.layers });
  expect(cfg.made_by).toMatch(o.madeBy);
  const st = readFileSync(join(dir, "model.safetensors"));
  const header = JSON.parse(st.subarray(8, 8 + Number(st.readBigUInt64LE(0))).toString());
  expect(header.__metadata__.made_by).toBe(cfg.made_by);
  const files = { tokenizer: json("tokenizer.json"), config: json("tokenizer_config.json") };
  const tok = new HfTokenizer(files, dir);
  expect(tok.vocabSize).toBe(cfg.vocab_size);
  expect(tok.eosId).toBe(cfg.eos_token_id);
  for (const t of LAB_LLAMA_ADDED) expect(tok.encode(t.content)).toHaveLength(1);
  const text = 'What is (12+34)*56?\n{"code": "7*8"} é';
  expect(tok.decode(tok.encode(text))).toBe(text);
  expect(json("generation_config.json").eos_token_id).toContain(cfg.eos_token_id);
  // Demonstrations with tool calls render turn by turn without a tokenization mismatch.
  const task = getTask("arithmetic", { mulDigits: [2, 2] }, { version: 2 }) as Task;
  const chat = jinjaChat(tok, files.config, {
    tools: chatToolsOf(task.tools),
    check: "strict",
    toolPrompt: "hermes",
    source: dir,
  });
  expect(chat.rendersTools && chat.rendersToolCalls).toBe(true);
  const demos = task.sftDemos(createRng("check"), 40, { toolRate: 0.5, thinkRate: 0.3 });
  for (const d of demos) expect(chat.render(d.messages).mismatches).toBe(0);
  const withCall = demos.find((d) => d.meta.useTool);
  const rendered = tok.decode(chat.render(withCall?.messages ?? []).ids);
  expect(rendered).toContain('<tool_call>\n{"name": "calculator", "arguments": {"code": "');
  expect(rendered).toContain("<|im_start|>user\n<tool_response>\n");
  expect(chat.promptText(task.evalSet(1)[0].messages)).toMatch(
    /^<\|im_start\|>system\n# Tools\ncalculator\(code: string\): .*\nCall a tool as <tool_call>/,
  );
}

describe("the lab-made Llama", () => {
  it("public/models/lab-llama loads as a Hugging Face model with its tokenizer and chat template", async () => {
    checkFolder("public/models/lab-llama", { layers: 2, madeBy: /cli\/recipes\/lab-llama-sft\.json/ });
    const mc = await readHfConfig(nodeModelDir("public/models/lab-llama"), { context: 256 });
    expect(mc).toMatchObject({ norm: "rmsnorm", mlp: "swiglu", positional: "rope", kvHeads: 2, heads: 4 });
  });

  it("the tokenizer is trained the same way twice", () => {
    const c = mergeConfig(defaultRunConfig(), { task: { options: { mulDigits: [2, 2] } } });
    const added = LAB_LLAMA_ADDED.map((t) => t.content);
    const corpus = tokenizerCorpus(c, 60);
    const a = trainBpe(corpus, 300, added);
    expect(trainBpe(corpus, 300, added)).toEqual(a);
    expect(Object.keys(a.vocab)).toHaveLength(300);
  });

  it("npm run make-lab-llama -- --small regenerates a smaller sibling", () => {
    const work = mkdtempSync(join(tmpdir(), "lab-llama-small-"));
    const r = spawnSync(
      "npx",
      [
        "tsx",
        "--import",
        "./cli/raw-loader.mjs",
        "cli/make-lab-llama.ts",
        "--small",
        "--sft-steps",
        "2",
        "--work",
        work,
        "--out",
        join(work, "model"),
      ],
      { encoding: "utf8" },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain("2/3 sft 1/2");
    expect(r.stderr).toContain("3/3 ");
    checkFolder(join(work, "model"), { layers: 1, madeBy: /--small --sft-steps 2/ });
    expect(readFileSync(join(work, "model", "README.md"), "utf8")).toContain("SFT: 2 steps");
  }, 1200_000);
});
