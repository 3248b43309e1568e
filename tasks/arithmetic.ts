// The demo task: arithmetic with a calculator tool (DEMO-RECIPE.md). Problems are 50% hard
// (`abc*de` 70%, `(ab+cd)*ef` 30%) and 50% easy (`a*b` one digit, `a+b` up to 20); the SFT
// cold start mixes 30% correct tool use with 70% direct answers that are right on easy and
// plausibly wrong on hard, in the `inline` transcript. Knobs change the mix and difficulty.
// Tested by tasks/arithmetic.test.ts.

import { CALC_ALLOWED_CHARS, calculator } from "./calc.ts";
import type { Rng } from "./rng.ts";
import { DEFAULT_EVAL_FRACTION, drawSplit, evalRng, SPLIT_VERSION, type SplitVersion } from "./split.ts";
import type {
  Demo,
  LocalToolResult,
  Message,
  Problem,
  Task,
  ToolSpec,
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
  return expr;
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
}

export const DEFAULT_DEMO_KNOBS: ArithmeticDemoKnobs = {
  toolRate: 0.3,
  thinkRate: 0.3,
  wrongRate: 1,
  easyWrongRate: 0,
  toolErrorRate: 0,
  thinkTool: "use tool",
  thinkDirect: "answer directly",
};

export const CALCULATOR_TOOL: ToolSpec = {
  builtin: "js",
  name: "calculator",
  description: "Evaluates an integer expression with + - * and parentheses.",
  allowedChars: CALC_ALLOWED_CHARS,
};

function randDigits(rng: Rng, digits: number): number {
  return rng.int(10 ** (digits - 1), 10 ** digits - 1);
}

export function generateExpression(
  rng: Rng,
  cfg: ArithmeticConfig,
): { expr: string; bucket: "easy" | "hard" } {
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

function problemFor(expr: string, bucket: string): Problem {
  const r = calculator(expr);
  if (!r.ok) throw new Error(`arithmetic: generated an invalid expression ${expr}`);
  return {
    id: `arithmetic:${expr}`,
    messages: [{ role: "user", content: `What is ${expr}?` }],
    answer: r.output,
    bucket,
    meta: { expr },
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
    return problemFor(expr, bucket);
  };
  const version = cfg.splitVersion;
  const fraction = cfg.evalFraction ?? (version === 1 ? DEFAULT_EVAL_FRACTION : 0.2);
  const key =
    version === 1 ? (p: Problem) => String(p.meta.expr) : (p: Problem) => canonicalExpr(String(p.meta.expr));
  const split = { taskName: name, fraction, version };
  const sample = (rng: Rng, n: number) => drawSplit(rng, n, draw, key, "train", split);
  const drawBucket = (hard: boolean) => (rng: Rng) => {
    const { expr, bucket } = generateExpression(rng, { ...cfg, hardFraction: hard ? 1 : 0 });
    return problemFor(expr, bucket);
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

  return {
    name,
    description: "Integer arithmetic with a calculator tool: easy (a*b, a+b) and hard (abc*de, (ab+cd)*ef).",
    defaultTemplate: "inline",
    tools: [CALCULATOR_TOOL],
    buckets: ["easy", "hard"],
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
      const r = calculator(code);
      return { ok: r.ok, output: r.output };
    },
  };
}

export const arithmeticTask: Task = makeArithmeticTask();
