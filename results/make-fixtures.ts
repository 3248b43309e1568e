// Makes results/fixtures/: a verl run and a TRL run of the ci-tiny recipe (the config of
// docs/experiments/citiny/seed-6, exported with export/), laid out as the exported runs write
// them (docs/SCALE-OUT.md "Results": run.sh's VERL_FILE_LOGGER_PATH and rollout_data_dir,
// train_trl.py's --output-dir), written from the engines' formats (the facts are in
// results/verl.ts and results/trl.ts):
//   verl-run/config.yaml                   the export's config (seed 6, experiment ci-tiny)
//   verl-run/results/metrics.jsonl         FileLogger: orjson lines, validation at step 0 and
//                                          every 5 steps, 20 steps
//   verl-run/results/rollouts/<step>.jsonl _dump_generations: 2 prompts x 4 samples per step
//   verl-run/results/validation/0.jsonl    the same for the validation before training
//   trl-run/train_trl.py                   the export's script (its LAB line holds the seed)
//   trl-run/trl-out/trainer_state.json     save_state(): 20 logged steps and the summary entry
//   trl-run/trl-out/checkpoint-10/trainer_state.json   an older checkpoint's (10 steps)
//   trl-run/trl-out/completions/completions_<step:05d>.parquet   log_completions, hyparquet-writer
// The numbers are made up but consistent: each step's score mean is its dump's mean.
// Run: npx tsx --import ./cli/raw-loader.mjs results/make-fixtures.ts
// (results/results.test.ts checks the committed files equal what this makes, export files aside).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";
import { validateRunConfig } from "../config/index.ts";
import { exportRun } from "../export/index.ts";

export const FIXTURES = "results/fixtures";
export const STEPS = 20;
const PROMPTS = ["What is 12 + 7?", "What is 30 - 14?"];
const ANSWERS = ["19", "16"];

/** Sample j of prompt g at engine step k: correct more often as training goes on. */
const isCorrect = (k: number, g: number, j: number) => (k * 7 + g * 3 + j * 5) % 10 < 2 + k * 0.3;
const round = (x: number) => Math.round(x * 1e6) / 1e6;

/** Python's json.dumps text of a flat object (", " and ": " separators). */
const pyDumps = (o: Record<string, unknown>) =>
  `{${Object.entries(o)
    .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(", ")}}`;

function dump(k: number): { lines: Record<string, unknown>[]; scoreMean: number } {
  const lines: Record<string, unknown>[] = [];
  PROMPTS.forEach((p, g) => {
    for (let j = 0; j < 4; j++) {
      const ok = isCorrect(k, g, j);
      const call = j % 2 === 0;
      lines.push({
        input: `system\nYou can call calc.\nuser\n${p}\nassistant\n`,
        output: `${call ? `<tool_call>calc("${p.slice(8, -1)}")</tool_call> ` : ""}<answer>${ok ? ANSWERS[g] : "20"}</answer>`,
        gts: ANSWERS[g],
        score: ok ? 1 : 0,
        step: k,
        acc: ok ? 1 : 0,
        "reward/correctness": ok ? 1 : 0,
      });
    }
  });
  return { lines, scoreMean: lines.reduce((a, l) => a + (l.score as number), 0) / lines.length };
}

const val = (k: number) => ({
  "val-core/lab/arithmetic/easy/acc/mean@1": round(Math.min(1, 0.2 + 0.03 * k)),
  "val-core/lab/arithmetic/hard/acc/mean@1": round(Math.min(1, 0.05 + 0.02 * k)),
  "val-aux/lab/arithmetic/easy/score/mean@1": round(Math.min(1, 0.2 + 0.03 * k)),
  "val-aux/lab/arithmetic/hard/score/mean@1": round(Math.min(1, 0.05 + 0.02 * k)),
});

function verlLog(): string {
  const lines = [JSON.stringify({ step: 0, data: val(0) })];
  for (let k = 1; k <= STEPS; k++) {
    const data: Record<string, unknown> = {
      "actor/entropy": round(0.9 - 0.02 * k),
      "actor/grad_norm": round(1.5 - 0.04 * k),
      "actor/pg_loss": round(-0.05 + 0.001 * k),
      "actor/pg_clipfrac": round(0.01 + 0.0005 * k),
      // orjson writes a NaN as null
      "actor/pg_clipfrac_lower": k === 3 ? null : 0,
      "actor/ppo_kl": round(0.002 * k),
      "actor/kl_loss": round(0.001 * k),
      "actor/lr": 1e-6,
      "critic/score/mean": round(dump(k).scoreMean),
      "critic/rewards/mean": round(dump(k).scoreMean),
      "critic/advantages/mean": 0,
      "response_length/mean": round(20 + k),
      "response_length/clip_ratio": 0,
      "prompt_length/mean": 24,
      "timing_s/gen": round(3 + 0.1 * k),
      "timing_s/update_actor": 2.5,
      "timing_s/step": round(6 + 0.1 * k),
      "training/global_step": k,
      "training/epoch": 0,
      ...(k % 5 === 0 ? val(k) : {}),
    };
    lines.push(JSON.stringify({ step: k, data }));
  }
  return `${lines.join("\n")}\n`;
}

function trainerState(upto: number, done: boolean): string {
  const history: Record<string, unknown>[] = [];
  for (let s = 1; s <= upto; s++) {
    const { scoreMean } = dump(s);
    history.push({
      "clip_ratio/high_max": 0,
      "clip_ratio/high_mean": 0,
      "clip_ratio/low_mean": 0,
      "clip_ratio/low_min": 0,
      "clip_ratio/region_mean": 0,
      "completions/clipped_ratio": 0,
      "completions/max_length": 32,
      "completions/mean_length": round(20 + s),
      "completions/min_length": 12,
      entropy: round(0.9 - 0.02 * s),
      epoch: round(s / upto),
      frac_reward_zero_std: 0.5,
      // transformers writes the trainer state with json.dumps: a NaN stays NaN
      grad_norm: s === 4 ? "NaN" : round(1.5 - 0.04 * s),
      kl: round(0.001 * s),
      learning_rate: 1e-6,
      loss: round(0.001 * s),
      num_tokens: 1000 * s,
      reward: round(scoreMean),
      reward_std: 0.5,
      "rewards/lab_reward/mean": round(scoreMean),
      "rewards/lab_reward/std": 0.5,
      step: s,
    });
  }
  if (done) {
    history.push({
      epoch: 1,
      step: upto,
      total_flos: 0,
      train_loss: 0.01,
      train_runtime: 120.5,
      train_samples_per_second: 1.3,
      train_steps_per_second: 0.17,
    });
  }
  const state = {
    best_global_step: null,
    best_metric: null,
    best_model_checkpoint: null,
    epoch: 1,
    eval_steps: 500,
    global_step: upto,
    is_hyper_param_search: false,
    is_local_process_zero: true,
    is_world_process_zero: true,
    log_history: history,
    logging_steps: 1,
    max_steps: STEPS,
    num_input_tokens_seen: 0,
    num_train_epochs: 1,
    save_steps: 10,
    stateful_callbacks: {},
    total_flos: 0,
    train_batch_size: 8,
    trial_name: null,
    trial_params: null,
  };
  // indent 2 and sort_keys, as TrainerState.save_to_json; NaN as Python writes it
  return `${JSON.stringify(state, null, 2).replace('"NaN"', "NaN")}\n`;
}

async function completions(s: number): Promise<Uint8Array> {
  const { lines } = dump(s);
  const buf = parquetWriteBuffer({
    columnData: [
      { name: "step", data: lines.map(() => s), type: "INT32" },
      { name: "prompt", data: lines.map((l) => l.input as string), type: "STRING" },
      { name: "completion", data: lines.map((l) => l.output as string), type: "STRING" },
      { name: "lab_reward", data: lines.map((l) => l.score as number), type: "DOUBLE" },
      {
        name: "advantage",
        data: lines.map((l, i) => {
          const g = lines.slice(i - (i % 4), i - (i % 4) + 4).map((x) => x.score as number);
          const m = g.reduce((a, b) => a + b, 0) / 4;
          return round((l.score as number) - m);
        }),
        type: "DOUBLE",
      },
    ],
  });
  return new Uint8Array(buf);
}

/** The engines' files (what results.test.ts compares with the committed fixtures). */
export async function engineFixtureFiles(): Promise<Record<string, Uint8Array>> {
  const enc = (s: string) => new TextEncoder().encode(s);
  const out: Record<string, Uint8Array> = {
    "verl-run/results/metrics.jsonl": enc(verlLog()),
    "verl-run/results/validation/0.jsonl": enc(`${dump(0).lines.slice(0, 4).map(pyDumps).join("\n")}\n`),
    "trl-run/trl-out/trainer_state.json": enc(trainerState(STEPS, true)),
    "trl-run/trl-out/checkpoint-10/trainer_state.json": enc(trainerState(10, false)),
  };
  for (let k = 1; k <= STEPS; k++) {
    out[`verl-run/results/rollouts/${k}.jsonl`] = enc(`${dump(k).lines.map(pyDumps).join("\n")}\n`);
    out[`trl-run/trl-out/completions/completions_${String(k).padStart(5, "0")}.parquet`] =
      await completions(k);
  }
  return out;
}

async function main() {
  const check = validateRunConfig(
    JSON.parse(readFileSync("docs/experiments/citiny/seed-6/config.json", "utf8")),
  );
  if (!check.ok) throw new Error("docs/experiments/citiny/seed-6/config.json is not a valid RunConfig");
  const verl = exportRun(check.config, { target: "verl", name: "ci-tiny" });
  const trl = exportRun(check.config, { target: "trl", name: "ci-tiny" });
  const files: Record<string, Uint8Array> = {
    "verl-run/config.yaml": verl.files["config.yaml"],
    "trl-run/train_trl.py": trl.files["train_trl.py"],
    ...(await engineFixtureFiles()),
  };
  for (const [p, bytes] of Object.entries(files)) {
    const path = join(FIXTURES, p);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
  }
  console.log(`wrote ${Object.keys(files).length} files under ${FIXTURES}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
