// verl's own package takes every verl export (the engines layer: the venv of npm run
// engines:setup, export/engines/venv.ts). For each exportable preset and recipe file, on 1 GPU and
// verl's default 8: Hydra composes config.yaml over the installed verl's ppo_trainer (no stub
// modules) with run.sh's overrides, and every value the export wrote reads back as meant (YAML 1.1:
// the rejection threshold stays a string); verl's validate_config passes (for a LoRA run, up to
// its vLLM LoRA-rank check, which imports vLLM: not installable on a CPU machine, so the rank is
// checked against verl's own list); the reward loads through verl's reward loading and scores the
// lab's samples as reward.py itself does; for the lab-made Llama presets train.parquet loads
// through verl's RLHFDataset with that model's tokenizer and chat template; the tools build from
// the tool config and, on the local node runner, answer a call through verl's tool interface. A
// required value left out (a lab-format model's path) fails where verl reads it, naming it.
// verl does not train here: its trainer needs Ray workers with vLLM or SGLang rollouts on GPUs.
// Run: npx vitest run --project engines export/engines/verl.engines.test.ts
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { RECIPES } from "../../config/presets.ts";
import type { RunConfig } from "../../config/schema.ts";
import { verlRequired } from "../cluster.ts";
import { exportTask } from "../data.ts";
import { exportRun } from "../index.ts";
import { recipeFiles, config as runConfig } from "../test-runs.ts";
import { verlBatch, verlConfigYaml, verlRsThreshold } from "../verl.ts";
import { enginesPython } from "./venv.ts";

type Steps = Record<string, { ok: boolean; error?: string; [k: string]: unknown }>;
interface Job {
  name: string;
  gpus: number;
  config: RunConfig;
  dir: string;
  model?: string;
  tools?: "node";
  hydra: string[];
}

const exportable = (c: RunConfig) => {
  try {
    exportTask(c);
    return true;
  } catch {
    return false;
  }
};

/** Leaves of a nested object as dotted paths (lists are leaves). */
function leaves(v: unknown, prefix = ""): [string, unknown][] {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return [[prefix, v]];
  return Object.entries(v as Record<string, unknown>).flatMap(([k, x]) =>
    leaves(x, prefix ? `${prefix}.${k}` : k),
  );
}
const at = (o: unknown, path: string) =>
  path.split(".").reduce<unknown>((x, k) => (x as Record<string, unknown> | undefined)?.[k], o);
/** The keys run.sh passes itself (absolute paths of the export's files). */
const RUN_SH = new Set([
  "data.train_files",
  "data.val_files",
  "actor_rollout_ref.rollout.multi_turn.tool_config_path",
  "reward.custom_reward_function.path",
  "trainer.rollout_data_dir",
  "trainer.validation_data_dir",
]);

const root = mkdtempSync(join(tmpdir(), "verl-engines-"));
const jobs: Job[] = [];
const results = new Map<string, { steps: Steps }>();

beforeAll(async () => {
  const python = enginesPython();
  const runs = [
    ...Object.entries(RECIPES).map(([name, r]) => ({ name, config: runConfig(r.config) })),
    ...(await recipeFiles()).map((r) => ({ name: r.file, config: r.config })),
  ].filter((r) => exportable(r.config));
  // and two runs no preset makes: token-level rejection sampling, and an estimator verl lacks
  runs.push(
    { name: "rs-token", config: runConfig({ rl: { rollout_correction: { rollout_rs: "token" } } }) },
    { name: "liteppo", config: runConfig({ rl: { advantage: "liteppo" } }) },
  );
  for (const { name, config } of runs)
    for (const gpus of [1, 8]) {
      const dir = join(root, `${name.replace(/[^a-z0-9.-]/gi, "_")}-${gpus}`);
      mkdirSync(dir, { recursive: true });
      const { files } = exportRun(config, { target: "verl", name, gpus });
      for (const [p, bytes] of Object.entries(files)) writeFileSync(join(dir, p), bytes);
      // A lab-made model folder in public/ is the HF model the dataset check tokenizes with;
      // the required values are given as run.sh's flags would give them (a stand-in model
      // folder, an estimator verl has), so that validation reads every key.
      const p = config.model.pretrained;
      const folder = p && !p.includes(":") ? resolve("public", p) : undefined;
      const model = folder && existsSync(join(folder, "config.json")) ? folder : undefined;
      const hydra = verlRequired(config)
        .filter((r) => !(model && r.key === "actor_rollout_ref.model.path"))
        .map(
          (r) =>
            `${r.key}=${r.key === "algorithm.adv_estimator" ? "grpo" : resolve("public/models/lab-llama")}`,
        );
      if (name !== "liteppo") jobs.push({ name, gpus, config, dir, model, tools: "node", hydra });
      else jobs.push({ name, gpus, config, dir, model, tools: "node", hydra: [] });
    }
  // the lab's arithmetic samples, to score through verl's reward loading
  const samples = readFileSync("export/samples.jsonl", "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((s) => s.task === "arithmetic");
  const first = jobs.find((j) => j.name === "quick-demo.json" && j.gpus === 1) as Job;
  const extra = samples.map((s, i) => ({
    dir: first.dir,
    sample: {
      solution_str: s.text,
      ground_truth: s.answer,
      extra_info: { tool_rewards: s.tool_ok.map((ok: boolean) => (ok ? 1 : 0)) },
    },
    id: `sample:${i}`,
  }));
  const list = [
    ...jobs.map((j) => ({ dir: j.dir, model: j.model, tools: j.tools, hydra: j.hydra })),
    { dir: first.dir, id: "no-model" },
    ...extra,
  ];
  writeFileSync(join(root, "jobs.json"), JSON.stringify(list));
  const r = spawnSync(python, ["export/engines/verl_check.py", join(root, "jobs.json")], {
    encoding: "utf8",
    maxBuffer: 1 << 28,
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
  });
  const lines = r.stdout.split("\n").filter((l) => l.startsWith("@@VERL_CHECK@@"));
  if (lines.length !== list.length)
    throw new Error(
      `verl_check.py: ${lines.length} of ${list.length} results (exit ${r.status}):\n${r.stderr.slice(-3000)}`,
    );
  lines.forEach((l, i) => {
    const item = list[i] as { dir: string; id?: string };
    results.set(item.id ?? item.dir, JSON.parse(l.slice("@@VERL_CHECK@@".length)));
  });
  // reward.py itself on the same samples (system python3 reads it the same way)
  const direct = spawnSync("python3", [join(first.dir, "reward.py")], {
    input: extra.map((e) => JSON.stringify({ data_source: "lab", ...e.sample })).join("\n"),
    encoding: "utf8",
  });
  results.set("direct", {
    steps: { direct: { ok: direct.status === 0, lines: direct.stdout.trim().split("\n") } },
  });
}, 3600_000);

describe("verl 0.9.1 takes every verl export", () => {
  it("every exportable preset and recipe file, on 1 and 8 GPUs: composes, validates, loads its reward and tools", () => {
    expect(jobs.length).toBeGreaterThanOrEqual(38);
    const problems: string[] = [];
    for (const j of jobs) {
      if (j.name === "liteppo") continue; // stops by design: its own test
      const { steps } = results.get(j.dir) as { steps: Steps };
      for (const [name, s] of Object.entries(steps))
        if (!s.ok) problems.push(`${j.name} (${j.gpus} GPU): ${name}: ${s.error}`);
      for (const name of ["compose", "validate", "reward", "tools", ...(j.model ? ["dataset"] : [])])
        if (!steps[name]) problems.push(`${j.name} (${j.gpus} GPU): ${name} did not run`);
    }
    expect(problems).toEqual([]);
  });

  it("every value the export wrote reads back through Hydra (YAML 1.1) as meant", () => {
    const problems: string[] = [];
    for (const j of jobs) {
      const meant = verlConfigYaml(j.config, j.name, [], verlBatch(j.config, j.gpus)).value;
      const { hydra: _h, defaults: _d, ...rest } = meant;
      const composed = (results.get(j.dir) as { steps: Steps }).steps.compose.config;
      for (const [path, v] of leaves(rest)) {
        if (RUN_SH.has(path) || j.hydra.some((h) => h.startsWith(`${path}=`))) continue;
        if (j.model && path === "actor_rollout_ref.model.path") continue;
        const got = at(composed, path);
        if (JSON.stringify(got) !== JSON.stringify(v))
          problems.push(`${j.name}: ${path} meant ${JSON.stringify(v)}, Hydra read ${JSON.stringify(got)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the rejection threshold reaches verl as its 'lower_upper' string, not YAML 1.1's number", () => {
    const j = jobs.find((x) => x.name === "rs-token") as Job;
    const composed = (results.get(j.dir) as { steps: Steps }).steps.compose.config;
    const want = verlRsThreshold(j.config.rl.rollout_correction);
    expect(want).toMatch(/^[0-9.]+_[0-9.]+$/);
    expect(at(composed, "algorithm.rollout_correction.rollout_rs_threshold")).toBe(want);
  });

  it("an estimator verl lacks is required: it fails where verl reads it, never verl's default gae", () => {
    const j = jobs.find((x) => x.name === "liteppo") as Job;
    const reads = (results.get(j.dir) as { steps: Steps }).steps.compose.reads as Record<
      string,
      { error?: string }
    >;
    expect(reads["algorithm.adv_estimator"].error).toMatch(/LAB_ADV_ESTIMATOR/);
    const validate = (results.get(j.dir) as { steps: Steps }).steps.validate;
    expect(validate.ok).toBe(false);
    expect(validate.error).toMatch(/LAB_ADV_ESTIMATOR/);
  });

  it("a lab-format model's path is required: the composed config fails where verl reads it, naming the variable", () => {
    const { steps } = results.get("no-model") as { steps: Steps };
    const reads = steps.compose.reads as Record<string, { value?: unknown; error?: string }>;
    expect(reads["actor_rollout_ref.model.path"].error).toMatch(/LAB_MODEL_PATH/);
    expect(reads["algorithm.adv_estimator"].value).toBe("grpo");
  });

  it("the lab-made Llama presets: train.parquet loads through RLHFDataset with the model's chat template", () => {
    const llama = jobs.filter((j) => j.model);
    expect(llama.length).toBeGreaterThan(0);
    for (const j of llama) {
      const d = (results.get(j.dir) as { steps: Steps }).steps.dataset;
      expect(d.ok, `${j.name}: ${d.error}`).toBe(true);
      expect(d.rows).toBe(j.config.stop.max_steps * j.config.rl.prompts_per_step);
      expect(String(d.first_prompt_text)).toMatch(/^<\|im_start\|>/);
      expect(String(d.first_prompt_text)).toMatch(/<\|im_start\|>assistant\n$/);
    }
  });

  it("the code tool answers through verl's tool interface on the local node runner", () => {
    const j = jobs.find((x) => x.name === "quick-demo.json") as Job;
    const t = (results.get(j.dir) as { steps: Steps }).steps.tools;
    expect(t.calls).toEqual([
      { code: "6*7", text: "42", tool_reward: 1 },
      { code: "(2+3)*4", text: "20", tool_reward: 1 },
      { code: "1/", text: "SyntaxError", tool_reward: 0 },
    ]);
  });

  it("the reward verl loads scores the lab's samples as reward.py does", () => {
    const direct = (results.get("direct") as { steps: Steps }).steps.direct;
    expect(direct.ok).toBe(true);
    // reward.py's command line prints {score, correct, terms}; compute_score returns verl's dict
    const want = (direct.lines as string[]).map((l) => JSON.parse(l).score);
    const got = [...results.keys()]
      .filter((k) => k.startsWith("sample:"))
      .map((k) => ((results.get(k) as { steps: Steps }).steps.reward.score as { score: number }).score);
    expect(got.length).toBeGreaterThan(5);
    expect(got).toEqual(want);
    expect(new Set(got).size).toBeGreaterThan(1);
  });
});
