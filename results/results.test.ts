// Results coming back from verl and TRL (results/): the committed fixtures (a 20-step verl run
// with generation dumps, a TRL trainer_state.json and completions parquet files; made by
// results/make-fixtures.ts from the engines' formats: verl `verl/utils/tracking.py` FileLogger
// and `verl/trainer/ppo/ray_trainer.py` RayPPOTrainer._dump_generations; transformers
// `src/transformers/trainer_callback.py` TrainerState.save_to_json; TRL
// `trl/trainer/grpo_trainer.py` GRPOTrainer.log with log_completions) read into the lab's rows
// and samples; each bad file's message; the names table against docs/SCALE-OUT.md; and
// `npm run compare` of a lab run against each engine's run.
// Run: npx vitest run --project unit results/results.test.ts
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resultFilesOf } from "../cli/results-files.ts";
import { importResults } from "./import.ts";
import { engineFixtureFiles, FIXTURES } from "./make-fixtures.ts";
import { labMetric, namesTableMarkdown } from "./names.ts";
import { parsePythonJson, type ResultFile } from "./read.ts";

const VERL = join(FIXTURES, "verl-run");
const TRL = join(FIXTURES, "trl-run");

const memFile = (path: string, content: string | Uint8Array): ResultFile => {
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  return {
    path,
    size: bytes.byteLength,
    text: async () => new TextDecoder().decode(bytes),
    bytes: async () => bytes.slice().buffer as ArrayBuffer,
  };
};
const verlLine = (step: number, data: unknown) => JSON.stringify({ step, data });
const refused = (files: ResultFile[], opts = {}) =>
  importResults(files, opts).then(
    () => "imported",
    (e: Error) => e.message,
  );

describe("fixtures", () => {
  it("the committed engine files are what make-fixtures.ts writes", async () => {
    const files = await engineFixtureFiles();
    expect(Object.keys(files).length).toBe(44);
    for (const [p, bytes] of Object.entries(files)) {
      expect(Buffer.compare(readFileSync(join(FIXTURES, p)), Buffer.from(bytes)), p).toBe(0);
    }
  });
});

describe("a verl run", () => {
  it("reads the file log, the dumps and config.yaml into lab rows at the lab's steps", async () => {
    const run = await importResults(resultFilesOf(VERL));
    expect(run.name).toBe("verl ci-tiny");
    expect(run.info).toMatchObject({ engine: "verl", seed: 6 });
    expect(run.info.config?.trainer).toMatchObject({ experiment_name: "ci-tiny" });
    expect(run.info.files).toContain("verl-run/results/metrics.jsonl");
    expect(run.info.files).toContain("verl-run/config.yaml");
    expect(run.info.files.filter((f) => f.startsWith("verl-run/results/rollouts/"))).toHaveLength(20);
    expect(run.info.notes).toContain(
      "generation dumps read from verl-run/results/rollouts; not from verl-run/results/validation",
    );
    // verl step k's training metrics are the lab's row k-1; validation after update k is row k.
    expect(run.rows.map((r) => r.step)).toEqual([...Array(21).keys()]);
    const row = (s: number) => run.rows[s];
    expect(row(0)["val/acc/easy"]).toBe(0.2);
    expect(row(0)["val/acc/hard"]).toBe(0.05);
    expect(row(0)["val/acc"]).toBeUndefined(); // two data sources: no overall accuracy
    expect(row(0)["actor/entropy"]).toBe(0.88);
    expect(row(0)["actor/kl_ref"]).toBe(0.001);
    expect(row(0)["timing/rollout_s"]).toBe(3.1);
    expect(row(0)["critic/score/mean"]).toBeUndefined();
    expect(row(4)["val/acc/easy"]).toBeUndefined();
    expect(row(5)["val/acc/easy"]).toBe(0.35);
    expect(row(20)).toMatchObject({ "val/acc/hard": 0.45, phase: "rl" });
    expect(row(20)["actor/entropy"]).toBeUndefined();
    expect(row(2)["actor/pg_clipfrac_lower"]).toBeUndefined(); // orjson's null for a NaN
    expect(row(1)["actor/pg_clipfrac_lower"]).toBe(0);
    expect(row(0).time).toBeCloseTo(6.1, 9);
    expect(row(1).time).toBeCloseTo(12.3, 9);
    // From the step's dump: reward/mean is verl's score mean; acc/mean and reward/<term>/mean
    // are computed from the samples (the exported reward.py returns acc and reward/<term>).
    for (let s = 0; s < 20; s++) {
      const lines = readFileSync(join(VERL, "results", "rollouts", `${s + 1}.jsonl`), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      const m = lines.reduce((a, l) => a + l.acc, 0) / lines.length;
      expect(row(s)["acc/mean"]).toBeCloseTo(m, 12);
      expect(row(s)["reward/correctness/mean"]).toBeCloseTo(m, 12);
      expect(row(s)["reward/mean"]).toBeCloseTo(m, 6);
    }
  });

  it("keeps the dumps as text samples: groups by prompt, no tokens", async () => {
    const run = await importResults(resultFilesOf(VERL));
    expect(new Set(run.samples.map((s) => s.step)).size).toBe(20);
    const step2 = run.samples.filter((s) => s.step === 2);
    expect(step2).toHaveLength(8);
    expect(step2.map((s) => s.groupId)).toEqual(["0", "0", "0", "0", "1", "1", "1", "1"]);
    const first = step2[0];
    expect(first.tokens).toEqual([]);
    expect(first.mask).toEqual([]);
    expect(first.text?.prompt).toBe("system\nYou can call calc.\nuser\nWhat is 12 + 7?\nassistant\n");
    expect(first.text?.response).toContain("<answer>");
    expect(first.answer).toBe("19");
    expect(first.correct).toBe(first.reward === 1);
    expect(first.text?.correct).toBe(first.reward === 1);
    expect(first.rewardTerms).toEqual({ "reward/correctness": first.reward });
    expect(first.groupsInStep).toBe(2);
  });

  it("reads the file logger's default path (VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl)", async () => {
    const run = await importResults([
      memFile("logs/agentic-rl-lab/ci-tiny.jsonl", `${verlLine(1, { "critic/score/mean": 0.5 })}\n`),
    ]);
    expect(run.name).toBe("verl ci-tiny");
    expect(run.rows).toEqual([{ step: 0, phase: "rl", time: Number.NaN, "reward/mean": 0.5 }]);
  });

  it("keeps samples of the newest steps only, as the store keeps a lab run's", async () => {
    const run = await importResults(resultFilesOf(VERL), { keepSampleSteps: 3 });
    expect([...new Set(run.samples.map((s) => s.step))]).toEqual([17, 18, 19]);
    expect(run.info.notes.join("\n")).toContain("samples of the newest 3 steps kept");
  });
});

describe("a TRL run", () => {
  it("reads output_dir's trainer_state.json (not the older checkpoint's) and the completions", async () => {
    const run = await importResults(resultFilesOf(TRL));
    expect(run.name).toBe("trl trl-run");
    expect(run.info).toMatchObject({ engine: "trl", seed: 6 });
    expect(run.info.files[0]).toBe("trl-run/trl-out/trainer_state.json");
    expect(run.info.files).toContain("trl-run/train_trl.py");
    expect(run.rows.map((r) => r.step)).toEqual([...Array(20).keys()]);
    const r0 = run.rows[0];
    expect(r0["reward/mean"]).toBe(0.5);
    expect(r0["reward/lab_reward/mean"]).toBe(0.5);
    expect(r0["actor/grad_norm"]).toBe(1.46);
    expect(r0["actor/kl_ref"]).toBe(0.001);
    expect(r0["response_length/mean"]).toBe(21);
    expect(r0["groups/zero_std_frac"]).toBe(0.5);
    expect(r0.reward).toBeUndefined();
    expect(Number.isNaN(r0.time)).toBe(true); // TRL logs no wall time
    expect(run.rows[3]["actor/grad_norm"]).toBeUndefined(); // json.dumps wrote NaN
    expect(run.info.notes.join("\n")).toContain("log_history[20]: the end-of-training summary");
    const s = run.samples.filter((x) => x.step === 0);
    expect(s).toHaveLength(8);
    expect(s[0].rewardTerms).toEqual({ lab_reward: s[0].reward });
    const groupMean = s.slice(0, 4).reduce((a, x) => a + x.reward, 0) / 4;
    expect(s[0].text?.advantage).toBeCloseTo(s[0].reward - groupMean, 6);
    expect(s[0].text?.correct).toBeUndefined();
  });

  it("puts TRL's optimizer steps on the lab's steps (lab_export.json) and its held-out accuracy in val/acc", async () => {
    // 2 lab steps of 2 optimizer steps each, evaluated at the start and after every lab step
    const log = [
      { step: 0, "eval_rewards/lab_acc/mean": 0.25, "eval_rewards/lab_valid_call/mean": 0.5, eval_loss: 0 },
      { step: 1, reward: 0.5, loss: 0.1, step_time: 10, learning_rate: 0.003 },
      { step: 2, loss: 0.3, step_time: 2, learning_rate: 0.003 },
      { step: 2, "eval_rewards/lab_acc/mean": 0.5, "eval_rewards/lab_valid_call/mean": 0.75 },
      { step: 3, reward: 1, loss: 0.2, step_time: 11, learning_rate: 0.003 },
      { step: 4, loss: 0.4, step_time: 3, learning_rate: 0.003 },
      { step: 4, "eval_rewards/lab_acc/mean": 1, "eval_rewards/lab_valid_call/mean": 1 },
      { step: 4, train_runtime: 30, train_loss: 0.25 },
    ];
    const run = await importResults([
      memFile("out/trl-out/trainer_state.json", JSON.stringify({ log_history: log })),
      memFile("out/trl-out/lab_export.json", JSON.stringify({ optimizer_steps_per_lab_step: 2 })),
    ]);
    expect(run.info.files).toEqual(["out/trl-out/trainer_state.json", "out/trl-out/lab_export.json"]);
    expect(run.rows.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(run.rows.map((r) => r["val/acc"])).toEqual([0.25, 0.5, 1]);
    expect(run.rows.map((r) => r["val/valid_call_rate"])).toEqual([0.5, 0.75, 1]);
    expect(run.rows[0]["eval_rewards/lab_acc/mean"]).toBeUndefined();
    expect(run.rows[0].eval_loss).toBe(0); // an unmapped evaluation key keeps its name
    expect(run.rows.map((r) => r["reward/mean"])).toEqual([0.5, 1, undefined]);
    expect(run.rows[0]["actor/pg_loss"]).toBeCloseTo(0.2, 12); // the mean of its two optimizer steps
    expect(run.rows[1]["actor/pg_loss"]).toBeCloseTo(0.3, 12);
    expect(run.rows.map((r) => r.time)).toEqual([12, 26, Number.NaN]);
    // without the export's files, each optimizer step is a lab step, and a note says so
    const bare = await importResults([
      memFile("out/trainer_state.json", JSON.stringify({ log_history: log })),
    ]);
    expect(bare.rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    expect(bare.info.notes.join("\n")).toContain("each TRL optimizer step is taken as one lab step");
  });

  it("without output_dir's state, reads the newest checkpoint's", async () => {
    const state = (steps: number) =>
      JSON.stringify({ log_history: [...Array(steps).keys()].map((i) => ({ step: i + 1, reward: i })) });
    const run = await importResults([
      memFile("out/checkpoint-5/trainer_state.json", state(5)),
      memFile("out/checkpoint-10/trainer_state.json", state(10)),
      memFile("out/checkpoint-10/model.safetensors", "not read"),
    ]);
    expect(run.info.files).toEqual(["out/checkpoint-10/trainer_state.json"]);
    expect(run.rows).toHaveLength(10);
    expect(run.name).toBe("trl out");
  });
});

describe("bad files", () => {
  const log = "run/metrics.jsonl";
  it("a truncated last line is skipped with its line number; the rest is read", async () => {
    const run = await importResults([
      memFile(
        log,
        `${verlLine(1, { "actor/entropy": 1 })}\n${verlLine(2, { "actor/entropy": 2 })}\n{"step": 3, "da`,
      ),
    ]);
    expect(run.rows.map((r) => r["actor/entropy"])).toEqual([1, 2]);
    expect(run.info.notes).toContain(
      "run/metrics.jsonl:3: skipped a truncated last line (15 characters, no newline after it)",
    );
  });
  it("each refusal names the file, the line and what is wrong", async () => {
    const ok = verlLine(1, { a: 1 });
    expect(await refused([memFile(log, `${ok}\n{"step": 2, "da\n${ok}\n`)])).toBe(
      'run/metrics.jsonl:2: not a JSON line: "{\\"step\\": 2, \\"da"',
    );
    expect(await refused([memFile(log, `${ok}\n${verlLine(2, [1, 2])}\n`)])).toBe(
      'run/metrics.jsonl:2: "data" is an array, not an object of metrics',
    );
    expect(await refused([memFile(log, `${ok}\n${verlLine(2, "x")}\n`)])).toBe(
      'run/metrics.jsonl:2: "data" is a string, not an object of metrics',
    );
    expect(await refused([memFile(log, `${ok}\n{"step": 2, "data": {}, "elapsed_seconds": 5}\n`)])).toBe(
      'run/metrics.jsonl:2: unknown key "elapsed_seconds" (verl\'s FileLogger writes "step" and "data" only)',
    );
    expect(await refused([memFile(log, `${ok}\n{"step": "2", "data": {}}\n`)])).toBe(
      'run/metrics.jsonl:2: "step" is "2", not a step number',
    );
    expect(await refused([memFile(log, `${ok}\n[1, 2]\n`)])).toBe(
      'run/metrics.jsonl:2: a line is {"step": N, "data": {...}} (verl\'s FileLogger), not an array',
    );
    expect(
      await refused([memFile(log, `${ok}\n${"x".repeat(2000)}\n`)], { limits: { maxFileBytes: 1000 } }),
    ).toBe("run/metrics.jsonl: 0.0 MiB is over the 0.0 MiB limit for one results file");
    expect(
      await refused([
        memFile(log, `${ok}\n`),
        memFile("run/rollouts/1.jsonl", '{"input": "p", "score": 1}\n'),
      ]),
    ).toBe(
      'run/rollouts/1.jsonl:1: a generation has "input" and "output" strings (RayPPOTrainer._dump_generations)',
    );
    expect(await refused([memFile(log, verlLine(1, {}))])).toBe("run/metrics.jsonl: no metrics in it");
    expect(await refused([memFile(log, `${ok}\n`), memFile("other/metrics.jsonl", `${ok}\n`)])).toBe(
      "2 verl logs (run/metrics.jsonl, other/metrics.jsonl): import one run at a time",
    );
    expect(await refused([memFile("notes.txt", "hello")])).toBe(
      'no verl log (a .jsonl of {"step", "data"} lines) and no TRL trainer_state.json among the 1 files',
    );
    expect(await refused([memFile(log, `${ok}\n`), memFile("o/trainer_state.json", "{}")])).toBe(
      "both a TRL trainer_state.json (o/trainer_state.json) and a verl log (run/metrics.jsonl): import one run at a time",
    );
    expect(await refused([])).toBe("no files picked");
  });
  it("a huge file is refused by its size before it is read", async () => {
    const huge: ResultFile = {
      path: "o/trainer_state.json",
      size: 200 * 1024 * 1024,
      text: () => Promise.reject(new Error("read")),
      bytes: () => Promise.reject(new Error("read")),
    };
    expect(await refused([huge])).toBe(
      "o/trainer_state.json: 200.0 MiB is over the 128.0 MiB limit for one results file",
    );
  });
  it("TRL files: a state cut short, no log_history, a bad entry, a file that is not parquet", async () => {
    const st = "o/trainer_state.json";
    expect(await refused([memFile(st, '{\n  "log_history": [\n    {"step": 1,\n')])).toMatch(
      /^o\/trainer_state\.json:4: not JSON \(a file cut short\?\)/,
    );
    expect(await refused([memFile(st, '{"global_step": 3}')])).toBe(
      'o/trainer_state.json: no "log_history" list: not a transformers TrainerState file',
    );
    expect(await refused([memFile(st, '{"log_history": [{"step": 1, "reward": 1}, {"reward": 2}]}')])).toBe(
      'o/trainer_state.json: log_history[1]: "step" is undefined, not a step number',
    );
    expect(await refused([memFile(st, '{"log_history": [{"step": 1, "reward": 1}, 7]}')])).toBe(
      "o/trainer_state.json: log_history[1] is not an object of metrics",
    );
    expect(
      await refused([
        memFile(st, '{"log_history": [{"step": 1, "reward": 1}]}'),
        memFile("o/completions/completions_00001.parquet", "PAR1 not really"),
      ]),
    ).toMatch(/^o\/completions\/completions_00001\.parquet: not a parquet file hyparquet can read: /);
  });
  it("Python's NaN and Infinity read as null, never inside strings", () => {
    expect(parsePythonJson('{"a": NaN, "b": [-Infinity, Infinity], "c": "NaN: Infinity"}')).toEqual({
      a: null,
      b: [null, null],
      c: "NaN: Infinity",
    });
  });
});

describe("the names table", () => {
  it("maps TRL's and verl's names to the lab's; an unknown key keeps its name", () => {
    expect(labMetric("trl", "rewards/format/mean", 0.5)).toEqual([{ key: "reward/format/mean", value: 0.5 }]);
    expect(labMetric("trl", "tools/failure_frequency", 0.25)).toEqual([
      { key: "tool/success_rate", value: 0.75 },
    ]);
    expect(labMetric("trl", "completions/max_length", 9)).toEqual([
      { key: "completions/max_length", value: 9 },
    ]);
    expect(labMetric("verl", "val-core/lab/arithmetic/all/acc/mean@1", 0.5, 1)).toEqual([
      { key: "val/acc/all", value: 0.5 },
      { key: "val/acc", value: 0.5 },
    ]);
    expect(labMetric("verl", "val-core/gsm8k/acc/mean@1", 0.5, 2)).toEqual([
      { key: "val-core/gsm8k/acc/mean@1", value: 0.5 },
    ]);
  });
  it("docs/SCALE-OUT.md shows the committed table", () => {
    expect(readFileSync("docs/SCALE-OUT.md", "utf8")).toContain(namesTableMarkdown());
  });
});

describe("npm run compare", () => {
  // Both engines' reward/mean per step is the mean score of that step's 8 samples (the dumps).
  const means = [...Array(20).keys()].map((k) => {
    const lines = readFileSync(join(VERL, "results", "rollouts", `${k + 1}.jsonl`), "utf8")
      .trim()
      .split("\n");
    return lines.reduce((a, l) => a + JSON.parse(l).score, 0) / lines.length;
  });
  const scores = {
    mean: (means.reduce((a, b) => a + b, 0) / means.length).toFixed(3),
    max: Math.max(...means).toFixed(3),
  };
  const compare = (...args: string[]) =>
    spawnSync(process.execPath, ["--import", "tsx", "cli/compare-runs.ts", ...args], {
      encoding: "utf8",
      timeout: 240_000,
    });
  it("prints a lab run and a verl run in one paired table, saying the engines differ", () => {
    const out = compare("docs/experiments/citiny/seed-6", VERL, "--keys", "val/acc/hard,reward/mean");
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toContain("arms: seed-6 (1 seed: 6); verl-run (1 seed: 6)");
    expect(out.stdout).toContain("engines differ: lab (seed-6), verl (verl-run)");
    expect(out.stdout).toContain("| step | seed-6 | verl-run | verl-run - seed-6 (paired) |");
    // citiny seed 6 at step 0: val/acc/hard 0; the verl run's 0.05: a paired difference of +0.050.
    expect(out.stdout).toMatch(/\| 0 \| 0\.000 \| 0\.050 \| \+0\.050 \(1\) \|/);
    expect(out.stdout).toContain(`| verl-run | 1 | ${scores.mean} | ${scores.max} |`);
  });
  it("and a TRL run", () => {
    const out = compare("docs/experiments/citiny/seed-6", TRL, "--keys", "reward/mean");
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toContain("engines differ: lab (seed-6), trl (trl-run)");
    expect(out.stdout).toContain(`| trl-run | 1 | ${scores.mean} | ${scores.max} |`);
  });
  it("reads an engine arm of seed-<S> folders as one run per seed, paired with the lab's seeds", () => {
    // The committed TRL-vs-lab experiment: each trl/seed-S is an export with what TRL wrote.
    const dir = "docs/experiments/trl-vs-lab";
    const out = compare(`${dir}/lab`, `${dir}/trl`, "--keys", "val/acc");
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toContain("arms: lab (3 seeds: 1, 2, 3); trl (3 seeds: 1, 2, 3)");
    expect(out.stdout).toContain("| step | lab | trl | trl - lab (paired) |");
    expect(out.stdout).toMatch(
      /\| 20 \| [0-9.]+ ± [0-9.]+ \(SE [0-9.]+\) \| [0-9.]+ ± [0-9.]+ \| [-+][0-9.]+ ± [0-9.]+ \(3\) \|/,
    );
  });
  it("names a bad engine file", () => {
    const out = compare("docs/experiments/citiny/seed-6", "results/fixtures/verl-run/results/rollouts");
    expect(out.status).toBe(2);
    expect(out.stderr).toContain("no verl log");
  });
});
