// The TRL side of an export: GRPOConfig's arguments (each from a lab field, TRL_ARGS), the batch
// arithmetic that makes TRL run as many generations on as many prompts as the lab's run
// (trlBatch), what TRL's GRPOTrainer lacks (trlWarnings, TRL's own words), the task's tools as
// typed Python functions, and train_trl.py. Pure functions of a RunConfig; export/index.ts
// assembles the files. Facts about TRL (argument names, types, enum values) are in
// export/trl-keys.json (export/tools/trl-keys.mjs); export/export.test.ts checks against them.
import type { RunConfig } from "../config/schema.ts";
import { POLICY_LOSSES, policyLossEntry } from "../rl/algos/losses.ts";
import { isBuiltinTool, type Task } from "../tasks/types.ts";
import { clusterModel } from "./cluster.ts";
import { pretrainedSource, REGISTRY_DECISIONS, registryUses, type Unmapped } from "./mapping.ts";
import TRL_PY from "./trl/train_trl.py?raw";

/** Where a TRL run leaves its results (train_trl.py; docs/SCALE-OUT.md "Results"). */
export const TRL_RESULTS = {
  /** --output-dir's default, beside train_trl.py. */
  outputDir: "trl-out",
  /** trainer.save_state(): the whole log history (one entry per logging step) and the run's state. */
  state: "trl-out/trainer_state.json",
  /** log_completions: every prompt, completion, reward and advantage of the logged step. */
  completions: "trl-out/completions/completions_<step, 5 digits>.parquet",
} as const;

/**
 * Every GRPOConfig / TrainingArguments argument the TRL export can write, with the lab field it
 * comes from and how. docs/SCALE-OUT.md's TRL table is this table (trlArgsTableMarkdown).
 */
export const TRL_ARGS: Record<string, string> = {
  run_name: "the run's name",
  seed: "seed (the first seed: one TRL run per seed)",
  learning_rate: "rl.lr",
  lr_scheduler_type: "rl.schedule (cosine is cosine_with_min_lr)",
  lr_scheduler_kwargs: "rl.min_lr_ratio (min_lr_rate, for cosine)",
  warmup_steps:
    "rl.warmup_steps x optimizer steps per lab step (TRL moves the rate every optimizer step, the lab every RL step)",
  adam_beta1: "rl.betas[0]",
  adam_beta2: "rl.betas[1]",
  weight_decay: "rl.weight_decay",
  max_grad_norm: "rl.grad_clip (0 = off, written as 1e9)",
  max_steps:
    "stop.max_steps x rl.minibatches x rl.epochs: TRL counts optimizer steps, the lab one per minibatch per epoch",
  per_device_train_batch_size:
    "rl.micro_batch_size when it divides a process's share of a minibatch, else that share (--gpus processes)",
  gradient_accumulation_steps: "the minibatch (rollouts / rl.minibatches) / (per-device batch x --gpus)",
  steps_per_generation:
    "micro-steps per generation: rl.minibatches x gradient_accumulation_steps, so a generation holds prompts_per_step x group_size completions",
  num_generations: "rl.group_size",
  num_iterations: "rl.epochs (each generation is trained on this many times)",
  shuffle_dataset: "false: the lab's prompt order (train.parquet is in step order)",
  gradient_checkpointing: "model.gradient_checkpointing",
  bf16: "false: the lab computes in f32 (model.dtype f16 is the frozen base's storage only); TRL's default true also stops a run on a machine without a GPU",
  max_completion_length: "sampling.max_new_tokens",
  temperature: "sampling.temperature",
  top_p: "sampling.top_p",
  top_k: "sampling.top_k (written when > 0)",
  beta: "rl.kl.coef with rl.kl.in = loss (TRL's KL is k3 in the loss)",
  epsilon: "rl.clip_eps_low",
  epsilon_high: "rl.clip_eps_high (cispo: 1 + rl.clip_eps_high, TRL's cap on the weight itself)",
  loss_type: `rl.policy_loss and rl.loss_agg: ${POLICY_LOSSES.filter((e) => e.trl.lossType)
    .map((e) => `${e.name} ${e.trl.lossType}`)
    .join(", ")}; else token-mean dapo, seq-mean-token-mean grpo, seq-mean-token-sum-norm dr_grpo`,
  importance_sampling_level: `rl.policy_loss: sequence for ${POLICY_LOSSES.filter(
    (e) => e.trl.level === "sequence",
  )
    .map((e) => e.name)
    .join(" and ")}, token otherwise`,
  sapo_temperature_pos: "rl.sapo.tau_pos (sapo)",
  sapo_temperature_neg: "rl.sapo.tau_neg (sapo)",
  scale_rewards: "rl.advantage and rl.norm_adv_by_std: group, none (dr-grpo), batch (liteppo)",
  entropy_coef:
    "rl.entropy_coef, a fixed bonus (TRL's is the mean per-token entropy; the lab aggregates it as rl.loss_agg)",
  use_adaptive_entropy: "false: the lab's entropy coefficient is fixed",
  top_entropy_quantile: "rl.top_entropy_quantile (written when < 1)",
  max_tool_calling_iterations: "limits.max_tool_calls",
  eval_strategy: "steps: the lab evaluates every task.eval_every steps and at the end",
  eval_steps: "task.eval_every (0: only at the start and the end) x optimizer steps per lab step",
  eval_on_start: "the lab evaluates at RL step 0",
  per_device_eval_batch_size: "lab choice (memory only)",
  num_generations_eval: "1: the lab's val/acc is one answer per held-out prompt (TRL samples it)",
  logging_steps: "1: a metrics row per optimizer step",
  log_completions: "true: completions/completions_<step>.parquet in the output folder",
  save_steps: "checkpoint_every (0: at the end) x optimizer steps per lab step",
  report_to: "none (lab choice; trainer_state.json holds the log history)",
  reward_weights:
    "1 for lab_reward (rewards.terms); 0 for lab_acc and lab_valid_call, logged only (val/acc, val/valid_call_rate)",
};

/** TRL's per-process batch, accumulation and generation count for a run on `gpus` processes. */
export interface TrlBatch {
  gpus: number;
  perDevice: number;
  accum: number;
  stepsPerGeneration: number;
  /** Optimizer steps per lab RL step (rl.minibatches x rl.epochs). */
  optimizerSteps: number;
  warnings: Unmapped[];
}

export function trlBatch(c: RunConfig, gpus = 1): TrlBatch {
  if (!Number.isInteger(gpus) || gpus < 1) throw new Error(`--gpus: ${gpus} is not a positive whole number`);
  const r = c.rl;
  const rollouts = r.prompts_per_step * r.group_size;
  const warnings: Unmapped[] = [];
  const mini = Math.max(1, Math.floor(rollouts / r.minibatches));
  if (rollouts % r.minibatches !== 0)
    warnings.push({
      part: "rl.minibatches",
      why: `TRL's minibatches are equal: ${rollouts} rollouts do not divide into ${r.minibatches}; each optimizer step takes ${mini}`,
    });
  let W = gpus;
  while (mini % W !== 0) W--;
  if (W !== gpus)
    warnings.push({
      part: "--gpus",
      why: `a minibatch of ${mini} rollouts does not split over ${gpus} processes; train_trl.py's numbers are for ${W} (accelerate launch --num_processes ${W})`,
    });
  const share = mini / W;
  const m = r.micro_batch_size;
  const perDevice = m > 0 && m < share && share % m === 0 ? m : share;
  const accum = share / perDevice;
  return {
    gpus: W,
    perDevice,
    accum,
    stepsPerGeneration: (rollouts / (perDevice * W)) | 0,
    optimizerSteps: r.minibatches * r.epochs,
    warnings,
  };
}

const TRL_AGG: Record<string, string> = {
  "token-mean": "dapo",
  "seq-mean-token-mean": "grpo",
  "seq-mean-token-sum-norm": "dr_grpo",
  "seq-mean-token-sum": "dr_grpo",
};

/** TRL's loss_type and importance_sampling_level for the run's policy loss and aggregation. */
function trlLoss(c: RunConfig): { loss: string; level: "token" | "sequence" } {
  const t = policyLossEntry(c.rl.policy_loss).trl;
  // An unmapped loss is written as the clipped surrogate (trlWarnings says so).
  if (t.status === "unmapped") return { loss: TRL_AGG[c.rl.loss_agg], level: "token" };
  return { loss: t.lossType ?? TRL_AGG[c.rl.loss_agg], level: t.level };
}

/** GRPOConfig's arguments (name -> [value, lab source]) for a run on `batch.gpus` processes. */
export function trlConfig(
  c: RunConfig,
  name: string,
  batch: TrlBatch = trlBatch(c),
): Record<string, [unknown, string]> {
  const r = c.rl;
  const sched = r.schedule === "cosine" ? "cosine_with_min_lr" : r.schedule;
  const opt = batch.optimizerSteps;
  const { loss, level } = trlLoss(c);
  const out: Record<string, [unknown, string]> = {};
  const arg = (k: string, v: unknown) => {
    if (!(k in TRL_ARGS)) throw new Error(`export trl: ${k} has no row in TRL_ARGS`);
    out[k] = [v, TRL_ARGS[k]];
  };
  arg("run_name", name);
  arg("seed", c.seed);
  arg("learning_rate", r.lr);
  arg("lr_scheduler_type", sched);
  if (sched === "cosine_with_min_lr") arg("lr_scheduler_kwargs", { min_lr_rate: r.min_lr_ratio });
  arg("warmup_steps", r.warmup_steps * opt);
  arg("adam_beta1", r.betas[0]);
  arg("adam_beta2", r.betas[1]);
  arg("weight_decay", r.weight_decay);
  arg("max_grad_norm", r.grad_clip > 0 ? r.grad_clip : 1e9);
  arg("max_steps", c.stop.max_steps * opt);
  arg("per_device_train_batch_size", batch.perDevice);
  arg("gradient_accumulation_steps", batch.accum);
  arg("steps_per_generation", batch.stepsPerGeneration);
  arg("num_generations", r.group_size);
  arg("num_iterations", r.epochs);
  arg("shuffle_dataset", false);
  arg("gradient_checkpointing", c.model.gradient_checkpointing);
  arg("bf16", false);
  arg("max_completion_length", c.sampling.max_new_tokens);
  arg("temperature", c.sampling.temperature);
  arg("top_p", c.sampling.top_p);
  if (c.sampling.top_k > 0) arg("top_k", c.sampling.top_k);
  arg("beta", r.kl.in === "loss" ? r.kl.coef : 0);
  arg("epsilon", r.clip_eps_low);
  arg("epsilon_high", loss === "cispo" ? 1 + r.clip_eps_high : r.clip_eps_high);
  arg("loss_type", loss);
  arg("importance_sampling_level", level);
  if (loss === "sapo") {
    arg("sapo_temperature_pos", r.sapo.tau_pos);
    arg("sapo_temperature_neg", r.sapo.tau_neg);
  }
  arg(
    "scale_rewards",
    r.advantage === "liteppo" ? "batch" : r.advantage !== "dr-grpo" && r.norm_adv_by_std ? "group" : "none",
  );
  arg("entropy_coef", r.entropy_coef);
  arg("use_adaptive_entropy", false);
  if (r.top_entropy_quantile < 1) arg("top_entropy_quantile", r.top_entropy_quantile);
  arg("max_tool_calling_iterations", c.limits.max_tool_calls);
  arg("eval_strategy", "steps");
  arg("eval_steps", (c.task.eval_every > 0 ? c.task.eval_every : Math.max(1, c.stop.max_steps)) * opt);
  arg("eval_on_start", true);
  arg("per_device_eval_batch_size", Math.max(1, Math.min(8, c.task.eval_size)));
  arg("num_generations_eval", 1);
  arg("logging_steps", 1);
  arg("log_completions", true);
  arg("save_steps", (c.checkpoint_every > 0 ? c.checkpoint_every : Math.max(1, c.stop.max_steps)) * opt);
  arg("report_to", "none");
  arg("reward_weights", [1, 0, 0]);
  return out;
}

const TRL_HAS_ADVANTAGE = new Set(["grpo", "dr-grpo", "liteppo"]);

/** The parts of a run that TRL's GRPOTrainer does not have or that the TRL export does not carry. */
export function trlWarnings(c: RunConfig): Unmapped[] {
  const out: Unmapped[] = [];
  const r = c.rl;
  const add = (part: string, why: string) => out.push({ part, why });
  if (c.seeds > 1)
    add(
      "seeds",
      "an export is one run with the run's first seed; for N seeds run train_trl.py once per seed",
    );
  if (!pretrainedSource(c))
    add(
      "model",
      "the lab's tiny from-scratch transformer has no Hugging Face checkpoint; TRL trains a Hugging Face model (train_trl.py --model)",
    );
  if (c.model.dtype !== "f32")
    add("model.dtype", "the lab's f16 frozen base is not written; TRL loads the model in its own dtype");
  if (c.model.sha256 !== null) add("model.sha256", "TRL loads --model and checks no file hashes");
  if (c.sft.steps > 0 && c.sft.init_checkpoint === null)
    add(
      "sft.steps",
      "the SFT cold start is not part of GRPOTrainer; run TRL's SFTTrainer first and pass its output as --model",
    );
  if (c.sft.init_checkpoint !== null)
    add("sft.init_checkpoint", "a lab checkpoint is not a Hugging Face model; TRL starts from --model");
  if (c.task.dev_size > 0) add("task.dev_size", "TRL evaluates on one set; the dev set is not exported");
  if (c.stop.target !== null) add("stop.target", "early stopping on a metric is not in TRL's GRPOTrainer");
  if (c.rewards.custom_js.trim() !== "")
    add("rewards.custom_js", "a custom JavaScript reward is not exported (reward.py is Python)");
  if (r.std === "population")
    add("rl.std", "TRL scales by the sample std; the population std is not available");
  if (!r.mask_tool_output)
    add("rl.mask_tool_output", "TRL masks tool results out of the loss; training on them is not available");
  if (r.positive_lm_coef > 0 || r.lambda_critic !== null || r.length_adaptive_alpha !== null)
    add("rl (VAPO)", "VAPO's decoupled GAE, length-adaptive GAE and positive-example LM loss are not in TRL");
  if (!TRL_HAS_ADVANTAGE.has(r.advantage))
    add(
      `advantage:${r.advantage}`,
      "TRL's GRPOTrainer computes group-relative advantages only (grpo, dr-grpo; liteppo as scale_rewards batch)",
    );
  const trlOfLoss = policyLossEntry(r.policy_loss).trl;
  if (trlOfLoss.status === "unmapped") add(`policy-loss:${r.policy_loss}`, trlOfLoss.how);
  if (r.policy_loss === "cispo") {
    add(
      "policy-loss:cispo",
      "TRL's cispo caps the weight from above only (epsilon_high = 1 + rl.clip_eps_high); the lab also clips it below at 1 - rl.clip_eps_low",
    );
    if (r.loss_agg !== "token-mean")
      add("rl.loss_agg", "TRL's cispo loss is a token mean; the lab's run aggregates otherwise");
  }
  if (r.loss_agg === "seq-mean-token-sum" && trlLoss(c).loss === "dr_grpo")
    add(
      "agg:seq-mean-token-sum",
      "TRL has no seq-mean-token-sum loss; dr_grpo (a constant divisor) is written",
    );
  if (r.loss_agg === "seq-mean-token-sum-norm" && r.l_max !== null && r.l_max !== c.sampling.max_new_tokens)
    add("rl.l_max", "TRL's dr_grpo divides by max_completion_length; rl.l_max differs");
  if (r.rollout_correction.rollout_is !== "none" || r.rollout_correction.rollout_rs !== "none")
    add(
      "rl.rollout_correction",
      "TRL corrects only vLLM's sampler mismatch (vllm_importance_sampling_*); the lab's correction is not written",
    );
  if (r.kl.coef > 0 && r.kl.in === "reward") add("rl.kl.in", "TRL puts the KL in the loss only (beta)");
  if (r.kl.coef > 0 && r.kl.estimator !== "k3") add("rl.kl.estimator", "TRL's KL term is k3 only");
  if (r.dual_clip_c !== null) add("rl.dual_clip_c", "TRL has no dual clip");
  for (const { registry, name } of registryUses(c)) {
    const d = REGISTRY_DECISIONS[registry]?.[name];
    if (registry === "filter") add(`filter:${name}`, "TRL's GRPOTrainer has no rollout filters");
    else if (registry === "shaping") add(`shaping:${name}`, "TRL has no entropy shaping (TAO)");
    else if (registry === "aux-loss") add(`aux-loss:${name}`, "TRL has no auxiliary LM loss");
    else if (registry === "reward" && d?.status === "unmapped")
      add(
        `reward:${name}`,
        name === "otc-grpo"
          ? "reward.py does not implement OTC-GRPO (it needs its group's call counts)"
          : name === "dapo-overlong"
            ? "reward.py does not see token counts: DAPO's overlong penalty is not written"
            : "a custom JavaScript reward is not exported",
      );
  }
  for (const t of c.rewards.terms)
    if (t.name === "toolrl" && t.options.schedule === true)
      add(
        "rewards.terms.toolrl.schedule",
        "reward.py does not get the training step; it uses step 0's ranges",
      );
  return out;
}

const PY_TYPES: Record<string, string> = {
  string: "str",
  integer: "int",
  number: "float",
  boolean: "bool",
  array: "list",
  object: "dict",
};

/** The task's tools as Python functions TRL can offer (type hints + Google docstrings). */
export function trlToolsPy(task: Task): string {
  const lines: string[] = [];
  const specs: Record<string, unknown> = {};
  for (const t of task.tools) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(t.name))
      throw new Error(`export trl: tool name "${t.name}" is not a Python identifier`);
    const builtin = isBuiltinTool(t);
    specs[t.name] = builtin
      ? { kind: "code", allowed_chars: t.allowedChars ?? null }
      : { kind: "function", body: t.body };
    const props: Record<string, { type?: string; description?: string }> = builtin
      ? {
          code: {
            type: "string",
            description: "JavaScript to run; the value of its last expression is returned",
          },
        }
      : ((t.parameters.properties ?? {}) as Record<string, { type?: string; description?: string }>);
    const names = Object.keys(props);
    for (const n of names)
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
        throw new Error(`export trl: argument "${n}" of ${t.name} is not a Python identifier`);
    const sig = names.map((n) => `${n}: ${PY_TYPES[props[n].type ?? "string"] ?? "str"}`).join(", ");
    lines.push(`def ${t.name}(${sig}) -> str:`);
    lines.push(`    """${t.description.replace(/"""/g, "'''").replace(/\\/g, "\\\\")}`);
    lines.push("");
    lines.push("    Args:");
    for (const n of names) lines.push(`        ${n}: ${(props[n].description ?? n).replace(/\\/g, "\\\\")}`);
    lines.push('    """');
    lines.push(
      `    return run_tool(TOOL_SPECS[${JSON.stringify(t.name)}], {${names.map((n) => `${JSON.stringify(n)}: ${n}`).join(", ")}})`,
    );
    lines.push("", "");
  }
  lines.push(`TOOL_SPECS = json.loads(${JSON.stringify(JSON.stringify(specs))})`);
  lines.push(`TOOLS = [${task.tools.map((t) => t.name).join(", ")}]`);
  return lines.join("\n");
}

const pyName = (n: string, what: string) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n) || n === "reset" || n === "get_reward")
    throw new Error(
      `export trl: ${what} "${n}" is not a Python identifier TRL can call (nor reset, get_reward)`,
    );
  return n;
};
const docLine = (s: string) =>
  s
    .replace(/"""/g, "'''")
    .replace(/\\/g, "\\\\")
    .replace(/\s*\n\s*/g, " ");

/**
 * A JS environment's tools as the methods of TRL's environment class (lab_env.py
 * LabTrlEnvironment): typed, with Google docstrings TRL turns into the JSON schemas; each plays
 * one model turn of the lab's episode.
 */
export function trlEnvPy(
  tools: readonly { name: string; description: string; parameters: unknown }[],
  weight: number,
): string {
  const lines = [
    "class LabEnvironment(lab_env.LabTrlEnvironment):",
    '    """The lab environment of env.json, one instance per rollout (TRL environment_factory)."""',
    "",
    '    SPEC = json.load(open(os.path.join(HERE, "env.json")))',
    `    WEIGHT = ${weight}`,
  ];
  for (const t of tools) {
    const p = (t.parameters ?? {}) as {
      properties?: Record<string, { type?: string; description?: string; enum?: unknown[] }>;
      required?: string[];
    };
    const props = p.properties ?? {};
    const required = new Set(p.required ?? []);
    const names = Object.keys(props).map((n) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
        throw new Error(
          `export trl: argument "${n}" of ${t.name} is not an identifier (TRL reads arguments from a docstring)`,
        );
      return n;
    });
    // Required arguments first (Python's order); the optional ones default to None in the signature.
    const ordered = [...names.filter((n) => required.has(n)), ...names.filter((n) => !required.has(n))];
    lines.push("", `    def ${pyName(t.name, "tool name")}(self, **arguments) -> str:`);
    lines.push(`        """${docLine(t.description || t.name)}`);
    if (ordered.length > 0) {
      lines.push("", "        Args:");
      for (const n of ordered) {
        const e = props[n].enum;
        const choices = Array.isArray(e) ? ` (choices: ${JSON.stringify(e)})` : "";
        lines.push(`            ${n}: ${docLine(props[n].description ?? n)}${choices}`);
      }
    }
    lines.push('        """');
    lines.push(`        return self._tool(${JSON.stringify(t.name)}, arguments)`);
    // The typed signature TRL reads the schema from (an argument may be a Python keyword: "from").
    const params = ordered.map(
      (n) =>
        `(${JSON.stringify(n)}, ${PY_TYPES[props[n].type ?? "string"] ?? "str"}, ${required.has(n) ? "True" : "False"})`,
    );
    lines.push("", `    lab_env.typed(${t.name}, [${params.join(", ")}])`);
  }
  lines.push("", "", "TOOLS = []");
  return lines.join("\n");
}

/** PEFT's LoraConfig arguments for a LoRA run (null: full fine-tuning). */
export function trlLora(
  c: RunConfig,
): { r: number; lora_alpha: number; target_modules: string | string[] } | null {
  const l = c.model.lora;
  if (l.rank <= 0) return null;
  return {
    r: l.rank,
    lora_alpha: l.alpha,
    target_modules: l.targets === "all-linear" ? "all-linear" : [...l.targets],
  };
}

/** train_trl.py: the GRPOConfig, the model, LoRA, whether to pass tools, and the task's tools. */
export function trlPy(
  c: RunConfig,
  name: string,
  task: Task | null,
  o: { batch: TrlBatch; passTools: boolean; env?: { code: string; maxTurns: number } },
): string {
  const cfg = trlConfig(c, name, o.batch);
  // An environment's episode is max_turns model turns: every turn before the last may be a call.
  if (o.env)
    cfg.max_tool_calling_iterations = [
      Math.max(1, o.env.maxTurns - 1),
      "the environment's turn limit - 1 (the lab's tool-call limit is enforced by lab_env.py)",
    ];
  const model = clusterModel(c);
  const lab = {
    model: model.path,
    model_why: model.path === null ? model.why : null,
    optimizer_steps_per_lab_step: o.batch.optimizerSteps,
    lora: trlLora(c),
    pass_tools: o.passTools,
    env: o.env !== undefined,
    output_dir: TRL_RESULTS.outputDir,
    timeout_s: c.limits.tool_timeout_s,
    memory_mb: Math.max(512, c.limits.memory_mb),
    grpo_config: Object.fromEntries(Object.entries(cfg).map(([k, [v]]) => [k, v])),
  };
  const sources = Object.entries(cfg).map(([k, [, src]]) => `#   ${k}: ${src}`);
  const marker = "LAB = None  # @LAB_TRL@ (filled in by the exporter: GRPOConfig arguments, tools, limits)";
  const toolsMarker = "# @LAB_TOOLS@ (the task's tools as typed Python functions with docstrings, for TRL)";
  if (!TRL_PY.includes(marker) || !TRL_PY.includes(toolsMarker))
    throw new Error("export/trl/train_trl.py: a marker line is missing");
  return TRL_PY.replace(
    marker,
    `# GRPOConfig arguments and the lab fields they come from:\n${sources.join("\n")}\nLAB = json.loads(${JSON.stringify(JSON.stringify(lab))})`,
  ).replace(toolsMarker, o.env ? o.env.code : trlToolsPy(task as Task));
}

/** The TRL mapping as markdown (docs/SCALE-OUT.md, an export's README). */
export function trlArgsTableMarkdown(): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  const lines = ["| GRPOConfig argument | from the lab |", "| --- | --- |"];
  for (const [k, v] of Object.entries(TRL_ARGS)) lines.push(`| \`${k}\` | ${esc(v)} |`);
  return lines.join("\n");
}
