// The peers group's RL-step rows (bench/peers.ts): lab-llama-calculator's RL step in TRL's
// GRPOTrainer on the CPU, through the lab's own TRL export (npm run export -- trl, tools through
// the local Node runner: --tools node), against the same recipe in the lab (npm run train) on
// WebGPU (Dawn on lavapipe) and on the lab's CPU backend. The same prompts per step, group size,
// response length, minibatches (optimizer steps per RL step) and tools; no evaluation. Each run
// is 2 RL steps; the second is timed (the first holds start-up, pipeline compiles and TRL's
// first generate), the runs interleaved: TRL, lab WebGPU, lab CPU, three times.
// Seconds per RL step from each side's own log (the lab's metrics.jsonl `time`, TRL's step_time
// through the lab's import, so both put the rollout and the update of one step in it), and rollout
// tokens per second as the step's response tokens (response_length/mean x trajectories) over it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resultFilesOf } from "../cli/results-files";
import { enginesPython } from "../export/engines/venv";
import { importResults } from "../results/import";
import type { MetricsRow } from "../rl/run/trainer";
import { type BenchRow, makeRow } from "./report";

const RECIPE = "public/recipes/lab-llama-calculator.json";
const THREADS = "2";

interface StepTime {
  s: number;
  tokens: number;
}

/** The step-1 figures of a run's rows (time cumulative from the start). */
function secondStep(rows: MetricsRow[], trajectories: number, what: string): StepTime {
  const rl = rows.filter((r) => r.phase === "rl" && r["reward/mean"] !== undefined);
  const [a, b] = [rl.find((r) => r.step === 0), rl.find((r) => r.step === 1)];
  if (!a || !b) throw new Error(`${what}: no rows for RL steps 0 and 1`);
  const len = b["response_length/mean"];
  const s = (b.time as number) - (a.time as number);
  return { s, tokens: typeof len === "number" ? (len * trajectories) / s : Number.NaN };
}

function labRun(recipe: string, out: string, backend: "webgpu" | "cpu", trajectories: number): StepTime {
  const r = spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      "--import",
      "./cli/raw-loader.mjs",
      "cli/train.ts",
      recipe,
      "--out",
      out,
      "--quiet",
      "--backend",
      backend,
    ],
    { encoding: "utf8", env: { ...process.env, LP_NUM_THREADS: THREADS }, maxBuffer: 1 << 26 },
  );
  if (r.status !== 0) throw new Error(`npm run train (${backend}): ${r.stderr.slice(-2000)}`);
  const rows = readFileSync(join(out, "metrics.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as MetricsRow);
  return secondStep(rows, trajectories, `the lab on ${backend}`);
}

async function trlRun(exported: string, trajectories: number): Promise<StepTime> {
  rmSync(join(exported, "trl-out"), { recursive: true, force: true });
  const r = spawnSync(
    enginesPython(),
    [join(exported, "train_trl.py"), "--model", resolve("public/models/lab-llama"), "--tools", "node"],
    {
      encoding: "utf8",
      maxBuffer: 1 << 28,
      env: { ...process.env, PYTHONUNBUFFERED: "1", OMP_NUM_THREADS: THREADS, MKL_NUM_THREADS: THREADS },
    },
  );
  if (r.status !== 0) throw new Error(`train_trl.py: ${r.stderr.slice(-2000)}`);
  const run = await importResults(resultFilesOf(exported));
  return secondStep(run.rows, trajectories, "TRL");
}

export async function trlRows(adapterNote: string, reps = 3): Promise<BenchRow[]> {
  const root = mkdtempSync(join(tmpdir(), "lab-peers-trl-"));
  const recipe = JSON.parse(readFileSync(RECIPE, "utf8"));
  const c = recipe.config;
  Object.assign(c.task, { eval_every: 0 });
  c.stop.max_steps = 2;
  c.checkpoint_every = 0;
  recipe.name = "lab-llama-calculator-2-steps";
  const recipeFile = join(root, "recipe.json");
  writeFileSync(recipeFile, JSON.stringify(recipe));
  const exported = join(root, "export");
  const ex = spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      "--import",
      "./cli/raw-loader.mjs",
      "cli/export.ts",
      "trl",
      recipeFile,
      "--out",
      exported,
    ],
    { encoding: "utf8" },
  );
  if (ex.status !== 0) throw new Error(`npm run export -- trl: ${ex.stderr}`);
  const trajectories = c.rl.prompts_per_step * c.rl.group_size;
  const sides: Record<"trl" | "webgpu" | "cpu", StepTime[]> = { trl: [], webgpu: [], cpu: [] };
  for (let i = 0; i < reps; i++) {
    sides.trl.push(await trlRun(exported, trajectories));
    sides.webgpu.push(labRun(recipeFile, join(root, `lab-webgpu-${i}`), "webgpu", trajectories));
    sides.cpu.push(labRun(recipeFile, join(root, `lab-cpu-${i}`), "cpu", trajectories));
  }
  rmSync(root, { recursive: true, force: true });
  const list = (xs: StepTime[]) => xs.map((x) => `${x.s.toFixed(1)} s`).join("/");
  const tok = (xs: StepTime[]) => xs.map((x) => x.tokens.toFixed(0)).join("/");
  const what = `lab-llama-calculator's RL step (${c.rl.prompts_per_step} prompts x ${c.rl.group_size}, up to ${c.sampling.max_new_tokens} new tokens, ${c.rl.minibatches} optimizer steps, LoRA r${c.model.lora.rank}, tools through the local Node runner), the second of 2 steps, ${reps} interleaved runs a side`;
  const trlNote = `TRL's GRPOTrainer on the CPU through the lab's TRL export, ${THREADS} threads, its step_time (training_step: generation, tools, forward, backward; not its optimizer step): ${list(sides.trl)} (rollout tokens/s ${tok(sides.trl)})`;
  const row = (id: string, side: "webgpu" | "cpu", how: string) =>
    makeRow({
      id,
      group: "peers",
      ours: sides[side].map((x) => x.s),
      baseline: sides.trl.map((x) => x.s),
      unit: "s",
      better: "lower",
      note: `${what}; ours the lab ${how}: ${list(sides[side])} (rollout tokens/s ${tok(sides[side])}); baseline ${trlNote}`,
    });
  return [
    row("trl_rl_step_lab_llama", "webgpu", `on WebGPU, ${adapterNote}`),
    row("trl_rl_step_lab_llama_cpu", "cpu", "on its CPU backend (the CPU reference model, no GPU)"),
  ];
}
