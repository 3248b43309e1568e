// Tests for tasks/jsonl.ts: public/data/sample.jsonl imports with the expected report
// (line numbers and messages of each bad row), verifiers of each type, the split, demos.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { importJsonl, parseJsonl } from "./jsonl.ts";
import { Rng } from "./rng.ts";

const sample = readFileSync(new URL("../public/data/sample.jsonl", import.meta.url), "utf8");

describe("importJsonl on public/data/sample.jsonl", () => {
  const { task, report } = importJsonl(sample);

  it("keeps the good rows and reports each bad row by line", () => {
    expect(report.ok).toBe(7);
    expect(report.total).toBe(16);
    const byLine = Object.fromEntries(report.errors.map((e) => [e.line, e.message]));
    expect(Object.keys(byLine).map(Number)).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17]);
    expect(byLine[9]).toMatch(/^invalid JSON/);
    expect(byLine[10]).toBe('missing "prompt" (a non-empty string)');
    expect(byLine[11]).toMatch(/^regex verifier: bad pattern/);
    expect(byLine[12]).toBe('unknown verifier type "llm-judge" (expected exact, numeric, regex or js)');
    expect(byLine[13]).toBe("row is not a JSON object");
    expect(byLine[14]).toMatch(/"answer" "many" is not a number/);
    expect(byLine[15]).toMatch(/tools\[0\]: "name" must be a JavaScript identifier/);
    expect(byLine[16]).toBe('missing "prompt" (a non-empty string)');
    expect(byLine[17]).toMatch(/tolerance/);
  });

  it("makes a task with tools, buckets and the chatml-turns template", () => {
    expect(task.tools.map((t) => t.name)).toEqual(["search_books"]);
    expect(task.defaultTemplate).toBe("chatml-turns");
    expect(task.buckets.sort()).toEqual(["facts", "math", "tools", "words"]);
  });

  it("splits eval from train by prompt, deterministically", () => {
    const ev = task.evalSet(10);
    expect(ev.length).toBeGreaterThanOrEqual(1);
    const evalPrompts = new Set(ev.map((p) => p.messages[p.messages.length - 1].content));
    const train = task.sample(new Rng(1), 200);
    expect(task.sample(new Rng(1), 200)).toEqual(train);
    for (const p of train) expect(evalPrompts.has(p.messages[p.messages.length - 1].content)).toBe(false);
    expect(new Set(train.map((p) => p.id)).size + new Set(ev.map((p) => p.id)).size).toBe(7);
  });

  it("verifies with each verifier type", () => {
    const all = [...task.sample(new Rng(2), 300), ...task.evalSet(10)];
    const byPrompt = (s: string) => {
      const p = all.find((x) => x.messages.some((m) => m.content.startsWith(s)));
      if (!p) throw new Error(s);
      return p;
    };
    const mul = byPrompt("What is 123*45?");
    expect(task.verify(mul, "5535").correct).toBe(true);
    expect(task.verify(mul, "5535.1").correct).toBe(false);
    const cap = byPrompt("What is the capital");
    expect(task.verify(cap, " paris ").correct).toBe(true);
    expect(task.verify(cap, "Lyon").correct).toBe(false);
    const prime = byPrompt("Name a prime");
    expect(task.verify(prime, "17").correct).toBe(true);
    expect(task.verify(prime, "15").correct).toBe(false);
    const light = byPrompt("How far does light");
    expect(task.verify(light, "599584.9").correct).toBe(true);
    expect(task.verify(light, "599000").correct).toBe(false);
    const pal = byPrompt("Write a word");
    const v = task.verify(pal, "level");
    expect(v.correct).toBe(false);
    expect(v.deferred?.kind).toBe("js");
    expect(v.deferred?.source).toContain("reverse");
    const tools = byPrompt("How many copies");
    expect(tools.messages[0]).toEqual({ role: "system", content: "Use the tools." });
  });

  it("demos use the row's completion or a direct answer", () => {
    for (const d of task.sftDemos(new Rng(3), 50)) {
      const last = d.messages[d.messages.length - 1];
      expect(last.role).toBe("assistant");
      if (d.meta.completion) expect(last.content).toBe(d.meta.completion);
      else expect(last.content).toMatch(/^<answer>.+<\/answer>$/);
    }
  });
});

describe("parseJsonl edge cases", () => {
  it("never throws, skips blank lines, handles CRLF and empty input", () => {
    expect(parseJsonl("").report).toEqual({ ok: 0, total: 0, errors: [] });
    const r = parseJsonl(
      '{"prompt":"a","answer":1}\r\n\r\n{"prompt":"b","answer":true}\r\nnull\n{"prompt":"c"}',
    );
    expect(r.report.ok).toBe(1);
    expect(r.rows[0].answer).toBe("1");
    expect(r.report.errors).toEqual([
      { line: 3, message: '"answer" must be a string or a number' },
      { line: 4, message: "row is not a JSON object" },
      { line: 5, message: 'missing "answer"' },
    ]);
    const { task, report } = importJsonl("garbage");
    expect(report.errors[0].line).toBe(1);
    expect(task.evalSet(5)).toEqual([]);
    expect(() => task.sample(new Rng(1), 1)).toThrow(/no training rows/);
  });

  it("a one-row dataset trains and has no eval rows", () => {
    const { task } = importJsonl('{"prompt":"p","answer":"a"}');
    expect(task.evalSet(3)).toEqual([]);
    expect(task.sample(new Rng(1), 2)).toHaveLength(2);
    expect(task.defaultTemplate).toBe("inline");
  });
});
