// The task registry, the one table of built-in tasks and environments by name: its options
// schema (task.options, checked with a message naming the option) and its factory. The
// config, the UI's task picker, the trainer (rl/run/run-parts.ts runTaskOf) and the CLI use it; a new
// task is one entry. JSONL tasks are made at run time by importJsonl().
// Tested by tasks/index.test.ts.
import type { z } from "zod";
import { own } from "../config/own.ts";
import { makeArithmeticTask } from "./arithmetic.ts";
import {
  DEFAULT_ENV_LIMITS,
  EnvError,
  envErrorText,
  type JsEnvLimits,
  makeJsEnvTask,
} from "./env-api/js-env.ts";
import { envTemplate } from "./env-api/templates.ts";
import { makeFrozenLakeTask } from "./frozenlake.ts";
import { makeFunctionCallingTask } from "./function-calling.ts";
import {
  ARITHMETIC_OPTIONS,
  ENV_OPTIONS,
  FROZENLAKE_OPTIONS,
  FUNCTION_CALLING_OPTIONS,
  parseTaskOptions,
  SOKOBAN_OPTIONS,
  WORD_PROBLEMS_OPTIONS,
} from "./options.ts";
import { makeSokobanTask } from "./sokoban.ts";
import { SPLIT_VERSION, type SplitVersion } from "./split.ts";
import type { AnyTask } from "./types.ts";
import { makeWordProblemsTask } from "./word-problems.ts";

export interface TaskEntry<O extends { sft?: unknown } = { sft?: unknown }> {
  /** task.options: a strict object; `sft` holds the demo knobs the trainer passes to sftDemos. */
  options: z.ZodType<O>;
  /** The task from its options (less `sft`) and the run's split version (tasks/split.ts). */
  make(options: Omit<O, "sft"> & { splitVersion?: SplitVersion }): AnyTask;
}

const entry = <O extends { sft?: unknown }>(e: TaskEntry<O>) => e as unknown as TaskEntry;

export const TASKS: Record<string, TaskEntry> = {
  arithmetic: entry({ options: ARITHMETIC_OPTIONS, make: makeArithmeticTask }),
  "word-problems": entry({ options: WORD_PROBLEMS_OPTIONS, make: makeWordProblemsTask }),
  "function-calling": entry({ options: FUNCTION_CALLING_OPTIONS, make: makeFunctionCallingTask }),
  frozenlake: entry({ options: FROZENLAKE_OPTIONS, make: makeFrozenLakeTask }),
  sokoban: entry({ options: SOKOBAN_OPTIONS, make: makeSokobanTask }),
  env: entry({ options: ENV_OPTIONS, make: (o) => makeEnvTask(o) }),
};

/** The module a JS environment's options name: its source, or a template's. */
export function envSourceOf(options: { source?: string; template?: string }): string {
  return options.source ?? envTemplate(options.template ?? "").source;
}

/**
 * A JS environment's task (task.name "env"); `limits` are the run's (rl/setup.ts passes
 * limits.*). A module that does not compile or describe itself throws naming
 * task.options.source, the line, and the error.
 */
export function makeEnvTask(
  options: { source?: string; template?: string; max_turns?: number },
  limits: JsEnvLimits = DEFAULT_ENV_LIMITS,
): AnyTask {
  try {
    return makeJsEnvTask(envSourceOf(options), { ...limits, maxTurns: options.max_turns ?? limits.maxTurns });
  } catch (e) {
    if (e instanceof EnvError)
      throw new Error(`task.options.${options.source ? "source" : "template"}: ${envErrorText(e)}`);
    throw e;
  }
}

export const TASK_NAMES = Object.keys(TASKS);

function entryOf(name: string): TaskEntry {
  const t = own(TASKS, name);
  if (!t)
    throw new Error(
      `task.name: unknown task "${name}" (known: ${TASK_NAMES.join(", ")}; user data: importJsonl)`,
    );
  return t;
}

/** A task's options, checked by its schema; throws naming each bad option (task.options.<name>: ...). */
export function taskOptions(
  name: string,
  options: unknown,
): { sft?: Record<string, unknown> } & Record<string, unknown> {
  return parseTaskOptions(name, entryOf(name).options, options) as { sft?: Record<string, unknown> };
}

/**
 * The task `name` built with `options` (checked; the `sft` knobs are for sftDemos, not the
 * factory) under split `version` (RunConfig task.split_version; environments ignore it).
 */
export function getTask(
  name: string,
  options: unknown = {},
  split: { version: SplitVersion } = { version: SPLIT_VERSION },
): AnyTask {
  const { sft: _sft, ...rest } = taskOptions(name, options);
  return entryOf(name).make({ ...rest, splitVersion: split.version });
}

export { importJsonl } from "./jsonl.ts";
export * from "./rng.ts";
export * from "./types.ts";
