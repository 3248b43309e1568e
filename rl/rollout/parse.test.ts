// Tests for rl/rollout/parse.ts: the three tool-call formats incl. malformed calls, strict and
// lenient answers, \boxed{}, the format checker and the environment spans.
import { describe, expect, it } from "vitest";
import { checkFormat } from "./answer-format.ts";
import { envSpans, parseAnswer, parseToolCalls, splitSegments } from "./parse.ts";

describe("parseToolCalls: json", () => {
  it("parses several calls in one turn with offsets", () => {
    const text =
      '<think>plan</think><tool_call>{"name": "get_user_checked_out_books", "arguments": {"user_id": 1}}</tool_call>\n' +
      '<tool_call> {"name": "search_books_by_author", "arguments": {"author": "Jane Doe"}} </tool_call>';
    const calls = parseToolCalls(text);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      ok: true,
      format: "json",
      name: "get_user_checked_out_books",
      arguments: { user_id: 1 },
    });
    expect(calls[1]).toMatchObject({
      ok: true,
      name: "search_books_by_author",
      arguments: { author: "Jane Doe" },
    });
    for (const c of calls) {
      expect(text.slice(c.start, c.end)).toBe(c.raw);
      expect(c.raw.startsWith("<tool_call>") && c.raw.endsWith("</tool_call>")).toBe(true);
    }
  });

  it("accepts a list of calls and 'parameters'", () => {
    const calls = parseToolCalls(
      '<tool_call>[{"name":"a","arguments":{"x":1}},{"name":"b","parameters":{}}]</tool_call>',
    );
    expect(calls.map((c) => c.ok && c.name)).toEqual(["a", "b"]);
    expect(calls[1]).toMatchObject({ ok: true, arguments: {} });
  });

  it("reports malformed calls as failed calls, not exceptions", () => {
    const cases: [string, RegExp][] = [
      ['<tool_call>{"name": "a", "arguments": {</tool_call>', /invalid JSON/],
      ['<tool_call>{"arguments": {}}</tool_call>', /no string "name"/],
      ['<tool_call>{"name": "a", "arguments": [1]}</tool_call>', /arguments/],
      ["<tool_call>[1]</tool_call>", /not a JSON object/],
      ["<tool_call>[]</tool_call>", /empty list/],
      ['<tool_call>{"name": "a"', /unclosed/],
      ['<tool_call>{"name":"a"}<tool_call>{"name":"b"}</tool_call>', /opened again/],
      ["x</tool_call>", /without an opening/],
    ];
    for (const [text, re] of cases) {
      const calls = parseToolCalls(text, { formats: ["json"] });
      expect(calls.length, text).toBeGreaterThan(0);
      const c = calls[0];
      expect(c.ok, text).toBe(false);
      if (!c.ok) expect(c.message, text).toMatch(re);
    }
    // A bad call does not hide a good one after it.
    const mixed = parseToolCalls(
      '<tool_call>{bad}</tool_call><tool_call>{"name":"ok","arguments":{}}</tool_call>',
    );
    expect(mixed.map((c) => c.ok)).toEqual([false, true]);
  });

  it("rejects bare code when only json is wanted", () => {
    const [c] = parseToolCalls("<tool_call>1+2</tool_call>", { formats: ["json"] });
    expect(c).toMatchObject({ ok: false, message: "tool call is not JSON" });
  });
});

describe("parseToolCalls: bare code", () => {
  it("parses the demo's calculator call and skips tool responses", () => {
    const text =
      "<think>use tool</think><tool_call>347*29</tool_call><tool_response><tool_call>9</tool_call>10063</tool_response><answer>10063</answer>";
    const calls = parseToolCalls(text, { codeToolName: "calculator" });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      ok: true,
      format: "code",
      name: "calculator",
      code: "347*29",
      raw: "<tool_call>347*29</tool_call>",
    });
    expect(calls[0].start).toBe(text.indexOf("<tool_call>"));
  });

  it("fails an empty call", () => {
    expect(parseToolCalls("<tool_call> </tool_call>")[0]).toMatchObject({
      ok: false,
      format: "code",
      message: "empty tool call",
    });
  });
});

describe("parseToolCalls: fenced (ToRL)", () => {
  it("parses python and js blocks and their output", () => {
    const text =
      "Let me compute.\n```python\nprint(347*29)\n```\n```output\n10063\n```\nSo \\boxed{10063}.\n```js\n1+1\n```\n```output";
    const calls = parseToolCalls(text, { formats: ["fenced"], codeToolName: "python" });
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      ok: true,
      format: "fenced",
      lang: "python",
      code: "print(347*29)",
      output: "10063",
    });
    expect(calls[1]).toMatchObject({ ok: true, lang: "js", code: "1+1", output: "" });
    for (const c of calls) expect(text.slice(c.start, c.end)).toBe(c.raw);
  });

  it("ignores other fences and fails unclosed or empty blocks", () => {
    expect(parseToolCalls("```text\nhello\n```\n", { formats: ["fenced"] })).toEqual([]);
    expect(parseToolCalls("```python\nx = 1\n", { formats: ["fenced"] })[0]).toMatchObject({
      ok: false,
      message: /unclosed/,
    });
    expect(parseToolCalls("```python\n\n```", { formats: ["fenced"] })[0]).toMatchObject({
      ok: false,
      message: "empty code block",
    });
  });
});

describe("parseAnswer", () => {
  it("strict: exactly one answer followed only by the end", () => {
    expect(parseAnswer("<think>x</think><answer> 42 </answer><|im_end|>")).toMatchObject({
      ok: true,
      answer: "42",
    });
    expect(parseAnswer("<answer>42</answer>")).toMatchObject({ ok: true, answer: "42" });
    expect(parseAnswer("<answer>42</answer>\n<|im_end|>\n")).toMatchObject({ ok: true });
    expect(parseAnswer("<answer>42</answer>garbage")).toEqual({ ok: false, error: "text after </answer>" });
    expect(parseAnswer("<answer>42</answer><answer>43</answer>")).toEqual({
      ok: false,
      error: "more than one <answer>",
    });
    expect(parseAnswer("<answer>42</answer><|im_end|>junk")).toMatchObject({ ok: false });
    expect(parseAnswer("<answer>42")).toEqual({ ok: false, error: "unclosed <answer>" });
    expect(parseAnswer("42")).toEqual({ ok: false, error: "no <answer>" });
    expect(parseAnswer("<answer>4<answer>2</answer>")).toMatchObject({ ok: false });
  });

  it("lenient: the first answer, whatever follows (the gameable reward)", () => {
    expect(parseAnswer("<answer>42</answer>garbage<answer>7</answer>", { mode: "lenient" })).toMatchObject({
      ok: true,
      answer: "42",
    });
  });

  it("ignores answers inside tool responses", () => {
    expect(
      parseAnswer(
        "<tool_call>1</tool_call><tool_response><answer>1</answer></tool_response><answer>2</answer>",
      ),
    ).toMatchObject({
      ok: true,
      answer: "2",
    });
  });

  it("boxed: fallback and unwrap, balanced braces", () => {
    expect(parseAnswer("so \\[ \\boxed{\\frac{1}{2}} \\].", { boxed: true })).toMatchObject({
      ok: true,
      answer: "\\frac{1}{2}",
    });
    expect(parseAnswer("<answer>\\boxed{7}</answer>", { boxed: true })).toMatchObject({
      ok: true,
      answer: "7",
    });
    expect(parseAnswer("\\boxed{1} and \\boxed{2}", { boxed: true })).toMatchObject({ ok: false });
    expect(parseAnswer("\\boxed{1} and \\boxed{2}", { boxed: true, mode: "lenient" })).toMatchObject({
      ok: true,
      answer: "2",
    });
    expect(parseAnswer("\\boxed{1", { boxed: true })).toMatchObject({ ok: false });
    expect(parseAnswer("\\boxed{3}", {})).toMatchObject({ ok: false });
  });
});

describe("checkFormat", () => {
  it("accepts think, optional tool calls, one answer, end", () => {
    expect(checkFormat("<think>a</think><answer>1</answer>")).toEqual({ ok: true, errors: [] });
    expect(checkFormat("<think>a</think>\n<answer>1</answer><|im_end|>").ok).toBe(true);
    expect(
      checkFormat(
        "<think>use tool</think><tool_call>347*29</tool_call><tool_response>10063</tool_response><answer>10063</answer>",
      ).ok,
    ).toBe(true);
    expect(
      checkFormat("<tool_call>1</tool_call><tool_response>1</tool_response><answer>1</answer>", {
        requireThink: false,
      }).ok,
    ).toBe(true);
  });

  it("checks a chatml-turns transcript across turns, one think per turn", () => {
    const turns =
      '<think>look up</think><tool_call>{"name":"a","arguments":{}}</tool_call><|im_end|>\n' +
      "<|im_start|>user\n<tool_response>1</tool_response>\n<tool_response>2</tool_response><|im_end|>\n" +
      "<|im_start|>assistant\n<think>sum</think><answer>3</answer><|im_end|>";
    expect(checkFormat(turns)).toEqual({ ok: true, errors: [] });
    expect(checkFormat(turns.replace("<answer>3</answer>", ""))).toMatchObject({ ok: false });
    expect(checkFormat("<think>a</think><think>b</think><answer>1</answer>").ok).toBe(false);
  });

  it("names what is wrong", () => {
    expect(checkFormat("<answer>1</answer>").errors).toContain("<answer> before <think>");
    expect(checkFormat("<think>a</think>").errors).toContain("no <answer>");
    expect(checkFormat("<think>a</think><answer>1</answer>x").errors).toContain("text after </answer>");
    expect(checkFormat("<think>a</think><answer>1</answer><answer>2</answer>").ok).toBe(false);
    expect(checkFormat("<think>a<answer>1</answer>").errors[0]).toMatch(/<think> not closed/);
    expect(checkFormat("hi <think>a</think><answer>1</answer>").errors).toContain("text before <think>");
    expect(
      checkFormat("<think>a</think><tool_call>1</tool_call><answer>1</answer>", { allowToolCalls: false }).ok,
    ).toBe(false);
  });
});

describe("env spans", () => {
  it("covers tool responses (tags included) and splits the text exactly", () => {
    const text = "<tool_call>1+1</tool_call><tool_response>2</tool_response><answer>2</answer>";
    const spans = envSpans(text);
    expect(spans).toHaveLength(1);
    expect(text.slice(spans[0].start, spans[0].end)).toBe("<tool_response>2</tool_response>");
    const segs = splitSegments(text);
    expect(segs.map((s) => s.text).join("")).toBe(text);
    expect(segs.map((s) => s.env)).toEqual([false, true, false]);
    const torl = "```python\nprint(1)\n```\n```output\n1\n```\ndone";
    const fs = splitSegments(torl, { fencedOutput: true });
    expect(fs.filter((s) => s.env).map((s) => s.text)).toEqual(["```output\n1\n```"]);
  });
});
