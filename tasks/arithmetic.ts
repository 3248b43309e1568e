// The demo task: arithmetic with a calculator tool (ALGORITHMS §14). Problems are 50% hard
// (`abc*de` 70%, `(ab+cd)*ef` 30%) and 50% easy (`a*b` one digit, `a+b` up to 20); the SFT
// cold start mixes 30% correct tool use with 70% direct answers that are right on easy and
// plausibly wrong on hard, in the `inline` transcript. Knobs change the mix and difficulty.
// The `oneOp` variant (OTC's task) gives a calculator that does one operation per call, so each
// problem needs a known minimum of calls (meta.minCalls, bucket `calls<N>`): easy 0, `ab*cd` 1,
// `(ab+cd)*ef` 2, `(ab+cd)*(ef+gh)` 3; its demos chain one-operation calls and over-call on purpose.
// Tested by tasks/arithmetic.test.ts.

import { CALC_ALLOWED_CHARS, calculator, oneOpCalculator } from "./calc.ts";
import type { Rng } from "./rng.ts";
import { DEFAULT_EVAL_FRACTION, drawSplit, evalRng, SPLIT_VERSION, type SplitVersion } from "./split.ts";
import type {
  Demo,
  LocalToolResult,
  Message,
  Problem,
  Task,
  TaskTool,
  Trajectory,
  VerifyResult,
} from "./types.ts";

export type Operator = "+" | "-" | "*";

export interface ArithmeticConfig {
  /** Share of hard problems (the rest are easy). */
  hardFraction: number;
  /** Within hard: share of `mulDigits[0]-digit * mulDigits[1]-digit` products; the rest are `(a+b)*c`. */
  hardMulFraction: number;
  /** Operand digits of the hard product: [3, 2] is `abc*de`. */
  mulDigits: [number, number];
  /** Operand digits of `(ab+cd)*ef`. */
  sumDigits: number;
  /** Within easy: share of one-digit products; the rest are sums. */
  easyMulFraction: number;
  /** Largest operand of an easy product (9: one digit). */
  easyMulMax: number;
  /** Largest operand of an easy sum. */
  easyAddMax: number;
  /**
   * When set, hard problems are random expressions instead of the demo's two shapes:
   * `steps` binary operators over `digits`-digit numbers, optional parentheses.
   */
  random?: { steps: number; digits: number; operators: Operator[]; parens: boolean };
  /**
   * Share of the problem-key space held out for evaluation; unset: 0.1 under split version 1,
   * 0.2 under version 2 (canonical keys halve the easy bucket's keys; 0.2 leaves it about 50
   * distinct held-out problems, so a 100-item eval set needs no repeats).
   */
  evalFraction?: number;
  /** The train/eval split (tasks/split.ts): 2 keys problems canonically and has a dev side. */
  splitVersion: SplitVersion;
  /**
   * A calculator that does one operation per call (an expression with more than one binary
   * operator returns ONE_OP_ERROR). Hard problems are then a third each `mulDigits` products
   * (1 call), `(ab+cd)*ef` (2) and `(ab+cd)*(ef+gh)` (3) with `sumDigits` operands; easy ones
   * need none. Buckets `calls0`..`calls3`; `random` and `hardMulFraction` do not apply.
   */
  oneOp?: boolean;
}

export const DEFAULT_ARITHMETIC_CONFIG: ArithmeticConfig = {
  hardFraction: 0.5,
  hardMulFraction: 0.7,
  mulDigits: [3, 2],
  sumDigits: 2,
  easyMulFraction: 0.5,
  easyMulMax: 9,
  easyAddMax: 20,
  splitVersion: SPLIT_VERSION,
};

/**
 * The problem's split key under version 2: commutative operands sorted, so `a*b` and `b*a`
 * (and `(a+b)*c` and `(b+a)*c`) are one problem and land on one side. Random expressions
 * (cfg.random) keep their text: reordering them is not always the same problem.
 */
export function canonicalExpr(expr: string): string {
  const pair = /^(\d+)([*+])(\d+)$/.exec(expr);
  if (pair) {
    const [a, b] = [pair[1], pair[3]].sort((x, y) => Number(x) - Number(y));
    return `${a}${pair[2]}${b}`;
  }
  const sumProd = /^\((\d+)\+(\d+)\)\*(\d+)$/.exec(expr);
  if (sumProd) {
    const [a, b] = [sumProd[1], sumProd[2]].sort((x, y) => Number(x) - Number(y));
    return `(${a}+${b})*${sumProd[3]}`;
  }
  // (a+b)*(c+d), the oneOp variant's 3-call shape: each sum sorted, then the two sums.
  const sumSum = /^\((\d+)\+(\d+)\)\*\((\d+)\+(\d+)\)$/.exec(expr);
  if (sumSum) {
    const sorted = (x: string, y: string) => [x, y].sort((p, q) => Number(p) - Number(q)).join("+");
    const [l, r] = [sorted(sumSum[1], sumSum[2]), sorted(sumSum[3], sumSum[4])].sort();
    return `(${l})*(${r})`;
  }
  return expr;
}

/**
 * The oneOp variant's calls for `expr`, one operation each, each later call using the earlier
 * results: `a*b` one call, `(a+b)*c` two, `(a+b)*(c+d)` three; anything else one call of itself.
 */
export function oneOpChain(expr: string): string[] {
  const out = (e: string) => calculator(e).output;
  const sumProd = /^\((\d+\+\d+)\)\*(\d+)$/.exec(expr);
  if (sumProd) return [sumProd[1], `${out(sumProd[1])}*${sumProd[2]}`];
  const sumSum = /^\((\d+\+\d+)\)\*\((\d+\+\d+)\)$/.exec(expr);
  if (sumSum) return [sumSum[1], sumSum[2], `${out(sumSum[1])}*${out(sumSum[2])}`];
  return [expr];
}

export interface ArithmeticDemoKnobs {
  /** Share of demos that call the tool (spread over easy and hard alike). */
  toolRate: number;
  /** Share of demos that open with a short think. */
  thinkRate: number;
  /** Direct answers on hard problems: share that are a plausible wrong number (1-2 digits changed). */
  wrongRate: number;
  /** Direct answers on easy problems: share that are wrong. */
  easyWrongRate: number;
  /** Share of tool demos that copy an operand wrong into the call (the "imperfect demos" contrast). */
  toolErrorRate: number;
  /** Think text on tool demos. */
  thinkTool: string;
  /** Think text on direct demos. */
  thinkDirect: string;
  /** oneOp: share of easy (0-call) demos that call the tool anyway (a redundant call). */
  easyToolRate: number;
  /** oneOp: share of 1-3-call demos that repeat their last call as a check (a redundant call). */
  checkRate: number;
}

export const DEFAULT_DEMO_KNOBS: ArithmeticDemoKnobs = {
  toolRate: 0.3,
  thinkRate: 0.3,
  wrongRate: 1,
  easyWrongRate: 0,
  toolErrorRate: 0,
  thinkTool: "use tool",
  thinkDirect: "answer directly",
  easyToolRate: 0.5,
  checkRate: 0.5,
};

export const CALCULATOR_TOOL: TaskTool = {
  builtin: "js",
  name: "calculator",
  description: "Evaluates an integer expression with + - * and parentheses.",
  allowedChars: CALC_ALLOWED_CHARS,
};

/** The oneOp variant's calculator: one binary operator per call (rl/rollout/tool-protocol.ts refuses more). */
export const ONE_OP_CALCULATOR_TOOL: TaskTool = {
  builtin: "js",
  name: "calculator",
  description: "Evaluates one integer operation per call: a+b, a-b or a*b.",
  allowedChars: CALC_ALLOWED_CHARS,
  maxOperators: 1,
};

function randDigits(rng: Rng, digits: number): number {
  return rng.int(10 ** (digits - 1), 10 ** digits - 1);
}

export function generateExpression(rng: Rng, cfg: ArithmeticConfig): { expr: string; bucket: string } {
  if (cfg.oneOp) return generateOneOp(rng, cfg);
  if (rng.bool(cfg.hardFraction)) {
    if (cfg.random) {
      const { steps, digits, operators, parens } = cfg.random;
      let expr = String(randDigits(rng, digits));
      for (let s = 0; s < steps; s++) {
        if (parens && s > 0 && rng.bool(0.3)) expr = `(${expr})`;
        expr = `${expr}${rng.pick(operators)}${randDigits(rng, digits)}`;
      }
      return { expr, bucket: "hard" };
    }
    if (rng.bool(cfg.hardMulFraction)) {
      return {
        expr: `${randDigits(rng, cfg.mulDigits[0])}*${randDigits(rng, cfg.mulDigits[1])}`,
        bucket: "hard",
      };
    }
    const d = cfg.sumDigits;
    return { expr: `(${randDigits(rng, d)}+${randDigits(rng, d)})*${randDigits(rng, d)}`, bucket: "hard" };
  }
  if (rng.bool(cfg.easyMulFraction)) {
    return { expr: `${rng.int(1, cfg.easyMulMax)}*${rng.int(1, cfg.easyMulMax)}`, bucket: "easy" };
  }
  return { expr: `${rng.int(1, cfg.easyAddMax)}+${rng.int(1, cfg.easyAddMax)}`, bucket: "easy" };
}

/** The oneOp variant's problems: bucket `calls<N>` for the minimum of N one-operation calls. */
function generateOneOp(rng: Rng, cfg: ArithmeticConfig): { expr: string; bucket: string } {
  if (rng.bool(cfg.hardFraction)) {
    const calls = rng.int(1, 3);
    const d = cfg.sumDigits;
    const sum = () => `${randDigits(rng, d)}+${randDigits(rng, d)}`;
    if (calls === 1)
      return {
        expr: `${randDigits(rng, cfg.mulDigits[0])}*${randDigits(rng, cfg.mulDigits[1])}`,
        bucket: "calls1",
      };
    if (calls === 2) return { expr: `(${sum()})*${randDigits(rng, d)}`, bucket: "calls2" };
    return { expr: `(${sum()})*(${sum()})`, bucket: "calls3" };
  }
  if (rng.bool(cfg.easyMulFraction))
    return { expr: `${rng.int(1, cfg.easyMulMax)}*${rng.int(1, cfg.easyMulMax)}`, bucket: "calls0" };
  return { expr: `${rng.int(1, cfg.easyAddMax)}+${rng.int(1, cfg.easyAddMax)}`, bucket: "calls0" };
}

/** Changes 1 or 2 digits of a non-negative integer string; the result differs and has no leading zero. */
export function perturbNumber(rng: Rng, text: string, maxDigits = 2): string {
  const chars = text.split("");
  const digitPositions = chars.map((c, i) => (c >= "0" && c <= "9" ? i : -1)).filter((i) => i >= 0);
  const count = Math.min(digitPositions.length, rng.bool(0.5) ? 1 : maxDigits);
  const chosen = rng.shuffle(digitPositions).slice(0, count);
  for (const i of chosen) {
    const leading = i === digitPositions[0] && digitPositions.length > 1;
    const choices = "0123456789".split("").filter((d) => d !== chars[i] && !(leading && d === "0"));
    chars[i] = rng.pick(choices);
  }
  return chars.join("");
}

/** Copies one operand of `expr` wrong (one digit changed): the "imperfect tool demo". */
export function miscopyOperand(rng: Rng, expr: string): string {
  const numbers = [...expr.matchAll(/\d+/g)];
  const m = rng.pick(numbers);
  const start = m.index ?? 0;
  let wrong = perturbNumber(rng, m[0], 1);
  // A one-digit operand must stay a non-zero digit so the problem keeps its shape.
  while (m[0].length === 1 && wrong === "0") wrong = perturbNumber(rng, m[0], 1);
  return expr.slice(0, start) + wrong + expr.slice(start + m[0].length);
}

function problemFor(expr: string, bucket: string, oneOp = false): Problem {
  const r = calculator(expr);
  if (!r.ok) throw new Error(`arithmetic: generated an invalid expression ${expr}`);
  return {
    id: `arithmetic:${expr}`,
    messages: [{ role: "user", content: `What is ${expr}?` }],
    answer: r.output,
    bucket,
    // the fewest one-operation calls that solve it (easy problems are answered without the tool)
    meta: oneOp ? { expr, minCalls: Number(bucket.slice("calls".length)) } : { expr },
  };
}

/** Integer answers compare by value; anything that is not a plain integer is wrong. */
export function verifyInteger(reference: string, answer: string | null): VerifyResult {
  if (answer === null) return { correct: false, score: 0, detail: { reason: "no answer" } };
  const text = answer.trim();
  if (!/^-?\d+$/.test(text))
    return { correct: false, score: 0, detail: { reason: "not an integer", answer: text } };
  const correct = BigInt(text) === BigInt(reference);
  return { correct, score: correct ? 1 : 0 };
}

/** The assistant side of a tool demo: call, tool response (a "tool" message), answer. */
export function toolDemoMessages(
  think: string | null,
  call: string,
  response: string,
  answer: string,
): Message[] {
  const t = think === null ? "" : `<think>${think}</think>`;
  return [
    { role: "assistant", content: `${t}<tool_call>${call}</tool_call>` },
    { role: "tool", content: response },
    { role: "assistant", content: `<answer>${answer}</answer>` },
  ];
}

export function directDemoMessages(think: string | null, answer: string): Message[] {
  const t = think === null ? "" : `<think>${think}</think>`;
  return [{ role: "assistant", content: `${t}<answer>${answer}</answer>` }];
}

/**
 * The `inline` transcript of a conversation as text (what model/template.ts renders to
 * tokens), for previews and tests: assistant and tool messages after a user turn form one
 * assistant turn, tool messages wrapped in `<tool_response>`.
 */
export function inlineTranscript(messages: Message[]): string {
  const parts: string[] = [];
  let inAssistant = false;
  for (const m of messages) {
    if (m.role === "system" || m.role === "user") {
      if (inAssistant) parts.push("<|im_end|>\n");
      inAssistant = false;
      parts.push(`<|im_start|>${m.role}\n${m.content}<|im_end|>\n`);
    } else {
      if (!inAssistant) parts.push("<|im_start|>assistant\n");
      inAssistant = true;
      parts.push(m.role === "tool" ? `<tool_response>${m.content}</tool_response>` : m.content);
    }
  }
  if (inAssistant) parts.push("<|im_end|>");
  return parts.join("");
}

export function makeArithmeticTask(config: Partial<ArithmeticConfig> = {}): Task {
  const cfg: ArithmeticConfig = { ...DEFAULT_ARITHMETIC_CONFIG, ...config };
  const name = "arithmetic";
  const draw = (rng: Rng) => {
    const { expr, bucket } = generateExpression(rng, cfg);
    return problemFor(expr, bucket, cfg.oneOp);
  };
  const version = cfg.splitVersion;
  const fraction = cfg.evalFraction ?? (version === 1 ? DEFAULT_EVAL_FRACTION : 0.2);
  const key =
    version === 1 ? (p: Problem) => String(p.meta.expr) : (p: Problem) => canonicalExpr(String(p.meta.expr));
  const split = { taskName: name, fraction, version };
  const sample = (rng: Rng, n: number) => drawSplit(rng, n, draw, key, "train", split);
  const drawBucket = (hard: boolean) => (rng: Rng) => {
    const { expr, bucket } = generateExpression(rng, { ...cfg, hardFraction: hard ? 1 : 0 });
    return problemFor(expr, bucket, cfg.oneOp);
  };
  const heldOut = (rng: Rng, n: number, side: "eval" | "dev") => {
    const nEasy = Math.round(n * (1 - cfg.hardFraction));
    const opts = { ...split, unique: true as const };
    const easy = drawSplit(rng.fork("easy"), nEasy, drawBucket(false), key, side, {
      ...opts,
      maxTries: 200,
      upTo: true,
    });
    const hard = drawSplit(rng.fork("hard"), n - easy.length, drawBucket(true), key, side, opts);
    return rng.fork("order").shuffle([...easy, ...hard]);
  };

  const calc = cfg.oneOp ? oneOpCalculator : calculator;
  return {
    name,
    description: cfg.oneOp
      ? "Integer arithmetic with a one-operation calculator: 0 calls (a*b, a+b), 1 (ab*cd), 2 ((ab+cd)*ef), 3 ((ab+cd)*(ef+gh))."
      : "Integer arithmetic with a calculator tool: easy (a*b, a+b) and hard (abc*de, (ab+cd)*ef).",
    defaultTemplate: "inline",
    tools: [cfg.oneOp ? ONE_OP_CALCULATOR_TOOL : CALCULATOR_TOOL],
    buckets: cfg.oneOp ? ["calls0", "calls1", "calls2", "calls3"] : ["easy", "hard"],
    sample,
    // Version 1 allows repeats (its easy bucket has few held-out keys, and rejecting repeats
    // tilted the mix toward hard problems: 100 items were 74 distinct). Version 2 holds each
    // problem once and keeps the training mix by drawing each bucket's share on its own;
    // past the easy bucket's 50 held-out problems (34 dev) the rest are hard.
    evalSet(n: number) {
      if (version === 1) return drawSplit(evalRng(name), n, draw, key, "eval", split);
      return heldOut(evalRng(name), n, "eval");
    },
    devSet(n: number) {
      return heldOut(evalRng(name, "dev"), n, "dev");
    },
    verify(problem: Problem, finalAnswerText: string | null, _trajectory?: Trajectory) {
      return verifyInteger(problem.answer, finalAnswerText);
    },
    sftDemos(rng: Rng, n: number, knobs: Partial<ArithmeticDemoKnobs> = {}): Demo[] {
      const k: ArithmeticDemoKnobs = { ...DEFAULT_DEMO_KNOBS, ...knobs };
      const problems = sample(rng.fork("problems"), n);
      const r = rng.fork("behaviour");
      if (cfg.oneOp) return problems.map((p, i) => oneOpDemo(p, i, r, k));
      return problems.map((p, i) => {
        const expr = String(p.meta.expr);
        const useTool = r.bool(k.toolRate);
        const think = r.bool(k.thinkRate) ? (useTool ? k.thinkTool : k.thinkDirect) : null;
        let turn: Message[];
        let answer: string;
        let toolError = false;
        if (useTool) {
          toolError = r.bool(k.toolErrorRate);
          const call = toolError ? miscopyOperand(r, expr) : expr;
          const out = calculator(call).output;
          answer = out;
          turn = toolDemoMessages(think, call, out, answer);
        } else {
          const wrong = r.bool(p.bucket === "hard" ? k.wrongRate : k.easyWrongRate);
          answer = wrong ? perturbNumber(r, p.answer) : p.answer;
          turn = directDemoMessages(think, answer);
        }
        return {
          id: `${p.id}#demo${i}`,
          messages: [...p.messages, ...turn],
          bucket: p.bucket,
          meta: { expr, useTool, think: think !== null, toolError, correct: answer === p.answer, answer },
        };
      });
    },
    runToolLocally(toolName: string, input: string | Record<string, unknown>): LocalToolResult | undefined {
      if (toolName !== CALCULATOR_TOOL.name) return undefined;
      const code = typeof input === "string" ? input : String(input.expression ?? input.code ?? "");
      const r = calc(code);
      return { ok: r.ok, output: r.output };
    },
  };
}

/**
 * A oneOp demo (the over-calling cold start of OTC): the minimal chain of one-operation calls,
 * each using the previous results, then the answer; redundant calls on purpose: an easy problem
 * calls the tool at rate easyToolRate (else answers directly, right unless easyWrongRate), and a
 * 1-3-call demo repeats its last call at rate checkRate. meta.calls and meta.redundant count them.
 */
function oneOpDemo(p: Problem, i: number, r: Rng, k: ArithmeticDemoKnobs): Demo {
  const expr = String(p.meta.expr);
  const minCalls = Number(p.meta.minCalls);
  const useTool = minCalls > 0 || r.bool(k.easyToolRate);
  const think = r.bool(k.thinkRate) ? (useTool ? k.thinkTool : k.thinkDirect) : null;
  const t = think === null ? "" : `<think>${think}</think>`;
  const meta = { expr, minCalls, useTool, think: think !== null, correct: true, answer: p.answer };
  if (!useTool) {
    const answer = r.bool(k.easyWrongRate) ? perturbNumber(r, p.answer) : p.answer;
    return {
      id: `${p.id}#demo${i}`,
      messages: [...p.messages, ...directDemoMessages(think, answer)],
      bucket: p.bucket,
      meta: { ...meta, correct: answer === p.answer, answer, calls: 0, redundant: 0 },
    };
  }
  const calls = oneOpChain(expr);
  if (minCalls > 0 && r.bool(k.checkRate)) calls.push(calls[calls.length - 1]);
  const turn: Message[] = [];
  calls.forEach((call, j) => {
    const out = oneOpCalculator(call);
    if (!out.ok) throw new Error(`arithmetic: the oneOp demo of ${expr} made a call it refuses: ${call}`);
    turn.push({ role: "assistant", content: `${j === 0 ? t : ""}<tool_call>${call}</tool_call>` });
    turn.push({ role: "tool", content: out.output });
  });
  turn.push({ role: "assistant", content: `<answer>${p.answer}</answer>` });
  return {
    id: `${p.id}#demo${i}`,
    messages: [...p.messages, ...turn],
    bucket: p.bucket,
    meta: { ...meta, calls: calls.length, redundant: calls.length - minCalls },
  };
}

export const arithmeticTask: Task = makeArithmeticTask();
