// A model's chat template rendered with bounds: the template is code a model's publisher wrote
// (tokenizer_config.json), so a render must end, soon, in bounded memory, or be refused with a
// TemplateBudgetError naming the budget it went over. @huggingface/jinja parses and evaluates;
// this file gives it its globals and an Interpreter whose `evaluate` (every node goes through it)
// keeps the books:
//   range      at most 100,000 items, refused before any is made (Jinja2's sandbox: MAX_RANGE)
//   steps      nodes evaluated plus the items of every list or mapping a node yields, and 8 more
//              per item a loop iterates (each iteration makes a scope and a `loop` object, about
//              as much work as 8 nodes), at most 1,000,000 per render, counted before the loop
//              runs: deterministic, so a render that passes once passes on every machine, and
//              nested loops are refused before the inner one starts
//   time       10 s of wall clock per render, checked every 16 nodes (a backstop for work the step
//              count does not see: one built-in filter over a 100,000-item list; generous, as a
//              render refused only on a loaded machine would break a run's replay: a 41-message
//              Qwen3 conversation with 12 tools takes 6,584 steps, 156,000 characters, 0.5 s on a
//              machine at load 25 on 2 cores)
//   text       every new string a render makes (pieces, intermediate values, the output) counts
//              its characters: at most 4,000,000 per render, and no single string over 1,000,000
//   items      no list over 100,000 items (a list doubled by `+` is refused at once)
//   depth      nodes nested at most 400 deep while evaluating (a macro calling itself), and
//              brackets and blocks nested at most 100 deep in the source (checked before parsing,
//              whose recursion would otherwise overflow the stack)
// A string or list that JavaScript itself refuses to make ("Invalid string length") and a stack
// overflow are refused the same way. What stays unbounded: one call of a built-in filter or
// loop may allocate up to its bounded inputs' product before its result is checked (a 100,000
// item loop with an empty body: about a second).
// Tested by model/jinja-bounds.test.ts; used by model/chat.ts (JinjaChat).
import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";

export interface TemplateBudget {
  /** Items one range() may make (Jinja2's sandbox: 100,000). */
  maxRange: number;
  /** Nodes evaluated plus items of every list or mapping a node yields, per render. */
  maxSteps: number;
  /** Wall-clock milliseconds per render. */
  timeMs: number;
  /** Characters of all strings a render makes. */
  maxText: number;
  /** Characters of any one string (the output included). */
  maxString: number;
  /** Items of any one list. */
  maxItems: number;
  /** Nesting of nodes while evaluating (macro recursion included). */
  maxDepth: number;
  /** Nesting of brackets and blocks in the template's source. */
  maxNesting: number;
}

export const TEMPLATE_BUDGET: Readonly<TemplateBudget> = {
  maxRange: 100_000,
  maxSteps: 1_000_000,
  timeMs: 10_000,
  maxText: 4_000_000,
  maxString: 1_000_000,
  maxItems: 100_000,
  maxDepth: 400,
  maxNesting: 100,
};

/** A render (or parse) refused for going over `budget`; the message says by how much. */
export class TemplateBudgetError extends Error {
  constructor(
    readonly budget: keyof TemplateBudget,
    message: string,
  ) {
    super(message);
    this.name = "TemplateBudgetError";
  }
}

// The node shapes read here (the parser's classes are not exported; nodes carry their `type`).
type Node = { type: string; value?: unknown };
type Value = { type: string; value: unknown };
type Program = Parameters<Interpreter["run"]>[0];

/** Steps an iteration of a for loop costs beyond its item. */
const LOOP_COST = 8;

const OPENERS = new Set(["if", "for", "macro", "call", "filter", "generation"]);
const CLOSERS = new Set(["endif", "endfor", "endmacro", "endcall", "endfilter", "endgeneration", "endset"]);

/** The deepest nesting of blocks plus brackets in the tokens (a `{% set x %}` block counts). */
function nestingDepth(tokens: ReturnType<typeof tokenize>): number {
  let blocks = 0;
  let brackets = 0;
  let max = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.type === "OpenParen" || t.type === "OpenSquareBracket" || t.type === "OpenCurlyBracket") brackets++;
    else if (t.type === "CloseParen" || t.type === "CloseSquareBracket" || t.type === "CloseCurlyBracket")
      brackets--;
    else if (t.type === "CloseExpression" || t.type === "CloseStatement") brackets = 0;
    else if (tokens[i - 1]?.type === "OpenStatement" && t.type === "Identifier") {
      if (OPENERS.has(t.value)) blocks++;
      else if (CLOSERS.has(t.value)) blocks--;
      else if (t.value === "set") {
        let j = i + 1;
        while (j < tokens.length && tokens[j].type !== "CloseStatement" && tokens[j].type !== "Equals") j++;
        if (tokens[j]?.type === "CloseStatement") blocks++;
      }
    }
    max = Math.max(max, blocks + brackets);
  }
  return max;
}

// Python's strftime for the formats chat templates use (Llama 3's "Today Date"), as the library's.
function strftimeNow(format: string): string {
  const d = new Date();
  const pad2 = (n: number) => String(n).padStart(2, "0");
  return String(format).replace(/%[YmdbBHM%]/g, (tok) => {
    switch (tok) {
      case "%Y":
        return String(d.getFullYear());
      case "%m":
        return pad2(d.getMonth() + 1);
      case "%d":
        return pad2(d.getDate());
      case "%b":
        return new Intl.DateTimeFormat(undefined, { month: "short" }).format(d);
      case "%B":
        return new Intl.DateTimeFormat(undefined, { month: "long" }).format(d);
      case "%H":
        return pad2(d.getHours());
      case "%M":
        return pad2(d.getMinutes());
      default:
        return "%";
    }
  });
}

/** Python's range(), refused before it makes more than `max` items. */
function boundedRange(max: number) {
  return (start: unknown, stop?: unknown, step: unknown = 1): number[] => {
    if (stop === undefined) [start, stop] = [0, start];
    const [a, b, s] = [start, stop, step];
    if (![a, b, s].every((x) => typeof x === "number" && Number.isInteger(x)))
      throw new Error(`range() takes integers, got ${[a, b, s].map((x) => JSON.stringify(x)).join(", ")}`);
    const [i0, i1, di] = [a, b, s] as number[];
    if (di === 0) throw new Error("range() step must not be zero");
    const n = Math.max(0, Math.ceil((i1 - i0) / di));
    if (n > max)
      throw new TemplateBudgetError(
        "maxRange",
        `range(${i0}, ${i1}, ${di}) has ${n} items; the template sandbox allows ${max} (Jinja2's MAX_RANGE)`,
      );
    const out = new Array<number>(n);
    for (let k = 0; k < n; k++) out[k] = i0 + k * di;
    return out;
  };
}

class BoundedInterpreter extends Interpreter {
  private steps = 0;
  private text = 0;
  private depth = 0;
  private readonly start = performance.now();
  private readonly seen = new WeakSet<object>();

  constructor(
    env: Environment,
    private readonly b: TemplateBudget,
    /** The nodes for loops iterate over. */
    private readonly iterables: WeakSet<object>,
  ) {
    super(env);
  }

  override evaluate(
    node: Parameters<Interpreter["evaluate"]>[0],
    env: Environment,
  ): ReturnType<Interpreter["evaluate"]> {
    const b = this.b;
    if (++this.depth > b.maxDepth) {
      throw new TemplateBudgetError(
        "maxDepth",
        `evaluation nests deeper than ${b.maxDepth} levels (a macro calling itself without end?)`,
      );
    }
    try {
      if ((++this.steps & 15) === 0) this.checkTime();
      let out: ReturnType<Interpreter["evaluate"]>;
      try {
        out = super.evaluate(node, env);
      } catch (err) {
        throw this.translate(err);
      }
      this.account(out as unknown as Value, node as unknown as Node);
      return out;
    } finally {
      this.depth--;
    }
  }

  /** Steps, text and items of what a node yielded. */
  private account(v: Value, node: Node): void {
    const b = this.b;
    if (v.type === "StringValue") {
      const s = v.value as string;
      if (s.length > 0 && !this.seen.has(v)) {
        this.seen.add(v);
        this.text += s.length;
        if (s.length > b.maxString)
          throw new TemplateBudgetError(
            "maxString",
            `a ${node.type} made a string of ${s.length} characters; the budget is ${b.maxString} per string`,
          );
        if (this.text > b.maxText)
          throw new TemplateBudgetError(
            "maxText",
            `the render made more than ${b.maxText} characters of text (output and intermediate strings)`,
          );
      }
    } else if (v.type === "ArrayValue" || v.type === "TupleValue") {
      const n = (v.value as unknown[]).length;
      if (n > b.maxItems)
        throw new TemplateBudgetError(
          "maxItems",
          `a ${node.type} made a list of ${n} items; the budget is ${b.maxItems} per list`,
        );
      this.steps += n;
      if (this.iterables.has(node)) {
        this.steps += LOOP_COST * n;
        this.checkTime();
      }
    } else if (v.type === "ObjectValue" || v.type === "KeywordArgumentsValue") {
      const n = (v.value as Map<string, unknown>).size;
      this.steps += this.iterables.has(node) ? (LOOP_COST + 1) * n : n;
    }
    if (this.steps > b.maxSteps)
      throw new TemplateBudgetError(
        "maxSteps",
        `the render took more than ${b.maxSteps} steps (nodes evaluated plus items iterated)`,
      );
  }

  private checkTime(): void {
    const ms = performance.now() - this.start;
    if (ms > this.b.timeMs)
      throw new TemplateBudgetError(
        "timeMs",
        `the render ran for more than ${this.b.timeMs} ms (stopped after ${Math.round(ms)} ms)`,
      );
  }

  /** JavaScript's own refusals as budget errors: a string or list too long, the stack exhausted. */
  private translate(err: unknown): unknown {
    if (!(err instanceof RangeError)) return err;
    if (/call stack/i.test(err.message))
      return new TemplateBudgetError("maxDepth", `evaluation exhausted the stack (${err.message})`);
    if (/string length|array length/i.test(err.message))
      return new TemplateBudgetError(
        "maxString",
        `a value grew past what JavaScript can hold (${err.message})`,
      );
    return err;
  }
}

/** A parsed chat template whose every render is bounded by `budget`. */
export class BoundedTemplate {
  private readonly program: Program;
  private readonly iterables = new WeakSet<object>();

  constructor(
    text: string,
    readonly budget: TemplateBudget = { ...TEMPLATE_BUDGET },
  ) {
    const tokens = tokenize(text, { lstrip_blocks: true, trim_blocks: true });
    const nesting = nestingDepth(tokens);
    if (nesting > budget.maxNesting)
      throw new TemplateBudgetError(
        "maxNesting",
        `brackets or blocks nest ${nesting} deep; the budget is ${budget.maxNesting}`,
      );
    try {
      this.program = parse(tokens);
    } catch (err) {
      if (err instanceof RangeError)
        throw new TemplateBudgetError(
          "maxNesting",
          `the template nests too deeply to parse (${err.message})`,
        );
      throw err;
    }
    // The nodes loops iterate over (a `for x in xs if test` iterates over xs).
    const stack: unknown[] = [this.program];
    while (stack.length > 0) {
      const n = stack.pop();
      if (Array.isArray(n)) stack.push(...n);
      else if (n instanceof Map) for (const [k, v] of n) stack.push(k, v);
      else if (n && typeof n === "object") {
        const node = n as Node & { iterable?: Node & { lhs?: Node } };
        if (node.type === "For" && node.iterable)
          this.iterables.add(
            node.iterable.type === "SelectExpression" ? (node.iterable.lhs as Node) : node.iterable,
          );
        for (const v of Object.values(node)) if (v && typeof v === "object") stack.push(v);
      }
    }
  }

  render(items: Record<string, unknown> = {}): string {
    const env = new Environment();
    env.set("false", false);
    env.set("true", true);
    env.set("none", null);
    env.set("False", false);
    env.set("True", true);
    env.set("None", null);
    env.set("raise_exception", (msg: string) => {
      throw new Error(msg);
    });
    env.set("range", boundedRange(this.budget.maxRange));
    env.set("strftime_now", strftimeNow);
    for (const [k, v] of Object.entries(items)) env.set(k, v);
    const out = new BoundedInterpreter(env, this.budget, this.iterables).run(
      this.program,
    ) as unknown as Value;
    return out.value as string;
  }
}
