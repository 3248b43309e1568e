// Verdicts do not depend on how busy the machine is: the same config, whose custom reward runs
// a program of each verdict class (success, loop, sort comparator, generator spread, object
// bomb, recursion, throw, a value nested 3,000 deep, a runaway promise chain), is run through
// the CLI's path (cli/run.ts, the worker pool) on an idle machine and again with four busy
// processes beside it (`stress-ng --cpu 4`, or Node busy loops where it is missing); the
// rows, the samples and the tool-call texts of the same programs must be identical, and no
// call may have been decided by the wall-clock backstop. Serial: it loads the machine on
// purpose. Run: `npx vitest run --project serial sandbox/replay-load.serial.test.ts`.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runToFolder } from "../cli/run";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../config";
import { CpuModel } from "../model/cpu";
import type { SandboxPool } from "./pool.ts";
import { createNodeSandboxPool } from "./pool-node.ts";
import { formatToolResponse } from "./tools.ts";
import type { RunCodeResult } from "./types.ts";

/** One program per verdict class, each a statement list that returns the reward. */
const PROGRAMS = [
  "return 1",
  "for (;;) {}",
  "[...Array(1e5).keys()].sort((a, b) => { for (let i = 0; i < 1e4; i++); return b - a }); return 1",
  "function* g() { for (;;) yield 1 } return [...g()].length",
  "const a = []; for (;;) a.push({ i: a.length })",
  "function f() { return f() + 1 } return f()",
  "throw new RangeError('boom ' + x.text.length)",
  "let v = 1; for (let i = 0; i < 3000; i++) v = [v]; return v",
  "return (function f() { return Promise.resolve().then(f) })()",
];

const REWARD = `(x) => {
  switch (Math.floor(Math.random() * ${PROGRAMS.length})) {
${PROGRAMS.map((p, i) => `    case ${i}: { ${p} }`).join("\n")}
  }
}`;

function config(): RunConfig {
  return mergeConfig(defaultRunConfig(), {
    seed: 5,
    model: { layers: 1, d_model: 16, heads: 2, context: 80 },
    sft: { steps: 0 },
    rl: { prompts_per_step: 4, group_size: 3, epochs: 1, minibatches: 1 },
    sampling: { max_new_tokens: 8 },
    task: { eval_size: 0 },
    stop: { max_steps: 2 },
    rewards: { custom_js: REWARD },
    limits: { tool_timeout_s: 0.2, memory_mb: 8 },
  });
}

const dir = mkdtempSync(join(tmpdir(), "lab-replay-load-"));
let pool: SandboxPool;
let backstops = 0;
beforeAll(async () => {
  pool = createNodeSandboxPool({ size: 2 });
  expect(await pool.whenReady()).toBe(true);
});
afterAll(() => {
  pool?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The pool, counting the calls the wall clock decided. */
const watched = {
  async run(request: Parameters<SandboxPool["run"]>[0]): Promise<RunCodeResult> {
    const r = await pool.run(request);
    if (r.backstop) backstops++;
    return r;
  },
};

const readJsonl = (file: string) =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Rows and samples as a replay compares them: without wall time and timing keys. */
const timeless = (xs: Record<string, unknown>[]) =>
  xs.map((x) =>
    Object.fromEntries(
      Object.entries(x).filter(([k]) => k !== "time" && !k.startsWith("timing/") && !k.startsWith("perf/")),
    ),
  );

async function replay(name: string) {
  const out = join(dir, name);
  await runToFolder({
    config: config(),
    edits: [],
    out,
    makeModel: async (mc, w, seed) => new CpuModel(mc, w, seed),
    sandbox: watched,
    readFile: async (p) => {
      throw new Error(`no file ${p} in this test`);
    },
    clock: () => 0,
  });
  const tools: string[] = [];
  for (const code of PROGRAMS) {
    const r = await watched.run({
      code: `(() => { const x = { text: "" }; ${code} })()`,
      run_timeout: 0.2,
      memory_limit_MB: 8,
    });
    tools.push(`${r.error?.kind ?? r.status}: ${formatToolResponse(r)}`);
  }
  return {
    rows: timeless(readJsonl(join(out, "metrics.jsonl"))),
    samples: timeless(readJsonl(join(out, "samples.jsonl"))),
    tools,
  };
}

/** Four busy processes: stress-ng where installed, else Node busy loops. */
function busy(): ChildProcess[] {
  // Each in a process group of its own, so stopping it stops stress-ng's workers too.
  const start = (cmd: string, args: string[]) =>
    spawn("nice", ["-n", "10", cmd, ...args], { stdio: "ignore", detached: true });
  if (spawnSync("stress-ng", ["--version"]).status === 0)
    return [start("stress-ng", ["--cpu", "4", "--quiet"])];
  return Array.from({ length: 4 }, () => start(process.execPath, ["-e", "for (;;) {}"]));
}

/** Stops the busy processes (SIGTERM lets stress-ng reap its workers) and waits for them. */
async function stop(ps: ChildProcess[]): Promise<void> {
  const exits = ps.map(
    (p) => new Promise((resolve) => (p.exitCode !== null ? resolve(0) : p.once("exit", resolve))),
  );
  for (const p of ps) if (p.pid !== undefined) process.kill(-p.pid, "SIGTERM");
  await Promise.all(exits);
}

describe("replay under load", () => {
  it("the same config gives the same rows, samples and tool texts on an idle and a busy machine", async () => {
    const idle = await replay("idle");
    // Every verdict class ran: errors of each kind reached the samples.
    const errors = idle.samples.map((s) => String(s.customError ?? "")).join("\n");
    for (const text of ["time limit", "out of memory", "stack overflow", "boom", "finite number, got [[["])
      expect(errors).toContain(text);
    expect(idle.tools.map((t) => t.split(":")[0])).toEqual([
      "Success",
      "Timeout",
      "Timeout",
      "Timeout",
      "MemoryLimit",
      "StackOverflow",
      "Exception",
      "Success",
      "Timeout",
    ]);
    const load = busy();
    let loaded: Awaited<ReturnType<typeof replay>>;
    try {
      loaded = await replay("busy");
    } finally {
      await stop(load);
    }
    expect(loaded.rows).toEqual(idle.rows);
    expect(loaded.samples).toEqual(idle.samples);
    expect(loaded.tools).toEqual(idle.tools);
    expect(backstops).toBe(0);
  });
});
