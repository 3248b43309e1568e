// Tests for tasks/word-problems.ts: every template's answer, determinism, the eval split,
// the verifier and the demos.
import { describe, expect, it } from "vitest";
import { inlineTranscript } from "./arithmetic.ts";
import { calculator } from "./calc.ts";
import { Rng } from "./rng.ts";
import { makeWordProblemsTask, WORD_TEMPLATES } from "./word-problems.ts";

const task = makeWordProblemsTask();

describe("word problems", () => {
  it("state numbers that produce the answer", () => {
    for (const p of task.sample(new Rng(1), 300)) {
      const nums = p.meta.numbers as number[];
      for (const n of nums) expect(p.messages[0].content).toContain(String(n));
      expect(p.answer).toBe(calculator(String(p.meta.expr)).output);
      expect(Number(p.answer)).toBeGreaterThan(0);
      expect(task.buckets).toContain(p.bucket);
    }
  });

  it("cover every template and hand-checked cases", () => {
    const seen = new Set(task.sample(new Rng(2), 400).map((p) => p.meta.template));
    expect([...seen].sort()).toEqual(Object.keys(WORD_TEMPLATES).sort());
    const shop = makeWordProblemsTask({ templates: ["shopping"] }).sample(new Rng(3), 1)[0];
    const [a, p, b, q] = shop.meta.numbers as number[];
    expect(Number(shop.answer)).toBe(a * p + b * q);
    expect(() => makeWordProblemsTask({ templates: ["nope"] })).toThrow(/unknown template/);
  });

  it("are deterministic with a disjoint eval set", () => {
    expect(task.sample(new Rng(4), 20)).toEqual(task.sample(new Rng(4), 20));
    const evalIds = new Set(task.evalSet(60).map((p) => p.id));
    expect(evalIds.size).toBe(60);
    for (const p of task.sample(new Rng(5), 3000)) expect(evalIds.has(p.id)).toBe(false);
  });

  it("verify numerically", () => {
    const p = task.sample(new Rng(6), 1)[0];
    expect(task.verify(p, p.answer).correct).toBe(true);
    expect(task.verify(p, `${p.answer} dollars`).correct).toBe(true);
    expect(task.verify(p, String(Number(p.answer) + 1)).correct).toBe(false);
  });

  it("demos call the calculator with the right expression", () => {
    const demos = task.sftDemos(new Rng(7), 400);
    const tool = demos.filter((d) => d.meta.useTool);
    expect(Math.abs(tool.length / demos.length - 0.5)).toBeLessThan(0.08);
    for (const d of tool) {
      const expr = String(d.meta.expr);
      const v = calculator(expr).output;
      expect(inlineTranscript(d.messages.slice(1))).toMatch(
        new RegExp(
          `<tool_call>${expr.replace(/[*+()-]/g, "\\$&")}</tool_call><tool_response>${v}</tool_response><answer>${v}</answer><\\|im_end\\|>$`,
        ),
      );
    }
    for (const d of demos.filter((x) => !x.meta.useTool && x.bucket === "one-step"))
      expect(d.meta.correct).toBe(true);
  });
});
