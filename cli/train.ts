// `npm run train -- <recipe.json | bundle file> [--out DIR] [--steps N] [--seed S] [--seeds N] [--backend webgpu|cpu]`
//   --seeds N (or the config's `seeds`): N runs, seeds S..S+N-1, one after another, into
//   DIR/seed-<S>/; `npm run compare -- DIR_A DIR_B` aggregates them.
// `npm run train -- --link '<share url>'`   (the config, seed and edits of a link, unchanged)
// `npm run train -- --resume <run folder>`  (continue a run from its last checkpoint)
// `npm run train -- <recipe.json> --env <module.js | template>`  (the recipe on a JS environment, docs/ENVIRONMENTS.md)
// `npm run train -- --list`  (registry entries, presets and the environment templates)
// The same engine as the browser, headless in Node: WebGPU through Dawn (lavapipe or
// SwiftShader here), QuickJS in worker_threads. Prints a progress bar with ETA and the key
// metrics, and writes the run to a folder: config.json, metrics.jsonl (one row per step,
// verl's metric names), samples.jsonl, events.jsonl, edits.jsonl, run.json (how it was made:
// backend, adapter, command, commit, one entry per start or resume), checkpoint.safetensors
// (weights, optimizer state and the run's point, to resume) and weights.safetensors (weights
// only, to publish). Wiring only: the schedule (edits, checkpoints, resume) is rl/run/run-loop.ts's,
// the folder is cli/run.ts's.
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ConfigEdit, mergeConfig, parseRunConfig, type RunConfig } from "../config";
import { RECIPES } from "../config/presets";
import { loadRecipeFile } from "../config/recipe-file";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { describePlan, devicePlan } from "../kernels/plan";
import type { PolicyModel } from "../model/api";
import { CpuModel } from "../model/cpu";
import { GpuModel } from "../model/gpu";
import { listRegistries } from "../rl/algos/registry";
import type { RunLoopOptions } from "../rl/run/run-loop";
import type { MetricsRow } from "../rl/run/trainer";
import { createNodeSandboxPool } from "../sandbox/pool-node";
import { ENV_API_VERSION } from "../tasks/env-api/runtime";
import { ENV_TEMPLATES, envTemplate } from "../tasks/env-api/templates";
import { PRESETS, parseCliArgs, usageExit } from "./args";
import { configFromLink, readRunInput } from "./link";
import { hubReader } from "./model-store";
import { openRunFolder, runToFolder } from "./run";

interface Args {
  recipe?: string;
  link?: string;
  resume?: string;
  out?: string;
  steps?: number;
  seed?: number;
  seeds?: number;
  /** model.pretrained: a Hugging Face folder, or hf:owner/name (downloaded once into the model cache). */
  model?: string;
  revision?: string;
  /** --backend; absent: the recorded one on --resume (run.json), else webgpu. */
  backend?: "webgpu" | "cpu";
  /** --env: a JS environment's module file, or a template's name (task "env" with its source). */
  env?: string;
  list: boolean;
  quiet: boolean;
}

const usage: (msg?: string) => never = usageExit(
  "usage: npm run train -- <recipe.json | bundle> [--out DIR] [--steps N] [--seed S] [--seeds N] [--model DIR|hf:owner/name [--revision R]] [--backend webgpu|cpu] [--env FILE.js|TEMPLATE] [--quiet]\n" +
    "       npm run train -- --link '<share url>' [--out DIR]\n" +
    "       npm run train -- --resume <run folder>\n" +
    "       npm run train -- --list",
);

function parseArgs(argv: string[]): Args {
  const p = parseCliArgs(
    argv,
    {
      flags: ["--list", "--quiet"],
      values: [
        "--out",
        "--link",
        "--resume",
        "--steps",
        "--seed",
        "--seeds",
        "--model",
        "--revision",
        "--backend",
        "--env",
      ],
    },
    usage,
  );
  const v = (name: string) => p.values.get(name);
  const num = (name: string) => (p.values.has(name) ? Number(p.values.get(name)) : undefined);
  const backend = v("--backend");
  if (backend !== undefined && backend !== "webgpu" && backend !== "cpu")
    usage(`--backend must be webgpu or cpu, not ${backend}`);
  if (p.positionals.length > 1)
    usage(`one recipe at a time (got ${p.positionals[0]} and ${p.positionals[1]})`);
  const a: Args = {
    recipe: p.positionals[0],
    link: v("--link"),
    resume: v("--resume"),
    out: v("--out"),
    steps: num("--steps"),
    seed: num("--seed"),
    seeds: num("--seeds"),
    model: v("--model"),
    revision: v("--revision"),
    backend,
    env: v("--env"),
    list: p.flags.has("--list"),
    quiet: p.flags.has("--quiet"),
  };
  if (a.seeds !== undefined && !(Number.isInteger(a.seeds) && a.seeds >= 1))
    usage("--seeds must be a whole number >= 1");
  for (const k of ["steps", "seed"] as const) {
    const v = a[k];
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) usage(`--${k} must be a whole number`);
  }
  return a;
}

interface Loaded {
  config: RunConfig;
  name: string;
  edits: ConfigEdit[];
  resume?: RunLoopOptions["resume"];
}

async function loadConfig(a: Args): Promise<Loaded> {
  if (a.resume) {
    try {
      return { ...openRunFolder(a.resume), name: a.resume };
    } catch (err) {
      console.error(`error: ${(err as Error).message}`);
      process.exit(2);
    }
  }
  let base: { config: RunConfig; name: string; edits: ConfigEdit[] };
  try {
    const input = a.link ? await configFromLink(a.link) : a.recipe ? await readRunInput(a.recipe) : null;
    if (input) base = { config: input.config, name: input.name, edits: input.edits };
    else {
      const path = a.recipe ?? usage("a recipe file, a bundle or --link is needed");
      const r = await loadRecipeFile(path, async (p) => readFileSync(p, "utf8"), { presets: PRESETS });
      if (!r.ok) throw new Error(r.error);
      base = { config: r.config, name: r.recipe.name, edits: [] };
    }
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  const over: Record<string, unknown> = {};
  if (a.steps !== undefined) over.stop = { max_steps: a.steps };
  if (a.seed !== undefined) over.seed = a.seed;
  if (a.model !== undefined)
    over.model = { pretrained: a.model, ...(a.revision ? { revision: a.revision } : {}) };
  let merged = mergeConfig(base.config, over);
  if (a.env !== undefined) {
    // The module's source goes into the config, so the run folder, its bundle and a resume
    // carry the environment itself, not a path.
    let source: string;
    try {
      source = existsSync(a.env) ? readFileSync(a.env, "utf8") : envTemplateSource(a.env);
    } catch (err) {
      console.error(`error: ${(err as Error).message}`);
      process.exit(2);
    }
    merged = {
      ...merged,
      task: {
        ...merged.task,
        name: "env",
        template: "chatml-turns",
        options: { api_version: ENV_API_VERSION, source },
      },
    };
  }
  const p = parseRunConfig(merged);
  if (!p.ok) {
    console.error(`error: ${p.errors.map((e) => `${e.path}: ${e.message}`).join("\n")}`);
    process.exit(2);
  }
  return { config: p.config, name: base.name, edits: base.edits };
}

/** --env TEMPLATE: the template's source; a name that is neither a file nor a template is an error naming both. */
function envTemplateSource(name: string): string {
  try {
    return envTemplate(name).source;
  } catch {
    throw new Error(
      `--env: ${name} is neither a file nor a template (templates: ${ENV_TEMPLATES.map((t) => t.name).join(", ")})`,
    );
  }
}

/** Files named in a config resolve against public/ (the app serves them from there) or the cwd. */
function readProjectFile(path: string): Uint8Array {
  for (const p of [resolve("public", path), resolve(path)]) {
    try {
      return new Uint8Array(readFileSync(p));
    } catch {}
  }
  throw new Error(`not found in public/ or ${process.cwd()}`);
}

function fmt(x: unknown, digits = 3): string {
  return typeof x === "number" ? (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits)) : "-";
}

function bar(done: number, total: number, width = 24): string {
  const f = total > 0 ? Math.min(1, done / total) : 0;
  const n = Math.round(f * width);
  return `[${"#".repeat(n)}${".".repeat(width - n)}]`;
}

/** --list: every registry entry, phase, preset and environment template, one a line. */
function printLists(): void {
  for (const { registry, name } of listRegistries()) console.log(`${registry}: ${name}`);
  for (const phase of ["sft", "value-pretrain", "rl"]) console.log(`phase: ${phase}`);
  // Presets: the algorithm recipes of config/presets.ts and the recipe files of public/recipes.
  const files = readdirSync("public/recipes").filter((f) => f.endsWith(".json") && f !== "index.json");
  const names = new Set([...Object.keys(RECIPES), ...files.map((f) => f.replace(/\.json$/, ""))]);
  for (const name of names) console.log(`preset: ${name}`);
  for (const t of ENV_TEMPLATES) console.log(`env-template: ${t.name}`);
}

/** An explicit --backend that changes a resumed run's backend, recorded as an event of the run. */
function recordBackendChange(
  out: string,
  recorded: string,
  backend: string,
  at: { step: number; phase: string } | undefined,
): void {
  const event = {
    step: at?.step ?? 0,
    phase: at?.phase ?? "sft",
    kind: "info",
    message: `backend changed on resume: ${recorded} -> ${backend} (--backend); rows from here differ from a run on ${recorded}`,
  };
  appendFileSync(join(out, "events.jsonl"), `${JSON.stringify(event)}\n`);
  console.error(`[info] ${event.message}`);
}

/** The model maker of the backend (Dawn's WebGPU in Node, or the CPU reference) and the adapter it runs on, in words. */
async function backendModels(backend: string) {
  let makeModel: (
    mc: Parameters<typeof GpuModel.create>[1],
    w: Float32Array | undefined,
    seed: number,
  ) => Promise<PolicyModel>;
  let adapterText = "CPU reference model";
  if (backend === "webgpu") {
    const gpu = await createGpu(await nodeGpu());
    adapterText = `${gpu.adapter.vendor} ${gpu.adapter.architecture} ${gpu.adapter.description}`.trim();
    adapterText += `; kernels: ${describePlan(devicePlan(gpu.device))}`;
    makeModel = (mc, w, seed) => GpuModel.create(gpu.device, mc, w, seed);
  } else {
    makeModel = async (mc, w, seed) => new CpuModel(mc, w, seed);
  }
  return { makeModel, adapterText };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.list) return printLists();
  const { config, name, edits, resume } = await loadConfig(args);
  const out = resolve(
    args.resume ?? args.out ?? join("runs", `${name}-${new Date().toISOString().replace(/[:.]/g, "-")}`),
  );
  const seeds = args.seeds ?? config.seeds;
  if (seeds > 1 && !resume) return runSeeds(out, config.seed, seeds);
  // Nothing is written before the model and task load (runToFolder's onFolder): a refused model
  // file leaves no run folder.
  // A resume keeps the backend the run was recorded with (rows differ across backends); an
  // explicit --backend that changes it is recorded as an event of the run.
  const recorded = args.resume ? recordedBackend(out) : undefined;
  const backend = args.backend ?? recorded ?? "webgpu";
  if (recorded && backend !== recorded) recordBackendChange(out, recorded, backend, resume?.at);
  const { makeModel, adapterText } = await backendModels(backend);
  const sandbox = createNodeSandboxPool({ size: 2 });
  const t0 = Date.now();
  const sftDone = resume ? (resume.at.phase === "sft" ? resume.at.step : config.sft.steps) : 0;
  const sftTotal = Math.max(0, (config.sft.init_checkpoint ? 0 : config.sft.steps) - sftDone);
  const total = sftTotal + config.stop.max_steps;
  let done = resume?.at.phase === "rl" ? resume.at.step : 0;
  let last: MetricsRow | undefined;
  const firstVal: Record<string, number> = {};
  console.error(
    `run ${name} -> ${out}${resume ? ` (resumed at ${resume.at.phase} step ${resume.at.step})` : ""}\nbackend: ${backend} (${adapterText}); SFT steps ${sftTotal}, RL steps ${config.stop.max_steps}`,
  );
  let fromHub: Awaited<ReturnType<typeof hubReader>> = null;
  try {
    fromHub = await hubReader(config, (line) => console.error(line));
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  try {
    await runToFolder({
      config,
      edits,
      out,
      resume,
      makeModel,
      sandbox,
      readFile: async (p) => (await fromHub?.(p)) ?? readProjectFile(p),
      onFolder: () => recordHowMade(out, backend, adapterText, !!resume),
      on: {
        row(row) {
          if (row.phase === "rl" && row["reward/mean"] === undefined) return; // the final evaluation row
          done++;
          last = row;
          for (const k of Object.keys(row))
            if (k.startsWith("val/") && !(k in firstVal)) firstVal[k] = row[k] as number;
          if (args.quiet) return;
          const elapsed = (Date.now() - t0) / 1000;
          const eta = done > 0 ? (elapsed / done) * (total - done) : 0;
          const metrics =
            row.phase === "sft"
              ? `loss ${fmt(row.loss)}`
              : `reward ${fmt(row["reward/mean"])} acc ${fmt(row["acc/mean"])} tool ${fmt(row["tool/call_rate"])} ent ${fmt(row["actor/entropy"])} gn ${fmt(row["actor/grad_norm"])}` +
                (row["val/acc"] !== undefined ? ` val/acc ${fmt(row["val/acc"])}` : "");
          console.error(
            `${bar(done, total)} ${row.phase} ${row.step} ${elapsed.toFixed(0)}s eta ${eta.toFixed(0)}s  ${metrics}`,
          );
        },
        event(e) {
          if (e.kind !== "edit") console.error(`[${e.kind}] step ${e.step}: ${e.message}`);
        },
      },
    });
  } finally {
    await sandbox.close();
  }
  const secs = (Date.now() - t0) / 1000;
  const lines = [`done in ${secs.toFixed(1)} s; run folder ${out}`];
  if (last)
    lines.push(
      `last step: reward ${fmt(last["reward/mean"])}, acc ${fmt(last["acc/mean"])}, tool rate ${fmt(last["tool/call_rate"])}`,
    );
  if (firstVal["val/acc"] !== undefined) lines.push(`val/acc at RL step 0: ${fmt(firstVal["val/acc"])}`);
  console.error(lines.join("\n"));
}

/** The backend of a run folder's latest start or resume (run.json), if it has one. */
function recordedBackend(out: string): "webgpu" | "cpu" | undefined {
  const path = join(out, "run.json");
  if (!existsSync(path)) return undefined;
  const run = JSON.parse(readFileSync(path, "utf8")) as { backend?: unknown };
  return run.backend === "cpu" || run.backend === "webgpu" ? run.backend : undefined;
}

/**
 * run.json: what made the folder (the backend and adapter, since "same seed, same rows" holds
 * per adapter only; the command; the commit), one entry per start and per resume.
 */
function recordHowMade(out: string, backend: string, adapter: string, resumed: boolean) {
  const path = join(out, "run.json");
  const prior =
    resumed && existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as { starts?: unknown[] }) : {};
  const git = spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" });
  const entry = {
    at: new Date().toISOString(),
    kind: resumed ? "resume" : "start",
    backend,
    adapter,
    command: `npm run train -- ${process.argv.slice(2).join(" ")}`,
    commit: git.status === 0 ? git.stdout.trim() : null,
    node: process.version,
  };
  const starts = [...(prior.starts ?? []), entry];
  writeFileSync(path, `${JSON.stringify({ backend, adapter, starts }, null, 2)}\n`);
}

/**
 * N seeds one after another: this command again per seed (same arguments, --seed S
 * --seeds 1 --out OUT/seed-S), each a complete run folder; fails on the first that fails.
 */
function runSeeds(out: string, first: number, n: number) {
  const argv = process.argv.slice(2);
  const drop = new Set(["--seed", "--seeds", "--out"]);
  const rest = argv.filter((x, i) => !drop.has(x) && !drop.has(argv[i - 1]));
  for (let s = first; s < first + n; s++) {
    console.error(`=== seed ${s} (${s - first + 1} of ${n}) -> ${join(out, `seed-${s}`)}`);
    const r = spawnSync(
      process.execPath,
      [
        ...process.execArgv,
        process.argv[1],
        ...rest,
        "--seed",
        String(s),
        "--seeds",
        "1",
        "--out",
        join(out, `seed-${s}`),
      ],
      { stdio: "inherit" },
    );
    if (r.status !== 0) throw new Error(`seed ${s} failed (exit ${r.status ?? r.signal})`);
  }
  console.error(`${n} seeds in ${out}; compare arms with: npm run compare -- ${out} <other arm>`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`error: ${(err as Error).message}`);
    process.exit(1);
  },
);
