// `npm run compare -- <arm> <arm>... [--keys k1,k2] [--upto N] [--band sd|minmax]`
// Compares arms of headless runs side by side (docs/EXPERIMENTS.md is made with it). An arm
// is a run folder (metrics.jsonl) or a folder of seed runs (seed-<S>/metrics.jsonl, what
// `npm run train -- <recipe> --seeds N --out DIR` writes). The first arm is the baseline.
// For held-out metrics (val/*, dev/*): per evaluation step, each arm's mean and band over
// seeds (sd, or min-max with --band minmax) and the binomial SE at that accuracy on the eval
// size, and each other arm's paired difference from the baseline over the seeds both ran.
// For training metrics: each seed's mean and max over the run, then mean and band over seeds.
// (--upto N: only rows up to RL step N.)
// An arm may also be a verl or TRL run brought back (a folder results/import.ts reads: verl's
// file log and dumps, TRL's trainer_state.json): its rows under the lab's names at the lab's
// steps, its seed from the export's config beside it; the table then says the engines differ.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import {
  aggregateArm,
  pairedDifference,
  type Row,
  runSummary,
  type SeedRun,
  type Stat,
} from "../config/aggregate.ts";
import { importResults } from "../results/import.ts";
import { ResultsError } from "../results/read.ts";
import { parseCliArgs } from "./args.ts";
import { resultFilesOf } from "./results-files.ts";

const USAGE = "usage: npm run compare -- <arm dir>... [--keys k1,k2] [--upto N] [--band sd|minmax]";
const args = parseCliArgs(
  process.argv.slice(2),
  { flags: [], values: ["--keys", "--upto", "--band"] },
  (msg) => fail(`error: ${msg}\n${USAGE}`),
);
const opt = (name: string) => args.values.get(name);
const upto = opt("--upto") !== undefined ? Number(opt("--upto")) : Number.POSITIVE_INFINITY;
const band = opt("--band") ?? "sd";
if (band !== "sd" && band !== "minmax") fail(`--band must be sd or minmax, not ${band}`);
const keys = (
  opt("--keys") ??
  "val/acc,val/acc/hard,val/tool_call_rate_sampled,dev/acc,reward/mean,tool/call_rate,actor/grad_norm,actor/entropy_post_tool"
).split(",");
const dirs = args.positionals;
if (dirs.length === 0) fail(USAGE);

function fail(msg: string): never {
  console.error(msg);
  process.exit(2);
}

function readRun(dir: string): SeedRun {
  const p = join(dir, "metrics.jsonl");
  if (!existsSync(p)) fail(`${p} does not exist`);
  const rows = readFileSync(p, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l, i) => {
      try {
        return JSON.parse(l) as Row;
      } catch {
        return fail(`${p}:${i + 1}: not JSON`);
      }
    })
    .filter((r) => r.phase === "rl" && r.step <= upto);
  let seed = Number.NaN;
  let evalSize: number | undefined;
  let devSize: number | undefined;
  const cfg = join(dir, "config.json");
  if (existsSync(cfg)) {
    const c = JSON.parse(readFileSync(cfg, "utf8"));
    seed = c.seed;
    evalSize = c.task?.eval_size;
    devSize = c.task?.dev_size;
  }
  // run.json (written by npm run train since it was added): the backend, as rows agree per adapter only.
  const made = join(dir, "run.json");
  const backend = existsSync(made)
    ? (JSON.parse(readFileSync(made, "utf8")).backend as string)
    : "unrecorded";
  backends.add(backend);
  return { seed, rows, evalSize, devSize };
}

/** A lab run's metrics.jsonl has flat rows with a phase; verl's file log has {"step", "data"} lines. */
const isLabRun = (dir: string) =>
  existsSync(join(dir, "metrics.jsonl")) &&
  /"phase"\s*:/.test(readFileSync(join(dir, "metrics.jsonl"), "utf8").split("\n")[0]);

async function readArm(dir: string): Promise<{ engine: string; runs: SeedRun[] }> {
  if (isLabRun(dir)) return { engine: "lab", runs: [readRun(dir)] };
  if (!existsSync(dir)) fail(`${dir} does not exist`);
  const seeds = readdirSync(dir).filter((d) => /^seed-\d+$/.test(d) && isLabRun(join(dir, d)));
  if (seeds.length > 0) {
    return { engine: "lab", runs: seeds.map((d) => readRun(join(dir, d))).sort((a, b) => a.seed - b.seed) };
  }
  // An engine arm: one verl or TRL run, or one per seed-<S>/ folder (each an export with its results).
  const engineSeeds = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && /^seed-\d+$/.test(d.name))
    .map((d) => join(dir, d.name));
  const runs: { engine: string; run: SeedRun }[] = [];
  for (const d of engineSeeds.length > 0 ? engineSeeds : [dir]) {
    try {
      const run = await importResults(resultFilesOf(d));
      const rows = run.rows.filter((r) => r.step <= upto);
      runs.push({ engine: run.info.engine, run: { seed: run.info.seed ?? Number.NaN, rows } });
    } catch (err) {
      if (err instanceof ResultsError)
        fail(`${d}: not a lab run (metrics.jsonl, seed-<S>/) nor a verl or TRL run: ${err.message}`);
      throw err;
    }
  }
  const engines = [...new Set(runs.map((r) => r.engine))];
  if (engines.length > 1)
    fail(`${dir}: its seed folders hold runs of different engines (${engines.join(", ")})`);
  const seen = new Set<number>();
  for (const { run } of runs) {
    if (!Number.isNaN(run.seed) && seen.has(run.seed)) fail(`${dir}: two runs have seed ${run.seed}`);
    seen.add(run.seed);
  }
  return { engine: engines[0], runs: runs.map((r) => r.run).sort((a, b) => a.seed - b.seed) };
}

const f = (x: number) => (Number.isNaN(x) ? "-" : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(3));
const sign = (x: number) => (x >= 0 ? `+${f(x)}` : f(x));
const bandText = (s: Stat) =>
  s.n < 2
    ? f(s.mean)
    : band === "sd"
      ? `${f(s.mean)} ± ${f(s.sd)}`
      : `${f(s.mean)} [${f(s.min)}, ${f(s.max)}]`;

const backends = new Set<string>();
const arms: { name: string; engine: string; runs: SeedRun[] }[] = [];
for (const d of dirs) arms.push({ name: basename(d), ...(await readArm(d)) });
const [baseline] = arms;
console.log(
  `backend: ${[...backends].join(", ")}${backends.size > 1 ? " (mixed: rows agree per adapter only)" : ""}\narms: ${arms.map((a) => `${a.name} (${a.runs.length} seed${a.runs.length > 1 ? "s" : ""}: ${a.runs.map((r) => r.seed).join(", ")})`).join("; ")}`,
);
if (new Set(arms.map((a) => a.engine)).size > 1) {
  console.log(
    `engines differ: ${arms.map((a) => `${a.engine} (${a.name})`).join(", ")}: the same recipe on another trainer, sampler, model precision and hardware, so a difference is not the recipe's alone (docs/SCALE-OUT.md)`,
  );
}
console.log(
  `band: ${band === "sd" ? "mean ± sd over seeds" : "mean [min, max] over seeds"}; paired differences are arm - ${baseline.name} over shared seeds\n`,
);

for (const key of keys) {
  const heldOut = key.startsWith("val/") || key.startsWith("dev/");
  if (heldOut) {
    const per = arms.map((a) => aggregateArm(a.runs, key));
    const steps = [...new Set(per.flatMap((p) => p.map((x) => x.step)))].sort((a, b) => a - b);
    if (steps.length === 0) continue;
    const se = per.some((p) => p.some((x) => x.se !== undefined));
    console.log(
      `### ${key}${se ? " (SE: the binomial standard error of one run at that mean, on the eval size)" : ""}\n`,
    );
    const others = arms.slice(1);
    console.log(
      `| ${["step", ...arms.map((a) => a.name), ...others.map((a) => `${a.name} - ${baseline.name} (paired)`)].join(" | ")} |`,
    );
    console.log(`| ---: |${" ---: |".repeat(arms.length + others.length)}`);
    const diffs = others.map((a) => pairedDifference(baseline.runs, a.runs, key));
    for (const step of steps) {
      const cells = per.map((p) => {
        const x = p.find((y) => y.step === step);
        return x ? `${bandText(x.stat)}${x.se !== undefined ? ` (SE ${f(x.se)})` : ""}` : "-";
      });
      const dcells = diffs.map((d) => {
        const x = d.find((y) => y.step === step);
        return x ? `${sign(x.diff.mean)}${x.diff.n > 1 ? ` ± ${f(x.diff.sd)}` : ""} (${x.diff.n})` : "-";
      });
      console.log(`| ${step} | ${[...cells, ...dcells].join(" | ")} |`);
    }
    console.log("");
  } else {
    const rows = arms.map((a) => ({ a, s: runSummary(a.runs, key) })).filter((x) => x.s.mean.n > 0);
    if (rows.length === 0) continue;
    console.log(`### ${key} (per seed: mean and max over the run's steps; then over seeds)\n`);
    console.log("| arm | seeds | mean over steps | max over steps |");
    console.log("| --- | ---: | ---: | ---: |");
    for (const { a, s } of rows)
      console.log(`| ${a.name} | ${s.mean.n} | ${bandText(s.mean)} | ${bandText(s.max)} |`);
    console.log("");
  }
}
