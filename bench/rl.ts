// The RL benchmark, headless in Node (WebGPU through Dawn, QuickJS in worker_threads): the
// same engine as `npm run train`. Rows:
//  - rl_step_{rollout,tool,reward,update,total}_s: one RL step of the quick-demo recipe broken
//    down from the metrics row's timing/* keys (ours only: baseline = ours, ratio 1);
//  - quick_demo_minutes_to_target: minutes to the demo's accuracy target (baseline 3, the goal
//    on a laptop GPU). The full run trains public/recipes/quick-demo.json to its stop target and
//    times it (the demo's bar when it names none: val/acc 0.30 above step 0); --quick, or a
//    missing SFT checkpoint, extrapolates from measured step times (the note says which).
//  - rl_step_round_trips, rl_step_s_vs_window1: submits + readbacks, and seconds, of the same RL
//    steps with a plan variant decoding one token per submit (bench/plan-variant.ts) as the
//    baseline, the two trainers stepping in
//    turn so load hits both alike (median of the steps after the first);
//  - decode_256_b16_readbacks: readbacks to decode 256 tokens at batch 16, k tokens per submit
//    against one (and its tokens/s in the note).
// When public/recipes/quick-demo.json is absent, the built-in demo preset (ALGORITHMS §14: 600 SFT
// steps, then GRPO 8x8; its target is reached by RL step 10) stands in and is extrapolated.
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/rl.ts [--full]
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { mergeConfig, parseRunConfig, type RunConfig } from "../config";
import { parseRecipeFile } from "../config/recipe-file";
import { describeTileChoice, deviceTileChoice } from "../kernels/autotune";
import { canUseSubgroups, createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { modelConfig } from "../model/config";
import { decodeRun } from "../model/generate";
import { GpuModel } from "../model/gpu";
import { createTrainer } from "../rl/run/build-trainer";
import { RunLoop } from "../rl/run/run-loop";
import type { MetricsRow } from "../rl/run/trainer";
import { createNodeSandboxPool } from "../sandbox/pool-node";
import { variantModel } from "./plan-variant";
import { type BenchAdapter, type BenchRow, makeRow, median } from "./report";

const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
const QUICK_DEMO = join(ROOT, "public/recipes/quick-demo.json");
/** ALGORITHMS §14: held-out greedy accuracy 0.91 at RL step 10 (the curves had saturated). */
const DEMO_STEPS_TO_TARGET = 10;
const LAPTOP_GOAL_MIN = 3;

interface Recipe {
  name: string;
  config: RunConfig;
  /** Where the recipe came from, for the notes. */
  source: string;
}

function loadRecipe(): Recipe {
  if (existsSync(QUICK_DEMO)) {
    const r = parseRecipeFile(readFileSync(QUICK_DEMO, "utf8"), QUICK_DEMO);
    if (!r.ok) throw new Error(r.error);
    return { name: r.recipe.name, config: r.config, source: "public/recipes/quick-demo.json" };
  }
  const p = parseRunConfig({});
  if (!p.ok) throw new Error("the default (demo) config does not parse");
  return {
    name: "demo",
    config: p.config,
    source: "built-in demo preset (public/recipes/quick-demo.json is absent)",
  };
}

function readProjectFile(path: string): Uint8Array {
  for (const p of [join(ROOT, "public", path), resolve(path)]) {
    if (existsSync(p)) return new Uint8Array(readFileSync(p));
  }
  throw new Error(`not found in public/ or ${process.cwd()}`);
}

interface Measured {
  adapter: BenchAdapter;
  sftStepS: number[];
  rlRows: MetricsRow[];
  evalS: number[];
  /** Whether the recipe's init checkpoint was loaded (so its SFT is skipped). */
  fromCheckpoint: boolean;
}

/** Times a few SFT steps (unless the recipe starts from a checkpoint), RL steps and evaluations. */
async function measureSteps(recipe: Recipe, quick: boolean): Promise<Measured> {
  const gpu = await createGpu(await nodeGpu());
  const { vendor, architecture, description } = gpu.adapter;
  const sandbox = createNodeSandboxPool({ size: 2 });
  try {
    let config = recipe.config;
    let fromCheckpoint = false;
    if (config.sft.init_checkpoint) {
      try {
        readProjectFile(config.sft.init_checkpoint);
        fromCheckpoint = true;
      } catch {
        config = mergeConfig(config, { sft: { init_checkpoint: null } });
      }
    }
    const trainer = await createTrainer(config, {
      makeModel: (mc, w, seed) => GpuModel.create(gpu.device, mc, w, seed),
      sandbox,
      readFile: async (p) => readProjectFile(p),
    });
    const sftStepS: number[] = [];
    if (!fromCheckpoint && config.sft.steps > 0) {
      const n = quick ? 1 : 4;
      for (let i = 0; i <= n; i++) {
        const t0 = performance.now();
        await trainer.sftStep();
        if (i > 0) sftStepS.push((performance.now() - t0) / 1000); // the first compiles pipelines
      }
    }
    const evalS: number[] = [];
    const timeEval = async () => {
      const t0 = performance.now();
      await trainer.evaluate();
      evalS.push((performance.now() - t0) / 1000);
    };
    if (!quick) await timeEval();
    const rlRows: MetricsRow[] = [];
    const steps = quick ? 2 : 4;
    for (let i = 0; i < steps; i++) rlRows.push((await trainer.rlStep()).row);
    if (quick) await timeEval();
    trainer.policy.dispose();
    const matmulTile = describeTileChoice(deviceTileChoice(gpu.device));
    const subgroups = canUseSubgroups(gpu.device);
    return {
      adapter: { vendor, architecture, description, matmulTile, subgroups },
      sftStepS,
      rlRows,
      evalS,
      fromCheckpoint,
    };
  } finally {
    await sandbox.close();
    gpu.device.destroy();
  }
}

/**
 * Trains the recipe with the RunLoop until the target: its stop.target, else the bar for
 * the demo (held-out val/acc 0.30 above its RL-step-0 value). Wall minutes from the start.
 */
async function trainToTarget(
  recipe: Recipe,
): Promise<{ minutes: number; reached: boolean; steps: number; target: string }> {
  const gpu = await createGpu(await nodeGpu());
  const sandbox = createNodeSandboxPool({ size: 2 });
  try {
    const t0 = performance.now();
    const trainer = await createTrainer(recipe.config, {
      makeModel: (mc, w, seed) => GpuModel.create(gpu.device, mc, w, seed),
      sandbox,
      readFile: async (p) => readProjectFile(p),
    });
    const st = recipe.config.stop.target;
    let first: number | undefined;
    let reachedAt: number | undefined;
    const loop: RunLoop = new RunLoop(trainer, {
      row(row) {
        if (reachedAt !== undefined) return;
        const key = st?.key ?? "val/acc";
        const v = row[key];
        if (typeof v !== "number") return;
        first ??= v;
        if (v >= (st ? st.value : first + 0.3)) {
          reachedAt = performance.now();
          loop.stop();
        }
      },
    });
    await loop.run();
    const end = reachedAt ?? performance.now();
    return {
      minutes: (end - t0) / 60_000,
      reached: reachedAt !== undefined,
      steps: trainer.rlStepIndex,
      target: st
        ? `${st.key} >= ${st.value}`
        : `val/acc >= its step-0 value + 0.30 (${first?.toFixed(2) ?? "?"} + 0.30)`,
    };
  } finally {
    await sandbox.close();
    gpu.device.destroy();
  }
}

/**
 * The recipe's RL steps from its checkpoint twice over, on one device: with today's round trips
 * and on a plan variant decoding one token per submit, a step of each in turn. Per step: seconds
 * and round trips.
 */
async function measureRoundTrips(recipe: Recipe, steps: number) {
  const gpu = await createGpu(await nodeGpu());
  const sandbox = createNodeSandboxPool({ size: 2 });
  try {
    const make = (window1: boolean) =>
      createTrainer(recipe.config, {
        makeModel: async (mc, w, seed) =>
          window1
            ? variantModel(gpu.device, { decodeWindow: 1 }, mc, w, seed)
            : GpuModel.create(gpu.device, mc, w, seed),
        sandbox,
        readFile: async (p) => readProjectFile(p),
      });
    const trainers = { ours: await make(false), window1: await make(true) };
    const out = {
      ours: [] as MetricsRow[],
      window1: [] as MetricsRow[],
      oursS: [] as number[],
      window1S: [] as number[],
    };
    for (let i = 0; i < steps; i++) {
      for (const k of ["ours", "window1"] as const) {
        const t0 = performance.now();
        const { row } = await trainers[k].rlStep();
        out[k].push(row);
        out[k === "ours" ? "oursS" : "window1S"].push((performance.now() - t0) / 1000);
      }
    }
    trainers.ours.policy.dispose();
    trainers.window1.policy.dispose();
    return out;
  } finally {
    await sandbox.close();
    gpu.device.destroy();
  }
}

/** Readbacks (and seconds) to decode `tokens` tokens at batch B with window k and with 1. */
async function measureDecode(tokens: number, B: number) {
  const gpu = await createGpu(await nodeGpu());
  try {
    const config = modelConfig({ layers: 2, dModel: 48, heads: 2, context: tokens + 16 });
    const models = {
      ours: await GpuModel.create(gpu.device, config, undefined, 3),
      window1: await variantModel(gpu.device, { decodeWindow: 1 }, config, undefined, 3),
    };
    const res: Record<"ours" | "window1", { readbacks: number; submits: number; s: number; k: number }> =
      {} as never;
    for (const k of ["window1", "ours", "window1", "ours"] as const) {
      const model = models[k];
      const s = model.startGeneration({ temperature: 1, seed: 5 });
      await s.prefill(Array.from({ length: B }, (_, b) => [1 + (b % 40)]));
      const before = model.perf();
      const t0 = performance.now();
      await decodeRun(s, new Array(B).fill(true), tokens, () => false, config.context);
      const after = model.perf();
      s.finish();
      res[k] = {
        readbacks: after.readbacks - before.readbacks,
        submits: after.submits - before.submits,
        s: (performance.now() - t0) / 1000,
        k: model.decodeWindow,
      };
    }
    models.ours.dispose();
    models.window1.dispose();
    return res;
  } finally {
    gpu.device.destroy();
  }
}

function timingOf(rows: MetricsRow[], key: string): number[] {
  return rows.map((r) => Number(r[key] ?? 0));
}

/** Round trips and step time against one token per submit, side by side, and decoding's readbacks. */
async function roundTripRows(recipe: Recipe, what: string): Promise<BenchRow[]> {
  const rtSteps = 4;
  const rts = await measureRoundTrips(recipe, rtSteps);
  const after1 = <T>(xs: T[]) => (xs.length > 1 ? xs.slice(1) : xs);
  const trips = (rs: MetricsRow[]) =>
    after1(rs).map((r) => Number(r["perf/submits"]) + Number(r["perf/readbacks"]));
  const phaseNote = (rs: MetricsRow[]) =>
    ["rollout", "old_logprobs", "update"]
      .map(
        (p) =>
          `${p} ${median(after1(rs).map((r) => Number(r[`perf/${p}/submits`])))}+${median(after1(rs).map((r) => Number(r[`perf/${p}/readbacks`])))}`,
      )
      .join(", ");
  const rows = [
    makeRow({
      id: "rl_step_round_trips",
      group: "rl",
      ours: trips(rts.ours),
      baseline: trips(rts.window1),
      unit: "submits+readbacks",
      better: "lower",
      note: `per RL step (perf/submits + perf/readbacks; submits+readbacks by phase: ours ${phaseNote(rts.ours)}; one a submit ${phaseNote(rts.window1)}); baseline = the same steps on a plan variant decoding one token per submit (bench/plan-variant.ts; older code is measured by the baseline group, bench/base-tag.ts); ${what}`,
    }),
    makeRow({
      id: "rl_step_s_vs_window1",
      group: "rl",
      ours: after1(rts.oursS),
      baseline: after1(rts.window1S),
      unit: "s",
      better: "lower",
      note: `wall seconds of one RL step, median of ${rtSteps - 1} steps after the first, the two trainers stepping in turn; rollout ${median(timingOf(after1(rts.ours), "timing/rollout_s")).toFixed(2)} vs ${median(timingOf(after1(rts.window1), "timing/rollout_s")).toFixed(2)} s, update ${median(timingOf(after1(rts.ours), "timing/train_s")).toFixed(2)} vs ${median(timingOf(after1(rts.window1), "timing/train_s")).toFixed(2)} s; ${what}`,
    }),
  ];
  const dec = await measureDecode(256, 16);
  rows.push(
    makeRow({
      id: "decode_256_b16_readbacks",
      group: "rl",
      ours: [dec.ours.readbacks],
      baseline: [dec.window1.readbacks],
      unit: "readbacks",
      better: "lower",
      note: `decode 256 tokens at batch 16 (d48 L2, random init, no stops): ${dec.ours.k} tokens per submit vs 1; submits ${dec.ours.submits} vs ${dec.window1.submits}; ${(4096 / dec.ours.s).toFixed(0)} vs ${(4096 / dec.window1.s).toFixed(0)} tokens/s`,
    }),
  );

  return rows;
}

/** Minutes to the demo's target: trained to it (a full run from the SFT checkpoint), else extrapolated from the measured steps. */
async function minutesToTargetRow(
  recipe: Recipe,
  m: Awaited<ReturnType<typeof measureSteps>>,
  total: number[],
  quick: boolean,
): Promise<BenchRow> {
  const c = recipe.config;
  let minutes: number;
  let how: string;
  const target = c.stop.target;
  if (!quick && existsSync(QUICK_DEMO) && m.fromCheckpoint) {
    const r = await trainToTarget(recipe);
    minutes = r.minutes;
    how = `measured: trained ${recipe.source} from its SFT checkpoint until ${r.target}: ${r.reached ? "reached" : "NOT reached"} after ${r.steps} RL steps, incl. evaluations`;
  } else {
    const stepS = median(total);
    const noCkpt =
      c.sft.init_checkpoint && !m.fromCheckpoint ? ` (${c.sft.init_checkpoint} absent: its SFT counted)` : "";
    const sftS = m.fromCheckpoint ? 0 : c.sft.steps * (m.sftStepS.length ? median(m.sftStepS) : 0);
    const steps = target ? c.stop.max_steps : DEMO_STEPS_TO_TARGET;
    const evals = 1 + (c.task.eval_every > 0 ? Math.floor(steps / c.task.eval_every) : 0);
    const evalS = evals * median(m.evalS);
    minutes = (sftS + steps * stepS + evalS) / 60;
    how =
      `extrapolated from step times measured in this run: ${m.fromCheckpoint ? "no SFT (checkpoint)" : `${c.sft.steps} SFT steps x ${median(m.sftStepS).toFixed(2)} s`} + ` +
      `${steps} RL steps${target ? " (max_steps, an upper bound)" : " (ALGORITHMS §14: target reached by step 10)"} x ${stepS.toFixed(1)} s + ` +
      `${evals} evaluations x ${median(m.evalS).toFixed(1)} s; ${recipe.source}${noCkpt}`;
  }
  return makeRow({
    id: "quick_demo_minutes_to_target",
    group: "rl",
    ours: [minutes],
    baseline: [LAPTOP_GOAL_MIN],
    unit: "min",
    better: "lower",
    note: `${how}; baseline = the ${LAPTOP_GOAL_MIN}-minute goal on a laptop GPU; ran on ${m.adapter.description || m.adapter.vendor} (Dawn)`,
  });
}

export async function runRlBench(opts: {
  quick: boolean;
}): Promise<{ rows: BenchRow[]; adapter: BenchAdapter }> {
  const recipe = loadRecipe();
  const c = recipe.config;
  const m = await measureSteps(recipe, opts.quick);
  // The first RL step compiles the decode pipelines: drop it when there is more than one.
  const rl = m.rlRows.length > 1 ? m.rlRows.slice(1) : m.rlRows;
  const rollouts = c.rl.prompts_per_step * c.rl.group_size;
  const calls = median(rl.map((r) => Number(r["tool/calls_mean"] ?? 0)));
  const len = median(rl.map((r) => Number(r["response_length/mean"] ?? 0)));
  const what =
    `${recipe.name} (${recipe.source}; d${c.model.d_model} L${c.model.layers}, ${c.rl.prompts_per_step}x${c.rl.group_size} rollouts, ` +
    `${c.rl.epochs} epochs x ${c.rl.minibatches} minibatches${m.fromCheckpoint ? ", from its SFT checkpoint" : ", random init"}); ` +
    `${calls.toFixed(2)} tool calls and ${len.toFixed(0)} response tokens a trajectory; steps after the first; ` +
    `matmul tile ${m.adapter.matmulTile}, subgroup reductions ${m.adapter.subgroups ? "on" : "off"}`;
  const parts: [string, string, string][] = [
    ["rl_step_rollout_s", "timing/rollout_s", "decoding (KV cache, batched) less tool time"],
    ["rl_step_tool_s", "timing/tool_s", "sandbox calls (QuickJS pool, 2 workers)"],
    ["rl_step_reward_s", "timing/reward_s", "verifier + reward terms"],
    ["rl_step_update_s", "timing/train_s", "old log-probs + epochs x minibatches of forward/backward/AdamW"],
  ];
  const rows: BenchRow[] = parts.map(([id, key, desc]) => {
    const xs = timingOf(rl, key);
    const row = makeRow({
      id,
      group: "rl",
      ours: xs,
      baseline: xs,
      unit: "s",
      better: "lower",
      note: `ours only (no baseline; baseline = ours): ${desc}; ${what}`,
    });
    if (key === "timing/tool_s" && row.ours === 0 && calls > 0)
      row.note = `${row.note}; NOT MEASURED: ${calls.toFixed(2)} calls a trajectory ran but timing/tool_s is 0 (rl/rollout/agent-loop.ts does not fill stats.toolSeconds yet), so tool time is inside rl_step_rollout_s`;
    return { ...row, ratio: 1 }; // also when both are 0 (no tool call ran)
  });
  const total = rl.map((r) => parts.reduce((s, [, k]) => s + Number(r[k] ?? 0), 0));
  rows.push(
    makeRow({
      id: "rl_step_total_s",
      group: "rl",
      ours: total,
      baseline: total,
      unit: "s",
      better: "lower",
      note: `ours only: rollout + tool + reward + update of one RL step, ${rollouts} trajectories; ${what}`,
    }),
  );

  rows.push(...(await roundTripRows(recipe, what)));
  rows.push(await minutesToTargetRow(recipe, m, total, opts.quick));
  return { rows, adapter: m.adapter };
}

const argv = process.argv;
if (argv[1] && fileURLToPath(import.meta.url) === argv[1]) {
  const t0 = Date.now();
  const { rows, adapter } = await runRlBench({ quick: !argv.includes("--full") });
  console.log(
    `adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}; matmul tile ${adapter.matmulTile}; subgroups ${adapter.subgroups ? "on" : "off"}`,
  );
  for (const r of rows)
    console.log(
      `${r.id.padEnd(30)} ours ${r.ours.toFixed(3)} ${r.unit}  baseline ${r.baseline.toFixed(3)}  ratio ${r.ratio.toFixed(3)}x  (${r.note})`,
    );
  console.log(`took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}
