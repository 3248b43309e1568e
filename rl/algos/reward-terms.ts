// Reward terms (ALGORITHMS.md §4, §9): pure functions of a trajectory summary, one named
// entry per design: correctness, format, torl-exec-penalty, toolrl, otc-ppo, otc-grpo,
// artist-tool-exec, tool-n1, dapo-overlong. `custom-js` is declared here with its contract
// but runs in the sandbox (the trainer calls the sandbox's runRewardFunction and passes the
// value to `combineRewards`). Tested by rl/algos/reward-terms.test.ts (`npx vitest run rl/algos/`).

export type ToolCallSummary = { name?: string; args?: unknown; ok: boolean };
export type GroundTruthCall = { name: string; arguments: Record<string, unknown> };

/** What a reward term sees of one trajectory. */
export type RewardInput = {
  text: string; // decoded response (policy and environment text)
  answerText?: string | null; // extracted final answer, if any
  correct: boolean; // task verifier's verdict
  toolCalls: ToolCallSummary[]; // calls executed by the environment, in order
  gtCalls?: GroundTruthCall[] | null; // function-calling ground truth (ToolRL, Tool-N1)
  responseLength: number; // tokens counted against the budget
  maxLength: number; // the budget (max new tokens)
  step: number; // RL step (ToolRL schedule)
  totalSteps: number;
  group?: { toolCalls: number[]; correct: boolean[] }; // the trajectory's group (OTC-GRPO)
};

export type RewardOptions = Record<string, unknown>;
export type RewardFn = (x: RewardInput, options: RewardOptions) => number;

export type RewardEntry =
  | { kind: "pure"; help: string; fn: RewardFn }
  | { kind: "sandbox"; help: string; contract: string; check: (value: unknown) => number };

function num(o: RewardOptions, key: string, fallback: number): number {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new Error(`reward option ${key} must be a finite number`);
  return v;
}
function bool(o: RewardOptions, key: string, fallback: boolean): boolean {
  const v = o[key];
  return v === undefined ? fallback : v === true;
}

// ---------------------------------------------------------------- correctness, format

/** +pos if correct else neg (demo: 1/0; DAPO/ToRL: +1/−1). */
export const correctness: RewardFn = (x, o) => (x.correct ? num(o, "pos", 1) : num(o, "neg", 0));

const TAG_RE = /<(\/?)(think|answer|tool_call|tool_response)>/g;

/**
 * The <think>/<answer> structure: tags come in consecutive open/close pairs (no nesting),
 * exactly one <answer>…</answer> pair, it is the last pair, and only whitespace and an
 * optional <|im_end|> follow it. `requireThink` also demands a think block.
 */
export function hasAnswerFormat(text: string, requireThink = false): boolean {
  const tags = [...text.matchAll(TAG_RE)].map((m) => ({
    close: m[1] === "/",
    name: m[2],
    end: m.index + m[0].length,
  }));
  if (tags.length % 2 !== 0) return false;
  let answers = 0;
  let thinks = 0;
  for (let i = 0; i < tags.length; i += 2) {
    const a = tags[i];
    const b = tags[i + 1];
    if (a.close || !b.close || a.name !== b.name) return false;
    if (a.name === "answer") answers++;
    if (a.name === "think") thinks++;
  }
  if (answers !== 1 || tags[tags.length - 1].name !== "answer") return false;
  if (requireThink && thinks === 0) return false;
  const tail = text.slice(tags[tags.length - 1].end);
  return /^\s*(<\|im_end\|>)?\s*$/.test(tail);
}

export const format: RewardFn = (x, o) =>
  hasAnswerFormat(x.text, bool(o, "requireThink", false)) ? num(o, "pos", 1) : num(o, "neg", 0);

// ---------------------------------------------------------------- ToRL

/** ToRL (§9.1) optional executability term: −penalty if any executed call failed, else 0 (additive). */
export const torlExecPenalty: RewardFn = (x, o) =>
  x.toolCalls.some((c) => !c.ok) ? -num(o, "penalty", 0.5) : 0;

// ---------------------------------------------------------------- ToolRL

type Json = unknown;

function deepEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) => k in (b as object) && deepEqual((a as Record<string, Json>)[k], (b as Record<string, Json>)[k]),
  );
}

/** Multiset Jaccard Σmin / (|a|+|b|−Σmin); 1 for equal lists, 0 if either is empty. */
export function multisetJaccard(a: readonly string[], b: readonly string[]): number {
  if (a.length === b.length && a.every((v, i) => v === b[i])) return 1;
  if (a.length === 0 || b.length === 0) return 0;
  const ca = new Map<string, number>();
  for (const v of a) ca.set(v, (ca.get(v) ?? 0) + 1);
  const cb = new Map<string, number>();
  for (const v of b) cb.set(v, (cb.get(v) ?? 0) + 1);
  let inter = 0;
  for (const [k, n] of ca) inter += Math.min(n, cb.get(k) ?? 0);
  return inter / (a.length + b.length - inter);
}

type Call = { name: string; params: Record<string, Json> };

/** ToolRL tool-call score S/S_max in [0, 1] (§9.2); 1 on exact (order-sensitive) equality. */
export function toolrlCallScore(gt: readonly Call[], pred: readonly Call[]): number {
  if (deepEqual(gt, pred)) return 1;
  let score = multisetJaccard(
    gt.map((g) => g.name),
    pred.map((p) => p.name),
  );
  let sMax = 1;
  const used = new Set<number>();
  for (const g of gt) {
    const gKeys = Object.keys(g.params);
    sMax += 1 + gKeys.length;
    let best = 0;
    let bestIdx = -1;
    pred.forEach((p, i) => {
      if (used.has(i) || p.name !== g.name) return;
      const s =
        multisetJaccard(gKeys, Object.keys(p.params)) +
        gKeys.filter((k) => k in p.params && deepEqual(p.params[k], g.params[k])).length;
      if (s > best) {
        best = s;
        bestIdx = i;
      }
    });
    if (bestIdx >= 0) {
      used.add(bestIdx);
      score += best;
    }
  }
  return score / sMax;
}

/** Predicted calls: the first <tool_call> block, one JSON {name, parameters|arguments} per line; null if unparseable. */
function parseToolrlCalls(text: string): Call[] | null {
  const open = text.indexOf("<tool_call>");
  const close = text.indexOf("</tool_call>", open);
  if (open < 0 || close < 0) return null;
  const lines = text
    .slice(open + "<tool_call>".length, close)
    .trim()
    .split("\n");
  const calls: Call[] = [];
  for (const line of lines) {
    let v: Json;
    try {
      v = JSON.parse(line);
    } catch {
      return null;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
    const r = v as Record<string, Json>;
    const params = r.parameters ?? r.arguments;
    if (typeof r.name !== "string" || typeof params !== "object" || params === null || Array.isArray(params))
      return null;
    calls.push({ name: r.name, params: params as Record<string, Json> });
  }
  return calls;
}

/**
 * The turn ToolRL's reward reads (§9.2 scores one model turn): a trajectory that goes on after
 * its call (the tool's response, the final answer) is cut after the last `</tool_call>` before
 * its first `<tool_response>`, so the chat markup that closes the turn and opens the tool's
 * (`<|im_end|>\n<|im_start|>user\n`, or `user\n` once special tokens are decoded away) is not
 * read as the model's; a text without a tool response is read whole.
 */
export function toolrlTurn(text: string): string {
  const resp = text.indexOf("<tool_response>");
  if (resp < 0) return text;
  const close = text.lastIndexOf("</tool_call>", resp);
  return close < 0 ? text.slice(0, resp) : text.slice(0, close + "</tool_call>".length);
}

/** ToolRL reward ranges at step s (§9.2); fixed ranges when the schedule is off. */
export function toolrlRanges(step: number, schedule: boolean) {
  if (!schedule) return { format: { min: 0, max: 1 }, correct: { min: -3, max: 3 } };
  return {
    format: { min: Math.min(-1, -2 + (2 * step) / 150), max: Math.max(1, 2 - step / 150) },
    correct: { min: Math.max(-3, -2 - step / 150), max: Math.min(3, 2 + step / 150) },
  };
}

/** ToolRL format and correctness parts (§9.2) of the calling turn (toolrlTurn). Options: schedule (false), gtHasResponse (default: no gt calls). */
export function toolrlParts(x: RewardInput, o: RewardOptions): { format: number; correct: number } {
  const gt = (x.gtCalls ?? []).map((c) => ({ name: c.name, params: c.arguments }));
  const hasCall = gt.length > 0;
  const hasResponse = bool(o, "gtHasResponse", !hasCall);
  const ranges = toolrlRanges(x.step, bool(o, "schedule", false));
  const t = toolrlTurn(x.text);
  const count = (s: string) => t.split(s).length - 1;
  const once = (tag: string) => count(`<${tag}>`) === 1 && count(`</${tag}>`) === 1;
  let ok: boolean;
  if (hasResponse && !hasCall)
    ok = /^<think>[\s\S]*?<\/think>\n<response>[\s\S]*?<\/response>$/.test(t) && once("response");
  else if (!hasResponse && hasCall)
    ok = /^<think>[\s\S]*?<\/think>\n<tool_call>\n[\s\S]*?\n<\/tool_call>$/.test(t) && once("tool_call");
  else if (hasResponse && hasCall)
    ok =
      /^<think>[\s\S]*?<\/think>\n<tool_call>\n[\s\S]*?\n<\/tool_call>\n<response>[\s\S]*?<\/response>$/.test(
        t,
      ) &&
      once("tool_call") &&
      once("response");
  else ok = /^<think>[\s\S]*?<\/think>$/.test(t);
  const format = ok ? ranges.format.max : ranges.format.min;

  let correct = 0;
  if (hasCall) {
    const pred = parseToolrlCalls(t);
    const { min, max } = ranges.correct;
    correct = pred === null ? min : (max - min) * toolrlCallScore(gt, pred) + min;
  }
  return { format, correct };
}

export const toolrl: RewardFn = (x, o) => {
  const p = toolrlParts(x, o);
  return p.format + p.correct;
};

// ---------------------------------------------------------------- OTC

/** OTC-PPO tool reward cos(m·π/(2m + c)) (§9.3). */
export function otcPpoToolReward(m: number, c: number): number {
  return Math.cos((m * Math.PI) / (2 * m + c));
}

/** OTC-GRPO tool reward for m calls when the optimum is n (§9.3). */
export function otcGrpoToolReward(m: number, n: number, c: number): number {
  if (m === 0 && n === 0) return 1;
  if (n === 0) return otcPpoToolReward(m, c);
  const f = (2 * n * m) / (m + n);
  return Math.sin((f * Math.PI) / (2 * n));
}

/** OTC-PPO (§9.3): α·r_tool·r_φ with r_φ = 1 if correct else 0. Options alpha 1, c 1 (re-implementations' c). */
export const otcPpo: RewardFn = (x, o) =>
  x.correct ? num(o, "alpha", 1) * otcPpoToolReward(x.toolCalls.length, num(o, "c", 1)) : 0;

/**
 * OTC-GRPO (§9.3): n = minimum call count among the group's correct responses (this batch
 * only; a running minimum across epochs is unverified). No correct response: r_tool = 1.
 */
export const otcGrpo: RewardFn = (x, o) => {
  if (!x.correct) return 0;
  if (!x.group) throw new Error("otc-grpo needs the group's tool-call counts and correctness");
  const counts = x.group.toolCalls.filter((_, i) => x.group?.correct[i]);
  const rTool =
    counts.length === 0 ? 1 : otcGrpoToolReward(x.toolCalls.length, Math.min(...counts), num(o, "c", 1));
  return num(o, "alpha", 1) * rTool;
};

// ---------------------------------------------------------------- ARTIST, Tool-N1, DAPO

/** ARTIST R_tool = successes/calls (§9.4); zero calls give `zeroCalls` (default 0; the paper is silent). */
export const artistToolExec: RewardFn = (x, o) =>
  x.toolCalls.length === 0
    ? num(o, "zeroCalls", 0)
    : x.toolCalls.filter((c) => c.ok).length / x.toolCalls.length;

/** JSON with recursively sorted keys (Python json.dumps(sort_keys=True) up to number formatting: 1.0 prints as 1). */
export function canonicalJson(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const r = v as Record<string, Json>;
    return `{${Object.keys(r)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(r[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/**
 * Nemotron Tool-N1 (§9.5): 1 iff the text has <think> and </think>, the last <tool_call>
 * block (after the final assistant marker) parses to dicts with name and arguments, and the
 * calls equal the ground truth as a multiset of (name, canonical arguments). With no
 * <tool_call> the v0 code gives 0; `emptyGoldMatchesNoCall` (default true, the spec's
 * recommendation) gives 1 when the ground truth is [] instead.
 */
export const toolN1: RewardFn = (x, o) => {
  const marker = "<|im_start|>assistant";
  const t = x.text.includes(marker) ? x.text.slice(x.text.lastIndexOf(marker)) : x.text;
  const gold = x.gtCalls ?? [];
  const hasThink = t.includes("<think>") && t.includes("</think>");
  const open = t.lastIndexOf("<tool_call>");
  const close = open >= 0 ? t.indexOf("</tool_call>", open) : -1;
  if (open < 0 || close < 0)
    return hasThink && gold.length === 0 && bool(o, "emptyGoldMatchesNoCall", true) ? 1 : 0;
  let parsed: Json;
  try {
    parsed = JSON.parse(t.slice(open + "<tool_call>".length, close).trim());
  } catch {
    return 0;
  }
  const items = Array.isArray(parsed) ? parsed : [parsed];
  const wellFormed = items.every(
    (c) => typeof c === "object" && c !== null && !Array.isArray(c) && "name" in c && "arguments" in c,
  );
  if (!hasThink || !wellFormed) return 0;
  const key = (c: { name: Json; arguments: Json }) =>
    `${canonicalJson(c.name)}|${canonicalJson(c.arguments)}`;
  const a = items.map((c) => key(c as { name: Json; arguments: Json })).sort();
  const b = gold.map((c) => key(c)).sort();
  return a.length === b.length && a.every((v, i) => v === b[i]) ? 1 : 0;
};

/**
 * DAPO soft overlong punishment (§4): 0 up to L_max − L_cache, then linear to −factor at
 * L_max, −factor beyond. Options: cache (default round(0.2·L_max), DAPO's 4096/20480 ratio),
 * factor 1, maxLength (default: the trajectory's budget).
 */
export const dapoOverlong: RewardFn = (x, o) => {
  const lMax = num(o, "maxLength", x.maxLength);
  const cache = num(o, "cache", Math.max(1, Math.round(0.2 * lMax)));
  const factor = num(o, "factor", 1);
  if (!(cache > 0 && cache <= lMax)) throw new Error("dapo-overlong: need 0 < cache <= maxLength");
  const y = x.responseLength;
  if (y > lMax) return -factor;
  return Math.min((-(y - (lMax - cache)) / cache) * factor, 0);
};

// ---------------------------------------------------------------- custom JS

export const CUSTOM_JS_CONTRACT = [
  "The source defines `function reward(x, options)` and returns a finite number.",
  "x has the RewardInput fields: text, answerText, correct, toolCalls [{name, args, ok}],",
  "gtCalls, responseLength, maxLength, step, totalSteps, group.",
  "It runs in the QuickJS sandbox under the run's limits (no fetch, no timers, no imports);",
  "the trainer calls the sandbox's runRewardFunction per trajectory and checks the value with",
  "REWARD['custom-js'].check. A throw, a timeout or a non-number is an error reported for that",
  "trajectory and scored 0.",
].join(" ");

/** Validate a custom reward's returned value: finite number, else an error naming the problem. */
export function checkCustomReward(value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new Error(
      `custom-js reward must return a finite number, got ${JSON.stringify(value) ?? String(value)}`,
    );
  }
  return value;
}

export const REWARD: Record<string, RewardEntry> = {
  correctness: { kind: "pure", help: "pos if correct else neg (1/0 or +1/-1)", fn: correctness },
  format: { kind: "pure", help: "<think>/<answer> structure, one answer at the end", fn: format },
  "torl-exec-penalty": { kind: "pure", help: "ToRL: -0.5 when a tool call failed", fn: torlExecPenalty },
  toolrl: { kind: "pure", help: "ToolRL: format + tool-call correctness, optional schedule", fn: toolrl },
  "otc-ppo": { kind: "pure", help: "OTC-PPO: correctness x cos(m pi/(2m+c))", fn: otcPpo },
  "otc-grpo": { kind: "pure", help: "OTC-GRPO: correctness x group-optimal call count reward", fn: otcGrpo },
  "artist-tool-exec": { kind: "pure", help: "ARTIST: tool successes / tool calls", fn: artistToolExec },
  "tool-n1": { kind: "pure", help: "Tool-N1: 1 iff think tags and calls match", fn: toolN1 },
  "dapo-overlong": { kind: "pure", help: "DAPO soft overlong punishment", fn: dapoOverlong },
  "custom-js": {
    kind: "sandbox",
    help: "user JS reward run in the sandbox",
    contract: CUSTOM_JS_CONTRACT,
    check: checkCustomReward,
  },
  env: {
    kind: "sandbox",
    help: "an environment's episode return: its step rewards plus its final check's score",
    contract:
      "The episode return of a multi-turn or JS environment (docs/ENVIRONMENTS.md); listed in rewards.terms it is weighted and summed with the other terms, unlisted it is the episode's whole reward.",
    check: (v) => {
      if (typeof v !== "number" || !Number.isFinite(v))
        throw new Error(`env reward must be a finite number, got ${String(v)}`);
      return v;
    },
  },
};

/**
 * Weighted sum of reward terms for one trajectory. Sandbox terms take their value from
 * `sandboxValues[name]` (computed by the trainer through the sandbox).
 */
export function combineRewards(
  x: RewardInput,
  terms: readonly { name: string; weight: number; options: RewardOptions }[],
  sandboxValues: Record<string, number> = {},
): { total: number; terms: Record<string, number> } {
  const out: Record<string, number> = {};
  let total = 0;
  for (const t of terms) {
    const e = REWARD[t.name];
    if (!e) throw new Error(`unknown reward term "${t.name}"`);
    let v: number;
    if (e.kind === "pure") v = e.fn(x, t.options);
    else {
      if (!(t.name in sandboxValues)) throw new Error(`reward term "${t.name}" needs its sandbox value`);
      v = e.check(sandboxValues[t.name]);
    }
    out[t.name] = v;
    total += t.weight * v;
  }
  return { total, terms: out };
}
