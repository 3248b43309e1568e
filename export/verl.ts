// The verl side of an export: config.yaml (a Hydra config composing verl's own ppo_trainer,
// each written key commented with the lab field it comes from), tool_config.yaml (the task's
// tools as verl tools running JavaScript in Sandbox Fusion), run.sh and the README. Pure
// functions of a RunConfig; export/index.ts assembles the files. Keys are checked against
// verl's own config (export/verl-keys.json) by export/export.test.ts.
import { Document, isMap, isScalar, isSeq, type Scalar } from "yaml";
import type { RunConfig } from "../config/schema.ts";
import type { Task, TaskTool } from "../tasks/types.ts";
import { isBuiltinTool } from "../tasks/types.ts";
import { clusterModel, type Required, requiredValue, verlRequired } from "./cluster.ts";
import { REGISTRY_DECISIONS, type Unmapped } from "./mapping.ts";
import VERL_ENUMS from "./verl-enums.json";
import VERL_KEYS from "./verl-keys.json";

/** A YAML value with the lab field it comes from (written as an end-of-line comment). */
type Src = { value: unknown; lab: string };
const from = (value: unknown, lab: string): Src => ({ value, lab });
type Tree = { [k: string]: Tree | Src | unknown };

function isSrc(v: unknown): v is Src {
  return typeof v === "object" && v !== null && "lab" in v && "value" in v && Object.keys(v).length === 2;
}

/** Splits a tree of Src leaves into plain values and a path -> comment table. */
function unwrap(
  t: Tree,
  prefix: string[] = [],
  comments: Map<string, string> = new Map(),
): { value: unknown; comments: Map<string, string> } {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(t)) {
    const path = [...prefix, k];
    if (isSrc(v)) {
      out[k] = v.value;
      comments.set(path.join("."), v.lab);
    } else if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      out[k] = unwrap(v as Tree, path, comments).value;
    } else out[k] = v;
  }
  return { value: out, comments };
}

const BIG = 1.0e9; // "off" for verl knobs that cannot be turned off (dual clip, grad clip)

/** verl's default GPU count (trainer.n_gpus_per_node x trainer.nnodes of its ppo_trainer config). */
export const VERL_DEFAULT_GPUS =
  VERL_ENUMS.defaults["trainer.n_gpus_per_node"].value * VERL_ENUMS.defaults["trainer.nnodes"].value;

/** Where a verl run leaves its results (run.sh and config.yaml; docs/SCALE-OUT.md "Results"). */
export const VERL_RESULTS = {
  /** verl's file logger: one JSON line per step, {"step": N, "data": {metric: value}}. */
  metrics: "results/metrics.jsonl",
  /** trainer.rollout_data_dir: one <step>.jsonl per step with each rollout's input, output, score. */
  rollouts: "results/rollouts",
  /** trainer.validation_data_dir: the same for each validation. */
  validation: "results/validation",
} as const;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * verl's name for a registry entry. An entry verl lacks has no name to write: its key is a
 * required value (export/cluster.ts), never "???", which OmegaConf's merge over verl's
 * defaults drops (the default then runs).
 */
function verlName(registry: string, name: string, required: readonly Required[], key: string): string {
  const d = REGISTRY_DECISIONS[registry]?.[name];
  if (!d) throw new Error(`export: no mapping decision for ${registry} "${name}" (export/mapping.ts)`);
  if (d.status !== "unmapped") return d.verl;
  const r = required.find((x) => x.key === key);
  if (!r)
    throw new Error(`export: ${registry} "${name}" has no verl name and ${key} is not a required value`);
  return requiredValue(r);
}

/**
 * The batch arithmetic of a verl job on `gpus` data-parallel GPUs (FSDP, no sequence
 * parallelism), and the adjustments verl's assertions force, each as a warning:
 *   verl/utils/config.py:109-112      data.train_batch_size x rollout.n divisible by the GPUs
 *   verl/workers/fsdp_workers.py:241-262 (actor), 1232-1251 (critic)
 *                                     ppo_mini_batch_size x rollout.n // GPUs > 0, and that
 *                                     per-GPU share divisible by ppo_micro_batch_size_per_gpu
 * The lab's minibatch is rollouts / rl.minibatches; verl's is ppo_mini_batch_size prompts x n.
 */
export interface VerlBatch {
  /** GPUs the job runs on (trainer.n_gpus_per_node x trainer.nnodes). */
  gpus: number;
  nGpusPerNode: number;
  nnodes: number;
  /** actor.ppo_mini_batch_size (prompts). */
  miniPrompts: number;
  /** actor/critic ppo_micro_batch_size_per_gpu. */
  microPerGpu: number;
  /** rollout/ref log_prob_micro_batch_size_per_gpu (memory only). */
  logProbMicro: number;
  warnings: Unmapped[];
}

export function verlBatch(c: RunConfig, gpus: number = VERL_DEFAULT_GPUS): VerlBatch {
  if (!Number.isInteger(gpus) || gpus < 1) throw new Error(`--gpus: ${gpus} is not a positive whole number`);
  const r = c.rl;
  const n = r.group_size;
  const P = r.prompts_per_step;
  const warnings: Unmapped[] = [];
  let G = gpus;
  if ((P * n) % G !== 0) {
    // The step's rollouts are split evenly over the GPUs: use the most GPUs that divide them.
    let g = G;
    while ((P * n) % g !== 0) g--;
    warnings.push({
      part: "--gpus",
      why: `verl needs data.train_batch_size x rollout.n (${P} x ${n} = ${P * n}) divisible by the GPUs (verl/utils/config.py:109-112): ${G} do not divide it, so the export runs on ${g} (trainer.n_gpus_per_node ${g})`,
    });
    G = g;
  }
  const labMini = Math.max(1, Math.floor(P / r.minibatches));
  let mini = labMini;
  // verl's minibatch is whole prompts whose rollouts split evenly over the GPUs.
  while (mini < P && (P % mini !== 0 || (mini * n) % G !== 0)) mini++;
  if (mini !== labMini)
    warnings.push({
      part: "rl.minibatches",
      why: `on ${G} GPU(s) verl needs ppo_mini_batch_size x rollout.n divisible by the GPUs (verl/workers/fsdp_workers.py:241-245): ppo_mini_batch_size ${labMini} x ${n} is not, so the export writes ${mini} (${P / mini} minibatch(es) of ${mini * n} rollouts per step instead of the lab's ${r.minibatches})`,
    });
  const perGpu = (mini * n) / G;
  const microPerGpu =
    r.micro_batch_size > 0 && perGpu % r.micro_batch_size === 0 ? r.micro_batch_size : gcd(perGpu, 8);
  const nGpusPerNode = G > 8 && G % 8 === 0 ? 8 : G;
  return {
    gpus: G,
    nGpusPerNode,
    nnodes: G / nGpusPerNode,
    miniPrompts: mini,
    microPerGpu,
    logProbMicro: Math.max(1, Math.min(8, (P * n) / r.minibatches)),
    warnings,
  };
}

/** verl's config as a tree (without hydra/defaults), every leaf naming its lab source. */
type Correction = RunConfig["rl"]["rollout_correction"];
const correcting = (rc: Correction) => rc.rollout_is !== "none" || rc.rollout_rs !== "none";

/** The lab's rejection modes as verl's k1 options (rl/update/sampler-mismatch.ts: token, sequence product, geometric mean). */
export const VERL_ROLLOUT_RS: Record<Exclude<Correction["rollout_rs"], "none">, string> = {
  token: "token_k1",
  sequence: "seq_sum_k1",
  geometric: "seq_mean_k1",
};

/**
 * rollout_rs_threshold in the form verl's _parse_rollout_rs_thresholds reads for k1 options,
 * "lower_upper". verl's k1 statistic is -log_ratio = log(pi_rollout / pi_train) (rollout_corr_helper.py:
 * token_k1 = -log_ratio_safe, log_ratio = old_log_prob - rollout_log_prob) and it keeps
 * log(lower) <= k1 <= log(upper); the lab keeps lo <= pi_train / pi_rollout <= hi (rl/update/sampler-mismatch.ts),
 * the inverse ratio: verl's bounds are [1/hi, 1/lo].
 */
export function verlRsThreshold(rc: Correction): string {
  const hi = rc.rollout_rs_threshold ?? rc.rollout_is_threshold;
  const lo = rc.rollout_rs_threshold_lower ?? 1 / hi;
  return `${1 / hi}_${1 / lo}`;
}

/** algorithm.rollout_correction when rl.rollout_correction is on (verl's names; null = off). */
function rolloutCorrectionTree(rc: Correction): Tree {
  if (!correcting(rc)) return {};
  return {
    rollout_correction: {
      rollout_is: from(rc.rollout_is === "none" ? null : rc.rollout_is, "rl.rollout_correction.rollout_is"),
      rollout_is_threshold: from(rc.rollout_is_threshold, "rl.rollout_correction.rollout_is_threshold"),
      rollout_rs: from(
        rc.rollout_rs === "none" ? null : VERL_ROLLOUT_RS[rc.rollout_rs],
        `rl.rollout_correction.rollout_rs (${rc.rollout_rs})`,
      ),
      rollout_rs_threshold: from(
        rc.rollout_rs === "none" ? null : verlRsThreshold(rc),
        "1/upper_1/lower of rl.rollout_correction.rollout_rs_threshold(_lower): verl bounds the inverse ratio",
      ),
      bypass_mode: from(false, "the lab recomputes the old log-probs (decoupled mode)"),
    },
  };
}

/** What every part of the verl tree reads: the run, its batch arithmetic and verl's names for the lab's entries. */
type VerlParts = {
  c: RunConfig;
  r: RunConfig["rl"];
  batch: VerlBatch;
  required: readonly Required[];
  /** verl's name for a registry entry (or the required placeholder when verl has none). */
  name_: (registry: string, entry: string, key: string) => string;
  klName: string;
  klOn: boolean;
};

/** data: the prompt files and their lengths. */
function dataTree({ c, r }: VerlParts): Tree {
  return {
    train_files: from(
      "train.parquet",
      "task.name, task.options, seed, stop.max_steps x rl.prompts_per_step (run.sh passes the absolute path)",
    ),
    val_files: from("val.parquet", "task.eval_size held-out prompts"),
    train_batch_size: from(r.prompts_per_step, "rl.prompts_per_step"),
    max_prompt_length: from(1024, "lab choice: room for the Hermes tool block the chat template adds"),
    max_response_length: from(c.sampling.max_new_tokens, "sampling.max_new_tokens"),
    shuffle: from(false, "the lab's prompt order (train.parquet is already in step order)"),
    seed: from(c.seed, "seed"),
    return_raw_chat: from(true, "the tool agent loop renders the chat itself"),
    filter_overlong_prompts: from(true, "lab choice"),
  };
}

/** actor_rollout_ref.model: the model's path and its LoRA adapter. */
function actorModelTree({ c, required }: VerlParts): Tree {
  const lora = c.model.lora;
  const model = clusterModel(c);
  return {
    enable_gradient_checkpointing: from(c.model.gradient_checkpointing, "model.gradient_checkpointing"),
    path: from(
      model.path ?? requiredValue(required.find((x) => x.key === "actor_rollout_ref.model.path") as Required),
      model.path !== null
        ? "model.pretrained (a Hub repo id)"
        : `required: bash run.sh --model PATH (${model.why})`,
    ),
    ...(lora.rank > 0
      ? {
          lora_rank: from(lora.rank, "model.lora.rank"),
          lora_alpha: from(lora.alpha, "model.lora.alpha"),
          target_modules: from(
            lora.targets === "all-linear" ? "all-linear" : [...lora.targets],
            "model.lora.targets",
          ),
        }
      : {}),
  };
}

/** actor.policy_loss: the loss's verl name and the parameters of the losses that have them. */
function policyLossTree({ r, name_ }: VerlParts): Tree {
  return {
    loss_mode: from(
      name_("policy-loss", r.policy_loss, "actor_rollout_ref.actor.policy_loss.loss_mode"),
      `rl.policy_loss (${r.policy_loss})`,
    ),
    ...(r.policy_loss === "clip-cov"
      ? {
          clip_cov_ratio: from(r.clip_cov.ratio, "rl.clip_cov.ratio"),
          clip_cov_lb: from(r.clip_cov.lb, "rl.clip_cov.lb"),
          clip_cov_ub: from(r.clip_cov.ub, "rl.clip_cov.ub"),
        }
      : {}),
    ...(r.policy_loss === "kl-cov"
      ? {
          kl_cov_ratio: from(r.kl_cov.ratio, "rl.kl_cov.ratio"),
          ppo_kl_coef: from(r.kl_cov.coef, "rl.kl_cov.coef"),
        }
      : {}),
  };
}

/** actor_rollout_ref.actor: the optimizer, the batch split, the clip ranges, the loss and its KL term. */
function actorTree(p: VerlParts): Tree {
  const { c, r, batch, name_, klName, klOn } = p;
  const schedule = r.schedule === "constant" ? "constant" : "cosine";
  return {
    optim: {
      lr: from(r.lr, "rl.lr"),
      lr_warmup_steps: from(r.warmup_steps, "rl.warmup_steps"),
      lr_scheduler_type: from(schedule, `rl.schedule (${r.schedule})`),
      min_lr_ratio: from(r.min_lr_ratio, "rl.min_lr_ratio"),
      betas: from([...r.betas], "rl.betas"),
      weight_decay: from(r.weight_decay, "rl.weight_decay"),
      clip_grad: from(r.grad_clip > 0 ? r.grad_clip : BIG, "rl.grad_clip (0 = off)"),
    },
    grad_clip: from(r.grad_clip > 0 ? r.grad_clip : BIG, "rl.grad_clip (0 = off)"),
    ppo_mini_batch_size: from(
      batch.miniPrompts,
      "rl.prompts_per_step / rl.minibatches (prompts; verl multiplies by rollout.n)",
    ),
    ppo_micro_batch_size_per_gpu: from(
      batch.microPerGpu,
      `memory only (gradient accumulation does not change the update); divides the ${batch.gpus}-GPU share of a minibatch`,
    ),
    ppo_epochs: from(r.epochs, "rl.epochs"),
    clip_ratio: from(r.clip_eps_low, "rl.clip_eps_low"),
    clip_ratio_low: from(r.clip_eps_low, "rl.clip_eps_low"),
    clip_ratio_high: from(r.clip_eps_high, "rl.clip_eps_high"),
    clip_ratio_c: from(r.dual_clip_c ?? BIG, "rl.dual_clip_c (null = off)"),
    policy_loss: policyLossTree(p),
    ...(r.policy_loss === "sapo"
      ? {
          tau_pos: from(r.sapo.tau_pos, "rl.sapo.tau_pos"),
          tau_neg: from(r.sapo.tau_neg, "rl.sapo.tau_neg"),
        }
      : {}),
    loss_agg_mode: from(name_("agg", r.loss_agg, "actor_rollout_ref.actor.loss_agg_mode"), "rl.loss_agg"),
    ...(r.l_max !== null ? { loss_scale_factor: from(r.l_max, "rl.l_max") } : {}),
    entropy_coeff: from(r.entropy_coef, "rl.entropy_coef"),
    use_kl_loss: from(klOn && r.kl.in === "loss", "rl.kl.coef > 0 and rl.kl.in = loss"),
    kl_loss_coef: from(r.kl.in === "loss" ? r.kl.coef : 0, "rl.kl.coef"),
    kl_loss_type: from(klName, `rl.kl.estimator (${r.kl.estimator})`),
    data_loader_seed: from(c.seed, "seed"),
  };
}

/** actor_rollout_ref.rollout: vLLM's sampling and the multi-turn tool loop. */
function rolloutTree({ c, r, batch }: VerlParts): Tree {
  return {
    name: from("vllm", "lab choice (sglang also works)"),
    mode: "async",
    tensor_model_parallel_size: from(1, "lab choice: small models"),
    n: from(r.group_size, "rl.group_size"),
    temperature: from(c.sampling.temperature, "sampling.temperature"),
    top_p: from(c.sampling.top_p, "sampling.top_p"),
    top_k: from(c.sampling.top_k > 0 ? c.sampling.top_k : -1, "sampling.top_k (0 = off)"),
    log_prob_micro_batch_size_per_gpu: from(batch.logProbMicro, "memory only"),
    ...(correcting(r.rollout_correction)
      ? { calculate_log_probs: from(true, "rl.rollout_correction needs the rollout's log-probs") }
      : {}),
    val_kwargs: {
      temperature: from(0, "val/acc is greedy in the lab"),
      do_sample: from(false, "val/acc is greedy in the lab"),
      n: 1,
    },
    multi_turn: {
      enable: from(true, "the lab's tool loop"),
      format: from("hermes", `task.template (${c.task.template}): Hermes JSON tool calls`),
      max_assistant_turns: from(c.limits.max_tool_calls + 1, "limits.max_tool_calls + 1"),
      max_parallel_calls: from(Math.max(1, c.limits.max_tool_calls), "limits.max_tool_calls"),
      max_tool_response_length: from(c.limits.max_tool_response_chars, "limits.max_tool_response_chars"),
      tool_response_truncate_side: from("middle", "the lab keeps head and tail"),
      tool_config_path: from("tool_config.yaml", "the task's tools (run.sh passes the absolute path)"),
    },
    agent: { default_agent_loop: from("tool_agent", "every row also names agent_name: tool_agent") },
  };
}

/** algorithm: the advantage estimator, the KL penalty and the rollout correction. */
function algorithmTree({ r, name_, klName, klOn }: VerlParts): Tree {
  return {
    adv_estimator: from(
      name_("advantage", r.advantage, "algorithm.adv_estimator"),
      REGISTRY_DECISIONS.advantage[r.advantage]?.status === "unmapped"
        ? `required: bash run.sh --adv-estimator NAME (rl.advantage ${r.advantage} is not in verl)`
        : `rl.advantage (${r.advantage})`,
    ),
    gamma: from(r.gamma, "rl.gamma"),
    lam: from(r.lambda, "rl.lambda"),
    norm_adv_by_std_in_grpo: from(
      r.advantage === "dr-grpo" ? false : r.norm_adv_by_std,
      "rl.norm_adv_by_std",
    ),
    use_kl_in_reward: from(klOn && r.kl.in === "reward", "rl.kl.coef > 0 and rl.kl.in = reward"),
    kl_penalty: from(klName, `rl.kl.estimator (${r.kl.estimator})`),
    kl_ctrl: {
      type: from("fixed", "the lab's KL coefficient is fixed"),
      kl_coef: from(r.kl.in === "reward" ? r.kl.coef : 0, "rl.kl.coef"),
    },
    ...rolloutCorrectionTree(r.rollout_correction),
  };
}

/** critic: the value model GAE trains, started from the actor's model. */
function criticTree({ c, r, batch }: VerlParts): Tree {
  return {
    optim: {
      lr: from(r.lr, "rl.lr"),
      betas: from([...r.betas], "rl.betas"),
      weight_decay: from(r.weight_decay, "rl.weight_decay"),
    },
    model: {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an OmegaConf interpolation: the critic starts from the actor's model
      path: from("${actor_rollout_ref.model.path}", "the actor's model"),
      enable_gradient_checkpointing: from(c.model.gradient_checkpointing, "model.gradient_checkpointing"),
    },
    cliprange_value: from(r.value_clip, "rl.value_clip"),
    ppo_micro_batch_size_per_gpu: from(
      batch.microPerGpu,
      "memory only; divides the per-GPU share of a minibatch",
    ),
  };
}

/** trainer: logging, the GPUs, the step count, validation and checkpoint cadence. */
function trainerTree({ c, r, batch }: VerlParts, name: string): Tree {
  return {
    project_name: "agentic-rl-lab",
    experiment_name: from(name, "the run's name"),
    logger: from(
      ["console", "file"],
      "file: verl's file logger writes the metrics (run.sh sets VERL_FILE_LOGGER_PATH)",
    ),
    rollout_data_dir: from(
      VERL_RESULTS.rollouts,
      "each step's rollouts as <step>.jsonl (run.sh passes the absolute path)",
    ),
    validation_data_dir: from(
      VERL_RESULTS.validation,
      "each validation's generations (run.sh passes the absolute path)",
    ),
    n_gpus_per_node: from(batch.nGpusPerNode, "--gpus (the export's batch arithmetic is for this many GPUs)"),
    nnodes: from(batch.nnodes, "--gpus"),
    total_epochs: 1,
    total_training_steps: from(c.stop.max_steps, "stop.max_steps"),
    val_before_train: from(true, "the lab evaluates at RL step 0"),
    test_freq: from(c.task.eval_every > 0 ? c.task.eval_every : -1, "task.eval_every (0 = only at step 0)"),
    save_freq: from(
      c.checkpoint_every > 0 ? c.checkpoint_every : Math.max(1, c.stop.max_steps),
      "checkpoint_every (0 = at the end)",
    ),
    critic_warmup: from(r.advantage === "gae" ? r.value_pretrain.steps : 0, "rl.value_pretrain.steps"),
  };
}

export function verlConfigTree(c: RunConfig, name: string, batch: VerlBatch = verlBatch(c)): Tree {
  const r = c.rl;
  const required = verlRequired(c);
  const name_ = (registry: string, entry: string, key: string) => verlName(registry, entry, required, key);
  const klName = name_("kl", r.kl.estimator, "algorithm.kl_penalty");
  const p: VerlParts = { c, r, batch, required, name_, klName, klOn: r.kl.coef > 0 };
  return {
    data: dataTree(p),
    actor_rollout_ref: {
      hybrid_engine: true,
      model: actorModelTree(p),
      actor: actorTree(p),
      ref: { log_prob_micro_batch_size_per_gpu: from(batch.logProbMicro, "memory only") },
      rollout: rolloutTree(p),
    },
    algorithm: algorithmTree(p),
    ...(r.advantage === "gae" ? { critic: criticTree(p) } : {}),
    reward: {
      reward_manager: { name: from("naive", "per-sample compute_score") },
      custom_reward_function: {
        path: from("reward.py", "rewards.terms (run.sh passes the absolute path)"),
        name: "compute_score",
      },
    },
    trainer: trainerTree(p, name),
  };
}

/**
 * The config tree of a run on a lab JavaScript environment: the agent loop lab_env_agent
 * (export/env/lab_verl_env.py, registered by agent_loop.yaml) plays each row's episode and sets
 * its reward, so there is no tool config; the reward function is the same module's fallback.
 */
export function verlEnvConfigTree(c: RunConfig, name: string, batch: VerlBatch, env: { name: string }): Tree {
  const t = verlConfigTree(c, name, batch);
  const data = t.data as Tree;
  data.max_response_length = from(
    c.sampling.max_new_tokens,
    "sampling.max_new_tokens: in verl the whole episode's response (model turns and observations); the lab counts one turn's",
  );
  const rollout = (t.actor_rollout_ref as Tree).rollout as Tree;
  rollout.multi_turn = { enable: from(true, `the environment ${env.name}'s turns`) };
  rollout.agent = {
    default_agent_loop: from("lab_env_agent", "every row also names agent_name: lab_env_agent"),
    agent_loop_config_path: from(
      "agent_loop.yaml",
      "lab_verl_env.LabEnvAgentLoop: the lab's episode loop (run.sh passes the absolute path)",
    ),
  };
  t.reward = {
    reward_manager: { name: from("naive", "per-sample compute_score") },
    custom_reward_function: {
      path: from(
        "lab_verl_env.py",
        "the episode's return, set by the agent loop as reward_score (run.sh passes the absolute path)",
      ),
      name: "compute_score",
    },
  };
  return t;
}

/** config.yaml's text: header, hydra composition, then the tree with lab comments. */
export function verlConfigYaml(
  c: RunConfig,
  name: string,
  header: string[],
  batch: VerlBatch = verlBatch(c),
  tree: Tree = verlConfigTree(c, name, batch),
): { text: string; value: Record<string, unknown> } {
  const { value, comments } = unwrap(tree);
  const full = {
    hydra: { searchpath: ["pkg://verl.trainer.config"] },
    defaults: ["ppo_trainer", "_self_"],
    ...(value as Record<string, unknown>),
  };
  // YAML 1.1, as Hydra reads it (OmegaConf over PyYAML): a string such as 0.5_2 (a rejection
  // threshold) or "on" is quoted, where a YAML 1.2 writer leaves it bare and PyYAML reads the
  // number 0.52 or true.
  const doc = new Document(full, { version: "1.1" });
  for (const [path, lab] of comments) {
    const node = doc.getIn(path.split("."), true);
    if (isSeq(node)) node.flow = true;
    if (isScalar(node) || isSeq(node)) node.comment = ` lab: ${lab}`;
  }
  // verl's float fields are written as floats (1.0, not 1), as its own YAML has them.
  const keys = VERL_KEYS.keys as Record<string, string>;
  const floats = (node: unknown, path: string[]) => {
    if (isMap(node))
      for (const pair of node.items) floats(pair.value, [...path, String((pair.key as Scalar).value)]);
    else if (isScalar(node) && typeof node.value === "number" && keys[path.join(".")] === "float")
      node.minFractionDigits = 1;
  };
  floats(doc.contents, []);
  const text = `${header.map((l) => `# ${l}`.trimEnd()).join("\n")}\n${doc.toString({ lineWidth: 0 })}`;
  return { text, value: full };
}

/** JSON schema of a tool's parameters in verl's OpenAI form (required always present). */
function parametersOf(t: TaskTool): Record<string, unknown> {
  if (isBuiltinTool(t))
    return {
      type: "object",
      properties: {
        code: {
          type: "string",
          description: "JavaScript to run; the value of its last expression is returned",
        },
      },
      required: ["code"],
    };
  return { required: [], ...t.parameters, type: "object" };
}

/** Where the exported tools run: Sandbox Fusion (the cluster default) or a local `node`. */
export type ToolRunner = "sandbox_fusion" | "node";

/** The tool config file of each runner (run.sh --tools picks one). */
export const TOOL_CONFIGS: Record<ToolRunner, string> = {
  sandbox_fusion: "tool_config.yaml",
  node: "tool_config_node.yaml",
};

/** A tool config: each task tool as a verl native tool (lab_tools.py) running its JavaScript on `runner`. */
export function toolConfigYaml(task: Task, c: RunConfig, runner: ToolRunner = "sandbox_fusion"): string {
  const common = {
    type: "native",
    runner,
    ...(runner === "sandbox_fusion"
      ? {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: an OmegaConf interpolation (verl loads this file with OmegaConf)
          sandbox_fusion_url: "${oc.env:SANDBOX_FUSION_URL,http://localhost:8080/run_code}",
        }
      : {}),
    default_timeout: c.limits.tool_timeout_s,
    memory_limit_mb: Math.max(512, c.limits.memory_mb),
  };
  const tools = task.tools.map((t) => ({
    class_name: isBuiltinTool(t) ? "lab_tools.LabCodeTool" : "lab_tools.LabFunctionTool",
    config: isBuiltinTool(t)
      ? { ...common, ...(t.allowedChars ? { allowed_chars: t.allowedChars } : {}) }
      : { ...common, body: t.body },
    tool_schema: {
      type: "function",
      function: { name: t.name, description: t.description, parameters: parametersOf(t) },
    },
  }));
  const head = [
    `# ${TOOL_CONFIGS[runner]}: the lab task's tools as verl tools (agentic-rl-lab export).`,
    runner === "sandbox_fusion"
      ? "# They run JavaScript in Sandbox Fusion (language nodejs); set SANDBOX_FUSION_URL to its run_code endpoint."
      : "# They run JavaScript in a local `node` (on PATH, or LAB_NODE), one process per call (bash run.sh --tools node).",
    "# The code tool maps approximately: the lab's tool returns the last expression's value, Node returns",
    "# stdout, so lab_node.py wraps the code to print its value.",
    "# Function-calling tools keep their JSON schemas; their JS bodies run with the arguments as `args`.",
    "# memory_limit_mb is at least 512: Node.js needs far more than the lab's QuickJS limit.",
  ];
  return `${head.join("\n")}\n${new Document({ tools }, { version: "1.1" }).toString({ lineWidth: 0 })}`;
}

/** run.sh: verl's PPO entry point on this folder's config, with absolute paths and the required values. */
export function runSh(required: readonly Required[] = [], o: { env?: boolean } = {}): string {
  const R = VERL_RESULTS;
  const flags = required.map((r) => `${r.flag} ${r.flag === "--model" ? "PATH" : "NAME"}`).join(" ");
  const checks = required
    .map(
      (r) => `if [ -z "\${${r.env}:-}" ] && ! has_override ${r.key}; then
  echo "run.sh: ${r.key} is required: ${r.flag} ${r.flag === "--model" ? "PATH" : "NAME"} (or ${r.key}=...)" >&2
  echo "  ${r.why.replace(/"/g, "'").replace(/\$/g, "\\$").replace(/`/g, "'")}" >&2
  exit 2
fi
if [ -n "\${${r.env}:-}" ]; then overrides+=("${r.key}=\${${r.env}}"); fi`,
    )
    .join("\n");
  const setEnv = required.map((r) => `    ${r.flag}) ${r.env}="$2"; shift 2 ;;`).join("\n");
  return `#!/usr/bin/env bash
# run.sh: train this exported lab run with verl's PPO trainer (agentic-rl-lab export).
${
  o.env
    ? `#   bash run.sh ${flags ? `${flags} ` : ""}[hydra overrides...]      (node on PATH, or LAB_NODE)
#   e.g. bash run.sh ${required.some((r) => r.flag === "--model") ? "--model Qwen/Qwen2.5-0.5B-Instruct " : ""}trainer.nnodes=1
# The environment runs in a local node on each rollout worker (lab_env.py), through the agent
# loop lab_verl_env.LabEnvAgentLoop that agent_loop.yaml registers.`
    : `#   SANDBOX_FUSION_URL=http://host:8080/run_code bash run.sh ${flags ? `${flags} ` : ""}[--tools sandbox_fusion|node] [hydra overrides...]
#   e.g. bash run.sh ${required.some((r) => r.flag === "--model") ? "--model Qwen/Qwen2.5-0.5B-Instruct " : ""}trainer.nnodes=1
# --tools node runs the JavaScript tools in a local node instead of Sandbox Fusion (tool_config_node.yaml).`
}
# A value the lab cannot give (a model the cluster can load, an estimator verl lacks) is required:
# without its flag (or its hydra override) the script stops and says why.
# The batch sizes are for the GPU count in config.yaml (trainer.n_gpus_per_node x nnodes):
# export again with --gpus N for another count rather than overriding it.
# Hydra resolves a relative --config-path against verl's own module, so the path is absolute;
# the data, tool and reward files are passed as absolute paths for the same reason, and this
# folder goes on PYTHONPATH so verl can import ${o.env ? "lab_verl_env.LabEnvAgentLoop" : "lab_tools.LabCodeTool"}.
# Results land in this folder: ${R.metrics} (verl's file logger, one JSON line per step),
# ${R.rollouts}/<step>.jsonl and ${R.validation}/<step>.jsonl (the generations).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
${o.env ? "" : "TOOLS=sandbox_fusion\n"}overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
${setEnv ? `${setEnv}\n` : ""}${o.env ? "" : `    --tools) TOOLS="$2"; shift 2 ;;`}
    *) overrides+=("$1"); shift ;;
  esac
done
has_override() { local o; for o in \${overrides[@]+"\${overrides[@]}"}; do case "$o" in "$1="* | "+$1="* | "++$1="*) return 0 ;; esac; done; return 1; }
${checks}
${
  o.env
    ? ""
    : `case "$TOOLS" in
  sandbox_fusion) TOOL_CONFIG="$HERE/${TOOL_CONFIGS.sandbox_fusion}" ;;
  node) TOOL_CONFIG="$HERE/${TOOL_CONFIGS.node}" ;;
  *) echo "run.sh: --tools is sandbox_fusion or node, not $TOOLS" >&2; exit 2 ;;
esac`
}
export PYTHONPATH="$HERE\${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$HERE/${R.metrics.split("/")[0]}"
export VERL_FILE_LOGGER_PATH="\${VERL_FILE_LOGGER_PATH:-$HERE/${R.metrics}}"
exec python3 -m verl.trainer.main_ppo --config-path "$HERE" --config-name config \\
  data.train_files="$HERE/train.parquet" \\
  data.val_files="$HERE/val.parquet" \\
${
  o.env
    ? `  actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/agent_loop.yaml" \\
  reward.custom_reward_function.path="$HERE/lab_verl_env.py" \\`
    : `  actor_rollout_ref.rollout.multi_turn.tool_config_path="$TOOL_CONFIG" \\
  reward.custom_reward_function.path="$HERE/reward.py" \\`
}
  trainer.rollout_data_dir="$HERE/${R.rollouts}" \\
  trainer.validation_data_dir="$HERE/${R.validation}" \\
  \${overrides[@]+"\${overrides[@]}"}
`;
}
