// The sandbox returns exactly what the program produced, and its limits do not depend on
// what ran before, through the real worker pool (Node worker_threads): strings
// with NUL and lone surrogates in values, prints and errors; the memory limit on fresh and
// used workers (30 programs, identical results); the output cap at, below and above it with
// surrogate pairs at the cut; large values read out without turning into a Timeout; errors
// that cannot be described; bounded host copies; a call queued behind two hard kills.
// No wall-clock bounds: verdicts count work (sandbox/budget.ts). Run: npx vitest run --project unit sandbox/exact
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxPool } from "./pool.ts";
import { createNodeSandboxPool } from "./pool-node.ts";
import { loadQuickJS, runCode } from "./run-code.ts";
import type { RunCodeRequest, RunCodeResult } from "./types.ts";

const kindOf = (r: RunCodeResult) => (r.status === "Success" ? "Success" : r.error?.kind);

/** Runs one call; its verdict is counted, so the wall clock's backstop must not have decided it. */
async function timed(pool: SandboxPool, request: RunCodeRequest): Promise<RunCodeResult> {
  const r = await pool.run(request);
  expect(r.backstop, request.code).toBeUndefined();
  return r;
}

/** Allocates `chunk`-byte arrays until the memory limit refuses one; the value is how many fit. */
const fill = (chunk: number) =>
  `const a = []; try { for (;;) a.push(new Uint8Array(${chunk})) } catch (e) {} a.length`;

// Programs whose results must not depend on what the worker ran before: memory ones near
// their limit, strings, objects, errors, output. None depends on the clock.
const PROGRAMS: RunCodeRequest[] = [
  { code: fill(1 << 16), memory_limit_MB: 1 },
  { code: fill(1 << 16), memory_limit_MB: 2 },
  { code: fill(1 << 16), memory_limit_MB: 4 },
  { code: fill(1 << 16), memory_limit_MB: 8 },
  { code: fill(1 << 16), memory_limit_MB: 16 },
  { code: fill(1 << 16), memory_limit_MB: 32 },
  { code: fill(1 << 20), memory_limit_MB: 24 },
  { code: fill(4096), memory_limit_MB: 8 },
  {
    code: "const a = []; try { for (;;) a.push('x'.repeat(1000) + a.length) } catch (e) {} a.length",
    memory_limit_MB: 4,
  },
  {
    code: "const a = []; try { for (;;) a.push({ i: a.length, s: 'v' + a.length }) } catch (e) {} a.length",
    memory_limit_MB: 2,
  },
  {
    code: "const m = new Map(); try { for (let i = 0; ; i++) m.set(i, [i]) } catch (e) {} m.size",
    memory_limit_MB: 3,
  },
  { code: "let s = 'x'; try { for (;;) s += s } catch (e) {} s.length", memory_limit_MB: 8 },
  { code: "const a = []; for (;;) a.push(new Uint8Array(1 << 20))", memory_limit_MB: 8 },
  { code: "'x'.repeat(2 ** 24).length", memory_limit_MB: 8 },
  { code: "'x'.repeat(2 ** 22).length", memory_limit_MB: 8 },
  { code: "new ArrayBuffer(6 << 20).byteLength", memory_limit_MB: 8 },
  { code: "new ArrayBuffer(9 << 20).byteLength", memory_limit_MB: 8 },
  { code: "Array.from({ length: 3e5 }, (_, i) => i).length", memory_limit_MB: 8 },
  { code: "Array.from({ length: 3e5 }, (_, i) => i).length", memory_limit_MB: 2 },
  { code: "'a\\u0000b'" },
  { code: "console.log('\\ud800x', 'a\\u0000b'); [1, 'x', { y: null }]" },
  { code: "({ f() {}, n: 1n, i: -Infinity, d: new Date(0) })" },
  { code: "Array.from({ length: 3000 }, (_, i) => ({ i }))", max_output_bytes: 500 },
  { code: "throw new RangeError('r\\u0000')" },
  { code: "throw { code: 7 }" },
  { code: "function f() { f() } f()" },
  { code: "null.x" },
  { code: "const o = {}; o.self = o; o" },
  { code: "for (let i = 0; i < 100; i++) console.log('line', i); 'done'", max_output_bytes: 64 },
  { code: "Promise.resolve(6).then((x) => x * 7)" },
];

/** Programs that leave a worker's heap used: grown and refused, or taking most of the slack. */
const HEAVY: RunCodeRequest[] = [
  { code: "const a = []; for (;;) a.push(new Uint8Array(1 << 20))", memory_limit_MB: 32 },
  { code: "const a = new Uint8Array(3 << 20); a.fill(1); a.length", memory_limit_MB: 32 },
  { code: "const a = []; for (let i = 0; i < 2000; i++) a.push({ i, s: 'x'.repeat(i % 50) }); a.length" },
  { code: "'y'.repeat(1e6).length", memory_limit_MB: 64 },
];

const comparable = (r: RunCodeResult) => ({
  kind: kindOf(r),
  value: r.value,
  truncated: r.truncated,
  stdout: r.run_result.stdout,
  name: r.error?.name,
  message: r.error?.message,
});

describe.sequential("the sandbox returns exactly what the program produced", () => {
  let pool: SandboxPool;
  beforeAll(async () => {
    pool = createNodeSandboxPool({ size: 1 });
    expect(await pool.whenReady()).toBe(true);
  });
  afterAll(() => pool.close());

  it("keeps NUL and lone surrogates in string values", async () => {
    for (const [code, value] of [
      ["'a\\u0000b'", "a\u0000b"],
      ["'\\ud800x'", "\ud800x"],
      ["'\\udc00\\ud800'", "\udc00\ud800"],
      ["'\\u0000'.repeat(3)", "\u0000\u0000\u0000"],
      ["'é😀\\ufffd'", "é😀\ufffd"],
      ["({ s: 'a\\u0000\\ud800', [('k\\u0000')]: 1 })", { s: "a\u0000\ud800", "k\u0000": 1 }],
      ["['\\udfff']", ["\udfff"]],
    ] as const) {
      const r = await timed(pool, { code });
      expect(r.status).toBe("Success");
      expect(r.value, code).toEqual(value);
      expect(JSON.stringify(r.value)).toBe(JSON.stringify(value));
    }
  });

  it("prints NUL and lone surrogates as the program wrote them", async () => {
    const r = await timed(pool, {
      code: "console.log('a\\u0000b'); console.log('\\ud800x', '\\udc00'); console.error({ s: '\\u0000' })",
    });
    expect(r.run_result.stdout).toBe("a\u0000b\n\ud800x \udc00\n");
    expect(r.run_result.stderr).toBe('{"s":"\\u0000"}\n');
  });

  it("keeps NUL and lone surrogates in error messages", async () => {
    const r = await timed(pool, { code: "throw new TypeError('bad\\u0000\\ud800')" });
    expect(r.error?.kind).toBe("Exception");
    expect(r.error?.message).toBe("bad\u0000\ud800");
  });

  it("gives the same allocation loop the same verdict every time (8 MB and the default 32 MB)", async () => {
    for (const memory_limit_MB of [8, 32]) {
      const counts: unknown[] = [];
      for (let i = 0; i < 3; i++)
        counts.push((await timed(pool, { code: fill(1 << 16), memory_limit_MB })).value);
      expect(new Set(counts).size, `${memory_limit_MB} MB: ${counts}`).toBe(1);
      // 64 KiB chunks: the limit holds to within the runtime's own use of it.
      const mb = ((counts[0] as number) * 65536) / 2 ** 20;
      expect(mb).toBeLessThanOrEqual(memory_limit_MB);
      expect(mb).toBeGreaterThan(memory_limit_MB - 1.5);
    }
  });

  it("30 programs give identical results on fresh workers and on workers that ran memory-heavy programs", async () => {
    expect(PROGRAMS.length).toBe(30);
    const fresh: unknown[] = [];
    for (const p of PROGRAMS) fresh.push(comparable(runCode(await loadQuickJS(), { run_timeout: 10, ...p })));
    const used: unknown[] = [];
    for (const [i, p] of PROGRAMS.entries()) {
      await pool.run({ run_timeout: 10, ...HEAVY[i % HEAVY.length] });
      used.push(comparable(await pool.run({ run_timeout: 10, ...p })));
    }
    for (const [i, p] of PROGRAMS.entries()) expect(used[i], p.code).toEqual(fresh[i]);
    // The set covers both verdicts of the memory limit.
    const kinds = new Set(fresh.map((r) => (r as { kind: string }).kind));
    expect([...kinds].sort()).toEqual(["Exception", "MemoryLimit", "StackOverflow", "Success"]);
  });

  describe("the output cap (20 code units)", () => {
    const cap = { max_output_bytes: 20 };
    it("a string value at, just below and just above the cap", async () => {
      for (const n of [19, 20]) {
        const r = await timed(pool, { code: `'x'.repeat(${n})`, ...cap });
        expect([r.value, r.truncated]).toEqual(["x".repeat(n), false]);
      }
      const over = await timed(pool, { code: "'a'.repeat(10) + 'b'.repeat(11)", ...cap });
      expect([over.value, over.truncated]).toEqual([`${"a".repeat(9)}...${"b".repeat(8)}`, true]);
    });

    it("surrogate pairs at the cut are kept whole or dropped whole", async () => {
      const whole = await timed(pool, { code: "'😀'.repeat(10)", ...cap });
      expect([whole.value, whole.truncated]).toEqual(["😀".repeat(10), false]);
      // keep 17 = head 9 + tail 8: both cuts fall inside a pair.
      const r = await timed(pool, {
        code: "'a'.repeat(8) + '😀' + 'b'.repeat(20) + '😀' + 'c'.repeat(7)",
        ...cap,
      });
      expect([r.value, r.truncated]).toEqual([`${"a".repeat(8)}...${"c".repeat(7)}`, true]);
    });

    it("an object value's JSON text at, just below and just above the cap", async () => {
      for (const n of [15, 16]) {
        const r = await timed(pool, { code: `['${"x".repeat(n)}']`, ...cap }); // text: n + 4
        expect([r.value, r.truncated]).toEqual([["x".repeat(n)], false]);
      }
      const over = await timed(pool, { code: `['${"x".repeat(17)}']`, ...cap });
      expect([over.value, over.truncated]).toEqual([`["${"x".repeat(7)}...${"x".repeat(6)}"]`, true]);
      const pairs = await timed(pool, { code: "['😀'.repeat(10)]", ...cap });
      expect([pairs.value, pairs.truncated]).toEqual(['["😀😀😀...😀😀😀"]', true]);
    });

    it("prints at, just below and just above the cap", async () => {
      for (const n of [18, 19]) {
        const r = await timed(pool, { code: `console.log('x'.repeat(${n}))`, ...cap });
        expect([r.run_result.stdout, r.truncated]).toEqual([`${"x".repeat(n)}\n`, false]);
      }
      const over = await timed(pool, { code: "console.log('x'.repeat(20)); console.log('more')", ...cap });
      expect([over.run_result.stdout, over.truncated]).toEqual(["x".repeat(20), true]);
      const args = await timed(pool, { code: "console.log('abcdefghij', 'klmnopqrst', 'uvw')", ...cap });
      expect([args.run_result.stdout, args.truncated]).toEqual(["abcdefghij klmnopqrs", true]);
      const pair = await timed(pool, { code: "console.error('a'.repeat(19) + '😀')", ...cap });
      expect([pair.run_result.stderr, pair.truncated]).toEqual(["a".repeat(19), true]);
      const obj = await timed(pool, { code: "console.log({ k: '😀'.repeat(20) })", ...cap });
      expect([obj.run_result.stdout, obj.truncated]).toEqual(['{"k":"😀😀😀😀😀😀😀', true]);
    });
  });

  it("a finished program with a large value is not a Timeout", async () => {
    for (let i = 0; i < 5; i++) {
      const r = await timed(pool, { code: "Array.from({ length: 2e5 }, (_, i) => i)", run_timeout: 5 });
      expect(kindOf(r)).toBe("Success");
      expect(r.truncated).toBe(true);
      expect((r.value as string).startsWith("[0,1,2,3,")).toBe(true);
      expect((r.value as string).endsWith(",199998,199999]")).toBe(true);
      expect((r.value as string).length).toBeLessThanOrEqual(65_536);
    }
    for (const n of [2e4, 3e4, 5e4]) {
      const r = await timed(pool, { code: `Array.from({ length: ${n} }, (_, i) => i)`, run_timeout: 1 });
      expect(kindOf(r), String(n)).toBe("Success");
    }
  });

  it("an error whose description hangs stays an Exception", async () => {
    const r = await timed(pool, { code: "throw { get message() { while (true) {} } }" });
    expect(r.error).toEqual({
      kind: "Exception",
      name: "Error",
      message: "the code threw a value whose name or message could not be read within its budget",
    });
    const name = await timed(pool, {
      code: "const e = new Error('m'); Object.defineProperty(e, 'name', { get() { for (;;) {} } }); throw e",
    });
    expect(name.error?.kind).toBe("Exception");
  });

  it("a thrown object with a message and no name is an Error, not 'undefined'", async () => {
    for (const code of [
      'throw { get message() { return "m"; } }',
      'throw { message: "m" }',
      'throw { name: "", message: "m" }',
    ]) {
      const r = await timed(pool, { code });
      expect(r.error, code).toEqual({ kind: "Exception", name: "Error", message: "m" });
      expect(r.run_result.stderr, code).toBe("Uncaught Error: m\n");
    }
    // A message past the cap goes through the bounded reader, which names it the same way.
    const long = await timed(pool, { code: 'throw { message: "m".repeat(100000) }' });
    expect([long.error?.name, long.truncated]).toEqual(["Error", true]);
    const named = await timed(pool, { code: 'throw { name: "Oops", get message() { return "m"; } }' });
    expect(named.error).toEqual({ kind: "Exception", name: "Oops", message: "m" });
  });

  it("copies a huge string value out only up to the cap, within the deadline", async () => {
    const r = await timed(pool, { code: "'z'.repeat(3e7)", run_timeout: 5, memory_limit_MB: 128 });
    expect(kindOf(r)).toBe("Success");
    expect([r.value, r.truncated]).toEqual([`${"z".repeat(32_767)}...${"z".repeat(32_766)}`, true]);
  });

  it("ten huge console arguments give a truncated result, not a hard kill", async () => {
    const r = await timed(pool, {
      code: "const s = 'q'.repeat(8e6); console.log(s, s, s, s, s, s, s, s, s, s); 'end'",
      run_timeout: 2,
    });
    expect(kindOf(r)).toBe("Success");
    expect(r.value).toBe("end");
    expect([r.run_result.stdout, r.truncated]).toEqual(["q".repeat(65_536), true]);
  });
});

describe.sequential("the queue behind hard kills", () => {
  it("a normal call queued behind two hard-killed programs is served by the spare", async () => {
    const pool = createNodeSandboxPool({ size: 2 });
    try {
      expect(await pool.whenReady()).toBe(true);
      for (let round = 0; round < 2; round++) {
        const kill = {
          code: "Array.prototype.indexOf.call({ length: 2 ** 28 }, 1)",
          run_timeout: 0.3,
          wall_backstop_s: 0.3,
        };
        const killed = [pool.run(kill), pool.run(kill)];
        let served = false;
        const queued = pool.run({ code: "6 * 7", run_timeout: 1 }).then((r) => {
          served = true;
          return r;
        });
        expect(pool.stats().queued).toBe(1);
        for (const k of await Promise.all(killed))
          expect([k.error?.kind, k.backstop]).toEqual(["HardKill", true]);
        // The spare took the first killed worker's place at once: the queued call is running
        // there (not waiting for a worker to start) when the kills come back.
        expect(pool.stats().queued).toBe(0);
        const r = await queued;
        expect([served, r.value, r.backstop]).toEqual([true, 42, undefined]);
        // The next round needs the spare back.
        expect(await pool.whenReady()).toBe(true);
      }
      expect(pool.stats().hardKills).toBe(4);
    } finally {
      pool.close();
    }
  });
});
