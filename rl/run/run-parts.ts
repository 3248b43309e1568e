// Turns a RunConfig into the parts a Trainer needs that do not depend on where it runs:
// the model's architecture, the task, and the chat format (tokenizer + template). The GPU
// device, the sandbox pool and storage are wired by the caller (workers/trainer.worker.ts in
// the browser, cli/ in Node), which also says how files are read.
import type { RunConfig } from "../../config";
import { builtinChat, type ChatFormat, jinjaChat } from "../../model/chat";
import { modelConfigOf } from "../../model/config";
import { HfTokenizer, loadHfTokenizerFiles } from "../../model/hf/tokenizer";
import { CHAR_TOKENIZER } from "../../model/tokenizer";
import { getTask, makeEnvTask, taskOptions } from "../../tasks";
import { type AnyTask, type EnvTask, isEnvTask, type Task } from "../../tasks/types";
import { chatToolsOf } from "../rollout/tool-protocol";

/** The model's architecture from a RunConfig (model/config.ts; the config panel counts parameters with it). */
export { modelConfigOf };

/**
 * The run's task or multi-turn environment, from the task registry (tasks/index.ts) with
 * task.options checked by the task's own schema (the `sft` knobs go to sftDemos).
 * Environments (frozenlake, sokoban) come back as EnvTasks.
 */
export function runTaskOf(c: RunConfig): AnyTask {
  // A JS environment runs under the run's tool limits: its calls' time and memory, and the
  // tool calls an episode may make.
  if (c.task.name === "env")
    return makeEnvTask(taskOptions("env", c.task.options) as { source?: string; template?: string }, {
      timeoutS: c.limits.tool_timeout_s,
      memoryMB: c.limits.memory_mb,
      maxToolCalls: c.limits.max_tool_calls,
    });
  return getTask(c.task.name, c.task.options, { version: c.task.split_version });
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
