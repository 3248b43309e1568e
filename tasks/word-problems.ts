// ToRL-style word problems whose answer needs a computation (shopping totals, rate x time,
// areas and costs, change, work rates, savings), answered with the calculator tool in the
// `inline` transcript. Numbers are drawn so the arithmetic is 2-3 digit work; the verifier
// is numeric. Buckets: one-step and two-step. Tested by tasks/word-problems.test.ts.

import { CALCULATOR_TOOL, directDemoMessages, perturbNumber, toolDemoMessages } from "./arithmetic.ts";
import { calculator } from "./calc.ts";
import type { Rng } from "./rng.ts";
import { DEFAULT_EVAL_FRACTION, drawSplit, evalRng, SPLIT_VERSION, type SplitVersion } from "./split.ts";
import type { Demo, LocalToolResult, Problem, Task } from "./types.ts";
import { verifyNumeric } from "./verify.ts";

interface Instance {
  template: string;
  text: string;
  expr: string;
  bucket: "one-step" | "two-step";
  numbers: number[];
}

const NAMES = ["Ann", "Ben", "Chloe", "Dev", "Eva", "Femi", "Gus", "Hana"];
const ITEMS = ["pen", "notebook", "apple", "ticket", "lamp", "mug", "book", "shirt"];
const VEHICLES = ["train", "truck", "ship", "bus", "cyclist"];
const PLACES = ["room", "garden", "field", "yard", "hall"];

type Template = (rng: Rng) => Omit<Instance, "template">;

export const WORD_TEMPLATES: Record<string, Template> = {
  shopping(rng) {
    const name = rng.pick(NAMES);
    const [i1, i2] = rng.shuffle(ITEMS);
    const a = rng.int(3, 19);
    const p = rng.int(12, 99);
    const b = rng.int(3, 19);
    const q = rng.int(12, 99);
    return {
      text: `${name} buys ${a} ${i1}s at ${p} dollars each and ${b} ${i2}s at ${q} dollars each. How many dollars does ${name} spend?`,
      expr: `${a}*${p}+${b}*${q}`,
      bucket: "two-step",
      numbers: [a, p, b, q],
    };
  },
  rate(rng) {
    const v = rng.int(23, 140);
    const t = rng.int(11, 48);
    return {
      text: `A ${rng.pick(VEHICLES)} travels at ${v} km per hour for ${t} hours. How many km does it travel?`,
      expr: `${v}*${t}`,
      bucket: "one-step",
      numbers: [v, t],
    };
  },
  area(rng) {
    const w = rng.int(12, 95);
    const h = rng.int(12, 95);
    return {
      text: `A rectangular ${rng.pick(PLACES)} is ${w} m long and ${h} m wide. What is its area in square meters?`,
      expr: `${w}*${h}`,
      bucket: "one-step",
      numbers: [w, h],
    };
  },
  areaCost(rng) {
    const w = rng.int(6, 40);
    const h = rng.int(6, 40);
    const c = rng.int(7, 35);
    return {
      text: `A ${rng.pick(PLACES)} is ${w} m by ${h} m. Covering it costs ${c} dollars per square meter. How many dollars does covering it cost?`,
      expr: `${w}*${h}*${c}`,
      bucket: "two-step",
      numbers: [w, h, c],
    };
  },
  change(rng) {
    const k = rng.int(3, 12);
    const p = rng.int(13, 89);
    const m = Math.ceil((k * p + rng.int(1, 400)) / 100) * 100;
    const name = rng.pick(NAMES);
    return {
      text: `${name} has ${m} dollars and buys ${k} ${rng.pick(ITEMS)}s at ${p} dollars each. How many dollars are left?`,
      expr: `${m}-${k}*${p}`,
      bucket: "two-step",
      numbers: [m, k, p],
    };
  },
  work(rng) {
    const n = rng.int(3, 25);
    const b = rng.int(12, 60);
    const h = rng.int(3, 12);
    return {
      text: `${n} workers each pack ${b} boxes per hour. How many boxes do they pack in ${h} hours?`,
      expr: `${n}*${b}*${h}`,
      bucket: "two-step",
      numbers: [n, b, h],
    };
  },
  savings(rng) {
    const s = rng.int(15, 95);
    const w = rng.int(8, 52);
    const x = rng.int(10, s * w - 1);
    return {
      text: `${rng.pick(NAMES)} saves ${s} dollars a week for ${w} weeks, then spends ${x} dollars. How many dollars are left?`,
      expr: `${s}*${w}-${x}`,
      bucket: "two-step",
      numbers: [s, w, x],
    };
  },
};

export interface WordDemoKnobs {
  /** Share of demos that call the calculator. */
  toolRate: number;
  /** Share of demos with a short think. */
  thinkRate: number;
  /** Direct answers on two-step problems: share that are wrong (1-2 digits changed). */
  wrongRate: number;
}

export const DEFAULT_WORD_DEMO_KNOBS: WordDemoKnobs = { toolRate: 0.5, thinkRate: 0.3, wrongRate: 1 };

function toProblem(template: string, inst: Omit<Instance, "template">): Problem {
  const r = calculator(inst.expr);
  if (!r.ok) throw new Error(`word-problems: bad expression ${inst.expr}`);
  return {
    id: `word-problems:${template}:${inst.numbers.join(",")}`,
    messages: [{ role: "user", content: inst.text }],
    answer: r.output,
    bucket: inst.bucket,
    meta: { template, expr: inst.expr, numbers: inst.numbers },
  };
}

export function makeWordProblemsTask(
  opts: { templates?: string[]; evalFraction?: number; splitVersion?: SplitVersion } = {},
): Task {
  const name = "word-problems";
  const names = opts.templates ?? Object.keys(WORD_TEMPLATES);
  for (const t of names)
    if (!(t in WORD_TEMPLATES)) throw new Error(`word-problems: unknown template "${t}"`);
  const fraction = opts.evalFraction ?? DEFAULT_EVAL_FRACTION;
  const draw = (rng: Rng) => {
    const t = rng.pick(names);
    return toProblem(t, WORD_TEMPLATES[t](rng));
  };
  // Names and items are decoration: the held-out key is the template and its numbers.
  const key = (p: Problem) => p.id;
  const version = opts.splitVersion ?? SPLIT_VERSION;
  const split = { taskName: name, fraction, version };
  const sample = (rng: Rng, n: number) => drawSplit(rng, n, draw, key, "train", split);
  return {
    name,
    description:
      "Templated word problems (shopping, rates, areas, change, work, savings) solved with a calculator.",
    defaultTemplate: "inline",
    tools: [CALCULATOR_TOOL],
    buckets: ["one-step", "two-step"],
    sample,
    evalSet: (n) =>
      drawSplit(evalRng(name), n, draw, key, "eval", { ...split, unique: version >= 2 || "prefer" }),
    devSet: (n) => drawSplit(evalRng(name, "dev"), n, draw, key, "dev", { ...split, unique: true }),
    verify: (problem, answer) => verifyNumeric(problem.answer, answer),
    sftDemos(rng: Rng, n: number, knobs: Partial<WordDemoKnobs> = {}): Demo[] {
      const k = { ...DEFAULT_WORD_DEMO_KNOBS, ...knobs };
      const problems = sample(rng.fork("problems"), n);
      const r = rng.fork("behaviour");
      return problems.map((p, i) => {
        const useTool = r.bool(k.toolRate);
        const think = r.bool(k.thinkRate) ? (useTool ? "compute it" : "answer directly") : null;
        const expr = String(p.meta.expr);
        let answer = p.answer;
        let turn: Demo["messages"];
        if (useTool) {
          turn = toolDemoMessages(think, expr, calculator(expr).output, answer);
        } else {
          if (p.bucket === "two-step" && r.bool(k.wrongRate)) answer = perturbNumber(r, p.answer);
          turn = directDemoMessages(think, answer);
        }
        return {
          id: `${p.id}#demo${i}`,
          messages: [...p.messages, ...turn],
          bucket: p.bucket,
          meta: { ...p.meta, useTool, think: think !== null, correct: answer === p.answer },
        };
      });
    },
    runToolLocally(toolName: string, input: string | Record<string, unknown>): LocalToolResult | undefined {
      if (toolName !== CALCULATOR_TOOL.name) return undefined;
      const r = calculator(typeof input === "string" ? input : String(input.expression ?? input.code ?? ""));
      return { ok: r.ok, output: r.output };
    },
  };
}

export const wordProblemsTask: Task = makeWordProblemsTask();
