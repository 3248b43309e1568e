// Turns a RunConfig into the parts a Trainer needs that do not depend on where it runs:
// the model's architecture and the task. The GPU device, the sandbox pool and storage are
// wired by the caller (workers/trainer.worker.ts in the browser, cli/ in Node).

import type { RunConfig } from "../config";
import { type ModelConfig, modelConfig } from "../model/config";
import { LORA_TARGETS } from "../model/lora";
import { VOCAB_SIZE } from "../model/tokenizer";
import { makeArithmeticTask } from "../tasks/arithmetic";
import { makeFrozenLakeTask } from "../tasks/frozenlake";
import { makeFunctionCallingTask } from "../tasks/function-calling";
import { makeSokobanTask } from "../tasks/sokoban";
import { type AnyTask, type EnvTask, isEnvTask, type Task } from "../tasks/types";
import { makeWordProblemsTask } from "../tasks/word-problems";

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
    lora: {
      rank: c.model.lora.rank,
      alpha: c.model.lora.alpha,
      targets:
        c.model.lora.targets === "all-linear"
          ? LORA_TARGETS.filter((t) => t !== "gate_proj" || c.model.mlp === "swiglu")
          : [...c.model.lora.targets],
    },
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
