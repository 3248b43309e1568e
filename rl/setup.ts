// Turns a RunConfig into the parts a Trainer needs that do not depend on where it runs:
// the model's architecture, the task, and the chat format (tokenizer + template). The GPU
// device, the sandbox pool and storage are wired by the caller (workers/trainer.worker.ts in
// the browser, cli/ in Node), which also says how files are read.
import type { RunConfig } from "../config";
import { builtinChat, type ChatFormat, jinjaChat } from "../model/chat";
import { type ModelConfig, modelConfig } from "../model/config";
import { HfTokenizer, loadHfTokenizerFiles } from "../model/hf-tokenizer";
import { CHAR_TOKENIZER, VOCAB_SIZE } from "../model/tokenizer";
import { makeArithmeticTask } from "../tasks/arithmetic";
import { makeFrozenLakeTask } from "../tasks/frozenlake";
import { makeFunctionCallingTask } from "../tasks/function-calling";
import { makeSokobanTask } from "../tasks/sokoban";
import { type AnyTask, type EnvTask, isEnvTask, type Task } from "../tasks/types";
import { makeWordProblemsTask } from "../tasks/word-problems";
import { chatToolsOf } from "./tools";

/** The lab architecture of the config; `vocab` is the tokenizer's (the character tokenizer's 107 by default). */
export function modelConfigOf(c: RunConfig, vocab = VOCAB_SIZE): ModelConfig {
  return modelConfig({
    layers: c.model.layers,
    dModel: c.model.d_model,
    heads: c.model.heads,
    context: c.model.context,
    vocab,
    norm: c.model.norm,
    mlp: c.model.mlp,
    positional: c.model.positional,
    tiedEmbeddings: c.model.tied_embeddings,
    valueHead: c.rl.advantage === "gae",
  });
}

type Options = Record<string, unknown>;

const TASK_FACTORIES: Record<string, (options: Options) => AnyTask> = {
  arithmetic: (o) => makeArithmeticTask(o as Parameters<typeof makeArithmeticTask>[0]),
  "word-problems": (o) => makeWordProblemsTask(o as Parameters<typeof makeWordProblemsTask>[0]),
  "function-calling": (o) => makeFunctionCallingTask(o as Parameters<typeof makeFunctionCallingTask>[0]),
  frozenlake: (o) => makeFrozenLakeTask(o as Parameters<typeof makeFrozenLakeTask>[0]),
  sokoban: (o) => makeSokobanTask(o as Parameters<typeof makeSokobanTask>[0]),
};

/**
 * The run's task or multi-turn environment, built with task.options (less the `sft` knobs,
 * which go to sftDemos). Environments (frozenlake, sokoban) come back as EnvTasks.
 */
export function runTaskOf(c: RunConfig): AnyTask {
  const make = TASK_FACTORIES[c.task.name];
  if (!make)
    throw new Error(
      `task.name: unknown task "${c.task.name}" (known: ${Object.keys(TASK_FACTORIES).join(", ")})`,
    );
  const { sft: _sft, ...options } = c.task.options as Options;
  return make(options);
}

/** The run's single-turn task (prompts, verifier, tools). Environments have no tools or verifier: use runTaskOf. */
export function taskOf(c: RunConfig): Task {
  const t = runTaskOf(c);
  if (isEnvTask(t))
    throw new Error(
      `task.name: "${c.task.name}" is a multi-turn environment; it has no prompts or tools of its own (runTaskOf gives the EnvTask)`,
    );
  return t;
}

/** The run's environment, or undefined for a single-turn task. */
export function envTaskOf(c: RunConfig): EnvTask | undefined {
  const t = runTaskOf(c);
  return isEnvTask(t) ? t : undefined;
}

/**
 * The run's tokenizer and template: model.tokenizer (or, when null, model.pretrained) names
 * the folder whose tokenizer.json is used; neither is the character tokenizer; task.template "model" is that folder's own Jinja chat template with
 * the task's tools (Hermes calls), the others are the lab's templates.
 */
export async function chatFormatOf(
  c: RunConfig,
  readFile: (path: string) => Promise<Uint8Array>,
): Promise<ChatFormat> {
  const dir = c.model.tokenizer ?? c.model.pretrained;
  if (dir === null) {
    if (c.task.template === "model")
      throw new Error(
        'task.template: "model" is the tokenizer\'s own chat template; set model.tokenizer to a folder with tokenizer.json and tokenizer_config.json',
      );
    return builtinChat(c.task.template, CHAR_TOKENIZER);
  }
  const files = await loadHfTokenizerFiles(dir, readFile);
  const tokenizer = new HfTokenizer(files, dir);
  if (c.task.template !== "model") return builtinChat(c.task.template, tokenizer);
  const task = runTaskOf(c);
  if (isEnvTask(task))
    throw new Error(
      `task.template: "model" is for single-turn tasks; ${task.name} is a multi-turn environment`,
    );
  return jinjaChat(tokenizer, files.config, {
    tools: chatToolsOf(task.tools),
    check: c.task.tokenization_check,
    toolPrompt: c.task.tool_prompt,
    source: `${dir}/tokenizer_config.json`,
  });
}
