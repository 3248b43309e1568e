// Turns a RunConfig into the parts a Trainer needs that do not depend on where it runs:
// the model's architecture and the task. The GPU device, the sandbox pool and storage are
// wired by the caller (workers/trainer.worker.ts in the browser, cli/ in Node).
import type { RunConfig } from "../config";
import { modelConfigOf } from "../model/config";
import { getTask } from "../tasks/index";
import { type AnyTask, type EnvTask, isEnvTask, type Task } from "../tasks/types";

/** The model's architecture from a RunConfig (model/config.ts; the config panel counts parameters with it). */
export { modelConfigOf };

/**
 * The run's task or multi-turn environment, from the task registry (tasks/index.ts) with
 * task.options checked by the task's own schema (the `sft` knobs go to sftDemos).
 * Environments (frozenlake, sokoban) come back as EnvTasks.
 */
export function runTaskOf(c: RunConfig): AnyTask {
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
