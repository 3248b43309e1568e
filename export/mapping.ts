// The mapping decisions of the verl export: for every RunConfig field (config/meta.ts
// FIELD_META and the default config's leaves) and every registry entry of rl/algos, whether
// verl's PPO trainer (`verl.trainer.main_ppo`, config `ppo_trainer`) has it: "mapped" (the
// same meaning under verl's key), "approx" (a counterpart that differs in a stated way) or
// "unmapped" (not in verl's PPO trainer). An unmapped part a run uses becomes a warning of
// the export (and `--strict` refuses the run). export/export.test.ts fails when a field or
// a registry entry has no decision, so a new knob cannot be exported silently.
// Pure data and functions: imports only config/ types and registry names.
import { getPath } from "../config/edit.ts";
import { defaultRunConfig, type RunConfig } from "../config/schema.ts";
import { POLICY_LOSSES } from "../rl/algos/losses.ts";
import type { EngineMapping } from "../rl/algos/policy-loss.ts";

export type MapStatus = "mapped" | "approx" | "unmapped";

export interface Decision {
  status: MapStatus;
  /** verl's key(s) or value, "" when there is none. */
  verl: string;
  /** How it maps, or why it does not. */
  how: string;
  /** Unmapped only: does this run use it? Default: the value differs from the lab default. */
  used?: (c: RunConfig) => boolean;
}

const A = "actor_rollout_ref.actor";
const R = "actor_rollout_ref.rollout";
const MT = `${R}.multi_turn`;

const mapped = (verl: string, how: string): Decision => ({ status: "mapped", verl, how });
const approx = (verl: string, how: string): Decision => ({ status: "approx", verl, how });
const unmapped = (how: string, used?: (c: RunConfig) => boolean, verl = ""): Decision => ({
  status: "unmapped",
  verl,
  how,
  used,
});

/** A registry entry's own verl mapping as a decision. */
const fromEntry = (m: EngineMapping): Decision => ({ status: m.status, verl: m.name, how: m.how });

const tinyModel = (c: RunConfig) => !pretrainedSource(c);

/**
 * The Hugging Face model a run names, if its config has a pretrained model source. The
 * lab's own tiny models have none: verl needs a Hugging Face checkpoint (model.path).
 */
export function pretrainedSource(c: RunConfig): string | null {
  const p = c.model.pretrained;
  // "hf:<owner>/<name>" is a Hub repo id, which verl's model.path takes as it is.
  if (p?.startsWith("hf:")) return p.slice(3);
  // "local:<name>": files picked in the page; the person gives verl the folder they came from.
  if (p?.startsWith("local:")) return p.slice(6);
  if (p) return p;
  const src = (c.model as Record<string, unknown>).source;
  if (typeof src === "string" && src) return src;
  if (src && typeof src === "object") {
    const s = src as Record<string, unknown>;
    for (const k of ["repo", "id", "path", "hub"])
      if (typeof s[k] === "string" && s[k]) return s[k] as string;
  }
  return null;
}

const TINY =
  "the lab's tiny from-scratch transformer has no Hugging Face checkpoint; verl trains a Hugging Face model (set actor_rollout_ref.model.path)";

/** One decision per RunConfig field (dotted path; array elements as `*`). */
export const FIELD_DECISIONS: Record<string, Decision> = {
  version: mapped("(header comment)", "the config schema version is named in config.yaml's header"),
  seeds: unmapped(
    "an export is one run with the run's first seed (data.seed); for N seeds, launch verl once per seed with data.seed=S",
    (c) => c.seeds > 1,
  ),
  seed: approx(
    "data.seed, actor.data_loader_seed",
    "the datasets are drawn with the lab's seed (same prompts in the same order); verl's sampling RNG (vLLM/SGLang) is its own",
  ),
  "model.layers": unmapped(TINY, tinyModel),
  "model.d_model": unmapped(TINY, tinyModel),
  "model.heads": unmapped(TINY, tinyModel),
  "model.context": unmapped(TINY, tinyModel),
  "model.norm": unmapped(TINY, tinyModel),
  "model.mlp": unmapped(TINY, tinyModel),
  "model.positional": unmapped(TINY, tinyModel),
  "model.tied_embeddings": unmapped(TINY, tinyModel),
  "model.init_std": unmapped(TINY, tinyModel),
  "model.lora.rank": mapped(
    "actor_rollout_ref.model.lora_rank",
    "the same rank (0 = full fine-tuning in both); written when > 0",
  ),
  "model.lora.alpha": mapped(
    "actor_rollout_ref.model.lora_alpha",
    "the same alpha (scale alpha/rank, PEFT's)",
  ),
  "model.lora.targets": mapped(
    "actor_rollout_ref.model.target_modules",
    "the same Hugging Face module names; all-linear is verl's (PEFT's) all-linear",
  ),
  "model.gradient_checkpointing": mapped(
    "actor_rollout_ref.model.enable_gradient_checkpointing",
    "the same switch: activations recomputed in backward, the same update (verl's default is on; the export writes the run's value, critic.model's too with GAE)",
  ),
  "model.dtype": unmapped(
    "the lab stores a LoRA run's frozen base linear weights as f16 (f32 math, to save memory in a browser tab); verl's counterpart, FSDP's model_dtype / mixed_precision, casts the whole actor and is left at verl's default by the export",
    (c) => c.model.dtype !== "f32",
    "actor_rollout_ref.actor.fsdp_config.model_dtype",
  ),
  "model.pretrained": mapped(
    "actor_rollout_ref.model.path",
    "the Hugging Face model folder the run starts from",
  ),
  "model.revision": approx(
    "actor_rollout_ref.model.path",
    "verl loads a repo id at the Hub's default revision; another revision must be downloaded first (huggingface-cli download --revision R) and its folder given as model.path",
    // Only an hf: model's revision other than main differs.
  ),
  "model.sha256": unmapped(
    "the hashes name a local model's files in the lab; verl reads the folder given as model.path and checks nothing",
    (c) => c.model.sha256 !== null,
  ),
  "model.memory_budget_gb": unmapped(
    "the lab's memory plan for one browser GPU; verl sizes memory with rollout.gpu_memory_utilization and its micro-batch knobs",
    () => false,
  ),
  "model.tokenizer": approx(
    "actor_rollout_ref.model.path",
    "verl reads the tokenizer (and its chat template) from the model folder; a tokenizer kept in another folder must be copied into it",
  ),
  "task.name": mapped(
    "data_source, ability",
    "the task's prompts become train/val.parquet; data_source is lab/<task>/<bucket>",
  ),
  "task.options": mapped("train.parquet, val.parquet", "applied when the prompts are generated"),
  "task.template": approx(
    `${MT}.format: hermes`,
    "verl renders turns with the model's own chat template and parses Hermes JSON calls; the code tool becomes a JSON function {code}; a malformed call is dropped by verl's parser (the lab answers it with an error and counts a failed call)",
  ),
  "task.tool_prompt": mapped(
    "train.parquet, val.parquet",
    "hermes: when the run recorded that its model's template ignores tools (SmolLM2's), the lab's tool list (model/tool-list-prompt.ts) is written into each prompt's system message, as the lab puts it there; a template that renders tools gets them from verl",
  ),
  "task.tokenization_check": approx(
    `${MT}.tokenization_sanity_check_mode`,
    "strict is verl's default (strict); verl has no warn-and-retokenize mode (ignore_strippable only forgives whitespace), and off is disable",
  ),
  "task.eval_size": mapped("val.parquet", "the number of held-out rows"),
  "task.split_version": mapped(
    "train.parquet, val.parquet",
    "the rows are drawn by the lab's own task code with the run's split (version 2: canonical keys, no repeated eval rows)",
  ),
  "task.dev_size": unmapped(
    "verl validates on one set; the dev set (dev/*, for choosing stopping steps) is not exported",
    (c) => c.task.dev_size > 0,
  ),
  "task.eval_every": mapped(
    "trainer.test_freq",
    "0 (only before training) becomes -1 with trainer.val_before_train true",
  ),
  "task.buckets": approx(
    "data_source",
    "the bucket is the last part of data_source, so verl's per-data-source validation metrics are the lab's val/acc/<bucket>",
  ),
  "sft.steps": unmapped(
    "the SFT cold start is not part of verl's PPO trainer; run it first with verl's SFT trainer (verl.trainer.fsdp_sft_trainer) and point model.path at the result",
    (c) => c.sft.steps > 0 && c.sft.init_checkpoint === null,
  ),
  "sft.batch": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.lr": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.warmup_steps": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.schedule": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.min_lr_ratio": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.betas": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.weight_decay": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.grad_clip": unmapped("SFT cold start (see sft.steps)", () => false),
  "sft.init_checkpoint": unmapped(
    "a lab checkpoint (safetensors of the lab's layout) is not a Hugging Face model; verl starts from model.path",
    (c) => c.sft.init_checkpoint !== null,
  ),
  "rl.advantage": mapped("algorithm.adv_estimator", "by the registry decisions (advantage)"),
  "rl.policy_loss": mapped(`${A}.policy_loss.loss_mode`, "by the registry decisions (policy-loss)"),
  "rl.clip_eps_low": mapped(`${A}.clip_ratio_low, ${A}.clip_ratio`, "the same epsilon"),
  "rl.clip_eps_high": mapped(`${A}.clip_ratio_high`, "the same epsilon (DAPO clip-higher)"),
  "rl.dual_clip_c": mapped(
    `${A}.clip_ratio_c`,
    "verl always applies dual clip; the lab's null (off) is written as 1.0e9, which never binds",
  ),
  "rl.sapo.tau_pos": mapped(`${A}.tau_pos`, "SAPO's gate temperature where A > 0 (written for sapo)"),
  "rl.sapo.tau_neg": mapped(`${A}.tau_neg`, "SAPO's gate temperature where A <= 0 (written for sapo)"),
  "rl.clip_cov.ratio": mapped(`${A}.policy_loss.clip_cov_ratio`, "the same fraction (written for clip-cov)"),
  "rl.clip_cov.lb": mapped(`${A}.policy_loss.clip_cov_lb`, "the same bound (written for clip-cov)"),
  "rl.clip_cov.ub": mapped(`${A}.policy_loss.clip_cov_ub`, "the same bound (written for clip-cov)"),
  "rl.kl_cov.ratio": mapped(`${A}.policy_loss.kl_cov_ratio`, "the same fraction (written for kl-cov)"),
  "rl.kl_cov.coef": mapped(`${A}.policy_loss.ppo_kl_coef`, "KL-Cov's kappa (written for kl-cov)"),
  "rl.loss_agg": mapped(`${A}.loss_agg_mode`, "the same four mode names"),
  "rl.l_max": mapped(
    `${A}.loss_scale_factor`,
    "Dr. GRPO's constant normaliser; null means the response budget in both",
  ),
  "rl.kl.estimator": mapped(
    `${A}.kl_loss_type / algorithm.kl_penalty`,
    "k1 -> kl, k2 -> mse, k3 -> low_var_kl (verl's names)",
  ),
  "rl.kl.coef": mapped(
    `${A}.kl_loss_coef / algorithm.kl_ctrl.kl_coef`,
    "0 turns the KL off (use_kl_loss false, use_kl_in_reward false)",
  ),
  "rl.kl.in": mapped(
    `${A}.use_kl_loss / algorithm.use_kl_in_reward`,
    "loss -> use_kl_loss, reward -> use_kl_in_reward (fixed controller)",
  ),
  "rl.entropy_coef": mapped(`${A}.entropy_coeff`, "the same coefficient"),
  "rl.epochs": mapped(`${A}.ppo_epochs`, "the same count"),
  "rl.minibatches": mapped(
    `${A}.ppo_mini_batch_size, trainer.n_gpus_per_node, trainer.nnodes`,
    "ppo_mini_batch_size = prompts_per_step / minibatches (verl counts prompts and multiplies by rollout.n) for --gpus GPUs (default verl's 8): verl asserts prompts_per_step x n and ppo_mini_batch_size x n divisible by the GPUs; where they are not, the export runs on the most GPUs that divide the step, and raises ppo_mini_batch_size to the next size that splits evenly, with a warning (--strict refuses)",
  ),
  "rl.micro_batch_size": approx(
    `${A}.ppo_micro_batch_size_per_gpu`,
    "gradient accumulation in both (same update, less memory); written when it divides the per-GPU share of a minibatch (ppo_mini_batch_size x n / --gpus), else the largest divisor <= 8 of that share",
  ),
  "rl.prompts_per_step": mapped("data.train_batch_size", "prompts per step"),
  "rl.group_size": mapped(`${R}.n`, "samples per prompt"),
  "rl.lr": mapped(`${A}.optim.lr`, "the same rate (critic.optim.lr too, for GAE)"),
  "rl.warmup_steps": mapped(`${A}.optim.lr_warmup_steps`, "the same steps"),
  "rl.schedule": approx(
    `${A}.optim.lr_scheduler_type`,
    "constant and cosine map; verl has no linear decay, so linear becomes cosine (warned)",
  ),
  "rl.min_lr_ratio": mapped(`${A}.optim.min_lr_ratio`, "the floor of the cosine decay"),
  "rl.betas": mapped(`${A}.optim.betas`, "AdamW betas"),
  "rl.weight_decay": mapped(`${A}.optim.weight_decay`, "AdamW weight decay"),
  "rl.grad_clip": mapped(
    `${A}.optim.clip_grad, ${A}.grad_clip`,
    "global-norm clip; the lab's 0 (off) is written as 1.0e9",
  ),
  "rl.std_eps": approx(
    "",
    "verl's GRPO divides by std + 1e-6 (fixed); the lab's epsilon is not configurable there",
  ),
  "rl.std": unmapped(
    "verl's GRPO uses the sample std (torch.std); the population std is not available",
    (c) => c.rl.std === "population",
  ),
  "rl.norm_adv_by_std": mapped("algorithm.norm_adv_by_std_in_grpo", "false = Dr. GRPO's numerator only"),
  "rl.singleton_group": unmapped(
    "a group of one gets its raw score as advantage in verl ('raw'); the lab's 'zero' is not available",
    (c) => c.rl.group_size === 1 && c.rl.singleton_group === "zero",
  ),
  "rl.gamma": mapped("algorithm.gamma", "GAE discount"),
  "rl.lambda": mapped("algorithm.lam", "GAE lambda"),
  "rl.lambda_critic": unmapped(
    "VAPO's decoupled GAE is not in verl's PPO trainer",
    (c) => c.rl.lambda_critic !== null,
  ),
  "rl.length_adaptive_alpha": unmapped(
    "VAPO's length-adaptive GAE is not in verl's PPO trainer",
    (c) => c.rl.length_adaptive_alpha !== null,
  ),
  "rl.value_coef": approx(
    "",
    "verl trains the critic with its own optimizer (critic.optim.lr = rl.lr); there is no shared-loss weight",
  ),
  "rl.value_clip": mapped("critic.cliprange_value", "the same clip range"),
  "rl.value_pretrain.steps": approx(
    "trainer.critic_warmup",
    "verl trains the critic alone for this many steps on fresh rollouts (the lab pretrains it on the SFT policy's rollouts)",
  ),
  "rl.value_pretrain.stop_explained_var": unmapped(
    "stopping critic warm-up at an explained variance is not in verl",
    (c) => c.rl.value_pretrain.stop_explained_var !== null,
  ),
  "rl.mask_tool_output": unmapped(
    "verl always masks tool responses out of the loss (response_mask 0); training on them is not available",
    (c) => !c.rl.mask_tool_output,
  ),
  "rl.positive_lm_coef": unmapped(
    "VAPO's positive-example LM loss is not in verl's PPO trainer",
    (c) => c.rl.positive_lm_coef > 0,
  ),
  "rl.history_window": unmapped("reinforce-history only (see the advantage registry)", () => false),
  "rl.history_ema": unmapped("reinforce-history only (see the advantage registry)", () => false),
  "rl.turn_gamma": unmapped(
    "the turn discount of multi-turn environments is not in verl's PPO trainer",
    (c) => c.task.name === "frozenlake" || c.task.name === "sokoban",
  ),
  "rl.rollout_correction.rollout_is": mapped(
    "algorithm.rollout_correction.rollout_is",
    "the same token / sequence (product) IS weight exp(old - rollout log-prob) on the policy loss, written when not none (with rollout.calculate_log_probs); both sides under the same temperature and top-k/top-p (rl/update/sampler-mismatch.ts); with gspo, gspo-token and gmpo the lab scales each response by the mean weight of its tokens (verl multiplies each token's surrogate)",
  ),
  "rl.rollout_correction.rollout_is_threshold": mapped(
    "algorithm.rollout_correction.rollout_is_threshold",
    "the same truncation of the IS weight",
  ),
  "rl.rollout_correction.rollout_rs": mapped(
    "algorithm.rollout_correction.rollout_rs",
    "token -> token_k1, sequence -> seq_sum_k1, geometric -> seq_mean_k1 (verl's k1 modes: the same rejection of a token's, a sequence's product or geometric mean ratio outside the bounds; the rejected tokens leave the loss's denominator in both)",
  ),
  "rl.rollout_correction.rollout_rs_threshold": mapped(
    "algorithm.rollout_correction.rollout_rs_threshold",
    "written as verl's k1 form 'lower_upper' = '1/upper_1/lower': verl bounds pi_rollout / pi_train, the lab its inverse (null: the IS threshold)",
  ),
  "rl.rollout_correction.rollout_rs_threshold_lower": mapped(
    "algorithm.rollout_correction.rollout_rs_threshold",
    "the lower bound, as 1/lower in verl's 'lower_upper' (null: 1 / upper)",
  ),
  "rl.top_entropy_quantile": unmapped(
    "the high-entropy token selection is TRL's (top_entropy_quantile), not in verl's PPO trainer",
    (c) => c.rl.top_entropy_quantile < 1,
  ),
  "rl.gigpo.step_weight": unmapped("GiGPO only (see the advantage registry)", () => false),
  "rl.gigpo.gamma": unmapped("GiGPO only (see the advantage registry)", () => false),
  "rl.gigpo.norm": unmapped("GiGPO only (see the advantage registry)", () => false),
  "rl.gigpo.episode_stats": unmapped("GiGPO only (see the advantage registry)", () => false),
  "rewards.terms": mapped(
    "custom_reward_function.{path, name}",
    "reward.py's compute_score sums the same terms (see the reward registry)",
  ),
  "rewards.terms.*.name": mapped("reward.py", "by the registry decisions (reward)"),
  "rewards.terms.*.weight": mapped("reward.py", "the same weight"),
  "rewards.terms.*.options": mapped("reward.py", "the same options"),
  "rewards.custom_js": unmapped(
    "a custom JavaScript reward is not exported (reward.py is Python); port it into reward.py by hand",
    (c) => c.rewards.custom_js.trim() !== "",
  ),
  "rewards.custom_js_weight": unmapped("custom JavaScript reward (see rewards.custom_js)", () => false),
  "filters.list": unmapped("by the registry decisions (filter)", () => false),
  "filters.list.*.name": unmapped("by the registry decisions (filter)", () => false),
  "filters.list.*.options": unmapped("by the registry decisions (filter)", () => false),
  "filters.refill": unmapped("filters are not in verl's PPO trainer (see the filter registry)", () => false),
  "filters.max_gen_rounds": unmapped(
    "filters are not in verl's PPO trainer (see the filter registry)",
    () => false,
  ),
  "filters.oversample": unmapped(
    "filters are not in verl's PPO trainer (see the filter registry)",
    () => false,
  ),
  "shaping.kind": unmapped("by the registry decisions (shaping)", () => false),
  "shaping.coef": unmapped("TAO shaping (see the shaping registry)", () => false),
  "shaping.restrict_to_post_tool": unmapped("TAO shaping (see the shaping registry)", () => false),
  "shaping.detach_entropy": unmapped("TAO shaping (see the shaping registry)", () => false),
  "shaping.fallback_all_tokens": unmapped("TAO shaping (see the shaping registry)", () => false),
  "shaping.alpha": unmapped("TAO shaping (see the shaping registry)", () => false),
  "shaping.kappa": unmapped("TAO shaping (see the shaping registry)", () => false),
  "shaping.q_h": unmapped("TAO shaping (see the shaping registry)", () => false),
  "sampling.temperature": mapped(`${R}.temperature`, "the same temperature"),
  "sampling.top_k": mapped(`${R}.top_k`, "0 (off) becomes -1 (verl's off)"),
  "sampling.top_p": mapped(`${R}.top_p`, "the same nucleus"),
  "sampling.max_new_tokens": approx(
    "data.max_response_length",
    "verl's budget counts tool-response tokens too (the lab counts only the model's tokens)",
  ),
  "limits.max_tool_calls": approx(
    `${MT}.max_assistant_turns, ${MT}.max_parallel_calls`,
    "verl limits assistant turns (max_tool_calls + 1) and calls per turn (max_tool_calls), not calls per trajectory",
  ),
  "limits.max_tool_response_chars": approx(
    `${MT}.max_tool_response_length`,
    "both cut characters, keeping head and tail (truncate side middle); verl marks the cut with ...(truncated)...",
  ),
  "limits.tool_timeout_s": mapped(
    "tool_config.yaml default_timeout",
    "Sandbox Fusion's run timeout in seconds",
  ),
  "limits.memory_mb": approx(
    "tool_config.yaml memory_limit_mb",
    "Node.js needs far more memory than QuickJS to start: at least 512 MB is written",
  ),
  "limits.notice_on_exceeded": approx(
    "",
    "verl ends the trajectory when the turns run out; it injects no notice",
  ),
  "stop.max_steps": mapped(
    "trainer.total_training_steps",
    "RL steps; train.parquet holds exactly max_steps x prompts_per_step prompts",
  ),
  "stop.target": unmapped(
    "early stopping on a metric is not in verl's PPO trainer",
    (c) => c.stop.target !== null,
  ),
  checkpoint_every: mapped("trainer.save_freq", "0 (only at the end) becomes max_steps"),
};

/** One decision per registry entry of rl/algos (REGISTRIES names); `verl` is verl's value. */
export const REGISTRY_DECISIONS: Record<string, Record<string, Decision>> = {
  advantage: {
    gae: mapped("gae", "PPO with a critic (critic.* from the actor's model and rl.lr)"),
    grpo: mapped("grpo", "group mean/std advantage"),
    "dr-grpo": mapped(
      "grpo",
      "grpo with norm_adv_by_std_in_grpo false and the lab's loss_agg (seq-mean-token-sum-norm)",
    ),
    rloo: mapped("rloo", "leave-one-out baseline"),
    "reinforce-pp": mapped("reinforce_plus_plus", "REINFORCE++ with batch whitening"),
    "reinforce-pp-baseline": mapped("reinforce_plus_plus_baseline", "group-centred REINFORCE++"),
    remax: approx("remax", "verl's ReMax runs its own greedy baseline rollout (the same design)"),
    gigpo: unmapped(
      "GiGPO is in verl-agent (langfengQ/verl-agent), not in verl; run.sh stops unless --adv-estimator names a verl estimator to run instead",
    ),
    "reinforce-history": unmapped(
      "a baseline over past batches is not in verl; run.sh stops unless --adv-estimator names a verl estimator to run instead",
    ),
    opo: mapped(
      "opo",
      "the same length-weighted group-mean baseline, no std (a singleton group: baseline 0)",
    ),
    "grpo-passk": mapped(
      "grpo_passk",
      "the same: only each group's best response gets R_max - R_second, over std + eps when norm_adv_by_std_in_grpo",
    ),
    liteppo: unmapped(
      "LitePPO's group-mean / batch-std normalization is not a verl estimator; run.sh stops unless --adv-estimator names a verl estimator to run instead",
    ),
  },
  // The policy losses describe their own mapping (rl/algos/losses.ts POLICY_LOSSES).
  "policy-loss": Object.fromEntries(POLICY_LOSSES.map((e) => [e.name, fromEntry(e.verl)])),
  kl: {
    k1: mapped("kl", "k1 = log(pi/pi_ref)"),
    k2: mapped("mse", "k2 = 0.5*(log ratio)^2"),
    k3: mapped("low_var_kl", "k3 (verl clamps it to [-10, 10])"),
  },
  agg: {
    "token-mean": mapped("token-mean", "same"),
    "seq-mean-token-sum": mapped("seq-mean-token-sum", "same"),
    "seq-mean-token-mean": mapped("seq-mean-token-mean", "same"),
    "seq-mean-token-sum-norm": mapped("seq-mean-token-sum-norm", "same, normalised by loss_scale_factor"),
  },
  filter: {
    "dapo-dynamic-sampling": unmapped(
      "DAPO's dynamic sampling lives in verl's DAPO recipe trainer (recipe/dapo, `python3 -m recipe.dapo.main_dapo`, algorithm.filter_groups), not in ppo_trainer",
    ),
    "starpo-variance": unmapped("the StarPO-S variance filter is in RAGEN, not in verl"),
    "zerotir-band": unmapped("ZeroTIR's accuracy band is not in verl's PPO trainer"),
    "tao-tool-aware": unmapped("TAO's tool-aware filter is not in verl"),
  },
  shaping: {
    "tao-code": unmapped("TAO entropy shaping is not in verl"),
    "tao-additive": unmapped("TAO entropy shaping is not in verl"),
  },
  reward: {
    correctness: mapped("reward.py", "the task's verifier on the strict final answer, ported to Python"),
    format: mapped("reward.py", "the same <think>/<answer> structure check"),
    "torl-exec-penalty": mapped(
      "reward.py",
      "from each call's status, which lab_tools.py reports as its tool reward",
    ),
    toolrl: approx(
      "reward.py",
      "the same format and call scores; verl does not pass the training step, so the schedule option is not available (warned)",
    ),
    "otc-ppo": mapped("reward.py", "call count from the executed calls"),
    "otc-grpo": unmapped("OTC-GRPO needs its group's call counts; verl's compute_score sees one sample"),
    "artist-tool-exec": mapped("reward.py", "successes / calls from the calls' statuses"),
    "tool-n1": mapped("reward.py", "the same match on the last assistant turn"),
    "dapo-overlong": unmapped(
      "verl's overlong buffer belongs to the DAPO reward manager of the DAPO recipe (recipe/dapo); compute_score does not see token counts",
    ),
    "custom-js": unmapped("a custom JavaScript reward is not exported"),
    env: mapped(
      "lab_verl_env.py",
      "the episode's return, set as reward_score by the agent loop lab_env_agent, which plays the environment in a local node with the sandbox's determinism",
    ),
  },
  "aux-loss": {
    "positive-lm": unmapped("VAPO's positive-example LM loss is not in verl's PPO trainer"),
  },
  return: {
    "turn-discount": unmapped("the turn discount of multi-turn environments is not in verl's PPO trainer"),
  },
};

/** The registry entries a run uses. */
export function registryUses(c: RunConfig): { registry: string; name: string }[] {
  const out: { registry: string; name: string }[] = [
    { registry: "advantage", name: c.rl.advantage },
    { registry: "policy-loss", name: c.rl.policy_loss },
    { registry: "agg", name: c.rl.loss_agg },
  ];
  if (c.rl.kl.coef > 0) out.push({ registry: "kl", name: c.rl.kl.estimator });
  for (const f of c.filters.list) out.push({ registry: "filter", name: f.name });
  if (c.shaping.kind !== "none") out.push({ registry: "shaping", name: c.shaping.kind });
  for (const t of c.rewards.terms) out.push({ registry: "reward", name: t.name });
  if (c.rl.positive_lm_coef > 0) out.push({ registry: "aux-loss", name: "positive-lm" });
  if (c.task.name === "frozenlake" || c.task.name === "sokoban")
    out.push({ registry: "return", name: "turn-discount" });
  return out;
}

export interface Unmapped {
  /** The field path or `registry:name`. */
  part: string;
  why: string;
}

function differsFromDefault(c: RunConfig, path: string): boolean {
  if (path.includes("*")) return false;
  return JSON.stringify(getPath(c, path)) !== JSON.stringify(getPath(defaultRunConfig(), path));
}

/**
 * The unmapped parts a run uses, each once, plus the approximations worth a warning (a
 * linear schedule, the ToolRL schedule). Fields that have no decision are an error here too.
 */
export function unmappedInUse(c: RunConfig): Unmapped[] {
  const out: Unmapped[] = [];
  const seen = new Set<string>();
  const add = (part: string, why: string) => {
    if (seen.has(why)) return;
    seen.add(why);
    out.push({ part, why });
  };
  for (const [path, d] of Object.entries(FIELD_DECISIONS)) {
    if (d.status !== "unmapped") continue;
    const used = d.used ? d.used(c) : differsFromDefault(c, path);
    if (used) add(path.startsWith("model.") ? "model" : path, d.how);
  }
  for (const { registry, name } of registryUses(c)) {
    const d = REGISTRY_DECISIONS[registry]?.[name];
    if (!d) throw new Error(`export: no mapping decision for ${registry} "${name}" (export/mapping.ts)`);
    if (d.status === "unmapped") add(`${registry}:${name}`, d.how);
  }
  if (c.rl.schedule === "linear")
    add("rl.schedule", "verl has no linear lr decay; the export writes cosine (lr_scheduler_type cosine)");
  for (const t of c.rewards.terms) {
    if (t.name === "toolrl" && t.options.schedule === true)
      add(
        "rewards.terms.toolrl.schedule",
        "ToolRL's reward schedule needs the training step, which verl does not pass to compute_score; reward.py uses step 0's ranges",
      );
  }
  return out;
}

/** Every decision as table rows: field decisions then registry decisions. */
export function mappingRows(): { part: string; status: MapStatus; verl: string; how: string }[] {
  const rows = Object.entries(FIELD_DECISIONS).map(([part, d]) => ({
    part,
    status: d.status,
    verl: d.verl,
    how: d.how,
  }));
  for (const [registry, table] of Object.entries(REGISTRY_DECISIONS))
    for (const [name, d] of Object.entries(table))
      rows.push({ part: `${registry}:${name}`, status: d.status, verl: d.verl, how: d.how });
  return rows;
}

const STATUS_WORDS: Record<MapStatus, string> = {
  mapped: "mapped",
  approx: "mapped approximately",
  unmapped: "not in verl's PPO trainer",
};

/** The mapping table as markdown (README.md of an export, docs/SCALE-OUT.md). */
export function mappingTableMarkdown(): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  const lines = ["| lab | decision | verl | how |", "| --- | --- | --- | --- |"];
  for (const r of mappingRows())
    lines.push(
      `| \`${r.part}\` | ${STATUS_WORDS[r.status]} | ${r.verl ? `\`${esc(r.verl)}\`` : ""} | ${esc(r.how)} |`,
    );
  return lines.join("\n");
}
