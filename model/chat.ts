// The chat format a run speaks: a tokenizer plus a transcript template, behind one interface
// the rollout, the trainer and the try-the-model panel use without knowing which it is.
//
//   builtinChat("inline" | "chatml-turns", tokenizer)  the lab's own templates (model/template.ts)
//   jinjaChat(tokenizer, tokenizer_config, options)     the model's own Jinja chat template
//
// A Jinja chat format renders what the model was trained on: `tools` (OpenAI function shape)
// passed to the template, assistant tool calls as Hermes `<tool_call>{"name":..,"arguments":..}
// </tool_call>` through the message's `tool_calls`, tool results as the template's tool turns.
// The lab's tasks write tool calls inline (`<tool_call>347*29</tool_call>` or JSON); hermesMessages()
// turns them into structured calls first. A template that ignores `tools` (SmolLM2-Instruct's)
// gets the tool list in the system message instead (toolPrompt "hermes"), and one that ignores
// `tool_calls` gets them written into the assistant content in the Hermes form.
//
// Loss masks come from roles, rendered turn by turn: the conversation through message k is
// rendered and tokenized, and its tokens must extend those through message k-1 (the check
// verl's multi-turn rollout makes). The new tokens get message k's role; an assistant message
// is preceded by the generation prompt (role "template") so only what the model writes is
// trainable. When a rendering does not extend the previous one (a template that rewrites
// earlier turns, or BPE merging across a turn boundary): "strict" throws naming the message,
// "warn" counts it (RenderedChat.mismatches) and re-tokenizes the whole text, keeping the roles
// of the common token prefix; "off" does the same without counting.
// The template is untrusted code: it renders in model/jinja-bounds.ts's bounded sandbox (range
// capped, step, time, text and depth budgets), and one over a budget is refused at construction,
// naming the file and the budget (TemplateBudgetError).
// Tested by model/chat.test.ts (Qwen3's tokenizer and template) and model/template.test.ts.
import { BoundedTemplate, TemplateBudgetError } from "./jinja-bounds";
import {
  type Message,
  promptTokens,
  type Rendered,
  render,
  STOP_STRINGS,
  type TemplateName,
  type TokenRole,
  toolResponseTokens,
} from "./template";
import type { Tokenizer } from "./tokenizer";
import { type ChatTool, functionSpecs, withToolPrompt } from "./tool-list-prompt";

// The tool-list text is a pure module of its own (the export writes it without model files).
export { type ChatTool, functionSpecs, hermesToolPrompt } from "./tool-list-prompt";

export type TokenizationCheck = "strict" | "warn" | "off";
export type ToolPrompt = "hermes" | "none";

export interface RenderedChat extends Rendered {
  /** Messages whose rendering did not extend the previous one (0 in strict mode, which throws). */
  mismatches: number;
}

export interface ChatFormat {
  /** "inline", "chatml-turns" or "model" (the tokenizer's own template). */
  readonly name: string;
  readonly tokenizer: Tokenizer;
  /** Decoding stops at this id; the turn is over. */
  readonly turnEndId: number;
  /** inline only: calls end at this id inside the turn and run right away. */
  readonly callEndId?: number;
  /** What ends a generate() call (stop strings, for model/generate.ts). */
  readonly stopStrings: readonly string[];
  /** "inline": `<tool_call>` holds bare code or JSON; "hermes": JSON only. */
  readonly callSyntax: "inline" | "hermes";
  /** A whole conversation (SFT) with a role per token. */
  render(messages: Message[]): RenderedChat;
  /** The conversation followed by the generation prompt (where the model writes). */
  promptTokens(messages: Message[]): number[];
  /** The prompt as text, as the template renders it (the inspector shows it). */
  promptText(messages: Message[]): string;
  /** What is appended after a turn stopped at tool calls: the responses and the next assistant header. */
  toolResponseTokens(responses: string[]): Rendered;
  /** What lets the model go on when every call of a turn was refused without a notice. */
  continuation(): number[];
  /** A model's own template only: whether it renders `tools` (false: the tool list goes into the system message). */
  readonly rendersTools?: boolean;
}

// ------------------------------------------------------------------------------------
// The lab's own templates

export function builtinChat(template: TemplateName, tokenizer: Tokenizer): ChatFormat {
  const callEnd = tokenizer.specialId("</tool_call>");
  return {
    name: template,
    tokenizer,
    turnEndId: tokenizer.eosId,
    callEndId: template === "inline" ? callEnd : undefined,
    stopStrings: STOP_STRINGS[template],
    callSyntax: "inline",
    render: (messages) => ({ ...render(messages, template, tokenizer), mismatches: 0 }),
    promptTokens: (messages) => promptTokens(messages, template, tokenizer),
    promptText: (messages) => tokenizer.decode(promptTokens(messages, template, tokenizer)),
    toolResponseTokens: (responses) => toolResponseTokens(responses, template, tokenizer),
    continuation: () => tokenizer.encode("\n<|im_start|>assistant\n"),
  };
}

// ------------------------------------------------------------------------------------
// Hermes messages

/** A message in the shape chat templates read. */
export interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: { type: "function"; function: { name: string; arguments: Record<string, unknown> } }[];
}

const CALL_RE = /<tool_call>([\s\S]*?)<\/tool_call>/g;

/**
 * The lab's messages as a chat template reads them: each `<tool_call>..</tool_call>` of an
 * assistant message becomes a structured call (JSON as written; bare code as the arguments
 * of the code tool), removed from the content.
 */
export function hermesMessages(messages: readonly Message[], tools: readonly ChatTool[]): TemplateMessage[] {
  const codeTool = tools.find((t) => t.codeArg);
  return messages.map((m, k) => {
    if (m.role !== "assistant" || !m.content.includes("<tool_call>"))
      return { role: m.role, content: m.content };
    const calls: NonNullable<TemplateMessage["tool_calls"]> = [];
    for (const match of m.content.matchAll(CALL_RE)) {
      const body = match[1].trim();
      let name: string;
      let args: Record<string, unknown>;
      if (body.startsWith("{")) {
        let v: { name?: unknown; arguments?: unknown };
        try {
          v = JSON.parse(body);
        } catch (err) {
          throw new Error(
            `message ${k + 1} (assistant): tool call ${body} is not JSON: ${(err as Error).message}`,
          );
        }
        if (typeof v.name !== "string" || typeof v.arguments !== "object" || v.arguments === null)
          throw new Error(`message ${k + 1} (assistant): tool call ${body} has no "name" and "arguments"`);
        name = v.name;
        args = v.arguments as Record<string, unknown>;
      } else {
        if (!codeTool?.codeArg)
          throw new Error(
            `message ${k + 1} (assistant): bare code in <tool_call> but the task has no code tool`,
          );
        name = codeTool.name;
        args = { [codeTool.codeArg]: body };
      }
      calls.push({ type: "function", function: { name, arguments: args } });
    }
    const content = m.content.replace(CALL_RE, "").replace(/\s+$/, "");
    return { role: "assistant", content, tool_calls: calls };
  });
}

/** A call written the Hermes way, for templates that do not render `tool_calls` themselves. */
export function hermesCallText(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}

// ------------------------------------------------------------------------------------
// A model's own Jinja template

export interface JinjaChatOptions {
  tools: readonly ChatTool[];
  check: TokenizationCheck;
  /** How the tool list reaches a template that ignores `tools`. */
  toolPrompt: ToolPrompt;
  /** Names the tokenizer_config.json in errors. */
  source?: string;
}

function chatTemplateOf(config: Record<string, unknown>, source: string, withTools: boolean): string {
  const t = config.chat_template;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) {
    const named = new Map(
      t.map((x: { name?: unknown; template?: unknown }) => [String(x.name), String(x.template)] as const),
    );
    const pick = (withTools && named.get("tool_use")) || named.get("default");
    if (pick) return pick;
  }
  throw new Error(
    `${source}: tokenizer_config.json has no "chat_template" (a string, or a list with a "default")`,
  );
}

/** A template refused by its budget: the file, the budget's name and what went over it. */
function overBudget(source: string, err: TemplateBudgetError): TemplateBudgetError {
  return new TemplateBudgetError(
    err.budget,
    `${source}: chat_template refused by the template sandbox's ${err.budget} budget: ${err.message}`,
  );
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

function nthEnd(text: string, needle: string, n: number): number {
  let pos = 0;
  for (let k = 0; k < n; k++) {
    const at = text.indexOf(needle, pos);
    if (at < 0) return -1;
    pos = at + needle.length;
  }
  return pos;
}

export class JinjaChat implements ChatFormat {
  readonly name = "model";
  readonly turnEndId: number;
  readonly callEndId = undefined;
  readonly stopStrings: readonly string[];
  readonly callSyntax = "hermes" as const;
  /** The template renders `tools` itself; false means the tool list goes into the system message. */
  readonly rendersTools: boolean;
  /** The template renders assistant `tool_calls`; false means they are written into the content. */
  readonly rendersToolCalls: boolean;
  private readonly template: BoundedTemplate;
  private readonly specials: Record<string, unknown>;
  private readonly eosText: string;
  private readonly source: string;

  constructor(
    readonly tokenizer: Tokenizer,
    config: Record<string, unknown>,
    private readonly options: JinjaChatOptions,
  ) {
    this.source = options.source ?? "tokenizer_config.json";
    const text = chatTemplateOf(config, this.source, options.tools.length > 0);
    try {
      this.template = new BoundedTemplate(text);
    } catch (err) {
      if (err instanceof TemplateBudgetError) throw overBudget(this.source, err);
      throw new Error(`${this.source}: chat_template does not parse: ${(err as Error).message}`);
    }
    this.specials = {};
    for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      const v = config[k];
      this.specials[k] = typeof v === "string" ? v : (v as { content?: string } | null)?.content;
    }
    this.turnEndId = tokenizer.eosId;
    this.eosText = tokenizer.piece(tokenizer.eosId);
    this.stopStrings = [this.eosText];
    const probeTool: ChatTool = {
      name: "probe_tool_zq",
      description: "probe",
      parameters: { type: "object" },
    };
    const user = [{ role: "user", content: "x" }];
    this.rendersTools =
      this.renderText(user, false, [probeTool]).includes("probe_tool_zq") &&
      !this.renderText(user, false, []).includes("probe_tool_zq");
    const withCall: TemplateMessage[] = [
      ...user,
      {
        role: "assistant",
        content: "",
        tool_calls: [{ type: "function", function: { name: "probe_tool_zq", arguments: {} } }],
      },
    ];
    this.rendersToolCalls = this.renderText(withCall, false, [probeTool]).includes("probe_tool_zq");
  }

  private renderText(
    messages: TemplateMessage[],
    addGenerationPrompt: boolean,
    tools = this.options.tools,
  ): string {
    try {
      return this.template.render({
        messages,
        tools: tools.length > 0 ? functionSpecs(tools) : undefined,
        add_generation_prompt: addGenerationPrompt,
        ...this.specials,
      });
    } catch (err) {
      if (err instanceof TemplateBudgetError) throw overBudget(this.source, err);
      throw new Error(`${this.source}: chat_template failed to render: ${(err as Error).message}`);
    }
  }

  /** The task's messages as this template reads them, with the tool list where it must go. */
  templateMessages(messages: readonly Message[]): TemplateMessage[] {
    const tools = this.options.tools;
    let out = hermesMessages(messages, tools);
    if (!this.rendersToolCalls) {
      out = out.map((m) => {
        if (!m.tool_calls) return m;
        const calls = m.tool_calls.map((c) => hermesCallText(c.function.name, c.function.arguments));
        return { role: m.role, content: [m.content, ...calls].filter((x) => x.length > 0).join("\n") };
      });
    }
    if (!this.rendersTools && this.options.toolPrompt === "hermes") out = withToolPrompt(out, tools);
    return out;
  }

  promptText(messages: Message[]): string {
    return this.renderText(this.templateMessages(messages), true);
  }

  promptTokens(messages: Message[]): number[] {
    return this.tokenizer.encode(this.promptText(messages));
  }

  render(messages: Message[]): RenderedChat {
    const msgs = this.templateMessages(messages);
    const eos = this.tokenizer.eosId;
    let text = "";
    let ids: number[] = [];
    let roles: TokenRole[] = [];
    let mismatches = 0;
    const extend = (upto: number, addGen: boolean, role: TokenRole, label: string) => {
      const t = this.renderText(msgs.slice(0, upto), addGen);
      const next = this.tokenizer.encode(t);
      const keep = commonPrefix(ids, next);
      if (!t.startsWith(text) || keep < ids.length) {
        if (this.options.check === "strict")
          throw new Error(this.mismatchMessage(label, text, t, ids, next, keep));
        if (this.options.check === "warn") mismatches++;
        roles = roles.slice(0, keep);
      }
      const start = roles.length;
      for (let i = start; i < next.length; i++) roles.push(role);
      // The turn's end token is the model's to write; what the template adds after it is not.
      if (role === "assistant") {
        const end = next.lastIndexOf(eos);
        for (let i = Math.max(start, end + 1); end >= start && i < next.length; i++) roles[i] = "template";
      }
      text = t;
      ids = next;
    };
    msgs.forEach((m, k) => {
      const role = (
        ["system", "user", "assistant", "tool"].includes(m.role) ? m.role : "template"
      ) as TokenRole;
      const label = `message ${k + 1} (${m.role})`;
      if (role === "assistant") extend(k, true, "template", `the generation prompt before ${label}`);
      extend(k + 1, false, role, label);
    });
    return { ids, roles, mismatches };
  }

  private mismatchMessage(
    label: string,
    before: string,
    after: string,
    prev: number[],
    next: number[],
    keep: number,
  ): string {
    const hint = 'task.tokenization_check "warn" re-tokenizes and counts it instead';
    if (!after.startsWith(before)) {
      let c = 0;
      while (c < before.length && before[c] === after[c]) c++;
      // Show the difference from the tag or line it starts in.
      const from = Math.max(before.lastIndexOf("<", c), before.lastIndexOf("\n", c - 1) + 1, c - 16, 0);
      return (
        `${this.source}: chat template: rendering through ${label} changes the text before it ` +
        `(from character ${from}: ${JSON.stringify(before.slice(from, c + 24))} became ${JSON.stringify(after.slice(from, c + 24))}), ` +
        `so its tokens do not extend the previous turn's; ${hint}`
      );
    }
    const p = this.tokenizer;
    return (
      `${this.source}: chat template: the tokens through ${label} do not extend the tokens before it: ` +
      `token ${keep} was ${JSON.stringify(p.piece(prev[keep]))} and is ${JSON.stringify(next[keep] === undefined ? "" : p.piece(next[keep]))} ` +
      `once the turn is added (BPE merged across the turn boundary); ${hint}`
    );
  }

  // The appended text after the model's turn end, found by rendering a stand-in conversation
  // with and without the tool turns: everything after its assistant turn's end token.
  private afterAssistantTurn(tail: TemplateMessage[], addGen: boolean): string {
    const base: TemplateMessage[] = [
      { role: "user", content: "?" },
      { role: "assistant", content: "!" },
    ];
    const closed = this.renderText(base, false);
    const n = closed.split(this.eosText).length - 1;
    if (n === 0)
      throw new Error(`${this.source}: chat template: an assistant turn does not end with ${this.eosText}`);
    const closedTail = closed.slice(closed.lastIndexOf(this.eosText) + this.eosText.length);
    const full = this.renderText([...base, ...tail], addGen);
    const pos = nthEnd(full, this.eosText, n);
    const delta = pos < 0 ? "" : full.slice(pos);
    if (pos < 0 || !delta.startsWith(closedTail)) {
      const msg = `${this.source}: chat template: the tool turn does not follow the assistant turn's ${this.eosText} as it renders alone`;
      if (this.options.check === "strict") throw new Error(msg);
    }
    return delta;
  }

  toolResponseTokens(responses: string[]): Rendered {
    const text = this.afterAssistantTurn(
      responses.map((r) => ({ role: "tool", content: r })),
      true,
    );
    const ids = this.tokenizer.encode(text);
    return { ids, roles: ids.map(() => "tool" as TokenRole) };
  }

  continuation(): number[] {
    return this.tokenizer.encode(this.afterAssistantTurn([], true));
  }
}

export function jinjaChat(
  tokenizer: Tokenizer,
  config: Record<string, unknown>,
  options: JinjaChatOptions,
): JinjaChat {
  return new JinjaChat(tokenizer, config, options);
}
