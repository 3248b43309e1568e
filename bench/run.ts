// `npm run bench [-- --quick] [-- <group>...]`: runs the benchmark groups (kernels, model,
// sandbox, rl, shapes when none is named; baseline, against the pinned tag's build, and peers,
// against PyTorch and TRL in the engines venv, only when named) in one run and writes
// bench/results/latest.json (the
// stable shape other tools read), bench/results/<date>.json and latest.md, then prints the
// table. A group run replaces only its own rows. A group whose module is missing or fails is
// reported (here and, when it had rows before, as "stale" notes on them) and the others still
// write their rows; the exit code is then 1. Last, the tables of docs/PERFORMANCE.md are
// regenerated from the result files (bench/doc-tables.ts, also `npm run bench:doc`).
// Kernels and model run in headless Chromium (the report's adapter); rl in Node (Dawn), whose
// adapter its rows name in their notes; sandbox on the CPU.
// The pure parts (arguments, adapter choice, stale rows) are tested by bench/run.test.ts.
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DOC, regenerate } from "./doc-tables";
import { type BenchAdapter, type BenchRow, RESULTS_DIR, readLatest, toMarkdown, writeReport } from "./report";

export const DEFAULT_GROUPS = ["kernels", "model", "sandbox", "rl", "shapes"] as const;
/**
 * Groups run only when named: baseline takes half an hour on a shared CPU adapter; peers needs
 * the engines venv (npm run engines:setup).
 */
export const GROUPS = [...DEFAULT_GROUPS, "baseline", "peers"] as const;
export type Group = (typeof GROUPS)[number];

export interface BenchArgs {
  quick: boolean;
  groups: Group[];
}

export function parseArgs(argv: string[]): BenchArgs {
  const groups: Group[] = [];
  let quick = false;
  for (const a of argv) {
    if (a === "--quick") quick = true;
    else if ((GROUPS as readonly string[]).includes(a)) {
      if (!groups.includes(a as Group)) groups.push(a as Group);
    } else throw new Error(`unknown argument "${a}" (use --quick and/or groups: ${GROUPS.join(", ")})`);
  }
  return { quick, groups: groups.length ? groups : [...DEFAULT_GROUPS] };
}

export interface GroupResult {
  group: Group;
  rows: BenchRow[];
  adapter?: BenchAdapter;
  /** Set when the group could not run. */
  error?: string;
  seconds: number;
}

const UNKNOWN_ADAPTER: BenchAdapter = {
  vendor: "unknown",
  architecture: "",
  description: "no adapter measured",
};

/**
 * The report's adapter: the browser's (kernels, then model) when one ran, else the previous
 * report's, else whatever adapter a group reported (rl's Dawn adapter).
 */
export function pickAdapter(results: GroupResult[], previous?: BenchAdapter): BenchAdapter {
  for (const g of ["kernels", "model"] as const) {
    const a = results.find((r) => r.group === g && r.adapter)?.adapter;
    if (a) return a;
  }
  if (previous) return previous;
  return results.find((r) => r.adapter)?.adapter ?? UNKNOWN_ADAPTER;
}

/** A failed group's previous rows, kept but marked stale with the error. */
export function staleRows(previous: BenchRow[], group: Group, error: string, since: string): BenchRow[] {
  const first = error.split("\n")[0].slice(0, 160);
  return previous
    .filter((r) => r.group === group)
    .map((r) => ({
      ...r,
      note: `STALE (from ${since}; this run's ${group} group failed: ${first})${r.note ? `; ${r.note}` : ""}`,
    }));
}

async function runGroup(group: Group, quick: boolean): Promise<GroupResult> {
  const t0 = performance.now();
  const done = (r: Omit<GroupResult, "group" | "seconds">): GroupResult => ({
    group,
    seconds: (performance.now() - t0) / 1000,
    ...r,
  });
  try {
    switch (group) {
      case "kernels": {
        const m = await import("./kernels");
        return done(await m.runKernelsBench({ quick }));
      }
      case "model": {
        const m = await import("./model");
        return done(await m.runModelBench({ quick }));
      }
      case "sandbox": {
        const m = await import("./sandbox");
        return done({ rows: await m.runSandboxBench({ quick }) });
      }
      case "rl": {
        const m = await import("./rl");
        return done(await m.runRlBench({ quick }));
      }
      case "shapes": {
        const m = await import("./shapes");
        return done(await m.runShapesBench({ quick }));
      }
      case "baseline": {
        const m = await import("./baseline");
        return done(await m.runBaselineBench({ quick }));
      }
      case "peers": {
        const m = await import("./peers");
        return done(await m.runPeersBench({ quick }));
      }
    }
  } catch (err) {
    const e = err as Error;
    const missing = (e as { code?: string }).code === "ERR_MODULE_NOT_FOUND";
    return done({
      rows: [],
      error: missing
        ? `bench/${group}.ts (or a module it imports) is missing: ${e.message}`
        : (e.stack ?? e.message),
    });
  }
}

async function main(): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    return 2;
  }
  const t0 = performance.now();
  const previous = readLatest();
  const results: GroupResult[] = [];
  for (const group of args.groups) {
    console.error(`[bench] ${group}${args.quick ? " (quick)" : ""} ...`);
    const r = await runGroup(group, args.quick);
    results.push(r);
    if (r.error) console.error(`[bench] ${group} FAILED after ${r.seconds.toFixed(0)} s:\n${r.error}`);
    else console.error(`[bench] ${group}: ${r.rows.length} rows in ${r.seconds.toFixed(0)} s`);
  }
  const rows = results.flatMap((r) =>
    r.error ? staleRows(previous?.rows ?? [], r.group, r.error, previous?.date ?? "?") : r.rows,
  );
  const adapter = pickAdapter(results, previous?.adapter);
  const report = writeReport(
    rows,
    adapter,
    results.map((r) => r.group),
  );
  const total = (performance.now() - t0) / 1000;
  const summary = [
    "",
    `Run: \`npm run bench --${args.quick ? " --quick" : ""}${args.groups.join() !== DEFAULT_GROUPS.join() ? ` ${args.groups.join(" ")}` : ""}\` took ${total.toFixed(0)} s (${results
      .map((r) => `${r.group} ${r.seconds.toFixed(0)} s${r.error ? " FAILED" : ""}`)
      .join(", ")}).`,
    ...results.filter((r) => r.error).map((r) => `- ${r.group} failed: ${r.error?.split("\n")[0]}`),
  ].join("\n");
  appendFileSync(join(RESULTS_DIR, "latest.md"), `${summary}\n`);
  console.log(toMarkdown(report) + summary);
  try {
    console.error(`[bench] ${DOC}: ${regenerate() ? "tables regenerated" : "tables already up to date"}`);
  } catch (err) {
    console.error(`[bench] ${DOC}: tables not regenerated: ${(err as Error).message}`);
    return 1;
  }
  return results.some((r) => r.error) ? 1 : 0;
}

const argv1 = process.argv[1];
if (argv1 && fileURLToPath(import.meta.url) === argv1) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
