// The format check of generated assistant text (ToolRL's and R1's think/answer format):
// [<think>..</think>] then tool calls (each followed by its response when inline) then exactly
// one <answer>..</answer>, then only the end marker. A chatml-turns transcript is checked as one
// sequence: the user turns that carry tool responses count as responses, and each assistant
// turn after them may open with its own think. Uses the tags of rl/rollout/parse.ts.
// Tested by rl/rollout/parse.test.ts.
import { TAGS } from "./parse";

export interface FormatOptions {
  /** The text must open with a think block (ToolRL's and R1's format); default true. */
  requireThink?: boolean;
  /** Tool calls (and their responses) may appear between think and answer; default true. */
  allowToolCalls?: boolean;
  endMarkers?: string[];
}

export interface FormatCheck {
  ok: boolean;
  errors: string[];
}

const ALL_TAGS = [
  TAGS.thinkOpen,
  TAGS.thinkClose,
  TAGS.callOpen,
  TAGS.callClose,
  TAGS.respOpen,
  TAGS.respClose,
  TAGS.answerOpen,
  TAGS.answerClose,
  TAGS.imStart,
  TAGS.imEnd,
];

export function checkFormat(text: string, opts: FormatOptions = {}): FormatCheck {
  const requireThink = opts.requireThink ?? true;
  const allowTools = opts.allowToolCalls ?? true;
  const markers = opts.endMarkers ?? [TAGS.imEnd];
  const errors: string[] = [];
  const TURN_GAP =
    /<\|im_end\|>\s*<\|im_start\|>user\n((?:\s*<tool_response>[\s\S]*?<\/tool_response>)+)\s*<\|im_end\|>\s*<\|im_start\|>assistant\n/g;
  text = text.replace(TURN_GAP, "$1");
  // Tokenize into tags and the text between them.
  const tagRe = new RegExp(ALL_TAGS.map((x) => x.replace(/[|]/g, "\\|")).join("|"), "g");
  const items: { tag: string | null; text: string }[] = [];
  let pos = 0;
  for (const m of text.matchAll(tagRe)) {
    const at = m.index ?? 0;
    if (at > pos) items.push({ tag: null, text: text.slice(pos, at) });
    items.push({ tag: m[0], text: m[0] });
    pos = at + m[0].length;
  }
  if (pos < text.length) items.push({ tag: null, text: text.slice(pos) });

  type State = "start" | "afterThink" | "afterAnswer" | "afterEnd";
  let state: State = "start";
  let sawThink = false;
  // A think may open the text or follow tool responses (the next turn's reasoning).
  let afterResponse = false;
  let answers = 0;
  let k = 0;
  // Reads `open` content `close` from k; returns false (and records an error) when unclosed or nested.
  const readBlock = (open: string, close: string): boolean => {
    k++;
    while (k < items.length && items[k].tag === null) k++;
    if (k >= items.length || items[k].tag !== close) {
      errors.push(`${open} not closed by ${close}`);
      return false;
    }
    k++;
    return true;
  };
  while (k < items.length) {
    const it = items[k];
    if (it.tag === null) {
      if (it.text.trim().length > 0) {
        if (state === "afterAnswer" || state === "afterEnd") errors.push("text after </answer>");
        else if (state === "start" && requireThink) errors.push("text before <think>");
      }
      k++;
      continue;
    }
    if (state === "afterEnd") {
      errors.push(`${it.tag} after the end marker`);
      break;
    }
    if (state === "afterAnswer") {
      if (markers.includes(it.tag)) {
        state = "afterEnd";
        k++;
        continue;
      }
      errors.push(`${it.tag} after </answer>`);
      break;
    }
    const wasAfterResponse = afterResponse;
    afterResponse = false;
    if (it.tag === TAGS.thinkOpen) {
      if (state !== "start" && !wasAfterResponse)
        errors.push("<think> not at the start or after a tool response");
      sawThink = true;
      if (!readBlock(TAGS.thinkOpen, TAGS.thinkClose)) break;
      state = "afterThink";
    } else if (it.tag === TAGS.callOpen) {
      if (!allowTools) errors.push("tool call not allowed here");
      if (requireThink && !sawThink) errors.push("tool call before <think>");
      if (!readBlock(TAGS.callOpen, TAGS.callClose)) break;
      state = "afterThink";
    } else if (it.tag === TAGS.respOpen) {
      if (!readBlock(TAGS.respOpen, TAGS.respClose)) break;
      afterResponse = true;
    } else if (it.tag === TAGS.answerOpen) {
      if (requireThink && !sawThink) errors.push("<answer> before <think>");
      if (!readBlock(TAGS.answerOpen, TAGS.answerClose)) break;
      answers++;
      state = "afterAnswer";
    } else if (markers.includes(it.tag)) {
      errors.push("end marker before <answer>");
      break;
    } else {
      errors.push(`unexpected ${it.tag}`);
      break;
    }
  }
  if (answers === 0 && !errors.some((e) => e.includes("<answer>"))) errors.push("no <answer>");
  if (requireThink && !sawThink && !errors.some((e) => e.includes("<think>"))) errors.push("no <think>");
  return { ok: errors.length === 0, errors };
}
