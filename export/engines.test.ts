// Tests that an export runs the same experiment on verl and TRL (issue 38), from facts read off
// their source at the pinned commits (export/verl-enums.json, export/trl-keys.json, made by
// export/tools/*.mjs): every enum value the exports write is one the engine accepts; verl's
// rejection sampling keeps exactly the tokens the lab keeps; verl's batch assertions hold for
// every preset on 1, 2, 4 and 8 GPUs; TRL runs as many generations on as many prompts as the
// lab; TRL gets the model, LoRA, GSPO/CISPO/SAPO and the entropy bonus; a template that ignores
// tools gets the lab's tool list in the prompts; TRL's texts name TRL; results land in known files.
// Run: npx vitest run --project unit export/engines.test.ts
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parquetReadObjects } from "hyparquet";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bundleFromRunFolder } from "../cli/link.ts";
import { mergeConfig } from "../config/edit.ts";
import { RECIPES } from "../config/presets.ts";
import type { RunConfig } from "../config/schema.ts";
import { JinjaChat } from "../model/chat.ts";
import { qwen3Files, qwen3Tokenizer } from "../model/qwen3-fixture.ts";
import { chatToolsOf } from "../model/tool-list-prompt.ts";
import { listRegistries } from "../rl/algos/registry.ts";
import { rolloutCorrection } from "../rl/update/sampler-mismatch.ts";
import { createRng } from "../tasks/rng.ts";
import { exportTask } from "./data.ts";
import { chatFactsOf, exportRun, StrictExportError } from "./index.ts";
import { recipeFiles as allRecipeFiles, config } from "./test-runs.ts";
import { trlArgsTableMarkdown, trlBatch, trlConfig } from "./trl.ts";
import TRL_KEYS from "./trl-keys.json";
import { VERL_DEFAULT_GPUS, VERL_ROLLOUT_RS, verlBatch, verlRsThreshold } from "./verl.ts";
import VERL_ENUMS from "./verl-enums.json";

const dec = new TextDecoder();
const text = (b: Uint8Array) => dec.decode(b);

const short = (c: unknown) =>
  config(mergeConfig(c as RunConfig, { stop: { max_steps: 2 }, task: { eval_size: 4 } }));

/** Every exportable preset and recipe file (full length: the step counts matter for TRL). */
function exportable(): { name: string; config: RunConfig }[] {
  const runs = Object.entries(RECIPES).map(([name, r]) => ({ name, config: config(r.config) }));
  return runs.filter(({ config: c }) => {
    try {
      exportTask(c);
      return true;
    } catch {
      return false;
    }
  });
}
/** The exportable recipe files, named by file. */
async function recipeFiles(): Promise<{ name: string; config: RunConfig }[]> {
  return (await allRecipeFiles())
    .filter(({ config: c }) => {
      try {
        exportTask(c);
        return true;
      } catch {
        return false;
      }
    })
    .map(({ file, config: c }) => ({ name: file, config: c }));
}
/** train_trl.py's LAB object (what the exporter embedded). */
const labOf = (py: string) => JSON.parse(JSON.parse(py.match(/^LAB = json\.loads\((.*)\)$/m)?.[1] as string));
const verlYaml = (c: RunConfig, o: { gpus?: number } = {}) =>
  parse(text(exportRun(c, { target: "verl", name: "t", ...o }).files["config.yaml"]));

// ---------------------------------------------------------------- verl enums

const ENUMS = VERL_ENUMS.enums as Record<string, { values: string[]; source: string }>;
const at = (y: Record<string, any>, path: string) => path.split(".").reduce((o, k) => o?.[k], y);

/** The enum keys the verl export writes whose value is outside verl's accepted set. */
function enumProblems(y: Record<string, any>): string[] {
  const out: string[] = [];
  for (const [path, { values }] of Object.entries(ENUMS)) {
    const v = at(y, path);
    if (v === undefined || v === null) continue;
    const parts = Array.isArray(v) ? v : String(v).split(",");
    for (const p of parts) if (!values.includes(p)) out.push(`${path}: ${p}`);
  }
  return out;
}

describe("verl: every enum value the export writes is one verl accepts", () => {
  it("the facts name verl's commit and the source lines", () => {
    expect(VERL_ENUMS.verl_commit).toBe("b178a3cd56f58b2d502255daba591e92833930a7");
    expect(ENUMS["algorithm.rollout_correction.rollout_rs"].values).toContain("seq_mean_k1");
    expect(ENUMS["algorithm.rollout_correction.rollout_rs"].values).not.toContain("token");
    expect(ENUMS["algorithm.rollout_correction.rollout_rs"].source).toMatch(/rollout_corr_helper\.py:78/);
    expect(VERL_DEFAULT_GPUS).toBe(8);
  });

  it("presets, recipe files and every registry entry, rejection modes included", async () => {
    const runs = [...exportable(), ...(await recipeFiles())].map((r) => short(r.config));
    for (const { registry, name } of listRegistries()) {
      if (registry === "advantage") runs.push(short({ rl: { advantage: name } }));
      if (registry === "policy-loss") runs.push(short({ rl: { policy_loss: name } }));
      if (registry === "agg") runs.push(short({ rl: { loss_agg: name } }));
      if (registry === "kl") runs.push(short({ rl: { kl: { coef: 0.01, estimator: name } } }));
    }
    for (const rs of ["token", "sequence", "geometric"])
      for (const is of ["none", "token", "sequence"])
        runs.push(short({ rl: { rollout_correction: { rollout_rs: rs, rollout_is: is } } }));
    runs.push(short({ rl: { schedule: "constant" } }), short({ rl: { schedule: "linear" } }));
    const problems = runs.flatMap((c) => {
      const y = verlYaml(c);
      const adv = y.algorithm.adv_estimator;
      // An estimator verl lacks is OmegaConf's missing value: Hydra refuses it at composition.
      if (adv === "???") delete y.algorithm.adv_estimator;
      return enumProblems(y);
    });
    expect(problems).toEqual([]);
    expect(runs.length).toBeGreaterThan(50);
  });

  it("the check catches the old rejection mode names", () => {
    const y = { algorithm: { rollout_correction: { rollout_rs: "geometric" } } };
    expect(enumProblems(y)).toEqual(["algorithm.rollout_correction.rollout_rs: geometric"]);
  });

  it("unmapped estimators (GiGPO, LitePPO) are written as ??? with their warning", () => {
    for (const adv of ["gigpo", "liteppo"]) {
      const c = short({
        ...(adv === "gigpo" ? { task: { template: "chatml-turns" } } : {}),
        rl: { advantage: adv },
      });
      const exp = exportRun(c, { target: "verl", name: "t" });
      expect(parse(text(exp.files["config.yaml"])).algorithm.adv_estimator, adv).toBe("???");
      expect(exp.warnings.map((w) => w.part)).toContain(`advantage:${adv}`);
    }
  });
});

// ---------------------------------------------------------------- verl rejection sampling

/**
 * verl's k1 rejection at the pinned commit (rollout_corr_helper.py): log_ratio = old - rollout
 * (line 782: "log(π_train / π_rollout)"), token_k1 = -log_ratio (line 222); a k1 threshold
 * "lower_upper" (lines 120-136) keeps log(lower) <= stat <= log(upper) (lines 264, 281, 297),
 * stat = token_k1, its masked sum (seq_sum) or masked mean (seq_mean) over the response.
 */
function verlKeep(
  old: Float64Array[],
  rollout: Float64Array[],
  mask: Float64Array[],
  option: string,
  threshold: string,
): number[][] {
  const [lo, hi] = threshold.split("_").map(Number);
  return old.map((o, b) => {
    const k1 = Array.from(o, (x, t) => -(x - rollout[b][t]));
    const n = mask[b].reduce((s, m) => s + m, 0);
    const sum = k1.reduce((s, x, t) => s + x * mask[b][t], 0);
    return k1.map((x, t) => {
      if (!mask[b][t]) return 1;
      const stat = option === "token_k1" ? x : option === "seq_sum_k1" ? sum : sum / n;
      return stat >= Math.log(lo) && stat <= Math.log(hi) ? 1 : 0;
    });
  });
}

describe("verl: rejection sampling keeps the tokens the lab keeps", () => {
  const batch = (seed: number) => {
    const rng = createRng(`rs:${seed}`);
    const B = 4;
    const T = 7;
    const old: Float64Array[] = [];
    const rollout: Float64Array[] = [];
    const mask: Float64Array[] = [];
    for (let b = 0; b < B; b++) {
      old.push(Float64Array.from({ length: T }, () => -2 * rng.next()));
      rollout.push(Float64Array.from(old[b], (x) => x + 0.3 * (rng.next() - 0.5)));
      mask.push(Float64Array.from({ length: T }, (_, t) => (t < 2 + (b % 5) ? 1 : 0)));
    }
    return { old, rollout, mask };
  };

  it("token, sequence and geometric with symmetric and asymmetric bounds, on 200 random batches", () => {
    let naiveDiffers = 0;
    let cases = 0;
    for (const mode of ["token", "sequence", "geometric"] as const)
      for (const [hi, lo] of [
        [1.05, null],
        [1.08, 0.99],
        [1.2, 0.97],
      ] as const)
        for (let seed = 0; seed < 200 / 9 + 1; seed++) {
          const rc = {
            rollout_is: "none" as const,
            rollout_is_threshold: 2,
            rollout_rs: mode,
            rollout_rs_threshold: hi,
            rollout_rs_threshold_lower: lo,
          };
          const { old, rollout, mask } = batch(seed + 1000 * cases);
          const lab = rolloutCorrection(old, rollout, mask, rc).keep?.map((r) => Array.from(r));
          const verl = verlKeep(old, rollout, mask, VERL_ROLLOUT_RS[mode], verlRsThreshold(rc));
          expect(verl, `${mode} [${lo}, ${hi}] seed ${seed}`).toEqual(lab);
          // The naive mapping (the lab's bounds as verl's) is not the same rejection.
          const naive = verlKeep(old, rollout, mask, VERL_ROLLOUT_RS[mode], `${lo ?? 1 / hi}_${hi}`);
          if (JSON.stringify(naive) !== JSON.stringify(lab)) naiveDiffers++;
          cases++;
        }
    expect(naiveDiffers / cases).toBeGreaterThan(0.1);
  });

  it("writes the k1 option and 'lower_upper' as verl reads them", () => {
    const y = verlYaml(
      short({
        rl: {
          rollout_correction: {
            rollout_rs: "geometric",
            rollout_rs_threshold: 1.25,
            rollout_rs_threshold_lower: 0.5,
          },
        },
      }),
    );
    expect(y.algorithm.rollout_correction.rollout_rs).toBe("seq_mean_k1");
    expect(y.algorithm.rollout_correction.rollout_rs_threshold).toBe("0.8_2");
  });
});

// ---------------------------------------------------------------- verl batch arithmetic

/** verl's assertions on the batch (verl/utils/config.py:109-112, fsdp_workers.py:241-262, 1232-1251). */
function verlAssertions(y: Record<string, any>): string[] {
  const G = y.trainer.n_gpus_per_node * y.trainer.nnodes;
  const n = y.actor_rollout_ref.rollout.n;
  const out: string[] = [];
  if ((y.data.train_batch_size * n) % G !== 0) out.push(`real_train_batch_size % ${G}`);
  const mini = Math.floor((y.actor_rollout_ref.actor.ppo_mini_batch_size * n) / G);
  if (!(mini > 0)) out.push("ppo_mini_batch_size 0 after normalization");
  for (const micro of [
    y.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu,
    y.critic?.ppo_micro_batch_size_per_gpu,
  ])
    if (micro !== undefined && (mini % micro !== 0 || mini / micro < 1))
      out.push(`micro ${micro} vs ${mini}`);
  if (y.data.train_batch_size < y.actor_rollout_ref.actor.ppo_mini_batch_size) out.push("train < mini");
  return out;
}

describe("verl: --gpus", () => {
  it("every exportable preset and recipe file on 1, 2, 4 and 8 GPUs passes verl's batch assertions", async () => {
    const runs = [...exportable(), ...(await recipeFiles())];
    for (const run of runs)
      for (const gpus of [1, 2, 4, 8]) {
        const c = short(run.config);
        const exp = exportRun(c, { target: "verl", name: run.name, gpus });
        const y = parse(text(exp.files["config.yaml"]));
        expect(verlAssertions(y), `${run.name} on ${gpus}`).toEqual([]);
        const adjusted = exp.warnings.some((w) => w.part === "--gpus" || w.part === "rl.minibatches");
        const labMini = c.rl.prompts_per_step / c.rl.minibatches;
        // Unless warned, the minibatch is the lab's and the GPUs are the ones asked for.
        if (!adjusted) {
          expect(y.actor_rollout_ref.actor.ppo_mini_batch_size, run.name).toBe(labMini);
          expect(y.trainer.n_gpus_per_node * y.trainer.nnodes).toBe(gpus);
        }
      }
  });

  it("smollm2-calculator (1 prompt x 4 rollouts per minibatch) on 8 GPUs: raised to 2 prompts with a warning; --strict refuses", async () => {
    const run = (await recipeFiles()).find((r) => r.name === "smollm2-calculator.json");
    const c = short(run?.config);
    const exp = exportRun(c, { target: "verl", name: "s" });
    const y = parse(text(exp.files["config.yaml"]));
    expect([y.actor_rollout_ref.actor.ppo_mini_batch_size, y.trainer.n_gpus_per_node]).toEqual([2, 8]);
    expect(
      exp.warnings.find((w) => w.part === "rl.minibatches" && w.why.includes("fsdp_workers"))?.why,
    ).toContain("writes 2");
    const one = verlYaml(c, { gpus: 1 });
    expect([one.actor_rollout_ref.actor.ppo_mini_batch_size, one.trainer.n_gpus_per_node]).toEqual([1, 1]);
    expect(() => exportRun(c, { target: "verl", name: "s", strict: true })).toThrow(StrictExportError);
  });

  it("a step that does not split over the GPUs runs on fewer, with a warning", () => {
    const c = short({ rl: { prompts_per_step: 3, group_size: 2, minibatches: 1 } });
    const b = verlBatch(c, 4);
    expect([b.gpus, b.nGpusPerNode, b.nnodes]).toEqual([3, 3, 1]);
    expect(b.warnings[0].why).toContain("verl/utils/config.py:109-112");
    expect(verlBatch(config({}), 16)).toMatchObject({ gpus: 16, nGpusPerNode: 8, nnodes: 2 });
    expect(() => verlBatch(c, 0)).toThrow(/--gpus/);
  });
});

// ---------------------------------------------------------------- TRL generations

/**
 * What TRL runs, from its source at f2cd57710:
 *  - Trainer: one optimizer step (global_step, counted by max_steps) per
 *    gradient_accumulation_steps calls of training_step;
 *  - grpo_trainer.py:1543-1546: GRPOTrainer._step counts training_step calls (micro-steps);
 *  - grpo_trainer.py:1571-1579: it generates when _step % (steps_per_generation x num_iterations) == 0;
 *  - grpo_config.py:1090-1091: generation_batch_size = per_device_train_batch_size x processes x steps_per_generation;
 *  - grpo_trainer.py:1260-1265: each generation draws generation_batch_size / num_generations prompts.
 */
function trlRuns(args: Record<string, [unknown, string]>, processes: number) {
  const v = (k: string) => args[k][0] as number;
  const microSteps = v("max_steps") * v("gradient_accumulation_steps");
  const generations = Math.ceil(microSteps / (v("steps_per_generation") * v("num_iterations")));
  const generationBatch = v("per_device_train_batch_size") * processes * v("steps_per_generation");
  return { generations, prompts: (generations * generationBatch) / v("num_generations"), generationBatch };
}

describe("TRL: as many generations, on as many prompts, as the lab", () => {
  it("quick-demo: 10 generations of 64 completions (not 5), 80 prompts", async () => {
    const run = (await recipeFiles()).find((r) => r.name === "quick-demo.json");
    const c = run?.config as RunConfig;
    const r = trlRuns(trlConfig(c, "q"), 1);
    expect(r).toEqual({ generations: 10, prompts: 80, generationBatch: 64 });
    // With micro-batches of 8 the generation batch stays 64.
    const m = config(mergeConfig(c, { rl: { micro_batch_size: 8 } }));
    expect(trlRuns(trlConfig(m, "q"), 1)).toEqual({ generations: 10, prompts: 80, generationBatch: 64 });
    expect(trlConfig(m, "q").per_device_train_batch_size[0]).toBe(8);
  });

  it("every exportable preset and recipe file, with and without micro-batches, on 1 and 2 processes", async () => {
    const runs = [...exportable(), ...(await recipeFiles())];
    let checked = 0;
    for (const run of runs)
      for (const micro of [0, 2])
        for (const gpus of [1, 2]) {
          const c = config(mergeConfig(run.config, { rl: { micro_batch_size: micro } }));
          const b = trlBatch(c, gpus);
          const r = trlRuns(trlConfig(c, run.name, b), b.gpus);
          const label = `${run.name} micro ${micro} on ${gpus}`;
          expect(r.generations, label).toBe(c.stop.max_steps);
          expect(r.prompts, label).toBe(c.stop.max_steps * c.rl.prompts_per_step);
          expect(r.generationBatch, label).toBe(c.rl.prompts_per_step * c.rl.group_size);
          checked++;
        }
    expect(checked).toBeGreaterThan(100);
  });

  it("the generations read the whole train.parquet", async () => {
    const c = short({});
    const exp = exportRun(c, { target: "trl", name: "t" });
    const rows = await parquetReadObjects({ file: exp.files["train.parquet"].slice().buffer });
    expect(rows.length).toBe(trlRuns(trlConfig(c, "t"), 1).prompts);
  });
});

// ---------------------------------------------------------------- TRL mapping

const GRPO = TRL_KEYS.grpo_config as {
  names: string[];
  types: Record<string, string>;
  enums: Record<string, { values: string[]; source: string }>;
};

describe("TRL: what TRL has is mapped, with values TRL accepts", () => {
  it("every enum value written is one GRPOTrainer compares with; numbers where TRL has numbers", () => {
    const variants = [
      ...Object.values(RECIPES).map((r) => config(r.config)),
      ...["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"].map((a) =>
        short({ rl: { loss_agg: a } }),
      ),
      ...["gspo", "gspo-token", "cispo", "sapo"].map((p) => short({ rl: { policy_loss: p } })),
      short({ rl: { advantage: "liteppo" } }),
      short({ rl: { advantage: "dr-grpo" } }),
    ];
    for (const c of variants) {
      const args = trlConfig(c, "t");
      for (const [k, { values }] of Object.entries(GRPO.enums))
        if (args[k]) expect(values, `${k} = ${args[k][0]}`).toContain(args[k][0]);
      for (const [k, [v]] of Object.entries(args)) {
        const t = GRPO.types[k];
        if (t?.startsWith("float") || t?.startsWith("int")) expect(typeof v, k).toBe("number");
        if (t === "bool") expect(typeof v, k).toBe("boolean");
      }
    }
    expect(GRPO.enums.loss_type.source).toMatch(/^trl\/trainer\/grpo_trainer\.py:/);
  });

  it("GSPO is sequence-level importance sampling; CISPO and SAPO are TRL's losses; the entropy bonus is written", () => {
    const gspo = trlConfig(short({ rl: { policy_loss: "gspo" } }), "t");
    expect([gspo.importance_sampling_level[0], gspo.loss_type[0]]).toEqual(["sequence", "grpo"]);
    const cispo = trlConfig(short({ rl: { policy_loss: "cispo", clip_eps_high: 4 } }), "t");
    expect([cispo.loss_type[0], cispo.epsilon_high[0]]).toEqual(["cispo", 5]);
    const sapo = trlConfig(short({ rl: { policy_loss: "sapo", sapo: { tau_pos: 0.9, tau_neg: 1.2 } } }), "t");
    expect([sapo.loss_type[0], sapo.sapo_temperature_pos[0], sapo.sapo_temperature_neg[0]]).toEqual([
      "sapo",
      0.9,
      1.2,
    ]);
    const ent = short({ rl: { entropy_coef: 0.01 } });
    expect([trlConfig(ent, "t").entropy_coef[0], trlConfig(ent, "t").use_adaptive_entropy[0]]).toEqual([
      0.01,
      false,
    ]);
    const parts = (c: RunConfig) => exportRun(c, { target: "trl", name: "t" }).warnings.map((w) => w.part);
    expect(parts(ent)).not.toContain("rl.entropy_coef");
    expect(parts(short({ rl: { policy_loss: "gspo" } }))).not.toContain("policy-loss:gspo");
    expect(parts(short({ rl: { policy_loss: "sapo" } }))).not.toContain("policy-loss:sapo");
    expect(parts(short({ rl: { policy_loss: "gmpo" } }))).toContain("policy-loss:gmpo");
  });

  it("LoRA becomes PEFT's LoraConfig, and the model id is passed", async () => {
    const files = await recipeFiles();
    const qwen = files.find((r) => r.name === "qwen-calculator.json")?.config as RunConfig;
    const smol = files.find((r) => r.name === "smollm2-calculator.json")?.config as RunConfig;
    const lab = (c: RunConfig) =>
      labOf(text(exportRun(short(c), { target: "trl", name: "t" }).files["train_trl.py"]));
    expect(lab(qwen).lora).toEqual({
      r: 16,
      lora_alpha: qwen.model.lora.alpha,
      target_modules: "all-linear",
    });
    expect(lab(qwen).model).toBe("models/Qwen2.5-0.5B-Instruct");
    expect(lab(smol).model).toBe("HuggingFaceTB/SmolLM2-135M-Instruct");
    expect(lab(smol).lora).toBeNull();
    const py = text(exportRun(short(qwen), { target: "trl", name: "t" }).files["train_trl.py"]);
    expect(py).toContain('LoraConfig(task_type="CAUSAL_LM", **LAB["lora"])');
  });

  it("TRL's texts name TRL, not verl; TRL evaluates", () => {
    for (const [name, r] of Object.entries(RECIPES)) {
      let c: RunConfig;
      try {
        c = short(r.config);
        exportTask(c);
      } catch {
        continue;
      }
      const exp = exportRun(c, { target: "trl", name });
      for (const w of exp.warnings) expect(`${w.part}: ${w.why}`, name).not.toMatch(/\bverl\b/i);
      expect(text(exp.files["README.md"]), name).not.toMatch(/\bverl\b/i);
      try {
        exportRun(c, { target: "trl", name, strict: true });
      } catch (e) {
        expect((e as Error).message).toContain("TRL's GRPOTrainer");
        expect((e as Error).message).not.toMatch(/\bverl\b/i);
      }
    }
    const args = trlConfig(short({ task: { eval_every: 5 } }), "t");
    expect([args.eval_strategy[0], args.eval_steps[0], args.eval_on_start[0]]).toEqual([
      "steps",
      5 * 2 * 2,
      true,
    ]);
  });
});

// ---------------------------------------------------------------- templates that ignore tools

describe("a template that ignores tools (SmolLM2's kind)", () => {
  const base = { task: { template: "model", tool_prompt: "hermes" }, model: { tokenizer: "x" } };
  const c = short(base);

  it("both exports write the lab's own tool list into the prompts' system message", async () => {
    const { task } = exportTask(c);
    // The lab's rendering with such a template (model/chat.ts JinjaChat on a plain ChatML template).
    const plain = {
      ...qwen3Files().config,
      chat_template:
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}",
    };
    const lab = new JinjaChat(qwen3Tokenizer(), plain, {
      tools: chatToolsOf(task.tools),
      check: "strict",
      toolPrompt: "hermes",
    });
    expect(lab.rendersTools).toBe(false);
    const chat = chatFactsOf([{}, { chat: { renders_tools: false } }]);
    for (const target of ["verl", "trl"] as const) {
      const exp = exportRun(c, { target, name: "t", chat });
      const rows = (await parquetReadObjects({ file: exp.files["train.parquet"].slice().buffer })) as any[];
      const draw = task.sample(createRng(`${c.seed}:rl:0:0`), c.rl.prompts_per_step);
      expect(
        rows.slice(0, draw.length).map((r) => r.prompt),
        target,
      ).toEqual(draw.map((p) => lab.templateMessages(p.messages)));
      expect(rows[0].prompt[0].content).toContain("<tools>");
    }
    const trl = exportRun(c, { target: "trl", name: "t", chat });
    expect(labOf(text(trl.files["train_trl.py"])).pass_tools).toBe(false);
    expect(trl.warnings.map((w) => w.part)).toContain("task.tools (template)");
  });

  it("a template that renders tools gets none in the prompts, and TRL passes tools=", async () => {
    const exp = exportRun(c, { target: "trl", name: "t", chat: { renders_tools: true } });
    const rows = (await parquetReadObjects({ file: exp.files["train.parquet"].slice().buffer })) as any[];
    expect(JSON.stringify(rows[0].prompt)).not.toContain("<tools>");
    expect(labOf(text(exp.files["train_trl.py"])).pass_tools).toBe(true);
  });

  it("a CLI run folder's events.jsonl carries the record to the export", () => {
    const dir = mkdtempSync(join(tmpdir(), "lab-export-run-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify(c));
    const e = { step: 0, phase: "rl", kind: "info", message: "m", chat: { renders_tools: false } };
    writeFileSync(join(dir, "events.jsonl"), `${JSON.stringify(e)}\n`);
    expect(chatFactsOf(bundleFromRunFolder(dir, { weights: false }).events)).toEqual({
      renders_tools: false,
    });
  });

  it("a run that never loaded its model says so", () => {
    expect(exportRun(c, { target: "verl", name: "t" }).warnings.map((w) => w.part)).toContain(
      "task.template (model)",
    );
    expect(chatFactsOf([{}, {}])).toBeNull();
  });
});

// ---------------------------------------------------------------- results and docs

describe("results land in known files", () => {
  it("verl: the file logger, its path in run.sh, the rollout and validation dirs", () => {
    const exp = exportRun(short({}), { target: "verl", name: "t" });
    const y = parse(text(exp.files["config.yaml"]));
    expect(y.trainer.logger).toEqual(["console", "file"]);
    expect([y.trainer.rollout_data_dir, y.trainer.validation_data_dir]).toEqual([
      "results/rollouts",
      "results/validation",
    ]);
    const sh = text(exp.files["run.sh"]);
    expect(sh).toContain(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell default, not a template
      'export VERL_FILE_LOGGER_PATH="${VERL_FILE_LOGGER_PATH:-$HERE/results/metrics.jsonl}"',
    );
    expect(sh).toContain('trainer.rollout_data_dir="$HERE/results/rollouts"');
  });

  it("TRL: log_completions and trainer.save_state()", () => {
    const exp = exportRun(short({}), { target: "trl", name: "t" });
    const py = text(exp.files["train_trl.py"]);
    expect(labOf(py).grpo_config.log_completions).toBe(true);
    expect(py).toContain("    trainer.save_state()");
    expect(labOf(py).output_dir).toBe("trl-out");
  });

  it("docs/SCALE-OUT.md shows the TRL table the code writes, and --gpus", () => {
    const doc = readFileSync("docs/SCALE-OUT.md", "utf8");
    const m = doc.match(/<!-- trl-table:start -->\n([\s\S]*?)\n<!-- trl-table:end -->/);
    expect(m?.[1], "regenerate: npm run export -- --table trl").toBe(trlArgsTableMarkdown());
    expect(doc).toContain("--gpus");
    for (const f of [
      "results/metrics.jsonl",
      "results/rollouts",
      "trl-out/trainer_state.json",
      "completions_",
    ])
      expect(doc).toContain(f);
  });
});
