// The calculator tool of the arithmetic demo, as a pure function: it is both the
// specification of what the tool returns and a fast local executor (no sandbox needed).
// Input is restricted to `[0-9+\-*() ]`; everything else, and anything JavaScript would
// reject (`--`, `1 2`, leading zeros as strict mode does, `-2**2`), returns "SyntaxError".
// Semantics follow JS: `+ - *`, `**` right-associative, unary signs, parentheses.
// The one-operation calculator (the arithmetic task's `oneOp` option) refuses an expression
// with more than one binary operator (ONE_OP_ERROR), so a problem needs a known number of calls.
// Tested by tasks/calc.test.ts.

export const CALC_ALLOWED = /^[0-9+\-*() ]*$/;
export const CALC_ALLOWED_CHARS = "0-9+\\-*() ";
export const CALC_ERROR = "SyntaxError";

export type CalcResult = { ok: true; value: number; output: string } | { ok: false; output: string };

type Tok =
  | { kind: "num"; value: number }
  | { kind: "op"; op: "+" | "-" | "*" | "**" | "++" | "--" | "(" | ")" };

class CalcSyntaxError extends Error {}

function tokenize(src: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === " ") {
      i++;
    } else if (c >= "0" && c <= "9") {
      let j = i;
      while (j < src.length && src[j] >= "0" && src[j] <= "9") j++;
      const digits = src.slice(i, j);
      // Strict-mode JS rejects legacy octal literals like 012.
      if (digits.length > 1 && digits[0] === "0") throw new CalcSyntaxError();
      toks.push({ kind: "num", value: Number(digits) });
      i = j;
    } else if ((c === "*" || c === "+" || c === "-") && src[i + 1] === c) {
      // JS tokenizes greedily: ** is exponent, ++ and -- are update operators.
      toks.push({ kind: "op", op: c === "*" ? "**" : c === "+" ? "++" : "--" });
      i += 2;
    } else if (c === "+" || c === "-" || c === "*" || c === "(" || c === ")") {
      toks.push({ kind: "op", op: c });
      i++;
    } else {
      throw new CalcSyntaxError();
    }
  }
  return toks;
}

class Parser {
  private pos = 0;
  constructor(private readonly toks: Tok[]) {}

  private peekOp(): string | null {
    const t = this.toks[this.pos];
    return t && t.kind === "op" ? t.op : null;
  }

  parseAll(): number {
    const v = this.parseAdditive();
    if (this.pos !== this.toks.length) throw new CalcSyntaxError();
    return v;
  }

  private parseAdditive(): number {
    let v = this.parseMultiplicative();
    for (;;) {
      const op = this.peekOp();
      if (op !== "+" && op !== "-") return v;
      this.pos++;
      const r = this.parseMultiplicative();
      v = op === "+" ? v + r : v - r;
    }
  }

  private parseMultiplicative(): number {
    let v = this.parseExponent();
    while (this.peekOp() === "*") {
      this.pos++;
      v *= this.parseExponent();
    }
    return v;
  }

  // ExponentiationExpression: UnaryExpression | UpdateExpression ** ExponentiationExpression.
  // A signed operand directly left of ** is a SyntaxError in JS.
  private parseExponent(): number {
    const op = this.peekOp();
    if (op === "+" || op === "-") {
      this.pos++;
      const v = this.parseUnaryOperand();
      if (this.peekOp() === "**") throw new CalcSyntaxError();
      return op === "-" ? -v : v;
    }
    const base = this.parsePrimary();
    if (this.peekOp() === "**") {
      this.pos++;
      return base ** this.parseExponent();
    }
    return base;
  }

  private parseUnaryOperand(): number {
    const op = this.peekOp();
    if (op === "+" || op === "-") {
      this.pos++;
      const v = this.parseUnaryOperand();
      return op === "-" ? -v : v;
    }
    return this.parsePrimary();
  }

  private parsePrimary(): number {
    const t = this.toks[this.pos];
    if (!t) throw new CalcSyntaxError();
    if (t.kind === "num") {
      this.pos++;
      return t.value;
    }
    if (t.op === "(") {
      this.pos++;
      const v = this.parseAdditive();
      if (this.peekOp() !== ")") throw new CalcSyntaxError();
      this.pos++;
      return v;
    }
    throw new CalcSyntaxError();
  }
}

/** JS's String(number) except -0, which JS also prints as "0". */
function formatNumber(v: number): string {
  return String(v);
}

export function calculator(expression: string): CalcResult {
  if (!CALC_ALLOWED.test(expression)) return { ok: false, output: CALC_ERROR };
  try {
    const toks = tokenize(expression);
    if (toks.length === 0) return { ok: false, output: CALC_ERROR };
    const value = new Parser(toks).parseAll();
    return { ok: true, value, output: formatNumber(value) };
  } catch (e) {
    if (e instanceof CalcSyntaxError) return { ok: false, output: CALC_ERROR };
    throw e;
  }
}

/** What the one-operation calculator returns for an expression with more than one operator. */
export const ONE_OP_ERROR = "Error: one operation per call";

/**
 * The binary operators (`+ - * **`) of an expression; unary signs do not count. null when
 * the expression does not tokenize (the calculator's SyntaxError then says so).
 */
export function binaryOperatorCount(expression: string): number | null {
  if (!CALC_ALLOWED.test(expression)) return null;
  let toks: Tok[];
  try {
    toks = tokenize(expression);
  } catch (e) {
    if (e instanceof CalcSyntaxError) return null;
    throw e;
  }
  let count = 0;
  for (let i = 1; i < toks.length; i++) {
    const t = toks[i];
    const prev = toks[i - 1];
    const afterOperand = prev.kind === "num" || prev.op === ")";
    if (t.kind === "op" && afterOperand && (t.op === "+" || t.op === "-" || t.op === "*" || t.op === "**"))
      count++;
  }
  return count;
}

/** The one-operation calculator: calculator(), except that more than one binary operator is refused. */
export function oneOpCalculator(expression: string): CalcResult {
  const n = binaryOperatorCount(expression);
  if (n !== null && n > 1) return { ok: false, output: ONE_OP_ERROR };
  return calculator(expression);
}
