// SandboxPool in Node (worker_threads running sandbox/sandbox.worker.ts through the tsx
// bootstrap): results through the queue, concurrency, stats, close, request checks, and the
// crash paths (a worker that dies mid-call, workers that never start), the latter driven by
// small stand-in worker scripts since sandboxed code cannot crash a real worker.
// Run: npx vitest run sandbox/pool
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPool } from "./pool.ts";
import { createNodeSandboxPool, nodeWorkerFactory } from "./pool-node.ts";
import { sandboxSmoke } from "./smoke.ts";

describe.sequential("SandboxPool on worker_threads", () => {
  let pool: SandboxPool;
  beforeAll(async () => {
    pool = createNodeSandboxPool({ size: 2 });
    expect(await pool.whenReady()).toBe(true);
  });
  afterAll(() => pool.close());

  it("runs a call and returns the typed result", async () => {
    const r = await pool.run({ code: "console.log('x'); 347*29" });
    expect(r.status).toBe("Success");
    expect(r.value).toBe(10063);
    expect(r.run_result.stdout).toBe("x\n");
  });

  it("answers many queued calls, each with its own result", async () => {
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => pool.run({ code: `${i} * 2` })));
    expect(results.map((r) => r.value)).toEqual(Array.from({ length: 60 }, (_, i) => i * 2));
    const s = pool.stats();
    expect(s.size).toBe(2);
    expect(s.busy).toBe(0);
    expect(s.queued).toBe(0);
    expect(s.completed).toBeGreaterThanOrEqual(61);
  });

  it("runs two calls at once on two workers", async () => {
    expect(await pool.whenReady()).toBe(true);
    const both = Promise.all([
      pool.run({ code: "let n = 0; for (let i = 0; i < 1e5; i++) n += i; 1" }),
      pool.run({ code: "let n = 0; for (let i = 0; i < 1e5; i++) n += i; 2" }),
    ]);
    // Both went to a worker at once: none waits in the queue, whatever the machine's speed.
    expect([pool.stats().busy, pool.stats().queued]).toEqual([2, 0]);
    const [a, b] = await both;
    expect([a.value, b.value]).toEqual([1, 2]);
  });

  it("rejects a bad request without using a worker", async () => {
    const before = pool.stats().completed;
    const r = await pool.run({ code: "1", run_timeout: 0 });
    expect(r.status).toBe("SandboxError");
    expect(r.error?.name).toBe("InvalidRequest");
    expect(pool.stats().completed).toBe(before);
  });

  it("passes the smoke check the browser e2e test runs", async () => {
    const report = await sandboxSmoke(pool, 200);
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it("after close, calls resolve with SandboxError", async () => {
    const own = createNodeSandboxPool({ size: 1 });
    const pending = own.run({ code: "1" });
    own.close();
    expect((await pending).status).toBe("SandboxError");
    expect((await own.run({ code: "1" })).error?.message).toMatch(/closed/);
  });
});

// Stand-in workers speaking the pool protocol (sandbox/protocol.ts).
const CRASHY = `
const { parentPort } = require("node:worker_threads");
parentPort.postMessage({ type: "ready" });
parentPort.on("message", (m) => {
  if (m.request.code === "exit") process.exit(3);
  if (m.request.code === "throw") setTimeout(() => { throw new Error("boom"); });
  else parentPort.postMessage({ type: "result", id: m.id, result: { status: "Success", run_result: { status: "Finished", execution_time: 0, return_code: 0, stdout: "", stderr: "" }, value: m.request.code.length, truncated: false } });
});`;
const DEAD_ON_START = `process.exit(1);`;
// CRASHY, but each worker takes SLOW_START_MS to become ready (as a real one does under load).
const SLOW_START_MS = 1200;
const SLOW = CRASHY.replace(
  'parentPort.postMessage({ type: "ready" });',
  `setTimeout(() => parentPort.postMessage({ type: "ready" }), ${SLOW_START_MS});`,
);

describe.sequential("SandboxPool crash handling", () => {
  it("a worker that dies mid-call gives a SandboxError result and is respawned", async () => {
    const pool = new SandboxPool(nodeWorkerFactory(CRASHY, null), { size: 1 });
    try {
      expect((await pool.run({ code: "abc" })).value).toBe(3);
      for (const code of ["exit", "throw"]) {
        const r = await pool.run({ code });
        expect(r.status).toBe("SandboxError");
        expect(r.error?.message).toMatch(/crashed/);
        expect((await pool.run({ code: "abcd" })).value).toBe(4);
      }
      expect(pool.stats().crashes).toBe(2);
      expect(pool.stats().respawns).toBe(2);
    } finally {
      pool.close();
    }
  });

  it("a warm spare serves the next call at once after a crash; without one it waits for a start", async () => {
    for (const spares of [1, 0]) {
      const pool = new SandboxPool(nodeWorkerFactory(SLOW, null), { size: 1, spares });
      try {
        expect(await pool.whenReady()).toBe(true);
        expect(pool.stats().sparesReady).toBe(spares);
        expect((await pool.run({ code: "exit" })).status).toBe("SandboxError");
        const next = pool.run({ code: "abcd" });
        // With a spare the call goes to a worker at once; without one it waits in the queue
        // for a new worker to start (SLOW_START_MS): a state, not a measured time.
        expect([pool.stats().busy, pool.stats().queued]).toEqual(spares ? [1, 0] : [0, 1]);
        expect((await next).value).toBe(4);
        expect(pool.stats().respawns).toBe(1);
      } finally {
        pool.close();
      }
    }
  });

  it("workers that never start make the pool answer SandboxError instead of hanging", async () => {
    const pool = new SandboxPool(nodeWorkerFactory(DEAD_ON_START, null), { size: 1, maxStartFailures: 3 });
    try {
      const r = await pool.run({ code: "1" });
      expect(r.status).toBe("SandboxError");
      expect(r.error?.message).toMatch(/fail to start/);
      expect(pool.stats().crashes).toBe(3);
    } finally {
      pool.close();
    }
  });
});
