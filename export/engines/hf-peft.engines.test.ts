// transformers and PEFT take the lab's weight exports (the engines layer: the venv of npm run
// engines:setup, export/engines/venv.ts). A LoRA run on the lab-made Llama (public/models/lab-llama,
// a real LlamaForCausalLM folder) with a seeded non-zero adapter, its base f32 and f16, saved as a
// run folder and exported by the lab's own CLI (npm run export -- hf and -- peft). In the venv
// (export/engines/hf_peft_check.py) the merged folder loads with AutoModelForCausalLM, the adapter
// with PeftModel.from_pretrained over the base its adapter_config.json names and with
// AutoPeftModelForCausalLM from the adapter alone, and the adapter README's Python runs as written;
// each scores the lab's token sequences in float32 against the lab's CPU model (model/cpu.ts).
// f32 base: all four within 1e-4 of the run. f16 base (the run trains against the f16-rounded
// base): the merged folder and the README's recipe (round the base as the run did) are the run's
// model within 1e-4, the adapter over the source as it is is not, as both READMEs say.
// Run: npx vitest run --project engines export/engines/hf-peft.engines.test.ts
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import { saveCheckpoint } from "../../model/checkpoint";
import { loraConfigOf, modelConfig, paramLayout } from "../../model/config";
import { CpuModel } from "../../model/cpu";
import { nodeModelDir } from "../../model/hf/node";
import { loadHfWeights, readHfConfig } from "../../model/hf/read";
import { HfTokenizer } from "../../model/hf/tokenizer";
import { loraLayout, randomLora } from "../../model/lora";
import { enginesPython } from "./venv.ts";

const SRC = "public/models/lab-llama";
// Conversations in the lab-made Llama's ChatML template, a Hermes tool call among them.
const TEXTS = [
  "<|im_start|>user\nWhat is 47*86?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n" +
    '{"name": "calculator", "arguments": {"expression": "47*86"}}\n</tool_call><|im_end|>',
  "<|im_start|>user\nWhat is 12*34?<|im_end|>\n<|im_start|>assistant\nThe answer is 408.<|im_end|>",
  "<|im_start|>tool\n4042<|im_end|>\n<|im_start|>assistant\n47*86 = 4042<|im_end|>",
];

type Scores = Record<
  string,
  {
    base: string;
    merged: number[][];
    peft: number[][];
    auto_peft: number[][];
    readme: number[][];
    tokens: number[][];
  }
>;

const run = promisify(execFile);
const cli = (args: string[]) =>
  run("npx", ["tsx", "--import", "./cli/raw-loader.mjs", "cli/export.ts", ...args], { encoding: "utf8" });
const maxDiff = (a: number[][], b: number[][]) => {
  expect(a.map((r) => r.length)).toEqual(b.map((r) => r.length));
  return Math.max(...a.flatMap((r, i) => r.map((x, j) => Math.abs(x - b[i][j]))));
};

let root: string;
let tokens: number[][];
const lab: Record<string, number[][]> = {};
let py: Scores;
const readme: Record<string, { peft: string; merged: string }> = {};

beforeAll(async () => {
  const python = enginesPython();
  root = mkdtempSync(join(tmpdir(), "hf-peft-engines-"));
  const tok = new HfTokenizer(
    {
      tokenizer: JSON.parse(readFileSync(join(SRC, "tokenizer.json"), "utf8")),
      config: JSON.parse(readFileSync(join(SRC, "tokenizer_config.json"), "utf8")),
    },
    SRC,
  );
  tokens = TEXTS.map((t) => tok.encode(t));
  const cases = [];
  const exports: Promise<unknown>[] = [];
  for (const dtype of ["f32", "f16"] as const) {
    const rc: RunConfig = mergeConfig(defaultRunConfig(), {
      model: {
        pretrained: "models/lab-llama",
        context: 256,
        lora: { rank: 8, alpha: 16, targets: "all-linear" },
        dtype,
      },
    });
    const dir = nodeModelDir(SRC);
    const hf = await readHfConfig(dir, { context: rc.model.context });
    const mc = modelConfig({ ...hf, lora: loraConfigOf(rc, hf.mlp), baseDtype: dtype });
    const source = new Float32Array(paramLayout(mc).total);
    await loadHfWeights(dir, mc, (o, d) => source.set(d, o));
    const model = new CpuModel(mc, source, 0, randomLora(loraLayout(mc, mc.lora), 7, 0.05));
    const base = await model.referencePolicy();
    lab[dtype] = [];
    lab[`${dtype}-base`] = [];
    for (const s of tokens) {
      const T = s.length - 1;
      const batch = { B: 1, T, tokens: Int32Array.from(s.slice(0, T)), targets: Int32Array.from(s.slice(1)) };
      lab[dtype].push(Array.from((await model.forwardScore(batch)).logp));
      lab[`${dtype}-base`].push(Array.from((await base.forwardScore(batch)).logp));
    }
    // The run folder as npm run train leaves it: the base as the model holds it (f16-rounded for f16).
    const runDir = join(root, `run-${dtype}`);
    mkdirSync(runDir);
    writeFileSync(join(runDir, "config.json"), JSON.stringify(rc));
    writeFileSync(
      join(runDir, "checkpoint.safetensors"),
      saveCheckpoint({
        config: mc,
        weights: await model.getWeights(),
        adapter: (await model.getAdapter()) ?? undefined,
      }),
    );
    const merged = join(root, `hf-${dtype}`);
    const adapter = join(root, `peft-${dtype}`);
    exports.push(cli(["hf", runDir, "--out", merged]), cli(["peft", runDir, "--out", adapter]));
    cases.push({ name: dtype, merged, adapter, texts: TEXTS, tokens });
    readme[dtype] = { peft: join(adapter, "README.md"), merged: join(merged, "README.md") };
  }
  await Promise.all(exports);
  const r = spawnSync(python, ["export/engines/hf_peft_check.py"], {
    input: JSON.stringify({ cases }),
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0) throw new Error(`hf_peft_check.py (exit ${r.status}):\n${r.stderr.slice(-4000)}`);
  py = JSON.parse(r.stdout);
  for (const d of Object.keys(readme))
    readme[d] = {
      peft: readFileSync(readme[d].peft, "utf8"),
      merged: readFileSync(readme[d].merged, "utf8"),
    };
}, 600_000);

describe("transformers 5.10.4 and PEFT 0.21.2 take the lab's weight exports", () => {
  it("the adapter names a base transformers loads: the lab-made Llama's folder as found", () => {
    expect(py.f32.base).toBe(SRC);
    expect(py.f16.base).toBe(SRC);
  });

  it("the merged folder's tokenizer encodes the lab's texts as the lab does", () => {
    expect(tokens.every((t) => t.length > 10)).toBe(true);
    expect(py.f32.tokens).toEqual(tokens);
  });

  it("f32 base: the merged model, PEFT over the named base and the README's Python score within 1e-4 of the lab", () => {
    for (const way of ["merged", "peft", "auto_peft", "readme"] as const)
      expect(maxDiff(py.f32[way], lab.f32), way).toBeLessThan(1e-4);
    // the adapter is no no-op: the base alone scores otherwise
    expect(maxDiff(lab.f32, lab["f32-base"])).toBeGreaterThan(1e-2);
  });

  it("f16 base: the merged model and the README's rounding recipe are the run's model; the adapter over the source as it is is not", () => {
    expect(maxDiff(py.f16.merged, lab.f16), "merged").toBeLessThan(1e-4);
    expect(maxDiff(py.f16.readme, lab.f16), "README recipe").toBeLessThan(1e-4);
    const off = maxDiff(py.f16.peft, lab.f16);
    expect(off, "PEFT over the f32 source").toBeGreaterThan(1e-4);
    expect(maxDiff(py.f16.auto_peft, py.f16.peft)).toBeLessThan(1e-5);
    console.log(`f16 base: PEFT over the f32 source is ${off.toExponential(2)} nats off per token at most`);
    expect(readme.f16.peft).toMatch(
      /Applied to the source as it is, the adapter gives a slightly different model/,
    );
    expect(readme.f16.merged).toMatch(/This folder holds that rounded base with the trained adapter merged/);
    expect(readme.f32.peft).not.toMatch(/float16/);
    expect(readme.f32.merged).not.toMatch(/float16/);
  });
});
