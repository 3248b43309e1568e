// The two transcript templates of the lab (docs/ARCHITECTURE.md), rendered to token ids with a role per token so
// that callers build loss masks (trainable = role "assistant").
//
// inline:
//   <|im_start|>user\nWhat is 347*29?<|im_end|>\n<|im_start|>assistant\n<tool_call>347*29</tool_call>
//   <tool_response>10063</tool_response><answer>10063</answer><|im_end|>
//   Consecutive assistant and tool messages after a user turn form ONE assistant turn; a tool
//   message becomes <tool_response>..</tool_response> in place. Decoding stops at </tool_call>
//   (run the tool, append its response, continue) or <|im_end|>.
// chatml-turns:
//   ...<|im_start|>assistant\n<tool_call>{..}</tool_call><|im_end|>\n
//   <|im_start|>user\n<tool_response>..</tool_response>\n<tool_response>..</tool_response><|im_end|>\n
//   <|im_start|>assistant\n<answer>..</answer><|im_end|>
//   Consecutive tool messages share one user turn (the calls of a turn run in parallel).
//   Decoding stops at <|im_end|>.
//
// Roles: the content of a message has that message's role; the tool response wrappers have
// role "tool"; the closing <|im_end|> of an assistant turn is "assistant" (the model must
// learn to end its turn); every other piece of scaffolding (turn headers, the "\n" between
// turns, the <|im_end|> of other turns) is "template". Only "assistant" is trained.
// The text goes through the tokenizer piece by piece (the character tokenizer by default);
// model/chat.ts puts these templates and a model's own Jinja template behind one ChatFormat.
// Tested by model/template.test.ts.
import { CHAR_TOKENIZER, type Tokenizer } from "./tokenizer";

export type TemplateName = "inline" | "chatml-turns";
export const TEMPLATES: readonly TemplateName[] = ["inline", "chatml-turns"];

export type MessageRole = "system" | "user" | "assistant" | "tool";
export type TokenRole = MessageRole | "template";

export interface Message {
  role: MessageRole;
  content: string;
}

export interface Rendered {
  ids: number[];
  roles: TokenRole[];
}

/** Where decoding stops for each template (the generated text ends with one of these). */
export const STOP_STRINGS: Record<TemplateName, readonly string[]> = {
  inline: ["</tool_call>", "<|im_end|>"],
  "chatml-turns": ["<|im_end|>"],
};

const ASSISTANT_HEADER = "<|im_start|>assistant\n";

class Builder implements Rendered {
  ids: number[] = [];
  roles: TokenRole[] = [];
  constructor(private readonly tok: Tokenizer) {}
  push(text: string, role: TokenRole): void {
    for (const id of this.tok.encode(text)) {
      this.ids.push(id);
      this.roles.push(role);
    }
  }
}

type Turn =
  | { kind: "system"; content: string }
  | { kind: "user"; content: string }
  | { kind: "assistant"; parts: Message[] }
  | { kind: "tools"; parts: Message[] };

// Groups messages into turns: inline folds tool messages into the assistant turn around
// them; chatml-turns makes a run of tool messages one user turn.
function turnsOf(messages: Message[], template: TemplateName): Turn[] {
  const turns: Turn[] = [];
  for (const m of messages) {
    const last = turns[turns.length - 1];
    if (m.role === "system" || m.role === "user") {
      turns.push(
        m.role === "system" ? { kind: "system", content: m.content } : { kind: "user", content: m.content },
      );
    } else if (template === "inline") {
      if (last?.kind === "assistant") last.parts.push(m);
      else turns.push({ kind: "assistant", parts: [m] });
    } else if (m.role === "assistant") {
      turns.push({ kind: "assistant", parts: [m] });
    } else if (last?.kind === "tools") {
      last.parts.push(m);
    } else {
      turns.push({ kind: "tools", parts: [m] });
    }
  }
  return turns;
}

function renderTurns(turns: Turn[], closeLast: boolean, tok: Tokenizer): Builder {
  const b = new Builder(tok);
  turns.forEach((turn, i) => {
    if (i > 0) b.push("\n", "template");
    const close = i < turns.length - 1 || closeLast;
    if (turn.kind === "system" || turn.kind === "user") {
      const role = turn.kind;
      b.push(`<|im_start|>${role}\n`, "template");
      b.push(turn.content, role);
      if (close) b.push("<|im_end|>", "template");
    } else if (turn.kind === "tools") {
      b.push("<|im_start|>user\n", "template");
      turn.parts.forEach((p, j) => {
        if (j > 0) b.push("\n", "tool");
        b.push(`<tool_response>${p.content}</tool_response>`, "tool");
      });
      if (close) b.push("<|im_end|>", "template");
    } else {
      b.push(ASSISTANT_HEADER, "template");
      for (const p of turn.parts) {
        if (p.role === "tool") b.push(`<tool_response>${p.content}</tool_response>`, "tool");
        else b.push(p.content, "assistant");
      }
      if (close) b.push("<|im_end|>", "assistant");
    }
  });
  return b;
}

/** A whole conversation; every turn is closed (a training transcript). */
export function render(
  messages: Message[],
  template: TemplateName,
  tok: Tokenizer = CHAR_TOKENIZER,
): Rendered {
  const b = renderTurns(turnsOf(messages, template), true, tok);
  return { ids: b.ids, roles: b.roles };
}

/**
 * The tokens to feed before generating: the conversation followed by the assistant header.
 * In `inline`, a conversation that ends with a tool message continues the open assistant
 * turn instead (the model writes right after </tool_response>).
 */
export function promptTokens(
  messages: Message[],
  template: TemplateName,
  tok: Tokenizer = CHAR_TOKENIZER,
): number[] {
  const turns = turnsOf(messages, template);
  const last = messages[messages.length - 1];
  if (template === "inline" && last?.role === "tool") return renderTurns(turns, false, tok).ids;
  const b = renderTurns(turns, true, tok);
  if (turns.length > 0) b.push("\n", "template");
  b.push(ASSISTANT_HEADER, "template");
  return b.ids;
}

/** Trainable mask from roles: 1 for assistant tokens, 0 for everything else. */
export function lossMask(roles: readonly TokenRole[]): Uint8Array {
  return Uint8Array.from(roles, (r) => (r === "assistant" ? 1 : 0));
}

/**
 * The tokens a rollout appends after the model stopped at a tool call, with their roles:
 * inline (stopped at </tool_call>): `<tool_response>..</tool_response>`, all "tool";
 * chatml-turns (stopped at <|im_end|>): "\n", the user turn with every response, "\n" and
 * the next assistant header, so decoding continues as the new assistant turn.
 */
export function toolResponseTokens(
  responses: string[],
  template: TemplateName,
  tok: Tokenizer = CHAR_TOKENIZER,
): Rendered {
  const b = new Builder(tok);
  if (template === "inline") {
    for (const r of responses) b.push(`<tool_response>${r}</tool_response>`, "tool");
  } else {
    b.push("\n<|im_start|>user\n", "template");
    responses.forEach((r, j) => {
      if (j > 0) b.push("\n", "tool");
      b.push(`<tool_response>${r}</tool_response>`, "tool");
    });
    b.push("<|im_end|>\n" + ASSISTANT_HEADER, "template");
  }
  return { ids: b.ids, roles: b.roles };
}
