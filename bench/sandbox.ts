// Sandbox benchmark: a trivial tool call (`347*29` through the code tool, dispatched as a
// training run dispatches it: rl/rollout/tool-protocol.ts) on the QuickJS worker pool, beside a process-per-call baseline measured in the same run (a fresh
// `node -e` per call via child_process, as HTTP code sandboxes spawn a process per request).
// Latency: one call at a time (p50, p99). Throughput: 2 workers under concurrent load vs 2
// concurrent process spawns. Standalone: `npx tsx bench/sandbox.ts [--quick]` prints the rows;
// `npx tsx bench/sandbox.ts --against <dir>` instead times this checkout's pool and the pool
// of another checkout of the project at <dir> (e.g. `git archive main | tar -x -C <dir>`, with
// node_modules linked) side by side in one process, repetitions interleaved, and prints the
// medians and new/old ratios: how a change to the sandbox moves p50 and calls/s.
// The seeded clock and Math.random (the default of every call) against `deterministic: false`
// are timed in the same repetitions: latency alternating call by call, throughput in
// alternating order: what determinism costs.
import { execFile } from "node:child_process";
import { pathToFileURL } from "node:url";
import { defaultRunConfig } from "../config/index.ts";
import type { ToolProtocol } from "../rl/rollout/agent-loop.ts";
import { makeToolProtocol } from "../rl/rollout/tool-protocol.ts";
import { createNodeSandboxPool } from "../sandbox/pool-node.ts";
import { JS_INTERPRETER_TOOL } from "../sandbox/tools.ts";
import type { SandboxRunner } from "../sandbox/types.ts";
import type { BuiltinToolSpec } from "../tasks/types.ts";
import { type BenchRow, makeRow } from "./report.ts";

const CODE = "347*29";
const EXPECTED = 10063;

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/** The code tool as a task offers it (the demo's calculator without its character check). */
const CODE_TOOL: BuiltinToolSpec = {
  builtin: "js",
  name: JS_INTERPRETER_TOOL.name,
  description: JS_INTERPRETER_TOOL.description,
};

const protocols = new WeakMap<SandboxRunner, Map<boolean, ToolProtocol>>();

/**
 * The tool dispatcher a training run builds (rl/rollout/tool-protocol.ts, with the default
 * run's limits) over `pool`; `deterministic: false` set on each request for the unseeded calls.
 */
function dispatcherOf(pool: SandboxRunner, deterministic: boolean): ToolProtocol {
  const byMode = protocols.get(pool) ?? new Map<boolean, ToolProtocol>();
  protocols.set(pool, byMode);
  let p = byMode.get(deterministic);
  if (!p) {
    const { limits } = defaultRunConfig();
    const runner: SandboxRunner = deterministic ? pool : { run: (r) => pool.run({ ...r, deterministic }) };
    p = makeToolProtocol([CODE_TOOL], runner, {
      timeoutS: limits.tool_timeout_s,
      memoryMB: limits.memory_mb,
    });
    byMode.set(deterministic, p);
  }
  return p;
}

/** One call of the code tool through the dispatcher training calls. */
async function oneCall(pool: SandboxRunner, deterministic = true): Promise<void> {
  const [out] = await dispatcherOf(pool, deterministic).execute([
    { name: CODE_TOOL.name, code: CODE, raw: CODE },
  ]);
  if (!out.ok || out.detail !== EXPECTED) throw new Error(`sandbox returned ${JSON.stringify(out)}`);
}

function oneProcess(): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["-e", `console.log(${CODE})`], (err, stdout) => {
      if (err) reject(err);
      else if (Number(stdout.trim()) !== EXPECTED) reject(new Error(`process printed ${stdout}`));
      else resolve();
    });
  });
}

/** Per-call latencies in ms, one call at a time. */
async function latencies(call: () => Promise<void>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    out.push(performance.now() - t0);
  }
  return out;
}

/** Per-call latencies in ms of two kinds of call, alternating call by call (a, b, a, b, ...). */
async function pairedLatencies(
  a: () => Promise<void>,
  b: () => Promise<void>,
  n: number,
): Promise<[number[], number[]]> {
  const out: [number[], number[]] = [[], []];
  for (let i = 0; i < 2 * n; i++) {
    const t0 = performance.now();
    await (i % 2 === 0 ? a() : b());
    out[i % 2].push(performance.now() - t0);
  }
  return out;
}

/** Calls per second with `concurrency` calls in flight until `total` have finished. */
async function throughput(call: () => Promise<void>, total: number, concurrency: number): Promise<number> {
  let started = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (started < total) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return total / ((performance.now() - t0) / 1000);
}

export async function runSandboxBench(opts: { quick: boolean }): Promise<BenchRow[]> {
  const reps = opts.quick ? 3 : 5;
  const n = {
    calls: opts.quick ? 300 : 2000,
    spawns: opts.quick ? 15 : 40,
    load: opts.quick ? 2000 : 10_000,
  };
  const pool = createNodeSandboxPool({ size: 2 });
  try {
    if (!(await pool.whenReady())) throw new Error("the sandbox pool did not start");
    const call = () => oneCall(pool);
    await latencies(call, 200); // warm-up: JIT of the host and worker paths
    await oneProcess();

    const ours = { p50: [] as number[], p99: [] as number[], rate: [] as number[] };
    const base = { p50: [] as number[], p99: [] as number[], rate: [] as number[] };
    const seeded = { p50: [] as number[] };
    const unseeded = { p50: [] as number[], rate: [] as number[] };
    const unseededCall = () => oneCall(pool, false);
    for (let r = 0; r < reps; r++) {
      const l = await latencies(call, n.calls);
      ours.p50.push(quantile(l, 0.5));
      ours.p99.push(quantile(l, 0.99));
      // Seeded and unseeded alternate call by call, so load that drifts hits both alike.
      const [ls, lu] = await pairedLatencies(call, unseededCall, n.calls);
      seeded.p50.push(quantile(ls, 0.5));
      unseeded.p50.push(quantile(lu, 0.5));
      const b = await latencies(oneProcess, n.spawns);
      base.p50.push(quantile(b, 0.5));
      base.p99.push(quantile(b, 0.99));
      if (r % 2 === 1) unseeded.rate.push(await throughput(unseededCall, n.load, 16));
      ours.rate.push(await throughput(call, n.load, 16));
      if (r % 2 === 0) unseeded.rate.push(await throughput(unseededCall, n.load, 16));
      base.rate.push(await throughput(oneProcess, n.spawns, 2));
    }
    const note = `${n.calls} calls/rep through a 2-worker pool vs ${n.spawns} \`node -e\` spawns/rep`;
    return [
      makeRow({
        id: "sandbox_p50_vs_process",
        group: "sandbox",
        unit: "ms",
        better: "lower",
        ours: ours.p50,
        baseline: base.p50,
        note,
      }),
      makeRow({
        id: "sandbox_p99_vs_process",
        group: "sandbox",
        unit: "ms",
        better: "lower",
        ours: ours.p99,
        baseline: base.p99,
        note,
      }),
      makeRow({
        id: "sandbox_calls_per_s",
        group: "sandbox",
        unit: "calls/s",
        better: "higher",
        ours: ours.rate,
        baseline: base.rate,
        note: `2 workers, 16 calls in flight vs 2 concurrent process spawns`,
      }),
      makeRow({
        id: "sandbox_seeded_p50_vs_unseeded",
        group: "sandbox",
        unit: "ms",
        better: "lower",
        ours: seeded.p50,
        baseline: unseeded.p50,
        note: `seeded clock and Math.random (every call's default) vs deterministic: false, alternating call by call; ${n.calls} calls each/rep`,
      }),
      makeRow({
        id: "sandbox_seeded_calls_per_s_vs_unseeded",
        group: "sandbox",
        unit: "calls/s",
        better: "higher",
        ours: ours.rate,
        baseline: unseeded.rate,
        note: "seeded vs deterministic: false, interleaved; 2 workers, 16 calls in flight",
      }),
    ];
  } finally {
    pool.close();
  }
}

/** This checkout's pool against another checkout's, interleaved: medians of p50 (ms) and calls/s. */
export async function compareSandboxPools(otherDir: string, reps = 7): Promise<Record<string, number>> {
  const other = (await import(pathToFileURL(`${otherDir}/sandbox/pool-node.ts`).href)) as {
    createNodeSandboxPool: typeof createNodeSandboxPool;
  };
  const pools = { new: createNodeSandboxPool({ size: 2 }), old: other.createNodeSandboxPool({ size: 2 }) };
  try {
    const got = {
      new: { p50: [] as number[], rate: [] as number[] },
      old: { p50: [] as number[], rate: [] as number[] },
    };
    for (const pool of Object.values(pools)) {
      if (!(await pool.whenReady())) throw new Error("a sandbox pool did not start");
      await latencies(() => oneCall(pool), 200);
    }
    for (let r = 0; r < reps; r++)
      for (const key of ["old", "new"] as const) {
        const call = () => oneCall(pools[key]);
        got[key].p50.push(quantile(await latencies(call, 500), 0.5));
        got[key].rate.push(await throughput(call, 4000, 16));
      }
    const m = (xs: number[]) => quantile(xs, 0.5);
    return {
      p50_new_ms: m(got.new.p50),
      p50_old_ms: m(got.old.p50),
      p50_new_over_old: m(got.new.p50) / m(got.old.p50),
      calls_per_s_new: m(got.new.rate),
      calls_per_s_old: m(got.old.rate),
      calls_per_s_new_over_old: m(got.new.rate) / m(got.old.rate),
    };
  } finally {
    for (const pool of Object.values(pools)) pool.close();
  }
}

const againstAt = process.argv.indexOf("--against");
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && againstAt > 0) {
  console.table(await compareSandboxPools(process.argv[againstAt + 1]));
} else if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = await runSandboxBench({ quick: process.argv.includes("--quick") });
  console.table(
    rows.map((r) => ({
      id: r.id,
      ours: r.ours,
      baseline: r.baseline,
      unit: r.unit,
      ratio: r.ratio,
      spread: r.spread,
    })),
  );
}
