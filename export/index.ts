// export/: a lab run's way out to a distributed engine. exportRun(config) returns the files
// of an export as {path: bytes} (pure: the CLI writes them to a folder, the page can zip
// them) and the warnings: every unmapped part the run uses (export/mapping.ts). `strict`
// refuses a run with any. Targets:
//   verl  config.yaml (Hydra, composes verl's ppo_trainer), tool_config.yaml, lab_tools.py,
//         lab_node.py, reward.py, train.parquet, val.parquet, run.sh, README.md
//   trl   train_trl.py (GRPOConfig + GRPOTrainer), reward.py, lab_node.py, the parquet files,
//         README.md
// Depends on config/, the registry names (mapping.ts) and tasks/. CLI: cli/export.ts
// (`npm run export -- verl <recipe.json | bundle | --link URL> --out DIR`).
// Tested by export/export.test.ts (`npx vitest run --project unit export/`).
import type { RunConfig } from "../config/schema.ts";
import { isBuiltinTool, type Task } from "../tasks/types.ts";
import { datasetRows, exportTask, rowsToParquet } from "./data.ts";
import { mappingTableMarkdown, REGISTRY_DECISIONS, type Unmapped, unmappedInUse } from "./mapping.ts";
import TRL_PY from "./trl/train_trl.py?raw";
import TRL_KEYS from "./trl-keys.json";
import LAB_NODE_PY from "./verl/lab_node.py?raw";
import LAB_TOOLS_PY from "./verl/lab_tools.py?raw";
import REWARD_PY from "./verl/reward.py?raw";
import { runSh, toolConfigYaml, verlConfigYaml } from "./verl.ts";
import VERL_KEYS from "./verl-keys.json";

export const LAB_VERSION = "agentic-rl-lab 0.1.0";
export const VERL_COMMIT = VERL_KEYS.verl_commit;
export type Target = "verl" | "trl";

export interface ExportOptions {
  target: Target;
  /** The run's name (experiment name, README title). */
  name: string;
  /** Refuse the run when any part it uses does not map. */
  strict?: boolean;
  /** Where the run came from (a recipe path, "link", a bundle), for the README. */
  source?: string;
}

export interface ExportResult {
  files: Record<string, Uint8Array>;
  warnings: Unmapped[];
  /** The reward terms reward.py implements, and those left out (listed in warnings). */
  rewardTerms: string[];
}

export class StrictExportError extends Error {
  constructor(readonly warnings: Unmapped[]) {
    super(
      `export --strict: the run uses ${warnings.length} part(s) that verl's PPO trainer does not have:\n${warnings
        .map((w) => `  - ${w.part}: ${w.why}`)
        .join("\n")}`,
    );
  }
}

const enc = new TextEncoder();

/** The reward spec reward.py embeds: the exportable terms (weights, options) and the verifier. */
export function rewardSpec(c: RunConfig, verifier: string) {
  const terms = c.rewards.terms
    .filter((t) => REGISTRY_DECISIONS.reward[t.name]?.status !== "unmapped")
    .map((t) => ({ name: t.name, weight: t.weight, options: t.options }));
  return { terms, verifier };
}

export function rewardPy(spec: ReturnType<typeof rewardSpec>): string {
  const marker = "LAB_REWARD = None  # @LAB_REWARD@ (filled in by the exporter: terms, verifier)";
  if (!REWARD_PY.includes(marker)) throw new Error("export/verl/reward.py: the @LAB_REWARD@ line is missing");
  return REWARD_PY.replace(marker, `LAB_REWARD = json.loads(${JSON.stringify(JSON.stringify(spec))})`);
}

/** Warnings beyond the mapping table that depend on the task and the exact numbers. */
function taskWarnings(c: RunConfig, task: Task): Unmapped[] {
  const out: Unmapped[] = [];
  if (c.task.template === "inline")
    out.push({
      part: "task.template",
      why: "the inline template with non-JSON calls: verl's Hermes agent loop parses only JSON calls in separate turns; the export uses Hermes turns",
    });
  if (task.tools.some(isBuiltinTool))
    out.push({
      part: "task.tools (code tool)",
      why: 'the code tool is offered as a JSON function {"code": ...}; a model trained in the lab on bare-code calls (<tool_call>1+2</tool_call>) does not write them',
    });
  if (c.rl.prompts_per_step % c.rl.minibatches !== 0)
    out.push({
      part: "rl.minibatches",
      why: `verl splits a step by prompts: ${c.rl.prompts_per_step} prompts do not divide into ${c.rl.minibatches} minibatches (ppo_mini_batch_size ${Math.max(1, Math.floor(c.rl.prompts_per_step / c.rl.minibatches))})`,
    });
  return out;
}

/** TRL's GRPOTrainer has less than verl's PPO trainer: these parts do not carry over. */
function trlWarnings(c: RunConfig): Unmapped[] {
  const out: Unmapped[] = [];
  const r = c.rl;
  if (r.advantage !== "grpo" && r.advantage !== "dr-grpo" && r.advantage !== "liteppo")
    out.push({
      part: `advantage:${r.advantage}`,
      why: "TRL's GRPOTrainer computes group-relative advantages only (grpo, dr-grpo; liteppo as scale_rewards batch)",
    });
  if (r.rollout_correction.rollout_is !== "none" || r.rollout_correction.rollout_rs !== "none")
    out.push({
      part: "rl.rollout_correction",
      why: "TRL's vLLM importance-sampling correction has its own knobs (vllm_importance_sampling_*); not written",
    });
  if (r.kl.coef > 0 && r.kl.in === "reward")
    out.push({ part: "rl.kl.in", why: "TRL puts the KL in the loss only (beta)" });
  if (r.kl.coef > 0 && r.kl.estimator !== "k3")
    out.push({ part: "rl.kl.estimator", why: "TRL's KL term is k3 only" });
  if (r.loss_agg === "seq-mean-token-sum")
    out.push({ part: "agg:seq-mean-token-sum", why: "TRL has no seq-mean-token-sum loss" });
  if (r.dual_clip_c !== null) out.push({ part: "rl.dual_clip_c", why: "TRL has no dual clip" });
  if (r.policy_loss !== "ppo-clip")
    out.push({ part: `policy-loss:${r.policy_loss}`, why: "TRL's GRPO loss is the clipped surrogate" });
  if (r.entropy_coef > 0)
    out.push({
      part: "rl.entropy_coef",
      why: "TRL's entropy_coef is an adaptive-entropy option; not written",
    });
  return out;
}

const TRL_LOSS: Record<string, string> = {
  "token-mean": "dapo",
  "seq-mean-token-mean": "grpo",
  "seq-mean-token-sum-norm": "dr_grpo",
  "seq-mean-token-sum": "dr_grpo",
};

/** A minibatch as TRL's per-device batch x gradient accumulation (rl.micro_batch_size when it divides it). */
function trlBatch(mini: number, micro: number): Record<string, [unknown, string]> {
  const source = "rl.prompts_per_step x rl.group_size / rl.minibatches";
  if (micro > 0 && micro < mini && Number.isInteger(mini / micro)) {
    return {
      per_device_train_batch_size: [micro, "rl.micro_batch_size"],
      gradient_accumulation_steps: [mini / micro, `the minibatch (${source}) / rl.micro_batch_size`],
    };
  }
  return {
    per_device_train_batch_size: [mini, source],
    gradient_accumulation_steps: [1, "one optimizer step per minibatch"],
  };
}

/** GRPOConfig's arguments (name -> [value, lab source]). */
export function trlConfig(c: RunConfig, name: string): Record<string, [unknown, string]> {
  const r = c.rl;
  const rollouts = r.prompts_per_step * r.group_size;
  const sched = r.schedule === "cosine" ? "cosine_with_min_lr" : r.schedule;
  return {
    run_name: [name, "the run's name"],
    seed: [c.seed, "seed"],
    learning_rate: [r.lr, "rl.lr"],
    lr_scheduler_type: [sched, "rl.schedule"],
    ...(sched === "cosine_with_min_lr"
      ? { lr_scheduler_kwargs: [{ min_lr_rate: r.min_lr_ratio }, "rl.min_lr_ratio"] }
      : {}),
    warmup_steps: [r.warmup_steps, "rl.warmup_steps"],
    adam_beta1: [r.betas[0], "rl.betas[0]"],
    adam_beta2: [r.betas[1], "rl.betas[1]"],
    weight_decay: [r.weight_decay, "rl.weight_decay"],
    max_grad_norm: [r.grad_clip > 0 ? r.grad_clip : 1e9, "rl.grad_clip (0 = off)"],
    max_steps: [
      c.stop.max_steps * r.minibatches,
      "stop.max_steps x rl.minibatches (TRL counts optimizer steps)",
    ],
    ...trlBatch(rollouts / r.minibatches, r.micro_batch_size),
    gradient_checkpointing: [c.model.gradient_checkpointing, "model.gradient_checkpointing"],
    steps_per_generation: [r.minibatches, "rl.minibatches (one generation feeds them all)"],
    num_generations: [r.group_size, "rl.group_size"],
    num_iterations: [r.epochs, "rl.epochs"],
    shuffle_dataset: [false, "the lab's prompt order"],
    max_completion_length: [c.sampling.max_new_tokens, "sampling.max_new_tokens"],
    temperature: [c.sampling.temperature, "sampling.temperature"],
    top_p: [c.sampling.top_p, "sampling.top_p"],
    ...(c.sampling.top_k > 0 ? { top_k: [c.sampling.top_k, "sampling.top_k"] } : {}),
    beta: [r.kl.in === "loss" ? r.kl.coef : 0, "rl.kl.coef (in the loss)"],
    epsilon: [r.clip_eps_low, "rl.clip_eps_low"],
    epsilon_high: [r.clip_eps_high, "rl.clip_eps_high"],
    loss_type: [TRL_LOSS[r.loss_agg], `rl.loss_agg (${r.loss_agg})`],
    importance_sampling_level: ["token", "the lab's ratios are per token"],
    scale_rewards:
      r.advantage === "liteppo"
        ? ["batch", "rl.advantage liteppo: group mean, batch std"]
        : [r.advantage !== "dr-grpo" && r.norm_adv_by_std ? "group" : "none", "rl.norm_adv_by_std"],
    ...(r.top_entropy_quantile < 1
      ? { top_entropy_quantile: [r.top_entropy_quantile, "rl.top_entropy_quantile"] }
      : {}),
    max_tool_calling_iterations: [c.limits.max_tool_calls, "limits.max_tool_calls"],
    logging_steps: [1, "a metrics row per step"],
    save_steps: [
      c.checkpoint_every > 0 ? c.checkpoint_every * r.minibatches : c.stop.max_steps * r.minibatches,
      "checkpoint_every",
    ],
    report_to: ["none", "lab choice"],
  };
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

function trlPy(c: RunConfig, name: string, task: Task, model: string | null): string {
  const cfg = trlConfig(c, name);
  const lab = {
    model,
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
  ).replace(toolsMarker, trlToolsPy(task));
}

function readme(
  c: RunConfig,
  o: ExportOptions,
  warnings: Unmapped[],
  terms: string[],
  files: string[],
): string {
  const w = warnings.length
    ? warnings.map((x) => `- \`${x.part}\`: ${x.why}`).join("\n")
    : "None: every part this run uses has a counterpart.";
  const run =
    o.target === "verl"
      ? [
          "```sh",
          "pip install verl vllm   # verl's own install guide has the exact versions",
          "# a Sandbox Fusion server (bytedance/SandboxFusion; its README has the docker image) runs the tools",
          "export SANDBOX_FUSION_URL=http://localhost:8080/run_code",
          "bash run.sh actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct trainer.n_gpus_per_node=1",
          "```",
        ]
      : [
          "```sh",
          "pip install trl datasets",
          "export SANDBOX_FUSION_URL=http://localhost:8080/run_code",
          "python3 train_trl.py --model Qwen/Qwen2.5-0.5B-Instruct",
          "```",
        ];
  return [
    `# ${o.name}: exported to ${o.target === "verl" ? "verl" : "TRL"}`,
    "",
    `Written by \`npm run export -- ${o.target}\` (${LAB_VERSION}, config version ${c.version})${o.source ? ` from ${o.source}` : ""}.`,
    o.target === "verl"
      ? `Keys checked against verl's own \`ppo_trainer\` config at commit ${VERL_COMMIT}.`
      : `GRPOConfig arguments checked against TRL commit ${TRL_KEYS.grpo_config.trl_commit} and transformers ${TRL_KEYS.training_arguments.transformers_version}.`,
    "",
    "## Files",
    "",
    ...files.map((f) => `- \`${f}\``),
    "",
    "## Run",
    "",
    ...run,
    "",
    "## Not carried over (warnings)",
    "",
    w,
    "",
    "## Reward",
    "",
    `reward.py implements ${terms.length ? terms.map((t) => `\`${t}\``).join(", ") : "no term"} with the run's weights and options, and the task's verifier (${exportTask(c).verifier}) on the strict final answer. It reads each tool call's status from \`extra_info["tool_rewards"]\`, which the exported tools report. The lab's test suite checks that it scores the lab's samples (export/samples.jsonl: correct, wrong, malformed and tool-heavy answers) exactly as the lab does.`,
    "",
    "## Mapping table",
    "",
    "Every lab field and registry entry: mapped, mapped approximately (how), or not in verl's PPO trainer.",
    "",
    mappingTableMarkdown(),
    "",
  ]
    .filter((l, i, a) => !(l === "" && a[i - 1] === ""))
    .join("\n");
}

/** An export of a run: its files and warnings. Throws StrictExportError under `strict`. */
export function exportRun(c: RunConfig, o: ExportOptions): ExportResult {
  const { task, verifier } = exportTask(c);
  const warnings = [
    ...unmappedInUse(c),
    ...taskWarnings(c, task),
    ...(o.target === "trl" ? trlWarnings(c) : []),
  ];
  if (o.strict && warnings.length > 0) throw new StrictExportError(warnings);
  const spec = rewardSpec(c, verifier);
  const { train, val } = datasetRows(c);
  const tools = task.tools.map((t) => t.name);
  const files: Record<string, string | Uint8Array> = {
    "reward.py": rewardPy(spec),
    "lab_node.py": LAB_NODE_PY,
    "train.parquet": rowsToParquet(train, tools),
    "val.parquet": rowsToParquet(val, tools),
  };
  if (o.target === "verl") {
    const header = [
      `config.yaml: a lab run exported to verl (${LAB_VERSION}, RunConfig version ${c.version}).`,
      `Composes verl's own ppo_trainer config; keys checked against verl commit ${VERL_COMMIT}.`,
      "Run with run.sh. Each key's comment names the lab field it comes from; README.md lists what does not map.",
    ];
    files["config.yaml"] = verlConfigYaml(c, o.name, header).text;
    files["tool_config.yaml"] = toolConfigYaml(task, c);
    files["lab_tools.py"] = LAB_TOOLS_PY;
    files["run.sh"] = runSh();
  } else {
    files["train_trl.py"] = trlPy(c, o.name, task, null);
  }
  const names = [...Object.keys(files), "README.md"].sort();
  files["README.md"] = readme(
    c,
    o,
    warnings,
    spec.terms.map((t) => t.name),
    names,
  );
  const out: Record<string, Uint8Array> = {};
  for (const k of Object.keys(files).sort()) {
    const v = files[k];
    out[k] = typeof v === "string" ? enc.encode(v) : v;
  }
  return { files: out, warnings, rewardTerms: spec.terms.map((t) => t.name) };
}
