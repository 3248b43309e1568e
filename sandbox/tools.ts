// The tool layer on top of runCode: the JavaScript interpreter tool, JSON tool calls to
// user-defined tools (arguments checked against the tool's schema; problems come back as
// results, never as exceptions), the text the model sees (formatToolResponse: ToRL keeps
// only an error's last line; long text is cut to head + "..." + tail), and user-written
// reward functions run in the sandbox. Works with any SandboxRunner (pool or in-process).
// Tested by sandbox/tools.test.ts.
import { boundedJson } from "./bounded-json.ts";
import { headTail } from "./run-code.ts";
import { validateArgs, validateToolSpec } from "./schema.ts";
import type {
  JsonObjectSchema,
  JsonValue,
  RunCodeRequest,
  RunCodeResult,
  SandboxRunner,
  ToolSpec,
} from "./types.ts";
import { sandboxError } from "./types.ts";

/** A tool as the model is told about it (no implementation). */
export interface ToolDeclaration {
  name: string;
  description: string;
  parameters: JsonObjectSchema;
}

/** The code interpreter tool: `{code}` in, the run's value/stdout or its error out. */
export const JS_INTERPRETER_TOOL: ToolDeclaration = {
  name: "run_javascript",
  description:
    "Runs JavaScript in a sandbox and returns the value of the last expression and anything printed with console.log. No network, timers or imports.",
  parameters: {
    type: "object",
    properties: {
      code: { type: "string", description: "JavaScript source; the last expression is the result." },
    },
    required: ["code"],
  },
};

/** Limits for a tool call, plus other tools the code may call. */
export type CallOptions = Omit<RunCodeRequest, "code">;

function hasBody(tool: ToolSpec | ToolDeclaration): tool is ToolSpec {
  return typeof (tool as ToolSpec).body === "string";
}

/** A call refused before running: a typed Failed result, as the model should see it. */
function refused(name: string, message: string): RunCodeResult {
  return {
    status: "Failed",
    run_result: {
      status: "Error",
      execution_time: 0,
      return_code: 1,
      stdout: "",
      stderr: `Uncaught ${name}: ${message}\n`,
    },
    error: { kind: "Exception", name, message },
    truncated: false,
  };
}

/**
 * Runs one JSON tool call: `args` is the arguments object, or its JSON text as the model
 * wrote it. The interpreter tool runs `args.code`; a user-defined tool runs its body.
 */
export async function callTool(
  runner: SandboxRunner,
  tool: ToolSpec | ToolDeclaration,
  args: unknown,
  options: CallOptions = {},
): Promise<RunCodeResult> {
  let parsed = args;
  if (typeof args === "string") {
    try {
      parsed = JSON.parse(args);
    } catch (e) {
      return refused(
        "ToolArgumentError",
        `${tool.name}: arguments are not valid JSON (${(e as Error).message})`,
      );
    }
  }
  const problem = validateArgs(tool.parameters, parsed);
  if (problem) return refused("ToolArgumentError", `${tool.name}: ${problem}`);
  const others = (options.tools ?? []).filter((t) => t.name !== tool.name);
  if (!hasBody(tool)) {
    if (tool.name !== JS_INTERPRETER_TOOL.name)
      return sandboxError(`tool ${tool.name} has no body`, "InvalidRequest");
    return runner.run({ ...options, code: (parsed as { code: string }).code, tools: others });
  }
  const specProblem = validateToolSpec(tool);
  if (specProblem) return sandboxError(specProblem, "InvalidRequest");
  return runner.run({
    ...options,
    code: `${tool.name}(${JSON.stringify(parsed)})`,
    tools: [tool, ...others],
  });
}

/**
 * Runs a parsed `{"name": ..., "arguments": ...}` call against the tools a task offers
 * (the interpreter tool included, if offered); an unknown name is a Failed result too.
 */
export function callNamedTool(
  runner: SandboxRunner,
  tools: (ToolSpec | ToolDeclaration)[],
  call: { name: string; arguments?: unknown },
  options: CallOptions = {},
): Promise<RunCodeResult> {
  const tool = tools.find((t) => t.name === call.name);
  if (!tool) {
    const known = tools.map((t) => t.name).join(", ") || "none";
    return Promise.resolve(
      refused("ToolNotFoundError", `no tool named ${JSON.stringify(call.name)} (tools: ${known})`),
    );
  }
  const others = tools.filter((t): t is ToolSpec => hasBody(t));
  return callTool(runner, tool, call.arguments ?? {}, {
    ...options,
    tools: [...(options.tools ?? []), ...others],
  });
}

export interface FormatOptions {
  /** The longest text returned; longer text keeps its head and tail around "...". */
  maxChars: number;
  /** ToRL: an error shows only its last line ("SyntaxError: unexpected token"). */
  errorLastLineOnly: boolean;
}

export const FORMAT_DEFAULTS: FormatOptions = { maxChars: 1024, errorLastLineOnly: true };

/** The longest JSON text written of a value before formatToolResponse cuts it to head + tail. */
const VALUE_TEXT_MAX = 4 << 20;

/** `Name: message`, cut to its last non-empty line. */
export function errorLastLine(result: RunCodeResult): string {
  const e = result.error;
  const full = e ? `${e.name}: ${e.message}` : result.run_result.stderr;
  const lines = full.split("\n").filter((l) => l.trim() !== "");
  return lines.length ? lines[lines.length - 1].trim() : "Error";
}

/** The text the model sees for a tool result. */
export function formatToolResponse(result: RunCodeResult, options: Partial<FormatOptions> = {}): string {
  const { maxChars, errorLastLineOnly } = { ...FORMAT_DEFAULTS, ...options };
  let text: string;
  if (result.status !== "Success") {
    text = errorLastLineOnly
      ? errorLastLine(result)
      : `${result.run_result.stdout}${result.run_result.stderr}`.trimEnd() || errorLastLine(result);
  } else {
    const parts: string[] = [];
    const stdout = result.run_result.stdout.trimEnd();
    if (stdout) parts.push(stdout);
    if (result.value !== undefined)
      parts.push(typeof result.value === "string" ? result.value : boundedJson(result.value, VALUE_TEXT_MAX));
    text = parts.join("\n");
  }
  return headTail(text, maxChars);
}

export type RewardOutcome = { ok: true; value: number } | { ok: false; error: string };

/**
 * Runs a user-written reward `(trajectory) => number` in the sandbox on one trajectory
 * (an object, or its JSON text). Anything but a finite number is an error.
 */
export async function runRewardFunction(
  runner: SandboxRunner,
  source: string,
  trajectoryJson: string | JsonValue,
  options: CallOptions = {},
): Promise<RewardOutcome> {
  const json = typeof trajectoryJson === "string" ? trajectoryJson : JSON.stringify(trajectoryJson);
  const code = `(${source}\n)(JSON.parse(${JSON.stringify(json)}))`;
  const result = await runner.run({ run_timeout: 1, ...options, code });
  if (result.status !== "Success") return { ok: false, error: errorLastLine(result) };
  const v = result.value;
  if (typeof v === "number" && Number.isFinite(v)) return { ok: true, value: v };
  const shown = v === undefined ? "undefined" : typeof v === "string" ? v : boundedJson(v, 200);
  return { ok: false, error: `the reward function must return a finite number, got ${headTail(shown, 80)}` };
}
