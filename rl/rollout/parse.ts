// Parsing of generated assistant text: tool calls in three formats, the final answer
// (strict or lenient, `<answer>` or `\boxed{}`), and the environment-written spans (tool
// responses) that the loss must mask; the think/answer format check is rl/rollout/answer-format.ts. A
// malformed call is returned as a failed call with a message, never thrown. A leaf module.
// Tested by rl/rollout/parse.test.ts (`npx vitest run rl/rollout/parse.test.ts`).
//
// Formats:
//   json   <tool_call>{"name":"f","arguments":{..}}</tool_call>   (several per turn; a JSON list
//          of calls inside one tag is accepted, Tool-N1 style; "parameters" is read as "arguments")
//   code   <tool_call>347*29</tool_call>   bare code for the task's code tool
//   fenced ```python\n..\n``` or ```js\n..\n``` optionally followed by ```output\n..\n``` (ToRL)

export type ToolCallFormat = "json" | "code" | "fenced";

export interface ParsedToolCall {
  ok: true;
  format: ToolCallFormat;
  name: string;
  /** json format: the call's arguments. */
  arguments?: Record<string, unknown>;
  /** code and fenced formats: the code to run. */
  code?: string;
  /** fenced format: the fence's language tag. */
  lang?: string;
  /** fenced format: the content of a following ```output block, when the text already has one. */
  output?: string;
  /** The exact source text of the call, tags or fences included. */
  raw: string;
  /** Offsets into the input text: raw === text.slice(start, end). */
  start: number;
  end: number;
}

export interface ToolCallError {
  ok: false;
  format: ToolCallFormat;
  message: string;
  raw: string;
  start: number;
  end: number;
}

export type ToolCallParse = ParsedToolCall | ToolCallError;

export interface ParseToolCallsOptions {
  /** Formats to look for; default json and code (the `<tool_call>` forms). */
  formats?: ToolCallFormat[];
  /** Tool name given to bare code and fenced calls. */
  codeToolName?: string;
  /** Fence languages that count as code to run (ToRL uses python). */
  fenceLangs?: string[];
}

export const TAGS = {
  imStart: "<|im_start|>",
  imEnd: "<|im_end|>",
  thinkOpen: "<think>",
  thinkClose: "</think>",
  callOpen: "<tool_call>",
  callClose: "</tool_call>",
  respOpen: "<tool_response>",
  respClose: "</tool_response>",
  answerOpen: "<answer>",
  answerClose: "</answer>",
} as const;

export interface Span {
  start: number;
  end: number;
}

/**
 * Spans written by the environment rather than the policy: every
 * `<tool_response>..</tool_response>` (tags included; an unclosed one runs to the end) and
 * every ToRL ```output block. They get loss mask 0 and are skipped when parsing calls.
 */
export function envSpans(text: string, opts: { fencedOutput?: boolean } = {}): Span[] {
  const spans: Span[] = [];
  let i = 0;
  for (;;) {
    const s = text.indexOf(TAGS.respOpen, i);
    if (s < 0) break;
    const e = text.indexOf(TAGS.respClose, s + TAGS.respOpen.length);
    const end = e < 0 ? text.length : e + TAGS.respClose.length;
    spans.push({ start: s, end });
    i = end;
  }
  if (opts.fencedOutput) {
    const re = /```output\n[\s\S]*?(?:```|$)/g;
    for (const m of text.matchAll(re)) {
      const start = m.index ?? 0;
      spans.push({ start, end: start + m[0].length });
    }
    spans.sort((a, b) => a.start - b.start);
  }
  return spans;
}

/** Splits text into policy and environment segments, in order, covering the text exactly. */
export function splitSegments(
  text: string,
  opts: { fencedOutput?: boolean } = {},
): { text: string; env: boolean }[] {
  const out: { text: string; env: boolean }[] = [];
  let pos = 0;
  for (const s of envSpans(text, opts)) {
    if (s.start < pos) continue;
    if (s.start > pos) out.push({ text: text.slice(pos, s.start), env: false });
    out.push({ text: text.slice(s.start, s.end), env: true });
    pos = s.end;
  }
  if (pos < text.length) out.push({ text: text.slice(pos), env: false });
  return out;
}

/** Blanks env spans with spaces so offsets stay valid while their content is ignored. */
function blankEnv(text: string, spans: Span[]): string {
  let out = "";
  let pos = 0;
  for (const s of spans) {
    if (s.start < pos) continue;
    out += text.slice(pos, s.start) + " ".repeat(s.end - s.start);
    pos = s.end;
  }
  return out + text.slice(pos);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function jsonCall(item: unknown, raw: string, start: number, end: number): ParsedToolCall | ToolCallError {
  const fail = (message: string): ToolCallError => ({ ok: false, format: "json", message, raw, start, end });
  if (!isPlainObject(item)) return fail("tool call is not a JSON object");
  if (typeof item.name !== "string" || item.name.length === 0) return fail('tool call has no string "name"');
  const args = item.arguments ?? item.parameters ?? {};
  if (!isPlainObject(args)) return fail('"arguments" is not a JSON object');
  return { ok: true, format: "json", name: item.name, arguments: args, raw, start, end };
}

function parseTagged(text: string, codeToolName: string, formats: ToolCallFormat[]): ToolCallParse[] {
  const out: ToolCallParse[] = [];
  const wantJson = formats.includes("json");
  const wantCode = formats.includes("code");
  let i = 0;
  for (;;) {
    const open = text.indexOf(TAGS.callOpen, i);
    const strayClose = text.indexOf(TAGS.callClose, i);
    if (strayClose >= 0 && (open < 0 || strayClose < open)) {
      const end = strayClose + TAGS.callClose.length;
      out.push({
        ok: false,
        format: wantJson ? "json" : "code",
        message: "</tool_call> without an opening <tool_call>",
        raw: TAGS.callClose,
        start: strayClose,
        end,
      });
      i = end;
      continue;
    }
    if (open < 0) break;
    const bodyStart = open + TAGS.callOpen.length;
    const close = text.indexOf(TAGS.callClose, bodyStart);
    const nextOpen = text.indexOf(TAGS.callOpen, bodyStart);
    if (close < 0 || (nextOpen >= 0 && nextOpen < close)) {
      const end = close < 0 ? text.length : nextOpen;
      const body = text.slice(bodyStart, end).trim();
      out.push({
        ok: false,
        format: body.startsWith("{") || body.startsWith("[") || !wantCode ? "json" : "code",
        message: close < 0 ? "unclosed <tool_call>" : "<tool_call> opened again before </tool_call>",
        raw: text.slice(open, end),
        start: open,
        end,
      });
      i = end;
      continue;
    }
    const end = close + TAGS.callClose.length;
    const raw = text.slice(open, end);
    const body = text.slice(bodyStart, close).trim();
    i = end;
    const looksJson = body.startsWith("{") || body.startsWith("[");
    if (looksJson && wantJson) {
      let value: unknown;
      try {
        value = JSON.parse(body);
      } catch (e) {
        out.push({
          ok: false,
          format: "json",
          message: `invalid JSON: ${(e as Error).message}`,
          raw,
          start: open,
          end,
        });
        continue;
      }
      if (Array.isArray(value)) {
        if (value.length === 0) {
          out.push({ ok: false, format: "json", message: "empty list of tool calls", raw, start: open, end });
        }
        for (const item of value) out.push(jsonCall(item, raw, open, end));
      } else {
        out.push(jsonCall(value, raw, open, end));
      }
    } else if (wantCode) {
      if (body.length === 0) {
        out.push({ ok: false, format: "code", message: "empty tool call", raw, start: open, end });
      } else {
        out.push({ ok: true, format: "code", name: codeToolName, code: body, raw, start: open, end });
      }
    } else {
      out.push({ ok: false, format: "json", message: "tool call is not JSON", raw, start: open, end });
    }
  }
  return out;
}

function parseFenced(text: string, codeToolName: string, langs: string[]): ToolCallParse[] {
  const out: ToolCallParse[] = [];
  // An opening fence at line start with a language tag; the body runs to the next ``` fence.
  const openRe = /(^|\n)```([A-Za-z0-9_+-]*)[ \t]*\n/g;
  let m: RegExpExecArray | null = openRe.exec(text);
  while (m !== null) {
    const lang = m[2].toLowerCase();
    const start = m.index + m[1].length;
    const bodyStart = m.index + m[0].length;
    if (!langs.includes(lang)) {
      // Not code to run (an output block or plain text): skip past its closing fence.
      const close = text.indexOf("```", bodyStart);
      openRe.lastIndex = close < 0 ? text.length : close + 3;
      m = openRe.exec(text);
      continue;
    }
    const close = text.indexOf("```", bodyStart);
    if (close < 0) {
      out.push({
        ok: false,
        format: "fenced",
        message: `unclosed \`\`\`${lang} block`,
        raw: text.slice(start),
        start,
        end: text.length,
      });
      break;
    }
    const end = close + 3;
    const code = text.slice(bodyStart, close).replace(/\n$/, "");
    const call: ParsedToolCall = {
      ok: true,
      format: "fenced",
      name: codeToolName,
      code,
      lang,
      raw: text.slice(start, end),
      start,
      end,
    };
    if (code.trim().length === 0) {
      out.push({ ok: false, format: "fenced", message: "empty code block", raw: call.raw, start, end });
    } else {
      const after = /^[ \t]*\n?```output[ \t]*(?:\n([\s\S]*?)(?:\n?```|$)|$)/.exec(text.slice(end));
      if (after) call.output = after[1] ?? "";
      out.push(call);
    }
    openRe.lastIndex = end;
    m = openRe.exec(text);
  }
  return out;
}

/**
 * All tool calls in `text`, in order of position. Tool responses (and, for the fenced
 * format, output blocks) are environment text and are never parsed as calls.
 */
export function parseToolCalls(text: string, opts: ParseToolCallsOptions = {}): ToolCallParse[] {
  const formats = opts.formats ?? ["json", "code"];
  const codeToolName = opts.codeToolName ?? "run_code";
  const blanked = blankEnv(text, envSpans(text));
  const out: ToolCallParse[] = [];
  if (formats.includes("json") || formats.includes("code"))
    out.push(...parseTagged(blanked, codeToolName, formats));
  if (formats.includes("fenced")) {
    out.push(...parseFenced(blanked, codeToolName, opts.fenceLangs ?? ["python", "py", "js", "javascript"]));
  }
  // Offsets come from the blanked copy; raw must be the real text.
  for (const c of out) c.raw = text.slice(c.start, c.end);
  out.sort((a, b) => a.start - b.start);
  return out;
}

// ---------------------------------------------------------------------------------------
// Final answers

export interface AnswerOptions {
  /**
   * strict (the recipe's reward): exactly one `<answer>..</answer>`, followed only by
   * whitespace and optionally an end marker; anything else after it fails.
   * lenient: the first complete `<answer>..</answer>`, whatever follows.
   */
  mode?: "strict" | "lenient";
  /** Also accept `\boxed{..}` (ToRL and the seeds' prompt); `<answer>` wins when both appear. */
  boxed?: boolean;
  /** Markers allowed after the answer in strict mode. */
  endMarkers?: string[];
}

export type AnswerParse =
  | { ok: true; answer: string; start: number; end: number }
  | { ok: false; error: string };

/** The content of the last `\boxed{..}` with balanced braces, or null. */
export function extractBoxed(
  text: string,
): { content: string; start: number; end: number; count: number } | null {
  let found: { content: string; start: number; end: number } | null = null;
  let count = 0;
  let i = text.indexOf("\\boxed{");
  while (i >= 0) {
    let depth = 0;
    let j = i + "\\boxed".length;
    for (; j < text.length; j++) {
      if (text[j] === "{") depth++;
      else if (text[j] === "}" && --depth === 0) break;
    }
    if (j < text.length) {
      found = { content: text.slice(i + "\\boxed{".length, j), start: i, end: j + 1 };
      count++;
      i = text.indexOf("\\boxed{", j + 1);
    } else {
      break;
    }
  }
  return found ? { ...found, count } : null;
}

function countOf(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

function restIsEnd(rest: string, markers: string[]): boolean {
  let r = rest.trim();
  for (const m of markers) {
    if (r.startsWith(m)) {
      r = r.slice(m.length).trim();
      break;
    }
  }
  return r.length === 0;
}

export function parseAnswer(text: string, opts: AnswerOptions = {}): AnswerParse {
  const mode = opts.mode ?? "strict";
  const markers = opts.endMarkers ?? [TAGS.imEnd];
  // Tool responses are environment text; an `<answer>` echoed there is not the model's.
  const t = blankEnv(text, envSpans(text));
  const opens = countOf(t, TAGS.answerOpen);
  if (opens === 0) {
    if (opts.boxed) return parseBoxedAnswer(t, mode, markers);
    return { ok: false, error: "no <answer>" };
  }
  const s = t.indexOf(TAGS.answerOpen);
  const contentStart = s + TAGS.answerOpen.length;
  const e = t.indexOf(TAGS.answerClose, contentStart);
  if (e < 0) return { ok: false, error: "unclosed <answer>" };
  let content = t.slice(contentStart, e);
  if (content.includes(TAGS.answerOpen)) return { ok: false, error: "nested <answer>" };
  const end = e + TAGS.answerClose.length;
  if (mode === "strict") {
    if (opens > 1 || countOf(t, TAGS.answerClose) > 1) return { ok: false, error: "more than one <answer>" };
    if (!restIsEnd(t.slice(end), markers)) return { ok: false, error: "text after </answer>" };
  }
  if (opts.boxed) {
    const b = extractBoxed(content);
    if (b) content = b.content;
  }
  return { ok: true, answer: content.trim(), start: s, end };
}

function parseBoxedAnswer(t: string, mode: "strict" | "lenient", markers: string[]): AnswerParse {
  const b = extractBoxed(t);
  if (!b) return { ok: false, error: "no <answer> or \\boxed{}" };
  if (mode === "strict") {
    if (b.count > 1) return { ok: false, error: "more than one \\boxed{}" };
    // Closing prose like "]." or "\]" is common after a boxed answer; tags or more text are not.
    const rest = t.slice(b.end).replace(/^[\s.$\\\]]*/, "");
    if (!restIsEnd(rest, markers)) return { ok: false, error: "text after \\boxed{}" };
  }
  return { ok: true, answer: b.content.trim(), start: b.start, end: b.end };
}
