// Tests for tasks/verify.ts: number extraction, tolerance, exact match, call matching.
import { describe, expect, it } from "vitest";
import { callsMatch, canonicalJson, parseNumber, verifyExact, verifyNumeric } from "./verify.ts";

describe("verify helpers", () => {
  it("parseNumber reads one number and refuses none or several", () => {
    expect(parseNumber("226")).toBe(226);
    expect(parseNumber("$1,234 dollars")).toBe(1234);
    expect(parseNumber("-3.5 km")).toBe(-3.5);
    expect(parseNumber("about")).toBeNull();
    expect(parseNumber("12 or 13")).toBeNull();
  });

  it("verifyNumeric uses |ref-got| <= atol + rtol*|ref|", () => {
    expect(verifyNumeric("100", "100").correct).toBe(true);
    expect(verifyNumeric("100", "101").correct).toBe(false);
    expect(verifyNumeric("1000", "1000.5", 0, 1e-3).correct).toBe(true);
    expect(verifyNumeric("1000", "1002", 0, 1e-3).correct).toBe(false);
    expect(verifyNumeric("1000", "1000.5", 0.5).correct).toBe(true);
    expect(verifyNumeric("1000", "1000.6", 0.5).correct).toBe(false);
    expect(verifyNumeric("5", null)).toMatchObject({ correct: false, score: 0 });
  });

  it("verifyExact normalises case, spaces and quotes", () => {
    expect(verifyExact("Paris", ' "paris". ').correct).toBe(true);
    expect(verifyExact("Paris", "Lyon").correct).toBe(false);
  });

  it("callsMatch is order-insensitive over calls and keys (Tool-N1)", () => {
    const gold = [
      { name: "a", arguments: { x: 1, y: 2 } },
      { name: "b", arguments: {} },
    ];
    expect(
      callsMatch(gold, [
        { name: "b", arguments: {} },
        { name: "a", arguments: { y: 2, x: 1 } },
      ]),
    ).toBe(true);
    expect(
      callsMatch(gold, [
        { name: "a", arguments: { x: 1, y: 3 } },
        { name: "b", arguments: {} },
      ]),
    ).toBe(false);
    expect(callsMatch(gold, gold.slice(0, 1))).toBe(false);
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}');
  });
});
