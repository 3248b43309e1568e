// A quick end-to-end check of a sandbox pool, for the browser smoke test (the e2e harness
// runs it on the pool the app's worker creates) and for Node (sandbox/pool.test.ts): a
// tool call, a user-defined tool, a hard kill of a long built-in, a memory bomb, a normal
// call right after, and some throughput. Returns a report instead of throwing.
import type { SandboxPool } from "./pool.ts";
import { callTool, formatToolResponse, JS_INTERPRETER_TOOL } from "./tools.ts";
import type { ToolSpec } from "./types.ts";

export interface SmokeCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface SmokeReport {
  ok: boolean;
  checks: SmokeCheck[];
  callsPerSecond: number;
}

const double: ToolSpec = {
  name: "double",
  description: "Doubles a number.",
  parameters: { type: "object", properties: { x: { type: "number" } }, required: ["x"] },
  body: "({ x }) => 2 * x",
};

export async function sandboxSmoke(pool: SandboxPool, calls = 500): Promise<SmokeReport> {
  const checks: SmokeCheck[] = [];
  const check = (name: string, ok: boolean, detail: unknown) =>
    checks.push({ name, ok, detail: typeof detail === "string" ? detail : JSON.stringify(detail) });

  const ready = await pool.whenReady(30_000);
  check("workers ready", ready, pool.stats());
  const t = await callTool(pool, JS_INTERPRETER_TOOL, { code: "347*29" });
  check("interpreter tool", formatToolResponse(t) === "10063", formatToolResponse(t));
  const d = await callTool(pool, double, { x: 21 });
  check("user-defined tool", d.value === 42, d.value ?? d.error);
  const bad = await callTool(pool, double, { x: "21" });
  check("bad tool arguments", bad.error?.name === "ToolArgumentError", formatToolResponse(bad));
  // A C built-in that runs long between interrupt checks: only the wall-clock backstop
  // (lowered here) and the pool's hard timer after it stop it.
  const killed = await pool.run({
    code: "Array.prototype.indexOf.call({ length: 2 ** 28 }, 1)",
    run_timeout: 0.3,
    wall_backstop_s: 0.3,
  });
  check("hard kill of a long built-in", killed.error?.kind === "HardKill" && killed.backstop === true, {
    kind: killed.error?.kind,
    backstop: killed.backstop,
  });
  const bomb = await pool.run({
    code: "const a = []; for (;;) a.push(new Uint8Array(1 << 20))",
    memory_limit_MB: 8,
  });
  check("memory limit", bomb.error?.kind === "MemoryLimit", bomb.error ?? bomb.status);
  const after = await pool.run({ code: "typeof fetch + ' ' + (6 * 7)" });
  check("serves after kills", after.value === "undefined 42", after.value ?? after.error);

  const t1 = performance.now();
  const results = await Promise.all(Array.from({ length: calls }, () => pool.run({ code: "347*29" })));
  const callsPerSecond = calls / ((performance.now() - t1) / 1000);
  check(
    "concurrent calls",
    results.every((r) => r.value === 10063),
    `${callsPerSecond.toFixed(0)} calls/s`,
  );
  return { ok: checks.every((c) => c.ok), checks, callsPerSecond };
}
