// The tool list as the lab writes it into the system message for a chat template that ignores
// `tools` (SmolLM2-Instruct's; task.tool_prompt "hermes"): the task's tools in the OpenAI
// function shape, the Hermes call syntax, and where the text goes (appended to the first system
// message, or a system message of its own). Pure text: no tokenizer, no Jinja, so the export
// (export/, which runs in the page without model files) writes exactly the lab's text into its
// parquet prompts. model/chat.ts (JinjaChat) and rl/rollout/tool-protocol.ts re-export and use it.
// Tested by model/chat.test.ts (the lab's rendering) and export/export.test.ts (the export's prompts).
import { isBuiltinTool, type TaskTool } from "../tasks/types";

/** A tool as a chat template sees it (OpenAI function shape) plus how inline calls map onto it. */
export interface ChatTool {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
  /** A code tool: an inline `<tool_call>CODE</tool_call>` becomes `{"name", "arguments": {[codeArg]: CODE}}`. */
  codeArg?: string;
}

/** The code tool's one argument in the Hermes form. */
export const CODE_ARG = "code";

/** The task's tools as a chat template lists them (a code tool takes `{"code": string}`). */
export function chatToolsOf(tools: readonly TaskTool[]): ChatTool[] {
  return tools.map((t) =>
    isBuiltinTool(t)
      ? {
          name: t.name,
          description: t.description,
          parameters: {
            type: "object",
            properties: { [CODE_ARG]: { type: "string", description: "The JavaScript code to run." } },
            required: [CODE_ARG],
          },
          codeArg: CODE_ARG,
        }
      : { name: t.name, description: t.description, parameters: { ...t.parameters } },
  );
}

/** The OpenAI function shape templates iterate over as `tools`. */
export function functionSpecs(tools: readonly ChatTool[]): Record<string, unknown>[] {
  return tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

/** The tool list in the system message, for a template that ignores `tools` (the "hermes" format). */
export function hermesToolPrompt(tools: readonly ChatTool[]): string {
  return [
    "# Tools",
    "",
    "You may call functions to answer. Their signatures, one JSON object per line, are inside <tools></tools>:",
    "<tools>",
    ...functionSpecs(tools).map((f) => JSON.stringify(f)),
    "</tools>",
    "",
    "To call one, write its name and a JSON object of arguments inside <tool_call></tool_call> tags:",
    "<tool_call>",
    '{"name": <function-name>, "arguments": <args-json-object>}',
    "</tool_call>",
  ].join("\n");
}

/**
 * The messages with the tool list in the system message: appended to a first system message
 * after a blank line, or as a system message of its own before the others.
 */
export function withToolPrompt<M extends { role: string; content: string }>(
  messages: readonly M[],
  tools: readonly ChatTool[],
): (M | { role: "system"; content: string })[] {
  if (tools.length === 0) return [...messages];
  const prompt = hermesToolPrompt(tools);
  const [first, ...rest] = messages;
  if (first?.role === "system") return [{ ...first, content: `${first.content}\n\n${prompt}` }, ...rest];
  return [{ role: "system", content: prompt }, ...messages];
}

/**
 * What a run records when its model's chat template is loaded (task.template "model"): whether
 * the template renders `tools` itself. false: the lab put the tool list into the system message
 * (task.tool_prompt "hermes"), and an export must do the same. Carried by a run event (the
 * worker's and the CLI's "info" event with `chat`), so bundles and the page's runs have it.
 */
export interface ChatTemplateFacts {
  renders_tools: boolean;
}
