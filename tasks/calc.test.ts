// Tests for tasks/calc.ts: the calculator matches JavaScript on valid input and refuses
// what the tool must refuse with "SyntaxError".
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { binaryOperatorCount, calculator, ONE_OP_ERROR, oneOpCalculator } from "./calc.ts";

describe("calculator", () => {
  it("evaluates the demo's shapes", () => {
    expect(calculator("347*29")).toEqual({ ok: true, value: 10063, output: "10063" });
    expect(calculator("(12+34)*56").output).toBe("2576");
    expect(calculator(" 2 + 3 * 4 ").output).toBe("14");
    expect(calculator("2**3**2").output).toBe("512");
    expect(calculator("-(3-5)").output).toBe("2");
    expect(calculator("2- -3").output).toBe("5");
  });

  it("refuses characters outside [0-9+-*() ] and malformed input", () => {
    for (const bad of [
      "",
      "   ",
      "3/4",
      "Math.max(1,2)",
      "1 2",
      "2--3",
      "(1+2",
      "1+2)",
      "()",
      "012",
      "-2**2",
      "2*",
      "1e3",
    ]) {
      expect(calculator(bad), bad).toEqual({ ok: false, output: "SyntaxError" });
    }
  });

  it("agrees with JavaScript on random valid expressions", () => {
    const num = fc.integer({ min: 0, max: 999 }).map(String);
    const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
      e: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        num,
        fc
          .tuple(tie("e"), fc.constantFrom("+", "-", "*", " + ", " * "), tie("e"))
          .map(([a, op, b]) => `${a}${op}${b}`),
        tie("e").map((a) => `(${a})`),
      ),
    })).e;
    fc.assert(
      fc.property(expr, (src) => {
        // The reference is the JS engine itself.
        const js = new Function(`return (${src});`)() as number;
        expect(calculator(src).output).toBe(String(js));
      }),
      { numRuns: 300 },
    );
  });
});

describe("the one-operation calculator (the oneOp task's)", () => {
  it("counts binary operators, not unary signs, and refuses more than one", () => {
    const cases: [string, number | null][] = [
      ["12", 0],
      ["-12", 0],
      ["12*34", 1],
      ["(12+34)", 1],
      ["12- -3", 1],
      ["2**3", 1],
      ["(12+34)*56", 2],
      ["(1+2)*(3+4)", 3],
      ["-(1+2)", 1],
      ["3/4", null],
      ["012", null],
    ];
    for (const [e, n] of cases) expect(binaryOperatorCount(e), e).toBe(n);
    expect(oneOpCalculator("12*34")).toEqual(calculator("12*34"));
    expect(oneOpCalculator("(12+34)*56")).toEqual({ ok: false, output: ONE_OP_ERROR });
    expect(oneOpCalculator("1 2")).toEqual({ ok: false, output: "SyntaxError" });
  });
});
