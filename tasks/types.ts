// The task and environment interfaces every generator in tasks/ implements, plus the
// message and tool-spec shapes they exchange with the rollout (rl/) and the sandbox.
// Tasks produce strings and messages, never tokens: the chat template (model/) turns
// them into tokens. Exercised by every tasks/*.test.ts.

import type { ToolSpec as SandboxToolSpec } from "../sandbox/types.ts";
import type { Rng } from "./rng.ts";

export type TemplateName = "inline" | "chatml-turns";

export type Role = "system" | "user" | "assistant" | "tool";

/**
 * One chat message, the shape model/template.ts renders. A "tool" message holds one tool
 * response's bare text (no tags): the template wraps it in `<tool_response>..</tool_response>`,
 * inside the assistant turn for `inline`, as a user turn for `chatml-turns`, and masks it.
 */
export interface Message {
  role: Role;
  content: string;
}

/**
 * A user-defined tool: the sandbox's own declaration (sandbox/types.ts ToolSpec), the one type
 * a task, the sandbox, training and the exports share. `body` is the source of a JS function
 * over the parsed arguments that returns a JSON value.
 */
export type UserToolSpec = SandboxToolSpec;

/**
 * A built-in code tool: the model writes bare code inside `<tool_call>..</tool_call>`.
 * `allowedChars` (a regex character-class body such as `0-9+\-*() `) restricts the input;
 * anything else is refused with a short error, as the demo's calculator does.
 */
export interface BuiltinToolSpec {
  builtin: "js";
  name: string;
  description: string;
  allowedChars?: string;
  /** Refuses code with more binary operators than this (the one-operation calculator: 1). */
  maxOperators?: number;
}

/** A tool a task offers: a user-defined one (the sandbox's ToolSpec) or the built-in code tool. */
export type TaskTool = UserToolSpec | BuiltinToolSpec;

export function isBuiltinTool(spec: TaskTool): spec is BuiltinToolSpec {
  return "builtin" in spec;
}

/** A prompt to roll out. `answer` is the reference answer as text. */
export interface Problem {
  id: string;
  messages: Message[];
  answer: string;
  bucket: string;
  meta: Record<string, unknown>;
}

/** A tool call as the verifier sees it (after rl/rollout/parse.ts has parsed the text). */
export interface CallRecord {
  name: string;
  arguments?: Record<string, unknown>;
  code?: string;
}

/** What a verifier may look at beyond the final answer. */
export interface Trajectory {
  /** The whole generated text (all assistant turns, tool responses included). */
  text?: string;
  /** The parsed, well-formed tool calls in order. */
  calls?: CallRecord[];
}

export interface VerifyResult {
  correct: boolean;
  /** In [0, 1] unless a task documents otherwise; 1 when correct. */
  score: number;
  detail?: Record<string, unknown>;
  /**
   * Set when the verdict needs the sandbox (a user-written JS verifier). `correct` is then
   * false until the caller runs `source` with `(answer, reference, prompt)` and replaces it.
   */
  deferred?: { kind: "js"; source: string };
}

/** A full SFT conversation: prompt messages then assistant turn(s) with tool traffic. */
export interface Demo {
  id: string;
  messages: Message[];
  bucket: string;
  meta: Record<string, unknown>;
}

/** The outcome of running a tool locally (pure tasks only): `output` goes into `<tool_response>`. */
export interface LocalToolResult {
  ok: boolean;
  output: string;
}

export interface Task {
  name: string;
  description: string;
  defaultTemplate: TemplateName;
  tools: TaskTool[];
  buckets: string[];
  /** Seeded training prompts; never returns a prompt of evalSet (hash split on the problem key). */
  sample(rng: Rng, n: number): Problem[];
  /** Deterministic held-out prompts, disjoint from anything sample() returns. */
  evalSet(n: number): Problem[];
  /**
   * Deterministic dev prompts (split version 2), disjoint from both sample() and evalSet():
   * for choosing stopping steps and knobs without looking at the reported held-out set.
   */
  devSet?(n: number): Problem[];
  verify(problem: Problem, finalAnswerText: string | null, trajectory?: Trajectory): VerifyResult;
  /** Cold-start conversations; knobs are task-specific (see each task's Knobs type). */
  sftDemos(rng: Rng, n: number, knobs?: Record<string, unknown>): Demo[];
  /**
   * Runs a tool call without the sandbox when the task's tools are pure functions
   * (the calculator). Returns undefined for a tool this task does not know.
   */
  runToolLocally?(name: string, input: string | Record<string, unknown>): LocalToolResult | undefined;
}

// ---------------------------------------------------------------------------------------
// Multi-turn environments (RAGEN / StarPO style; GiGPO groups steps by anchorKey).

export interface StepResult {
  observation: string;
  reward: number;
  done: boolean;
  info: {
    /** The action parsed out of the model text; null when none was valid. */
    action: string | null;
    valid: boolean;
    /** The episode ended because the goal was reached. */
    success: boolean;
    /** The episode ended because maxSteps ran out. */
    truncated: boolean;
    steps: number;
    [key: string]: unknown;
  };
}

export interface Env<S = unknown> {
  readonly name: string;
  readonly maxSteps: number;
  readonly actions: readonly string[];
  /** Starts an episode; the same seed always gives the same start state. */
  reset(seed: number): string;
  /** Takes the model's text (`<answer>Left</answer>` or a bare action word). */
  step(action: string): StepResult;
  /** A copy of the current state. */
  state(): S;
  /** Exact-equality key of a state for GiGPO step groups (map identity + positions). */
  anchorKey(state?: S): string;
  render(state?: S): string;
  /**
   * The episode's opening messages, for an environment that writes its own (a JS
   * environment's reset); absent: the task's instructions, then the first observation.
   */
  messages?(): Message[];
}

export interface EnvTask {
  name: string;
  description: string;
  kind: "env";
  defaultTemplate: TemplateName;
  buckets: string[];
  /** The system/user preamble before the first observation. */
  instructions: string;
  make(): Env;
  /** Seeds for training episodes; never an eval seed. */
  sampleSeeds(rng: Rng, n: number): number[];
  /** Deterministic held-out seeds, disjoint from sampleSeeds. */
  evalSeeds(n: number): number[];
  /**
   * Cold-start episodes played by a solver on training seeds, as chatml-turns conversations:
   * system instructions, then user observation / assistant `<answer>action</answer>` turns.
   */
  sftDemos(rng: Rng, n: number, knobs?: { thinkRate?: number }): Demo[];
}

export type AnyTask = Task | EnvTask;

export function isEnvTask(task: AnyTask): task is EnvTask {
  return "kind" in task && task.kind === "env";
}
