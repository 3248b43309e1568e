// TRL trains the lab-made model for real (the engines layer: the venv of npm run engines:setup,
// export/engines/venv.ts). The TRL export (npm run export -- trl) of lab-llama-calculator,
// shortened to 2 lab steps of 2 prompts x 4 completions in 2 minibatches (4 optimizer steps),
// a held-out set of 4 evaluated at every lab step, runs TRL's GRPOTrainer on the CPU to its end
// with the lab-made Llama (public/models/lab-llama) and the local Node tool runner (--tools node,
// lab_node.py); without --model it stops, naming why. Its results (trainer_state.json, the
// completions parquet files, lab_export.json) come back through the lab's import
// (results/import.ts) on lab steps 0..2: training keys on the rollout's step, the held-out
// accuracy (eval_rewards/lab_acc/mean) as val/acc after each step, samples as text.
// Run: npx vitest run --project engines export/engines/trl.engines.test.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { resultFilesOf } from "../../cli/results-files.ts";
import type { EngineRun } from "../../results/import.ts";
import { importResults } from "../../results/import.ts";
import { enginesPython } from "./venv.ts";

const STEPS = 2;
const MINIBATCHES = 2;

let dir: string;
let train: { status: number | null; out: string; seconds: number };
let noModel: { status: number | null; stderr: string };
let run: EngineRun;

beforeAll(async () => {
  const python = enginesPython();
  const root = mkdtempSync(join(tmpdir(), "trl-engines-"));
  const recipe = JSON.parse(readFileSync("public/recipes/lab-llama-calculator.json", "utf8"));
  const c = recipe.config;
  Object.assign(c.rl, { prompts_per_step: 2, group_size: 4, minibatches: MINIBATCHES });
  Object.assign(c.task, { eval_size: 4, eval_every: 1 });
  c.stop.max_steps = STEPS;
  c.checkpoint_every = 0;
  recipe.name = "lab-llama-calculator-short";
  writeFileSync(join(root, "recipe.json"), JSON.stringify(recipe));
  dir = join(root, "export");
  const ex = spawnSync(
    "npx",
    [
      "tsx",
      "--import",
      "./cli/raw-loader.mjs",
      "cli/export.ts",
      "trl",
      join(root, "recipe.json"),
      "--out",
      dir,
    ],
    { encoding: "utf8" },
  );
  if (ex.status !== 0) throw new Error(`npm run export -- trl: ${ex.stderr}`);
  const nm = spawnSync(python, [join(dir, "train_trl.py"), "--tools", "node"], { encoding: "utf8" });
  noModel = { status: nm.status, stderr: nm.stderr };
  const t0 = Date.now();
  const r = spawnSync(
    python,
    [join(dir, "train_trl.py"), "--model", resolve("public/models/lab-llama"), "--tools", "node"],
    {
      encoding: "utf8",
      maxBuffer: 1 << 28,
      timeout: 600_000,
      env: { ...process.env, PYTHONUNBUFFERED: "1" },
    },
  );
  train = { status: r.status, out: `${r.stdout}\n${r.stderr}`, seconds: (Date.now() - t0) / 1000 };
  console.log(`train_trl.py: ${train.seconds.toFixed(0)} s`);
  if (r.status === 0) run = await importResults(resultFilesOf(dir));
}, 900_000);

describe("TRL 1.16.0's GRPOTrainer runs the TRL export on the CPU", () => {
  it("without --model it stops and says why (the lab's model folder is not the cluster's)", () => {
    expect(noModel.status).toBe(2);
    expect(noModel.stderr).toMatch(/--model is required: the model is the folder "models\/lab-llama"/);
  });

  it("trains the lab-made Llama with the local node tools to its end", () => {
    expect(train.status, train.out.slice(-4000)).toBe(0);
    const state = JSON.parse(readFileSync(join(dir, "trl-out", "trainer_state.json"), "utf8"));
    expect(state.global_step).toBe(STEPS * MINIBATCHES);
    const lab = JSON.parse(readFileSync(join(dir, "trl-out", "lab_export.json"), "utf8"));
    expect(lab).toMatchObject({ tools: "node", optimizer_steps_per_lab_step: MINIBATCHES });
    // every optimizer step and every evaluation logged; the tools ran (TRL counts their failures)
    const log = state.log_history as Record<string, number>[];
    expect(log.filter((e) => "loss" in e).map((e) => e.step)).toEqual([1, 2, 3, 4]);
    expect(log.filter((e) => "eval_rewards/lab_acc/mean" in e).map((e) => e.step)).toEqual([0, 2, 4]);
    expect(log.some((e) => "tools/failure_frequency" in e)).toBe(true);
  });

  it("comes back through the lab's import on lab steps 0..2 with val/* keys", () => {
    expect(run.info.engine).toBe("trl");
    expect(run.rows.map((r) => r.step)).toEqual([0, 1, 2]);
    for (const r of run.rows) {
      expect(r.phase).toBe("rl");
      expect(r["val/acc"], `val/acc at ${r.step}`).toBeGreaterThanOrEqual(0);
      expect(r["val/valid_call_rate"], `val/valid_call_rate at ${r.step}`).toBeGreaterThanOrEqual(0);
      expect(r["eval_rewards/lab_acc/mean"], "mapped, not kept").toBeUndefined();
    }
    // the rollout of lab step s is trained on in optimizer steps 2s+1, 2s+2: its row holds their keys and time
    for (const s of [0, 1]) {
      const r = run.rows[s];
      expect(r["reward/mean"], `reward/mean at ${s}`).toBeGreaterThanOrEqual(0);
      expect(r["actor/lr"]).toBeCloseTo(0.003, 6);
      expect(Number.isFinite(r.time)).toBe(true);
    }
    expect(run.rows[1].time).toBeGreaterThan(run.rows[0].time);
    expect(run.rows[2]["reward/mean"]).toBeUndefined();
    // samples: the two lab steps' rollouts (2 groups of 4), as text, the evaluation before any update left out
    expect([...new Set(run.samples.map((s) => s.step))]).toEqual([0, 1]);
    expect(run.samples.filter((s) => s.step === 0)).toHaveLength(8);
    expect(run.samples[0].text?.prompt).toMatch(/What is/);
    expect(run.samples.filter((s) => s.step === 1)).toHaveLength(8);
    expect(run.info.notes.join("\n")).toMatch(/evaluation before any update/);
    expect(run.info.notes.join("\n")).toMatch(
      /completions_00002.parquet, .*completions_00004.parquet: left out/,
    );
    expect(run.info.files.some((f) => f.endsWith("lab_export.json"))).toBe(true);
  });
});
