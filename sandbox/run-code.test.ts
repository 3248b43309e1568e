// Correctness of runCode, the pure in-process core (sandbox/run-code.ts), on one QuickJS
// module loaded in the test thread: values, console output, thrown and syntax errors (name,
// message, line), statuses, limits that the interpreter itself enforces, output caps, tools
// called from code, promises, and isolation between calls. Run: npx vitest run sandbox/run-code
import type { QuickJSWASMModule } from "quickjs-emscripten-core";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_VALUE_DEPTH } from "./reader.ts";
import { headTail, isModuleUsable, loadQuickJS, runCode } from "./run-code.ts";
import type { RunCodeRequest, RunCodeResult, ToolSpec } from "./types.ts";

let mod: QuickJSWASMModule;
beforeAll(async () => {
  mod = await loadQuickJS();
});
const run = (code: string, extra: Partial<RunCodeRequest> = {}): RunCodeResult =>
  runCode(mod, { code, ...extra });

function expectSuccess(r: RunCodeResult) {
  expect(r.status, JSON.stringify(r.error)).toBe("Success");
  expect(r.run_result.status).toBe("Finished");
  expect(r.run_result.return_code).toBe(0);
  expect(r.error).toBeUndefined();
}

function expectError(r: RunCodeResult, kind: string, name: string) {
  expect(r.status).toBe("Failed");
  expect(r.error?.kind).toBe(kind);
  expect(r.error?.name).toBe(name);
  if (kind === "Timeout") {
    expect(r.run_result.status).toBe("TimeLimitExceeded");
    expect(r.run_result.return_code).toBeNull();
  } else {
    expect(r.run_result.status).toBe("Error");
    expect(r.run_result.return_code).toBe(1);
  }
}

describe("values", () => {
  it.each([
    ["347*29", 10063],
    ["'a' + 'b'", "ab"],
    ["1 < 2", true],
    ["null", null],
    ["[1, 'x', {y: [2]}]", [1, "x", { y: [2] }]],
    ["({a: 1, b: {c: 'd'}})", { a: 1, b: { c: "d" } }],
    ["let x = 6; x * 7", 42],
    ["function f(n) { return n < 2 ? n : f(n-1) + f(n-2) } f(20)", 6765],
    ["Math.max(...[3, 9, 2])", 9],
    ["0.1 + 0.2", 0.30000000000000004],
  ])("%s -> %j", (code, value) => {
    const r = run(code);
    expectSuccess(r);
    expect(r.value).toEqual(value);
    expect(r.truncated).toBe(false);
  });

  it("maps values JSON cannot hold to strings", () => {
    expect(run("NaN").value).toBe("NaN");
    expect(run("-Infinity").value).toBe("-Infinity");
    expect(run("12n ** 20n").value).toBe("3833759992447475122176");
    expect(run("({f() {}, s: Symbol('q'), n: 1n, i: Infinity})").value).toEqual({
      f: "[Function f]",
      s: "Symbol(q)",
      n: "1",
      i: "Infinity",
    });
    expect(run("const o = {}; o.self = o; o").value).toBe("[object Object]");
  });

  it("leaves value absent for undefined", () => {
    const r = run("let z = 1;");
    expectSuccess(r);
    expect("value" in r).toBe(false);
  });

  it("awaits a returned promise and runs queued jobs", () => {
    expect(run("Promise.resolve(41).then((x) => x + 1)").value).toBe(42);
    expect(run("(async () => { const a = await 2; return a * 3 })()").value).toBe(6);
    const r = run("Promise.resolve().then(() => console.log('later')); console.log('now'); 1");
    expect(r.run_result.stdout).toBe("now\nlater\n");
  });

  it("reports a rejected promise as the error", () => {
    const r = run("Promise.reject(new RangeError('no way'))");
    expectError(r, "Exception", "RangeError");
    expect(r.error?.message).toBe("no way");
  });

  it("reports a promise that can never settle", () => {
    const r = run("new Promise(() => {})");
    expectError(r, "Exception", "Error");
    expect(r.error?.message).toMatch(/never settled/);
  });
});

describe("console", () => {
  it("captures log/info/debug to stdout and warn/error to stderr, formatted", () => {
    const r = run(
      "console.log('a', 1, true, null, undefined, {k: [1]}); console.info('i'); console.debug('d'); console.warn('w'); console.error(new TypeError('t'))",
    );
    expectSuccess(r);
    expect(r.run_result.stdout).toBe('a 1 true null undefined {"k":[1]}\ni\nd\n');
    expect(r.run_result.stderr).toBe("w\nTypeError: t\n");
  });

  it("caps each stream at max_output_bytes and marks the result truncated", () => {
    const r = run("for (let i = 0; i < 1000; i++) console.log('line ' + i); 'done'", {
      max_output_bytes: 100,
    });
    expectSuccess(r);
    expect(r.value).toBe("done");
    expect(r.run_result.stdout.length).toBe(100);
    expect(r.run_result.stdout.startsWith("line 0\nline 1\n")).toBe(true);
    expect(r.truncated).toBe(true);
  });

  it("cuts a long value to head ... tail", () => {
    const r = run("'a'.repeat(500) + 'b'.repeat(500)", { max_output_bytes: 21 });
    expect(r.value).toBe(`${"a".repeat(9)}...${"b".repeat(9)}`);
    expect(r.truncated).toBe(true);
  });
});

describe("errors", () => {
  it("a thrown error keeps its name, message and line", () => {
    const r = run("const a = 1;\nconst b = 2;\nthrow new TypeError('bad ' + (a + b));");
    expectError(r, "Exception", "TypeError");
    expect(r.error?.message).toBe("bad 3");
    expect(r.error?.line).toBe(3);
    expect(r.run_result.stderr).toMatch(/^Uncaught TypeError: bad 3\n/);
  });

  it("a reference error reports its line", () => {
    const r = run("let x = 1;\n\nfoo(x)");
    expectError(r, "Exception", "ReferenceError");
    expect(r.error?.message).toMatch(/foo/);
    expect(r.error?.line).toBe(3);
  });

  it("a syntax error is an Exception named SyntaxError with its line", () => {
    const r = run("let a = 1;\nlet b = (;");
    expectError(r, "Exception", "SyntaxError");
    expect(r.error?.line).toBe(2);
  });

  it("output printed before an error is kept", () => {
    const r = run("console.log('before'); null.x");
    expectError(r, "Exception", "TypeError");
    expect(r.run_result.stdout).toBe("before\n");
  });

  it("a thrown non-error value is reported", () => {
    const r = run("throw {code: 7}");
    expectError(r, "Exception", "Error");
    expect(r.error?.message).toBe('Uncaught {"code":7}');
  });

  it("a timeout interrupts a tight loop once its counted budget is spent", () => {
    const r = run("let i = 0; while (true) { i++ }", { run_timeout: 0.2 });
    expectError(r, "Timeout", "TimeoutError");
    expect(r.error?.message).toBe("execution exceeded the time limit of 0.2 s");
    expect(r.backstop).toBeUndefined();
  });

  it("the budget counts work: the same program stops at the same place on every run", () => {
    // Prints its progress every 10,000 iterations: where the budget stopped it is in stdout.
    const code = "let i = 0; for (;;) { if (++i % 10000 === 0) console.log(i) }";
    const runs = [0.05, 0.05, 0.05].map(() => run(code, { run_timeout: 0.05, max_output_bytes: 1 << 20 }));
    for (const r of runs) expectError(r, "Timeout", "TimeoutError");
    expect(runs[0].run_result.stdout.length).toBeGreaterThan(0);
    expect(runs.map((r) => r.run_result.stdout)).toEqual(runs.map(() => runs[0].run_result.stdout));
    // Twice the budget, twice the work (to a few lines: QuickJS checks every 10,000 ticks).
    const lines = (r: RunCodeResult) => r.run_result.stdout.trim().split("\n").length;
    const double = run(code, { run_timeout: 0.1, max_output_bytes: 1 << 20 });
    expect(Math.abs(lines(double) - 2 * lines(runs[0]))).toBeLessThanOrEqual(2);
  });

  it("a value nested 3,000 deep comes out cut at MAX_VALUE_DEPTH, never deep enough to overflow a host", () => {
    const depthOf = (v: unknown): number => {
      let d = 0;
      while (Array.isArray(v) || (v !== null && typeof v === "object")) {
        v = Array.isArray(v) ? v[0] : Object.values(v as object)[0];
        d++;
      }
      return d;
    };
    for (const depth of [3000, 100_000]) {
      const arrays = run(`let v = 1; for (let i = 0; i < ${depth}; i++) v = [v]; v`);
      expectSuccess(arrays);
      expect(arrays.truncated).toBe(true);
      expect(depthOf(arrays.value)).toBe(MAX_VALUE_DEPTH);
      expect(JSON.stringify(arrays.value)).toContain(`"[nested deeper than ${MAX_VALUE_DEPTH} levels]"`);
      const objects = run(`let v = {}; for (let i = 0; i < ${depth}; i++) v = { k: v }; v`);
      expect([objects.status, objects.truncated, depthOf(objects.value)]).toEqual([
        "Success",
        true,
        MAX_VALUE_DEPTH,
      ]);
      const printed = run(`let v = 1; for (let i = 0; i < ${depth}; i++) v = [v]; console.log(v); 1`);
      expect(printed.status).toBe("Success");
      expect(printed.run_result.stdout).toContain("[nested deeper than");
    }
    // At the limit nothing is cut.
    const shallow = run(`let v = 1; for (let i = 0; i < ${MAX_VALUE_DEPTH}; i++) v = [v]; v`);
    expect([shallow.truncated, depthOf(shallow.value)]).toEqual([false, MAX_VALUE_DEPTH]);
  });

  it("the wall-clock backstop stops what the budget would not, and the result says so", () => {
    const r = run("let i = 0; while (true) { i++ }", { run_timeout: 600, wall_backstop_s: 0.2 });
    expectError(r, "Timeout", "TimeoutError");
    expect(r.error?.message).toBe("execution exceeded the time limit of 600 s");
    expect(r.backstop).toBe(true);
    expect(run("6 * 7").backstop).toBeUndefined();
  });

  it("the time zone is UTC whatever the host's", () => {
    const zone = process.env.TZ;
    try {
      for (const tz of ["America/New_York", "Asia/Kolkata", "UTC"]) {
        process.env.TZ = tz;
        const r = run(
          "const d = new Date(0); [d.getHours(), d.getTimezoneOffset(), d.toString(), Date().slice(16)]",
        );
        expect(r.value, tz).toEqual([0, 0, "Thu Jan 01 1970 00:00:00 GMT+0000", "00:00:00 GMT+0000"]);
      }
      // The host's own time zone is back.
      process.env.TZ = "Asia/Kolkata";
      expect(new Date(0).getHours()).toBe(5);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it("a memory limit stops an allocation bomb, counting bytes", () => {
    const before = mod.getWasmMemory().buffer.byteLength;
    const r = run("const a = []; while (true) a.push('x'.repeat(1000) + a.length)", {
      memory_limit_MB: 8,
      run_timeout: 5,
    });
    expectError(r, "MemoryLimit", "InternalError");
    // QuickJS's own limit counts allocations in this build; the guarded wasm memory counts bytes.
    expect(mod.getWasmMemory().buffer.byteLength - before).toBeLessThanOrEqual(9 << 20);
    const big = run("const b = []; for (let i = 0; i < 128; i++) b.push(new Uint8Array(1 << 20)); b.length", {
      memory_limit_MB: 32,
    });
    expectError(big, "MemoryLimit", "InternalError");
  });

  it("deep recursion is a StackOverflow", () => {
    const r = run("function f(n) { return f(n + 1) + 1 }\nf(0)");
    expectError(r, "StackOverflow", "InternalError");
    expect(r.error?.line).toBe(1);
  });

  it("rejects a bad request as a SandboxError without running it", () => {
    expect(runCode(mod, { code: 5 as unknown as string }).status).toBe("SandboxError");
    const r = run("1", { run_timeout: -1 });
    expect(r.status).toBe("SandboxError");
    expect(r.error?.message).toMatch(/^run_timeout/);
    expect(run("1", { memory_limit_MB: 0 }).error?.message).toMatch(/^memory_limit_MB/);
  });
});

describe("tools called from code", () => {
  const books: ToolSpec = {
    name: "search_books_by_author",
    description: "Books by an author",
    parameters: { type: "object", properties: { author: { type: "string" } }, required: ["author"] },
    body: `({author}) => {
      const books = [{title: "Emma", author: "Austen"}, {title: "Persuasion", author: "Austen"}, {title: "Ulysses", author: "Joyce"}];
      return books.filter((b) => b.author === author).map((b) => b.title);
    }`,
  };
  const loans: ToolSpec = {
    name: "get_user_checked_out_books",
    description: "Books a user has checked out",
    parameters: { type: "object", properties: { user_id: { type: "string" } }, required: ["user_id"] },
    body: "const loans = {u1: ['Emma'], u2: []}; if (!(args.user_id in loans)) throw new Error('no user ' + args.user_id); return loans[args.user_id];",
  };

  it("runs arrow-function and function-body tools", () => {
    const r = run(
      "[search_books_by_author({author: 'Austen'}), get_user_checked_out_books({user_id: 'u1'})]",
      {
        tools: [books, loans],
      },
    );
    expectSuccess(r);
    expect(r.value).toEqual([["Emma", "Persuasion"], ["Emma"]]);
  });

  it("bad arguments throw a ToolArgumentError naming the field", () => {
    const r = run("search_books_by_author({author: 42})", { tools: [books] });
    expectError(r, "Exception", "ToolArgumentError");
    expect(r.error?.message).toBe("search_books_by_author: author: expected string, got number");
  });

  it("a tool's own exception is the call's error", () => {
    const r = run("get_user_checked_out_books({user_id: 'nobody'})", { tools: [loans] });
    expectError(r, "Exception", "Error");
    expect(r.error?.message).toBe("no user nobody");
  });

  it("a tool body that does not compile fails only when called", () => {
    const broken: ToolSpec = { ...books, name: "broken", body: "return (" };
    expect(run("1 + 1", { tools: [broken] }).value).toBe(2);
    const r = run("broken({author: 'x'})", { tools: [broken] });
    expectError(r, "Exception", "SyntaxError");
    expect(r.error?.message).toMatch(/in the body of tool broken/);
  });

  it("rejects bad declarations as SandboxError", () => {
    expect(run("1", { tools: [{ ...books, name: "1x" }] }).status).toBe("SandboxError");
    expect(run("1", { tools: [books, books] }).error?.message).toMatch(/duplicate/);
  });
});

describe("isolation", () => {
  it("each call gets a fresh context", () => {
    expectSuccess(run("globalThis.leak = 1; Object.prototype.polluted = 2; JSON.parse = () => 0"));
    expect(run("[typeof leak, ({}).polluted, JSON.parse('[3]')]").value).toEqual(["undefined", null, [3]]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("replaced built-ins do not change how results are read out", () => {
    const r = run(
      "JSON.stringify = () => 'x'; JSON.parse = null; String = null; Object.keys = null; console.log({ k: [1] }); ({ a: 1 })",
    );
    expectSuccess(r);
    expect(r.value).toEqual({ a: 1 });
    expect(r.run_result.stdout).toBe('{"k":[1]}\n');
    expect(isModuleUsable(mod)).toBe(true);
  });

  it("nothing of the host is reachable", () => {
    const r = run(
      "['fetch','setTimeout','setInterval','require','process','window','document','self','postMessage','importScripts','WebAssembly','Atomics','navigator','XMLHttpRequest','Worker'].map((k) => typeof globalThis[k])",
    );
    expect(r.value).toEqual(Array(15).fill("undefined"));
  });

  it("a module broken by a host-stack overflow is flagged, not reused", async () => {
    const own = await loadQuickJS();
    const r = runCode(own, {
      code: "let o = {}; let c = o; for (let i = 0; i < 200000; i++) { c.a = {}; c = c.a } JSON.stringify(o)",
      run_timeout: 10,
      memory_limit_MB: 256,
    });
    expect(r.status).toBe("Failed");
    expect(["StackOverflow", "Exception"]).toContain(r.error?.kind);
    expect(isModuleUsable(own)).toBe(false);
    expect(runCode(own, { code: "1" }).status).toBe("SandboxError");
    expect(isModuleUsable(mod)).toBe(true);
  });
});

describe("headTail", () => {
  it("keeps head and tail around ... within max", () => {
    expect(headTail("abcdefghij", 10)).toBe("abcdefghij");
    expect(headTail("abcdefghijk", 9)).toBe("abc...ijk");
    expect(headTail("abcdefghijk", 8)).toBe("abc...jk");
    expect(headTail("abcdefghijk", 8).length).toBe(8);
  });

  it("never splits a surrogate pair", () => {
    expect(headTail("ab😀cdefg😀h", 9)).toBe("ab...😀h");
    expect(headTail("😀😀😀😀", 7)).toBe("😀...😀");
    expect(headTail("a😀", 1)).toBe("a");
    expect(headTail("😀a", 1)).toBe("");
  });
});

describe("time and randomness", () => {
  const draws = "[Math.random(), Math.random(), Math.random()]";
  it("Math.random is the seed's sequence: same seed, same numbers; another seed, others", () => {
    const a = run(draws, { seed: 7 }).value as number[];
    expect(run(draws, { seed: 7 }).value).toEqual(a);
    expect(run("1 + 1").status).toBe("Success"); // an unrelated call in between changes nothing
    expect(run(draws, { seed: 7 }).value).toEqual(a);
    const b = run(draws, { seed: 8 }).value as number[];
    expect(b).not.toEqual(a);
    for (const x of [...a, ...b]) expect(x >= 0 && x < 1).toBe(true);
    // No seed is seed 0, still one fixed sequence.
    expect(run(draws).value).toEqual(run(draws, { seed: 0 }).value);
  });

  it("the clock starts at clock_ms (2025-01-01 by default) and advances 1 ms per read", () => {
    const r = run("[Date.now(), Date.now(), new Date().toISOString(), new Date(0).getTime()]");
    expect(r.value).toEqual([1735689600000, 1735689600001, "2025-01-01T00:00:00.002Z", 0]);
    expect(run("Date.now()", { clock_ms: 5000 }).value).toBe(5000);
    // A loop that waits on the clock ends after 100 reads, every time.
    const wait = "const s = Date.now(); let n = 0; while (Date.now() - s < 100) n++; n";
    expect(run(wait).value).toBe(99);
    // Subclasses and instanceof still work.
    expect(run("class D extends Date {}; const d = new D(); [d instanceof Date, d.getTime()]").value).toEqual(
      [true, 1735689600000],
    );
  });

  it("deterministic: false gives the host's clock and an unseeded Math.random (the benchmark's switch)", () => {
    const before = Date.now();
    const t = run("Date.now()", { deterministic: false }).value as number;
    expect(t).toBeGreaterThanOrEqual(before);
    expect(Date.now()).toBeGreaterThanOrEqual(t); // the host's Date.now is restored
    const r = [0, 1, 2].map(() => JSON.stringify(run(draws, { deterministic: false }).value));
    expect(new Set(r).size).toBeGreaterThan(1);
  });

  it("refuses a bad seed, clock or switch, naming the field", () => {
    expect(run("1", { seed: -1 }).run_result.stderr).toContain("seed: expected an integer in [0, 2^32)");
    expect(run("1", { seed: 1.5 }).status).toBe("SandboxError");
    expect(run("1", { clock_ms: Number.NaN }).run_result.stderr).toContain("clock_ms:");
    expect(run("1", { deterministic: "yes" as unknown as boolean }).run_result.stderr).toContain(
      "deterministic:",
    );
  });
});

describe("a cut error message reports truncated", () => {
  it("an Error whose message passes the cap, and a thrown string that does", () => {
    const long = run("throw new Error('m'.repeat(5000))", { max_output_bytes: 3000 });
    expect(long.error?.message.length).toBeLessThanOrEqual(3000);
    expect(long.error?.message).toContain("...");
    expect(long.truncated).toBe(true);
    const str = run("throw 's'.repeat(5000)", { max_output_bytes: 3000 });
    expect(str.truncated).toBe(true);
    // Under the cap: not truncated.
    expect(run("throw new Error('short')").truncated).toBe(false);
  });
});
