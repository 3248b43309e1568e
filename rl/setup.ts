// Turns a RunConfig into the parts a Trainer needs that do not depend on where it runs:
// the model's architecture and the task. The GPU device, the sandbox pool and storage are
// wired by the caller (workers/trainer.worker.ts in the browser, cli/ in Node).
import type { RunConfig } from "../config";
import { type ModelConfig, modelConfig } from "../model/config";
import { VOCAB_SIZE } from "../model/tokenizer";
import { makeArithmeticTask } from "../tasks/arithmetic";
import { getTask } from "../tasks/index";
import { isEnvTask, type Task } from "../tasks/types";

export function modelConfigOf(c: RunConfig): ModelConfig {
  return modelConfig({
    layers: c.model.layers,
    dModel: c.model.d_model,
    heads: c.model.heads,
    context: c.model.context,
    vocab: VOCAB_SIZE,
    norm: c.model.norm,
    mlp: c.model.mlp,
    positional: c.model.positional,
    tiedEmbeddings: c.model.tied_embeddings,
    valueHead: c.rl.advantage === "gae",
  });
}

const TASK_FACTORIES: Record<string, (options: Record<string, unknown>) => Task> = {
  arithmetic: (o) => makeArithmeticTask(o as Parameters<typeof makeArithmeticTask>[0]),
};

export function taskOf(c: RunConfig): Task {
  const make = TASK_FACTORIES[c.task.name];
  if (!make)
    throw new Error(
      `task.name: unknown task "${c.task.name}" (known: ${Object.keys(TASK_FACTORIES).join(", ")})`,
    );
  const { sft: _sft, ...options } = c.task.options as Record<string, unknown>;
  return make(options);
}
