// The task registry: every built-in task and environment by name, for the config, the UI's
// task picker, the trainer and the CLI. JSONL tasks are made at run time by importJsonl().
// Tested by tasks/index.test.ts.

import { arithmeticTask } from "./arithmetic.ts";
import { frozenLakeTask } from "./frozenlake.ts";
import { functionCallingTask } from "./function-calling.ts";
import { sokobanTask } from "./sokoban.ts";
import type { AnyTask } from "./types.ts";
import { wordProblemsTask } from "./word-problems.ts";

export const TASKS: Record<string, AnyTask> = {
  arithmetic: arithmeticTask,
  "word-problems": wordProblemsTask,
  "function-calling": functionCallingTask,
  frozenlake: frozenLakeTask,
  sokoban: sokobanTask,
};

export const TASK_NAMES = Object.keys(TASKS);

export function getTask(name: string): AnyTask {
  const t = TASKS[name];
  if (!t) throw new Error(`unknown task "${name}" (known: ${TASK_NAMES.join(", ")}; user data: importJsonl)`);
  return t;
}

export { importJsonl } from "./jsonl.ts";
export * from "./rng.ts";
export * from "./types.ts";
