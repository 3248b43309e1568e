// The adversarial suite: hostile or runaway programs through the real worker pool (Node
// worker_threads). Each comes back as a typed result with one verdict, the same on any
// machine at any load (the limits count work, sandbox/budget.ts); only C built-ins that run
// between interrupt checks are stopped by the wall-clock backstop, lowered here to 1 s, and
// their results say so. The pool must serve a normal call right after, and the host must
// be unchanged (prototypes, globals). Run: npx vitest run --project unit sandbox/adversarial
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxPool } from "./pool.ts";
import { createNodeSandboxPool } from "./pool-node.ts";
import { callTool } from "./tools.ts";
import type { ErrorKind, RunCodeRequest, RunCodeResult, ToolSpec } from "./types.ts";

const lookup: ToolSpec = {
  name: "lookup",
  description: "Looks up a book by id.",
  parameters: {
    type: "object",
    properties: { id: { type: "integer" }, fields: { type: "array", items: { type: "string" } } },
    required: ["id"],
  },
  body: "({ id }) => ({ id, title: 'Book ' + id })",
};
const spinner: ToolSpec = { ...lookup, name: "spinner", body: "while (true) {}" };

interface Case {
  name: string;
  code: string;
  /** Accepted error kinds; "Success" for a run that must succeed. */
  expect: (ErrorKind | "Success")[];
  value?: unknown;
  /** Names of errors accepted (when the kind is Exception). */
  errorName?: string[];
  request?: Partial<RunCodeRequest>;
  /** Only the wall-clock backstop stops it (a C built-in between interrupt checks). */
  backstop?: boolean;
  check?: (r: RunCodeResult) => void;
}

const T = 0.3;

const cases: Case[] = [
  // CPU: loops the interrupt stops
  { name: "tight while loop", code: "while (true) {}", expect: ["Timeout"] },
  { name: "tight for loop", code: "for (;;) {}", expect: ["Timeout"] },
  { name: "do-while loop", code: "do {} while (1)", expect: ["Timeout"] },
  { name: "counting loop", code: "let i = 0; while (true) i++", expect: ["Timeout"] },
  { name: "loop inside a function", code: "function f() { for (;;) {} } f()", expect: ["Timeout"] },
  { name: "loop in a sort comparator", code: "[3, 2, 1].sort(() => { for (;;) {} })", expect: ["Timeout"] },
  { name: "loop in a getter", code: "({ get x() { for (;;) {} } }).x", expect: ["Timeout"] },
  { name: "catastrophic regex", code: "/(a+)+b/.test('a'.repeat(40))", expect: ["Timeout"] },
  {
    name: "interrupt caught by try/catch",
    code: "try { for (;;) {} } catch (e) { 'swallowed' }",
    expect: ["Timeout"],
  },
  { name: "loop in finally", code: "try { for (;;) {} } finally { for (;;) {} }", expect: ["Timeout"] },
  {
    name: "exponential recursion",
    code: "function f(n) { return n ? f(n - 1) + f(n - 1) : 1 } f(60)",
    expect: ["Timeout"],
  },
  // CPU: long C built-ins the interrupt cannot stop -> the wall-clock backstop, the host's hard timer
  {
    name: "indexOf over 2**28 holes",
    code: "Array.prototype.indexOf.call({ length: 2 ** 28 }, 1)",
    expect: ["HardKill"],
    request: { wall_backstop_s: 1 },
    backstop: true,
  },
  {
    name: "lastIndexOf over 2**28 holes",
    code: "Array.prototype.lastIndexOf.call({ length: 2 ** 28 }, 1)",
    expect: ["HardKill"],
    request: { wall_backstop_s: 1 },
    backstop: true,
  },
  {
    name: "huge join",
    code: "Array.prototype.join.call({ length: 2 ** 27 }, 'x').length",
    expect: ["HardKill"],
    request: { wall_backstop_s: 1 },
    backstop: true,
  },
  // Promises and jobs
  {
    name: "async loop swallowing the interrupt",
    code: "(async () => { for (;;) { try { await 1 } catch (e) {} } })()",
    expect: ["Timeout"],
  },
  {
    name: "endless promise chain",
    code: "function f() { return Promise.resolve().then(f) } f()",
    // Each link is a promise job charged to the budget: the count ends it before the heap fills.
    expect: ["Timeout"],
  },
  {
    name: "loop inside a then callback",
    code: "Promise.resolve().then(() => { for (;;) {} }); 1",
    expect: ["Timeout"],
  },
  {
    name: "async function catching its interrupt",
    code: "(async () => { try { for (;;) {} } catch (e) { return 'caught' } })()",
    expect: ["Timeout"],
  },
  {
    name: "promise that never settles",
    code: "new Promise(() => {})",
    expect: ["Exception"],
    errorName: ["Error"],
  },
  {
    name: "unhandled rejection in a job",
    code: "Promise.reject(new Error('late')); 5",
    expect: ["Success"],
    value: 5,
  },
  // Memory
  {
    name: "typed-array bomb",
    code: "const a = []; for (;;) a.push(new Uint8Array(1 << 20))",
    expect: ["MemoryLimit"],
  },
  {
    name: "array bomb",
    code: "const a = []; for (;;) a.push(new Array(100000).fill(7))",
    expect: ["MemoryLimit"],
  },
  { name: "one huge string", code: "'x'.repeat(2 ** 28)", expect: ["MemoryLimit"] },
  {
    name: "one huge ArrayBuffer",
    code: "new ArrayBuffer(2 ** 30)",
    expect: ["MemoryLimit"],
    errorName: ["RangeError", "InternalError"],
  },
  {
    name: "string doubling",
    code: "let s = 'x'; for (;;) s += s",
    expect: ["Exception"],
    errorName: ["InternalError", "RangeError"],
  },
  {
    name: "object bomb",
    code: "const m = new Map(); for (let i = 0; ; i++) m.set(i, { i, s: 'v' + i })",
    expect: ["MemoryLimit"],
  },
  {
    name: "bomb that catches OOM and retries",
    code: "const a = []; for (;;) { try { a.push(new Uint8Array(1 << 20)) } catch (e) {} }",
    expect: ["MemoryLimit"],
  },
  // Stack
  { name: "direct recursion", code: "function f() { f() } f()", expect: ["StackOverflow"] },
  { name: "arrow recursion", code: "const f = () => f(); f()", expect: ["StackOverflow"] },
  {
    name: "mutual recursion",
    code: "function a() { b() } function b() { a() } a()",
    expect: ["StackOverflow"],
  },
  // Each overflow builds a backtrace in C between interrupt checks: the backstop ends it.
  {
    name: "recursion that catches overflow",
    code: "function f() { try { f() } catch (e) { f() } } f()",
    expect: ["HardKill"],
    request: { wall_backstop_s: 1 },
    backstop: true,
  },
  {
    name: "proxy get recursion",
    code: "const p = new Proxy({}, { get: (t, k, r) => r[k] }); p.x",
    expect: ["StackOverflow"],
  },
  {
    name: "toString recursion",
    code: "const o = { toString() { return '' + o } }; '' + o",
    expect: ["StackOverflow"],
  },
  {
    name: "deeply nested JSON.parse",
    code: "JSON.parse('['.repeat(100000) + ']'.repeat(100000))",
    expect: ["StackOverflow"],
    errorName: ["SyntaxError", "InternalError", "RangeError"],
  },
  {
    name: "deeply nested JSON.stringify",
    code: "let o = {}, c = o; for (let i = 0; i < 100000; i++) { c.a = {}; c = c.a } JSON.stringify(o)",
    // 100,000 objects and the stringify's own state come close to the 8 MB limit, which
    // every call now gets in full and no more.
    expect: ["MemoryLimit"],
  },
  {
    name: "deeply nested source",
    code: "eval('('.repeat(100000) + '1' + ')'.repeat(100000))",
    expect: ["StackOverflow"],
    errorName: ["InternalError", "SyntaxError", "RangeError"],
  },
  // Output floods
  {
    name: "console flood",
    code: "for (;;) console.log('x'.repeat(1000))",
    expect: ["Timeout"],
    check: (r) => {
      expect(r.run_result.stdout.length).toBe(4096);
      expect(r.truncated).toBe(true);
    },
  },
  {
    name: "stderr flood that ends",
    code: "for (let i = 0; i < 5000; i++) console.error(i); 'end'",
    expect: ["Success"],
    value: "end",
    request: { run_timeout: 1 },
    check: (r) => {
      expect(r.run_result.stderr.length).toBe(4096);
      expect(r.truncated).toBe(true);
    },
  },
  {
    name: "huge return value",
    code: "'y'.repeat(1e6)",
    expect: ["Success"],
    check: (r) => expect((r.value as string).length).toBe(4096),
  },
  { name: "value whose toJSON loops", code: "({ toJSON() { for (;;) {} } })", expect: ["Timeout"] },
  {
    name: "console.log of a looping toJSON",
    code: "console.log({ toJSON() { for (;;) {} } })",
    expect: ["Timeout"],
  },
  // Reaching for the host
  {
    name: "fetch",
    code: "fetch('http://example.com')",
    expect: ["Exception"],
    errorName: ["ReferenceError"],
  },
  {
    name: "dynamic import",
    code: "import('node:fs')",
    expect: ["Exception"],
    errorName: ["ReferenceError", "TypeError", "SyntaxError"],
  },
  {
    name: "static import",
    code: "import fs from 'fs'; fs",
    expect: ["Exception"],
    errorName: ["SyntaxError"],
  },
  { name: "require", code: "require('child_process')", expect: ["Exception"], errorName: ["ReferenceError"] },
  { name: "process", code: "process.exit(1)", expect: ["Exception"], errorName: ["ReferenceError"] },
  {
    name: "postMessage to the host",
    code: "postMessage({ type: 'result', id: 1, result: {} })",
    expect: ["Exception"],
    errorName: ["ReferenceError"],
  },
  {
    name: "setTimeout",
    code: "setTimeout(() => {}, 0)",
    expect: ["Exception"],
    errorName: ["ReferenceError"],
  },
  {
    name: "Atomics.wait",
    code: "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5000)",
    expect: ["Exception"],
    errorName: ["ReferenceError"],
  },
  {
    name: "SharedArrayBuffer stays inside",
    code: "new Int32Array(new SharedArrayBuffer(8)).length",
    expect: ["Success"],
    value: 2,
  },
  {
    name: "Function constructor gives the sandbox global",
    code: "const g = Function('return this')(); [g === globalThis, typeof g.process, typeof g.require]",
    expect: ["Success"],
    value: [true, "undefined", "undefined"],
  },
  {
    name: "constructor chain to process",
    code: "({}).constructor.constructor('return process')()",
    expect: ["Exception"],
    errorName: ["ReferenceError"],
  },
  {
    name: "globals of a browser or worker",
    code: "[typeof window, typeof self, typeof document, typeof importScripts, typeof WebAssembly, typeof navigator]",
    expect: ["Success"],
    value: Array(6).fill("undefined"),
  },
  {
    name: "prototype pollution",
    code: "Object.prototype.polluted = 'yes'; Array.prototype.push = null; JSON.parse = null; ({}).polluted",
    expect: ["Success"],
    value: "yes",
  },
  {
    name: "__proto__ in the result",
    code: 'JSON.parse(\'{"__proto__": {"polluted": 1}}\')',
    expect: ["Success"],
    check: (r) => expect(Object.keys(r.value as object)).toEqual(["__proto__"]),
  },
  {
    name: "global left for the next call",
    code: "globalThis.leftover = 1; Object.freeze(Object.prototype); 1",
    expect: ["Success"],
    value: 1,
  },
  {
    name: "console replaced",
    code: "console.log = null; console.log('x')",
    expect: ["Exception"],
    errorName: ["TypeError"],
  },
  // Tools with bad arguments (called from code)
  {
    name: "tool with a wrong type",
    code: "lookup({ id: 'one' })",
    expect: ["Exception"],
    errorName: ["ToolArgumentError"],
    request: { tools: [lookup] },
  },
  {
    name: "tool without arguments",
    code: "lookup()",
    expect: ["Exception"],
    errorName: ["ToolArgumentError"],
    request: { tools: [lookup] },
  },
  {
    name: "tool with a bad array item",
    code: "lookup({ id: 1, fields: ['a', 2] })",
    expect: ["Exception"],
    errorName: ["ToolArgumentError"],
    request: { tools: [lookup] },
  },
  {
    name: "tool with unserializable arguments",
    code: "lookup({ id: 1n })",
    expect: ["Exception"],
    errorName: ["TypeError"],
    request: { tools: [lookup] },
  },
  {
    name: "tool arguments whose toJSON loops",
    code: "lookup({ id: 1, toJSON() { for (;;) {} } })",
    expect: ["Timeout"],
    request: { tools: [lookup] },
  },
  {
    name: "tool whose body loops",
    code: "spinner({ id: 1 })",
    expect: ["Timeout"],
    request: { tools: [spinner] },
  },
  {
    name: "tool overwritten by the code",
    code: "lookup = () => 'hijacked'; lookup({ id: 'x' })",
    expect: ["Success"],
    value: "hijacked",
    request: { tools: [lookup] },
  },
];

function expectTyped(r: RunCodeResult) {
  expect(["Success", "Failed", "SandboxError"]).toContain(r.status);
  expect(["Finished", "Error", "TimeLimitExceeded"]).toContain(r.run_result.status);
  expect(typeof r.run_result.execution_time).toBe("number");
  expect(typeof r.run_result.stdout).toBe("string");
  expect(typeof r.run_result.stderr).toBe("string");
  expect(typeof r.truncated).toBe("boolean");
  expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  if (r.status === "Success") {
    expect(r.error).toBeUndefined();
    expect(r.run_result.return_code).toBe(0);
  } else {
    expect(["Exception", "Timeout", "MemoryLimit", "StackOverflow", "HardKill"]).toContain(r.error?.kind);
    const timeLimit = r.error?.kind === "Timeout" || r.error?.kind === "HardKill";
    expect(r.run_result.status).toBe(timeLimit ? "TimeLimitExceeded" : "Error");
  }
}

function hostSnapshot(): string {
  const names = (o: object) => Object.getOwnPropertyNames(o).sort().join(",");
  return JSON.stringify([
    names(Object.prototype),
    names(Array.prototype),
    names(Function.prototype),
    names(String.prototype),
    Object.keys(globalThis).sort().join(","),
    Object.isFrozen(Object.prototype),
    typeof Array.prototype.push,
    typeof JSON.parse,
    ({} as Record<string, unknown>).polluted,
  ]);
}

describe.sequential("adversarial programs through the pool", () => {
  let pool: SandboxPool;
  let before: string;
  beforeAll(async () => {
    pool = createNodeSandboxPool({ size: 2 });
    expect(await pool.whenReady()).toBe(true);
    before = hostSnapshot();
  });
  afterAll(() => pool.close());

  it("has at least 50 programs", () => {
    expect(cases.length).toBeGreaterThanOrEqual(50);
  });

  for (const c of cases) {
    it(c.name, async () => {
      const request: RunCodeRequest = {
        code: c.code,
        run_timeout: T,
        memory_limit_MB: 8,
        max_output_bytes: 4096,
        ...c.request,
      };
      const r = await pool.run(request);
      expectTyped(r);
      const kind = r.status === "Success" ? "Success" : r.error?.kind;
      // The verdict is the program's own: counted work decides it; only a built-in that never
      // reaches an interrupt check is stopped by the wall clock, and then the result says so.
      expect(r.backstop ?? false).toBe(c.backstop ?? false);
      expect(c.expect, `${kind}: ${r.error?.name}: ${r.error?.message}`).toContain(kind);
      if (kind === "Exception" && c.errorName) expect(c.errorName).toContain(r.error?.name);
      if (c.value !== undefined) expect(r.value).toEqual(c.value);
      c.check?.(r);

      const next = await pool.run({
        code: "[typeof leftover, ({}).polluted, JSON.parse('[1]'), [].push(1)]",
        run_timeout: 1,
      });
      expect(next.status, JSON.stringify(next.error)).toBe("Success");
      expect(next.value).toEqual(["undefined", null, [1], 1]);
      expect(hostSnapshot()).toBe(before);
    });
  }

  it("JSON tool calls with bad arguments come back as results", async () => {
    for (const args of [{ id: "x" }, "{not json", [1], null, { fields: [] }]) {
      const r = await callTool(pool, lookup, args);
      expectTyped(r);
      expect(r.status).toBe("Failed");
      expect(r.error?.name).toBe("ToolArgumentError");
    }
    expect((await callTool(pool, lookup, { id: 4 })).value).toEqual({ id: 4, title: "Book 4" });
  });

  it("both workers hard-killed at once, then the pool serves again", async () => {
    const code = "Array.prototype.indexOf.call({ length: 2 ** 28 }, 1)";
    const killed = await Promise.all(
      [0, 1].map(() => pool.run({ code, run_timeout: T, wall_backstop_s: 1 })),
    );
    for (const r of killed) {
      expectTyped(r);
      expect([r.error?.kind, r.backstop]).toEqual(["HardKill", true]);
    }
    const after = await pool.run({ code: "6 * 7" });
    expect(after.value).toBe(42);
    expect(pool.stats().hardKills).toBeGreaterThanOrEqual(2);
  });
});
