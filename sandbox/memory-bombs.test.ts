// Memory bombs of small objects: at 8, 16 and 32 MB each ends as MemoryLimit with
// a message, never as a crashed interpreter ("table index is out of bounds") or "Uncaught
// null", through the worker pool and in-process alike; the pool still answers afterwards.
// The verdicts count work and memory, not time (sandbox/budget.ts), so any load gives them.
// Run: `npx vitest run --project unit sandbox/memory-bombs.test.ts`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxPool } from "./pool.ts";
import { createNodeSandboxPool } from "./pool-node.ts";
import { InProcessSandbox } from "./run-code.ts";
import type { RunCodeResult } from "./types.ts";

const BOMBS = [
  "const a = []; while (true) a.push({})",
  "const a = []; while (true) a.push([1])",
  "const m = new Map(); let i = 0; while (true) m.set(i++, {})",
  "const a = []; let i = 0; while (true) a.push('s' + i++)",
];

let pool: SandboxPool;
let local: InProcessSandbox;
beforeAll(async () => {
  pool = createNodeSandboxPool({ size: 2 });
  expect(await pool.whenReady()).toBe(true);
  local = await InProcessSandbox.create();
});
afterAll(async () => {
  await pool?.close();
});

function expectMemoryLimit(r: RunCodeResult, mb: number, code: string) {
  const what = `${mb} MB ${code}: ${r.status} ${JSON.stringify(r.error)}`;
  expect(r.status, what).toBe("Failed");
  expect(r.error?.kind, what).toBe("MemoryLimit");
  expect(r.error?.message, what).toMatch(/out of memory/);
  expect(r.run_result.stderr, what).toMatch(/out of memory/);
}

describe("small-object memory bombs end as MemoryLimit", () => {
  for (const mb of [8, 16, 32])
    it(`at ${mb} MB, through the pool and in-process`, async () => {
      const viaPool = await Promise.all(
        BOMBS.map((code) => pool.run({ code, memory_limit_MB: mb, run_timeout: 10 })),
      );
      for (const [i, r] of viaPool.entries()) expectMemoryLimit(r, mb, BOMBS[i]);
      for (const code of BOMBS)
        expectMemoryLimit(await local.run({ code, memory_limit_MB: mb, run_timeout: 10 }), mb, code);
      expect((await pool.run({ code: "6 * 7" })).value).toBe(42);
      expect((await local.run({ code: "6 * 7" })).value).toBe(42);
    });
});
