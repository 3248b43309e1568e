// The ToolProtocol a rollout uses, built from a task's tools and a sandbox: parses the calls
// the model wrote (rl/rollout/parse.ts) and runs them in QuickJS (sandbox/), all calls of a batch at
// once. The built-in code tool runs the code itself (after the task's character check, as the
// demo's calculator does, and its operator limit, as the one-operation calculator's); a user-defined tool runs its JS body with the JSON arguments,
// which the sandbox validates against the tool's schema. With the
// Hermes syntax (a model's own chat template) every call is JSON, `{"name": .., "arguments":
// {..}}`, and the code tool takes its code as the string argument `code` (chatToolsOf()
// describes it so). Malformed JSON, an unknown tool and bad arguments each come back as a
// failed tool result the model sees (ok: false), never as exceptions.
// Tested by rl/rollout/agent-loop.test.ts and rl/rollout/hermes.test.ts.
import { CODE_ARG } from "../../model/tool-list-prompt";
import { formatToolResponse } from "../../sandbox/tools";
import type { RunCodeResult, SandboxRunner } from "../../sandbox/types";
import { binaryOperatorCount, ONE_OP_ERROR } from "../../tasks/calc";
import { isBuiltinTool, type TaskTool, type UserToolSpec } from "../../tasks/types";
import type { ToolCallRequest, ToolOutcome, ToolProtocol } from "./agent-loop";
import { parseToolCalls, type ToolCallFormat } from "./parse";

export interface ToolLimits {
  /** Seconds of interpreter time per call. */
  timeoutS: number;
  memoryMB: number;
}

function outcomeOf(r: RunCodeResult): ToolOutcome {
  const ok = r.status === "Success";
  const status = ok ? "Success" : r.error ? `${r.error.kind}: ${r.error.name}` : r.status;
  // The rollout cuts the text to limits.max_tool_response_chars; keep it whole here.
  return { ok, text: formatToolResponse(r, { maxChars: Number.MAX_SAFE_INTEGER }), status, detail: r.value };
}

// The task's tools as a chat template lists them: a pure module the export shares.
export { CODE_ARG, chatToolsOf } from "../../model/tool-list-prompt";

export function makeToolProtocol(
  tools: TaskTool[],
  sandbox: SandboxRunner,
  limits: ToolLimits,
  syntax: "inline" | "hermes" = "inline",
): ToolProtocol {
  const builtin = tools.find(isBuiltinTool);
  const userTools = tools.filter((t): t is UserToolSpec => !isBuiltinTool(t));
  const formats: ToolCallFormat[] = [];
  if (userTools.length > 0 || (builtin && syntax === "hermes")) formats.push("json");
  if (builtin && syntax === "inline") formats.push("code");
  const allowed = builtin?.allowedChars ? new RegExp(`^[${builtin.allowedChars}]*$`) : undefined;
  const request = { run_timeout: limits.timeoutS, memory_limit_MB: limits.memoryMB };

  async function runOne(call: ToolCallRequest, seed: number | undefined): Promise<ToolOutcome> {
    if (call.error) return { ok: false, text: call.error, status: "ParseError" };
    if (builtin && call.name === builtin.name) {
      // Inline calls carry bare code; Hermes calls carry it as the "code" argument.
      const code = call.code ?? call.arguments?.[CODE_ARG];
      if (typeof code !== "string")
        return {
          ok: false,
          text: `Error: bad arguments for ${builtin.name}: "${CODE_ARG}" must be a string`,
          status: "BadArguments",
        };
      if (allowed && !allowed.test(code))
        return { ok: false, text: "SyntaxError", status: "Refused: characters" };
      const max = builtin.maxOperators;
      const ops = max === undefined ? null : binaryOperatorCount(code);
      if (max !== undefined && ops !== null && ops > max) {
        const text = max === 1 ? ONE_OP_ERROR : `Error: at most ${max} operations per call`;
        return { ok: false, text, status: "Refused: operators" };
      }
      return outcomeOf(await sandbox.run({ ...request, code, seed }));
    }
    const spec = userTools.find((t) => t.name === call.name);
    if (!spec)
      return { ok: false, text: `Error: unknown tool ${JSON.stringify(call.name)}`, status: "UnknownTool" };
    const code = `${spec.name}(${JSON.stringify(call.arguments ?? {})})`;
    return outcomeOf(await sandbox.run({ ...request, code, tools: [spec], seed }));
  }

  return {
    parse(segment) {
      if (formats.length === 0) return [];
      return parseToolCalls(segment, { formats, codeToolName: builtin?.name ?? "run_code" }).map((c) =>
        c.ok
          ? { name: c.name, code: c.code, arguments: c.arguments, raw: c.raw }
          : { name: "", raw: c.raw, error: `Error: ${c.message}` },
      );
    },
    execute(calls, seeds) {
      return Promise.all(
        calls.map((c, i) =>
          runOne(c, seeds?.[i]).catch((e: Error) => ({ ok: false, text: e.message, status: "SandboxError" })),
        ),
      );
    },
  };
}
