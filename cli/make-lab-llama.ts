// `npm run make-lab-llama -- [--recipe cli/recipes/lab-llama-sft.json] [--out public/models/lab-llama]
//   [--work runs/lab-llama] [--sft-steps N] [--small] [--backend cpu|webgpu]`
// Makes the lab's own pretrained model, a Llama-family model a person could publish, in three
// steps:
//   1. the tokenizer: a byte-level BPE (model/lab-llama.ts) trained on the conversations the
//      recipe's task renders in the model's ChatML template (calculator demos and prompts) plus
//      the function-calling catalogue's demos, so a later run on either task tokenizes well;
//      written with a random-initialised LlamaForCausalLM (the lab's init) as a Hugging Face
//      folder, WORK/init (config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
//      generation_config.json);
//   2. SFT of that folder as model.pretrained by the recipe (full fine-tuning, the model's own
//      template, Hermes tool calls), a run folder at WORK/sft like npm run train's;
//   3. the trained weights through the Hugging Face exporter (model/hf/write.ts) into OUT with the
//      tokenizer files, `made_by` (the recipe and this command) in the safetensors metadata and
//      the config, and a README.md model card with the run's held-out numbers.
// --small makes a smaller sibling quickly (one layer, a 320-entry vocabulary, the recipe's SFT
// cut to --sft-steps), which cli/make-lab-llama.test.ts builds and loads back.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Template } from "@huggingface/jinja";
import { mergeConfig, parseRunConfig, type RunConfig } from "../config";
import { loadRecipeFile } from "../config/recipe-file";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import type { PolicyModel } from "../model/api";
import { functionSpecs, hermesMessages } from "../model/chat";
import { loadCheckpoint } from "../model/checkpoint";
import { initParams, modelConfig, paramLayout } from "../model/config";
import { CpuModel } from "../model/cpu";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { hfFiles, readSafetensors, writeSafetensors } from "../model/hf/write";
import {
  LAB_LLAMA_ADDED,
  LAB_LLAMA_CHAT_TEMPLATE,
  type LabLlamaShape,
  labGenerationConfig,
  labLlamaConfig,
  labTokenizerConfig,
  labTokenizerJson,
  trainBpe,
} from "../model/lab-llama";
import { chatToolsOf } from "../rl/rollout/tool-protocol";
import { createNodeSandboxPool } from "../sandbox/pool-node";
import { getTask } from "../tasks/index";
import { createRng } from "../tasks/rng";
import type { Task } from "../tasks/types";
import { PRESETS, parseCliArgs, usageExit } from "./args";
import { runToFolder } from "./run";

/** The published model's shape (sized like the demo model: about 90,000 parameters). */
export const LAB_LLAMA_SHAPE: LabLlamaShape = {
  hidden: 48,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediate: 128,
  maxPositions: 1024,
  tied: false,
};
export const LAB_LLAMA_VOCAB = 384;
/** The smaller sibling of --small (tests). */
export const SMALL_SHAPE: LabLlamaShape = { ...LAB_LLAMA_SHAPE, hidden: 32, layers: 1, intermediate: 88 };
export const SMALL_VOCAB = 384;

const usage: (msg?: string) => never = usageExit(
  "usage: npm run make-lab-llama -- [--recipe FILE] [--out DIR] [--work DIR] [--sft-steps N] [--small] [--backend cpu|webgpu]",
);

/** Texts the tokenizer is trained on: the task's demos and prompts rendered by the template, and function-calling demos. */
export function tokenizerCorpus(config: RunConfig, n: number): string[] {
  const template = new Template(LAB_LLAMA_CHAT_TEMPLATE);
  const texts: string[] = [];
  const renderAll = (task: Task, demos: { messages: Parameters<typeof hermesMessages>[0] }[]) => {
    const tools = chatToolsOf(task.tools);
    for (const d of demos)
      texts.push(
        template.render({
          messages: hermesMessages(d.messages, tools),
          tools: tools.length ? functionSpecs(tools) : undefined,
          add_generation_prompt: false,
        }),
      );
  };
  const task = getTask(config.task.name, config.task.options, { version: config.task.split_version }) as Task;
  const sft = (config.task.options as { sft?: Record<string, unknown> }).sft ?? {};
  renderAll(task, task.sftDemos(createRng(`${config.seed}:bpe`), n, sft));
  const fc = getTask("function-calling", { library: "catalogue", compact: true }, { version: 2 }) as Task;
  renderAll(fc, fc.sftDemos(createRng(`${config.seed}:bpe-fc`), Math.ceil(n / 4), { thinkRate: 0 }));
  return texts;
}

/** WORK/init: the tokenizer, the config and random weights (the lab's init for this architecture). */
export function writeInitFolder(
  dir: string,
  config: RunConfig,
  shape: LabLlamaShape,
  vocabSize: number,
  corpusSize: number,
): { bpeSize: number; params: number } {
  const bpe = trainBpe(
    tokenizerCorpus(config, corpusSize),
    vocabSize - LAB_LLAMA_ADDED.length,
    LAB_LLAMA_ADDED.map((t) => t.content),
  );
  const bpeSize = Object.keys(bpe.vocab).length;
  const cfg = labLlamaConfig(shape, bpeSize);
  const mc = modelConfig(hfModelConfig(cfg, "config.json", { context: config.model.context }));
  const weights = initParams(mc, paramLayout(mc), config.seed);
  const json = (x: unknown) => `${JSON.stringify(x, null, 2)}\n`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "config.json"), json(cfg));
  writeFileSync(join(dir, "model.safetensors"), hfFiles(mc, weights, null)["model.safetensors"]);
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(labTokenizerJson(bpe)));
  writeFileSync(join(dir, "tokenizer_config.json"), json(labTokenizerConfig(bpeSize, shape.maxPositions)));
  writeFileSync(join(dir, "generation_config.json"), json(labGenerationConfig(bpeSize)));
  return { bpeSize, params: paramLayout(mc).total };
}

/** The sizes of a folder this script made (for --from). */
function folderSizes(dir: string, config: RunConfig): { bpeSize: number; params: number } {
  const cfg = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
  const mc = modelConfig(hfModelConfig(cfg, "config.json", { context: config.model.context }));
  return { bpeSize: cfg.vocab_size - LAB_LLAMA_ADDED.length, params: paramLayout(mc).total };
}

/** The SFT lines of an earlier model card (what --from continues). */
function priorStages(card: string): string {
  return card
    .split("\n")
    .filter((l) => l.startsWith("- SFT") || l.startsWith("- earlier stages"))
    .map((l) => l.replace(/^- (SFT( \(last stage\))?|earlier stages): /, ""))
    .join("; ");
}

/** The files of the source folder a stage keeps (empty text for one it lacks). */
function readSourceFiles(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const f of [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "generation_config.json",
    "README.md",
  ])
    files[f] = existsSync(join(dir, f)) ? readFileSync(join(dir, f), "utf8") : "";
  return files;
}

type MakeModel = (
  mc: Parameters<typeof GpuModel.create>[1],
  w: Float32Array | undefined,
  seed: number,
) => Promise<PolicyModel>;

/** The model maker of --backend: Dawn's WebGPU in Node, or the CPU reference. */
async function modelMaker(backend: string): Promise<MakeModel> {
  if (backend === "webgpu") {
    const gpu = await createGpu(await nodeGpu());
    return (mc, w, seed) => GpuModel.create(gpu.device, mc, w, seed);
  }
  return async (mc, w, seed) => new CpuModel(mc, w, seed);
}

/** The SFT run into `sftDir`, with progress on stderr; its last row with val/ metrics and its seconds. */
async function runSftStage(config: RunConfig, sftDir: string, makeModel: MakeModel) {
  const sandbox = createNodeSandboxPool({ size: 1 });
  let finalRow: Record<string, unknown> = {};
  const t1 = Date.now();
  try {
    await runToFolder({
      config,
      edits: [],
      out: sftDir,
      makeModel,
      sandbox,
      readFile: async (f) => new Uint8Array(readFileSync(resolve(f))),
      on: {
        row(row) {
          if (
            row.phase === "sft" &&
            (row.step % (config.sft.steps > 50 ? 25 : 1) === 0 || row.step === config.sft.steps)
          )
            console.error(
              `2/3 sft ${row.step}/${config.sft.steps} loss ${Number(row.loss).toFixed(3)} ${((Date.now() - t1) / 1000).toFixed(0)} s`,
            );
          if (Object.keys(row).some((k) => k.startsWith("val/"))) finalRow = row;
        },
      },
    });
  } finally {
    await sandbox.close();
  }
  return { finalRow, sftSeconds: (Date.now() - t1) / 1000 };
}

async function main() {
  const p = parseCliArgs(
    process.argv.slice(2),
    { flags: ["--small"], values: ["--recipe", "--out", "--work", "--sft-steps", "--backend", "--from"] },
    usage,
  );
  const small = p.flags.has("--small");
  const recipePath = p.values.get("--recipe") ?? "cli/recipes/lab-llama-sft.json";
  const out = resolve(
    p.values.get("--out") ?? (small ? "runs/lab-llama-small/model" : "public/models/lab-llama"),
  );
  const work = resolve(p.values.get("--work") ?? (small ? "runs/lab-llama-small" : "runs/lab-llama"));
  const backend = p.values.get("--backend") ?? "cpu";
  if (backend !== "cpu" && backend !== "webgpu") usage(`--backend must be cpu or webgpu, not ${backend}`);
  const r = await loadRecipeFile(recipePath, async (f) => readFileSync(f, "utf8"), { presets: PRESETS });
  if (!r.ok) usage(r.error);
  // --from DIR: a further SFT stage from a model this script made (its tokenizer kept), else a fresh init.
  const from = p.values.get("--from");
  const initDir = from ? resolve(from) : join(work, "init");
  const over: Record<string, unknown> = { model: { pretrained: initDir } };
  const steps = p.values.get("--sft-steps");
  if (steps !== undefined)
    over.sft = { steps: Number(steps), warmup_steps: Math.min(r.config.sft.warmup_steps, Number(steps)) };
  if (small) over.task = { eval_size: Math.min(2, r.config.task.eval_size) };
  const parsed = parseRunConfig(mergeConfig(r.config, over));
  if (!parsed.ok) usage(parsed.errors.map((e) => `${e.path}: ${e.message}`).join("; "));
  const config = parsed.config;
  const t0 = Date.now();

  const shape = small ? SMALL_SHAPE : LAB_LLAMA_SHAPE;
  const init = from
    ? folderSizes(initDir, config)
    : writeInitFolder(initDir, config, shape, small ? SMALL_VOCAB : LAB_LLAMA_VOCAB, small ? 500 : 2000);
  console.error(
    `1/3 ${initDir}: tokenizer ${init.bpeSize} BPE entries + ${LAB_LLAMA_ADDED.length} added, ${init.params} parameters (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
  );
  // The source's files, read before OUT (which may be the same folder) is written.
  const sourceFiles = readSourceFiles(initDir);

  const sftDir = join(work, "sft");
  const { finalRow, sftSeconds } = await runSftStage(config, sftDir, await modelMaker(backend));

  const ck = loadCheckpoint(new Uint8Array(readFileSync(join(sftDir, "weights.safetensors"))));
  const earlier = from ? JSON.parse(sourceFiles["config.json"]).made_by : undefined;
  const madeBy =
    `${earlier ? `${earlier}; then ` : ""}${recipePath} by npm run make-lab-llama -- ${process.argv.slice(2).join(" ")}`.trim();
  const files = hfFiles(ck.config, ck.weights, null);
  const tensors = [...readSafetensors(files["model.safetensors"]).values()];
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "model.safetensors"), writeSafetensors(tensors, { format: "pt", made_by: madeBy }));
  const cfg = JSON.parse(sourceFiles["config.json"]);
  writeFileSync(join(out, "config.json"), `${JSON.stringify({ ...cfg, made_by: madeBy }, null, 2)}\n`);
  for (const f of ["tokenizer.json", "tokenizer_config.json", "generation_config.json"])
    writeFileSync(join(out, f), sourceFiles[f]);
  const val = Object.fromEntries(Object.entries(finalRow).filter(([k]) => k.startsWith("val/")));
  writeFileSync(
    join(out, "README.md"),
    modelCard(
      config,
      shape,
      init,
      madeBy,
      sftSeconds,
      val,
      backend,
      from ? priorStages(sourceFiles["README.md"]) : undefined,
    ),
  );
  console.error(
    `3/3 ${out}: ${JSON.stringify(val)} (SFT ${sftSeconds.toFixed(0)} s, all ${((Date.now() - t0) / 1000).toFixed(0)} s)`,
  );
}

function modelCard(
  config: RunConfig,
  shape: LabLlamaShape,
  init: { bpeSize: number; params: number },
  madeBy: string,
  sftSeconds: number,
  val: Record<string, unknown>,
  backend: string,
  prior?: string,
): string {
  const f = (k: string) => (typeof val[k] === "number" ? (val[k] as number).toFixed(3) : "-");
  const options = config.task.options as {
    oneOp?: boolean;
    sft?: { toolRate?: number; easyToolRate?: number; checkRate?: number };
  };
  const oneOp = config.task.name === "arithmetic" && options.oneOp === true;
  const calculator = config.task.name === "arithmetic" && !oneOp;
  const toolRate = options.sft?.toolRate ?? 0.3;
  const oneOpLine = `, the one-operation calculator (task.options.oneOp): chained calls, a call on ${options.sft?.easyToolRate ?? 0.5} of the easy problems and a repeated check call on ${options.sft?.checkRate ?? 0.5} of the others`;
  const engine = backend === "webgpu" ? "WebGPU backend (Dawn)" : "CPU backend";
  return `---
license: mit
library_name: transformers
pipeline_tag: text-generation
tags: [llama, tool-use, agentic-rl-lab]
---
# lab-llama

A tiny LlamaForCausalLM (${init.params.toLocaleString("en")} parameters: ${shape.layers} layers, hidden ${shape.hidden}, ${shape.heads} heads with ${shape.kvHeads} key/value heads, SwiGLU ${shape.intermediate}, RMSNorm, RoPE; ${shape.tied ? "tied" : "untied"} embeddings) made by the agentic RL lab to show the Hugging Face path on any machine: it was trained from random weights by SFT on ${config.task.name} conversations in its own ChatML template with Hermes tool calls, and a later run loads it as any Hub model (\`model.pretrained\`).

- made_by: ${madeBy}
- tokenizer: byte-level BPE, ${init.bpeSize} entries + ${LAB_LLAMA_ADDED.length} added tokens (ChatML and the Hermes tags), trained on the rendered conversations
- SFT${prior ? " (last stage)" : ""}: ${config.sft.steps} steps, batch ${config.sft.batch}, lr ${config.sft.lr}${calculator ? `, tool demonstrations ${toolRate}` : ""}${oneOp ? oneOpLine : ""}, context ${config.model.context} (${(sftSeconds / 60).toFixed(1)} min on the lab's ${engine})${prior ? `\n- earlier stages: ${prior}` : ""}
- held-out (${config.task.eval_size} problems of task ${config.task.name}): greedy accuracy ${f("val/acc")}, tool calls ${f("val/tool_call_rate")} (valid: ran without error ${f("val/valid_call_rate")}); sampled (T = ${config.sampling.temperature}) accuracy ${f("val/acc_sampled")}, tool calls ${f("val/tool_call_rate_sampled")} (valid ${f("val/valid_call_rate_sampled")})
${
  calculator
    ? "\nThe demonstrations are imperfect on purpose (the cold start of the calculator claims): some use the tool, the others answer directly and are often wrong on hard products, so RL has something to raise.\n"
    : oneOp
      ? "\nThe demonstrations over-call on purpose (the cold start of the OTC claim): every answer is right, but some calls are redundant, so a reward for fewer calls has calls to save.\n"
      : ""
}`;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve("cli/make-lab-llama.ts"))
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(`error: ${(err as Error).message}`);
      process.exit(1);
    },
  );
