// The tool layer (sandbox/tools.ts) on the in-process runner: JSON tool calls with schema
// checks (bad arguments come back as results), the interpreter tool, the library example
// from the seeds, the model-facing text (ToRL last-line errors, head...tail truncation) and
// user-written reward functions. Run: npx vitest run sandbox/tools
import { beforeAll, describe, expect, it } from "vitest";
import { boundedJson } from "./bounded-json.ts";
import { createNodeSandboxPool } from "./pool-node.ts";
import { InProcessSandbox } from "./run-code.ts";
import {
  callNamedTool,
  callTool,
  formatToolResponse,
  JS_INTERPRETER_TOOL,
  runRewardFunction,
} from "./tools.ts";
import type { RunCodeResult, ToolSpec } from "./types.ts";

let sb: InProcessSandbox;
beforeAll(async () => {
  sb = await InProcessSandbox.create();
});

const LIBRARY = `const BOOKS = [
  { id: "b1", title: "Emma", author: "Jane Austen" },
  { id: "b2", title: "Persuasion", author: "Jane Austen" },
  { id: "b3", title: "Dubliners", author: "James Joyce" },
];
const LOANS = { u1: ["b1", "b3"], u2: [] };`;

const checkedOut: ToolSpec = {
  name: "get_user_checked_out_books",
  description: "List the books a library user has checked out.",
  parameters: { type: "object", properties: { user_id: { type: "string" } }, required: ["user_id"] },
  body: `({ user_id }) => {
    ${LIBRARY}
    if (!(user_id in LOANS)) throw new Error("unknown user " + user_id);
    return LOANS[user_id].map((id) => BOOKS.find((b) => b.id === id).title);
  }`,
};
const byAuthor: ToolSpec = {
  name: "search_books_by_author",
  description: "Find books by an author.",
  parameters: {
    type: "object",
    properties: { author: { type: "string" }, limit: { type: "integer", minimum: 1 } },
    required: ["author"],
  },
  body: `${LIBRARY}
    const found = BOOKS.filter((b) => b.author === args.author).map((b) => b.title);
    return args.limit ? found.slice(0, args.limit) : found;`,
};

describe("callTool", () => {
  it("runs user-defined tools on JSON arguments (object or text)", async () => {
    const r = await callTool(sb, checkedOut, { user_id: "u1" });
    expect(r.status).toBe("Success");
    expect(r.value).toEqual(["Emma", "Dubliners"]);
    const s = await callTool(sb, byAuthor, '{"author": "Jane Austen", "limit": 1}');
    expect(s.value).toEqual(["Emma"]);
    expect(formatToolResponse(s)).toBe('["Emma"]');
  });

  it("bad arguments are a Failed result naming the field, without running", async () => {
    const cases: [unknown, string][] = [
      [{ user_id: 7 }, "ToolArgumentError: get_user_checked_out_books: user_id: expected string, got number"],
      [{}, "ToolArgumentError: get_user_checked_out_books: user_id: required field is missing"],
      ["[1, 2]", "ToolArgumentError: get_user_checked_out_books: arguments: expected object, got array"],
    ];
    for (const [args, text] of cases) {
      const r = await callTool(sb, checkedOut, args);
      expect(r.status).toBe("Failed");
      expect(r.run_result.status).toBe("Error");
      expect(r.error?.name).toBe("ToolArgumentError");
      expect(formatToolResponse(r)).toBe(text);
    }
    const bad = await callTool(sb, checkedOut, "{user_id: u1");
    expect(bad.status).toBe("Failed");
    expect(bad.error?.message).toMatch(/^get_user_checked_out_books: arguments are not valid JSON/);
  });

  it("a tool's exception is its result", async () => {
    const r = await callTool(sb, checkedOut, { user_id: "u9" });
    expect(r.status).toBe("Failed");
    expect(formatToolResponse(r)).toBe("Error: unknown user u9");
  });

  it("the interpreter tool runs code, and that code can call the other tools", async () => {
    const r = await callTool(
      sb,
      JS_INTERPRETER_TOOL,
      { code: "const t = get_user_checked_out_books({user_id: 'u1'}); console.log(t.length); t.join(', ')" },
      { tools: [checkedOut] },
    );
    expect(r.status).toBe("Success");
    expect(formatToolResponse(r)).toBe("2\nEmma, Dubliners");
    const missing = await callTool(sb, JS_INTERPRETER_TOOL, { source: "1" });
    expect(formatToolResponse(missing)).toBe(
      "ToolArgumentError: run_javascript: code: required field is missing",
    );
  });
});

describe("callNamedTool", () => {
  const offered = [JS_INTERPRETER_TOOL, checkedOut, byAuthor];
  it("dispatches a parsed call by name; code may use the other offered tools", async () => {
    const r = await callNamedTool(sb, offered, {
      name: "search_books_by_author",
      arguments: { author: "James Joyce" },
    });
    expect(r.value).toEqual(["Dubliners"]);
    const code = await callNamedTool(sb, offered, {
      name: "run_javascript",
      arguments: { code: "search_books_by_author({author: 'Jane Austen'}).length" },
    });
    expect(code.value).toBe(2);
  });
  it("an unknown tool is a Failed result naming the tools on offer", async () => {
    const r = await callNamedTool(sb, offered, { name: "delete_books", arguments: {} });
    expect(r.status).toBe("Failed");
    expect(formatToolResponse(r)).toBe(
      'ToolNotFoundError: no tool named "delete_books" (tools: run_javascript, get_user_checked_out_books, search_books_by_author)',
    );
  });
});

describe("formatToolResponse", () => {
  const ok = (value: unknown, stdout = ""): RunCodeResult =>
    ({
      status: "Success",
      run_result: { status: "Finished", execution_time: 0, return_code: 0, stdout, stderr: "" },
      value,
      truncated: false,
    }) as RunCodeResult;

  it("shows the value, after any printed output", () => {
    expect(formatToolResponse(ok(10063))).toBe("10063");
    expect(formatToolResponse(ok("text"))).toBe("text");
    expect(formatToolResponse(ok({ a: [1] }))).toBe('{"a":[1]}');
    expect(formatToolResponse(ok(undefined, "printed\n"))).toBe("printed");
    expect(formatToolResponse(ok(3, "a\nb\n"))).toBe("a\nb\n3");
    expect(formatToolResponse(ok(undefined))).toBe("");
  });

  it("keeps only the last line of an error (ToRL), or everything when asked", async () => {
    const r = await sb.run({ code: "console.log('partial');\nlet a = (;" });
    expect(formatToolResponse(r)).toMatch(/^SyntaxError: [^\n]+$/);
    const multi = await sb.run({ code: "throw new TypeError('first\\nlast line')" });
    expect(formatToolResponse(multi)).toBe("last line");
    const full = formatToolResponse(r, { errorLastLineOnly: false });
    expect(full.startsWith("Uncaught SyntaxError")).toBe(true);
    const timeout = await sb.run({ code: "for (;;) {}", run_timeout: 0.05 });
    expect(formatToolResponse(timeout)).toBe("TimeoutError: execution exceeded the time limit of 0.05 s");
  });

  it("truncates long text to head ... tail at maxChars", () => {
    const text = formatToolResponse(ok(`${"a".repeat(100)}${"z".repeat(100)}`), { maxChars: 23 });
    expect(text).toBe(`${"a".repeat(10)}...${"z".repeat(10)}`);
  });
});

describe("runRewardFunction", () => {
  const trajectory = { response: "<answer>10063</answer>", tool_calls: 1 };
  it("returns the number the function computes from the trajectory", async () => {
    const src = "(t) => (t.response.includes('10063') ? 1 : 0) - 0.1 * t.tool_calls";
    expect(await runRewardFunction(sb, src, trajectory)).toEqual({ ok: true, value: 0.9 });
    expect(await runRewardFunction(sb, src, JSON.stringify(trajectory))).toEqual({ ok: true, value: 0.9 });
  });

  it.each([
    ["(t) => 'high'", "the reward function must return a finite number, got high"],
    ["(t) => NaN", "the reward function must return a finite number, got NaN"],
    ["(t) => undefined", "the reward function must return a finite number, got undefined"],
    ["(t) => t.missing.field", "TypeError: cannot read property 'field' of undefined"],
    ["(t) => {", undefined],
  ])("%s is an error", async (src, message) => {
    const r = await runRewardFunction(sb, src, trajectory);
    expect(r.ok).toBe(false);
    if (!r.ok && message) expect(r.error).toBe(message);
    if (!r.ok && !message) expect(r.error).toMatch(/^SyntaxError/);
  });

  it("a looping reward function times out", async () => {
    const r = await runRewardFunction(sb, "(t) => { for (;;) {} }", trajectory, { run_timeout: 0.05 });
    expect(r).toEqual({ ok: false, error: "TimeoutError: execution exceeded the time limit of 0.05 s" });
  });
});

describe("values nested 3,000 deep", () => {
  const deepCode = "let v = 1; for (let i = 0; i < 3000; i++) v = [v]; v";

  it("a tool call through the worker pool is a Success the model sees, not a SandboxError", async () => {
    const pool = createNodeSandboxPool({ size: 1, spares: 0 });
    try {
      const viaCode = await callTool(pool, JS_INTERPRETER_TOOL, { code: deepCode });
      expect([viaCode.status, viaCode.truncated]).toEqual(["Success", true]);
      expect(formatToolResponse(viaCode)).toBe(
        `${"[".repeat(64)}"[nested deeper than 64 levels]"${"]".repeat(64)}`,
      );
      const deepTool: ToolSpec = {
        name: "nest",
        description: "Nests a value.",
        parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
        body: "({ n }) => { let v = 1; for (let i = 0; i < n; i++) v = { v }; return v }",
      };
      const viaTool = await callTool(pool, deepTool, { n: 3000 });
      expect([viaTool.status, viaTool.truncated]).toEqual(["Success", true]);
      expect(formatToolResponse(viaTool, { maxChars: 1 << 20 })).toContain("[nested deeper than 64 levels]");
      // The reward path: an error naming what came back, not the end of the run.
      const reward = await runRewardFunction(
        pool,
        `() => { ${deepCode} }`.replace("; v }", "; return v }"),
        {},
      );
      expect(reward.ok).toBe(false);
      expect(!reward.ok && reward.error).toMatch(/must return a finite number, got \[\[\[/);
    } finally {
      pool.close();
    }
  });

  it("boundedJson writes any host value: JSON's text for JSON, cut deep, cycles named, never throws", () => {
    const plain = { a: [1, "x", null, true, { b: [] }], c: { d: -0.5 }, e: "\u0000\ud800" };
    expect(boundedJson(plain)).toBe(JSON.stringify(plain));
    expect(boundedJson([undefined, () => 1])).toBe(JSON.stringify([undefined, () => 1]));
    expect(boundedJson({ u: undefined, f() {}, n: NaN, b: 10n })).toBe('{"n":null,"b":"10"}');
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const text = boundedJson(deep, 1 << 20);
    expect(text.startsWith("[".repeat(64))).toBe(true);
    expect(text).toContain('"[nested deeper than 64 levels]"');
    const cyclic: Record<string, unknown> = { x: 1 };
    cyclic.self = cyclic;
    expect(boundedJson(cyclic)).toBe('{"x":1,"self":"[circular]"}');
    const hostile = {
      get boom() {
        throw new Error("getter");
      },
      ok: 1,
    };
    expect(boundedJson(hostile)).toBe('{"ok":1}');
    expect(boundedJson("x".repeat(100), 10)).toBe('"xxxxxx...');
    expect(boundedJson(undefined)).toBe("null");
  });
});
