// Field metadata for the config panel and for live edits: for every leaf of RunConfig,
// whether it may change while a run is going (live) or needs a restart, its UI group, a
// one-line help text, the paper it comes from, and its range or options. Array elements
// are addressed with `*` (rewards.terms.*.weight); free-form records (task.options,
// reward/filter options) are one leaf each. config/config.test.ts checks that every leaf
// of the default config resolves to an entry here. `activeWhen` says in which context a field
// acts at all (a value-loss knob needs a critic): dotted paths and the values that make it act.
// rl/run/knobs.test.ts walks every field, sets that context, changes the field from its default
// and checks that something observable changes.
import {
  ADVANTAGE_NAMES,
  AGG_MODES,
  KL_ESTIMATORS,
  LR_SCHEDULES,
  POLICY_LOSS_NAMES,
  REFILL_MODES,
  SHAPING_NAMES,
  TEMPLATE_NAMES,
  TOKENIZATION_CHECKS,
} from "./schema.ts";

export type FieldGroup =
  | "model"
  | "task"
  | "sft"
  | "algorithm"
  | "rewards"
  | "filters"
  | "sampling"
  | "limits"
  | "run";

export type FieldMeta = {
  live: boolean;
  group: FieldGroup;
  help: string;
  paper?: string;
  min?: number;
  max?: number;
  options?: string[];
  /** The context in which the field acts: dotted config paths and values (see the header). */
  activeWhen?: Record<string, unknown>;
};

type Extra = Omit<FieldMeta, "live" | "group" | "help">;
const live = (group: FieldGroup, help: string, extra: Extra = {}): FieldMeta => ({
  live: true,
  group,
  help,
  ...extra,
});
const restart = (group: FieldGroup, help: string, extra: Extra = {}): FieldMeta => ({
  live: false,
  group,
  help,
  ...extra,
});
const opts = (xs: readonly string[]) => ({ options: [...xs] });

// Contexts for activeWhen.
/** A LoRA run (alpha and targets act only with an adapter). */
const LORA_ON = { "model.lora.rank": 4 };
/** A policy that calls its calculator: the committed quick-demo SFT checkpoint, on hard products. */
const CALLS_TOOLS = {
  "sft.init_checkpoint": "checkpoints/quick-demo-sft.safetensors",
  "model.layers": 2,
  "model.d_model": 48,
  "model.heads": 2,
  "model.context": 80,
  "task.options": { hardFraction: 1, hardMulFraction: 1 },
  "sampling.max_new_tokens": 40,
};
/** A multi-turn environment (episodes of several turns). */
const MULTI_TURN = {
  "task.name": "frozenlake",
  "task.template": "chatml-turns",
  "task.options": { brief: true, size: 3, maxSteps: 3 },
  "model.context": 256,
};
const GAE = { "rl.advantage": "gae" };
const KL = { "rl.kl.coef": 0.1 };
const VALUE_PRETRAIN = { ...GAE, "rl.value_pretrain.steps": 3 };
const HISTORY = { "rl.advantage": "reinforce-history", "stop.max_steps": 3 };
const GIGPO = { ...MULTI_TURN, "rl.advantage": "gigpo" };
const A_FILTER = { "filters.list": [{ name: "dapo-dynamic-sampling", options: {} }] };
const RESAMPLE = { ...A_FILTER, "filters.refill": "resample" };
const TAO_CODE = { "shaping.kind": "tao-code" };
const TAO_ADDITIVE = { ...CALLS_TOOLS, "shaping.kind": "tao-additive" };
const SAPO = { "rl.policy_loss": "sapo" };
/** Clip-Cov / KL-Cov with a token share and covariance band wide enough for a tiny batch. */
const CLIP_COV = {
  "rl.policy_loss": "clip-cov",
  "rl.clip_cov.ratio": 0.5,
  "rl.clip_cov.lb": -100,
  "rl.clip_cov.ub": 100,
};
const KL_COV = { "rl.policy_loss": "kl-cov", "rl.kl_cov.ratio": 0.5 };
/** A schedule that decays: enough steps after warm-up for the floor to show. */
const SFT_DECAY = { "sft.steps": 4 };

export const FIELD_META: Record<string, FieldMeta> = {
  version: restart("run", "Config schema version (migrated automatically)."),
  seed: restart("run", "Seed for data order, initialisation and sampling.", { min: 0 }),
  seeds: restart(
    "run",
    "Seeds to run one after another (seed, seed+1, ...), shown as one group: the mean with a band and each seed faint. One seed is an anecdote: held-out accuracy here varies by about 0.15 between seeds.",
    { min: 1, max: 100 },
  ),
  checkpoint_every: live(
    "run",
    "Checkpoint every N RL and value-pretraining steps (0 = only at the end of each phase).",
    {
      min: 0,
    },
  ),

  "model.layers": restart("model", "Number of transformer blocks.", { min: 1, max: 64 }),
  "model.d_model": restart("model", "Residual stream width.", { min: 8, max: 4096 }),
  "model.heads": restart("model", "Attention heads (must divide d_model).", { min: 1, max: 64 }),
  "model.context": restart("model", "Maximum sequence length in tokens.", { min: 8, max: 8192 }),
  "model.norm": restart("model", "Normalisation layer.", opts(["layernorm", "rmsnorm"])),
  "model.mlp": restart("model", "MLP kind.", opts(["gelu", "swiglu"])),
  "model.positional": restart("model", "Position encoding.", opts(["learned", "rope"])),
  "model.tied_embeddings": restart("model", "Share the input embedding with the output projection."),
  "model.init_std": restart("model", "Std of the normal weight initialisation.", { min: 0, max: 1 }),
  "model.lora.rank": restart(
    "model",
    "LoRA rank: train low-rank adapters on the frozen base instead of every weight (0 = full fine-tuning). verl lora_rank, PEFT r.",
    { paper: "Hu et al. 2021, LoRA", min: 0, max: 1024 },
  ),
  "model.lora.alpha": restart(
    "model",
    "LoRA alpha: the adapter's output is scaled by alpha/rank. verl lora_alpha, PEFT lora_alpha.",
    { paper: "Hu et al. 2021, LoRA", min: 0, activeWhen: LORA_ON },
  ),
  "model.lora.targets": restart(
    "model",
    "Modules with an adapter (Hugging Face names q_proj..down_proj) or all-linear. verl target_modules, PEFT target_modules.",
    { paper: "Hu et al. 2021, LoRA", activeWhen: LORA_ON },
  ),
  "model.gradient_checkpointing": restart(
    "model",
    "Per-layer activation recomputation: training keeps only each layer's input and re-runs the layer's forward before its backward. The same gradients bit for bit with one layer's activations in memory instead of all, for one more forward per step. verl enable_gradient_checkpointing, transformers gradient_checkpointing.",
    { paper: "Chen et al. 2016, Training Deep Nets with Sublinear Memory Cost" },
  ),
  "model.dtype": restart(
    "model",
    "Storage of the frozen base's linear weights under LoRA: f16 halves them (f32 math and accumulation; norms, embeddings and the head stay f32; a tensor beyond f16's range stays f32). Needs model.lora.rank > 0; without shader-f16 the values are f16-rounded in f32 storage. verl/FSDP model_dtype (mixed precision), transformers torch_dtype.",
    {
      ...opts(["f32", "f16"]),
      paper: "Micikevicius et al. 2018, Mixed Precision Training",
      activeWhen: LORA_ON,
    },
  ),
  "model.pretrained": restart(
    "model",
    "A Hugging Face model (config.json + safetensors): a folder, hf:owner/name from the Hub, or local:name picked from disk; its architecture and weights replace the fields above.",
  ),
  "model.revision": restart(
    "model",
    "Hub revision (branch, tag or commit) of an hf: model; a commit pins the weights a link names.",
  ),
  "model.sha256": restart("model", "SHA-256 of each file of a local: model (set by the model picker)."),
  "model.memory_budget_gb": restart(
    "model",
    "GPU memory the run may plan for, in GB (WebGPU does not report it): a plan over it is refused before loading.",
    { min: 0, max: 1024 },
  ),
  "model.tokenizer": restart(
    "model",
    "Folder with a model's tokenizer.json and tokenizer_config.json (empty: the pretrained folder's, else the character tokenizer).",
  ),

  "task.name": restart("task", "Task (environment and verifier) to train on."),
  "task.options": restart("task", "Task-specific options, checked by the task."),
  "task.template": restart(
    "task",
    "Transcript template (model: the tokenizer's own chat template, Hermes tool calls).",
    opts(TEMPLATE_NAMES),
  ),
  "task.tool_prompt": restart(
    "task",
    "How tools reach a model whose template ignores them: listed in the system message (hermes) or not at all.",
    opts(["hermes", "none"]),
  ),
  "task.tokenization_check": restart(
    "task",
    "Each turn's tokens must extend the previous turn's: strict stops with an error, warn counts and re-tokenizes, off skips.",
    { paper: "verl tokenization_sanity_check_mode", ...opts(TOKENIZATION_CHECKS) },
  ),
  "task.eval_size": restart(
    "task",
    "Held-out prompts per evaluation, each once under split version 2 where the held-out side has that many: function-calling's single-call questions number 23 in all on the seeds' library (its eval repeats them) and 147 eval / 74 dev on task.options.library catalogue.",
    { min: 0 },
  ),
  "task.eval_every": live("task", "Evaluate every N RL steps (0 = only at step 0).", { min: 0 }),
  "task.buckets": restart("task", "Difficulty buckets reported as val/acc/<bucket>."),
  "task.split_version": restart(
    "task",
    "Train/eval split. 2: problems keyed canonically (a*b and b*a are one problem, on one side), eval and dev sets without repeats, and a dev side for choosing stopping steps. 1: the split of runs made before it (raw keys, eval repeats), kept so old links replay.",
    { min: 1, max: 2 },
  ),
  "task.dev_size": restart(
    "task",
    "Dev prompts per evaluation (split version 2), reported as dev/acc and dev/tool_call_rate: choose stopping steps and knobs on these, and keep val/* for the final report.",
    { min: 0 },
  ),

  "sft.steps": restart("sft", "SFT cold-start steps (0 = skip).", { min: 0 }),
  "sft.batch": restart("sft", "SFT batch size (sequences).", { min: 1 }),
  "sft.lr": live("sft", "SFT peak learning rate.", { min: 0, max: 1 }),
  "sft.warmup_steps": restart("sft", "Linear warm-up steps.", { min: 0 }),
  "sft.schedule": restart("sft", "Learning-rate decay after warm-up.", {
    ...opts(LR_SCHEDULES),
    activeWhen: SFT_DECAY,
  }),
  "sft.min_lr_ratio": restart("sft", "Final lr as a fraction of the peak.", {
    min: 0,
    max: 1,
    activeWhen: SFT_DECAY,
  }),
  "sft.betas": restart("sft", "AdamW betas (beta1, beta2)."),
  "sft.weight_decay": live("sft", "AdamW decoupled weight decay.", { min: 0 }),
  "sft.grad_clip": live("sft", "Global gradient-norm clip (0 = off).", { min: 0 }),
  "sft.init_checkpoint": restart("sft", "Checkpoint to start from instead of random weights.", {
    // The model of the committed checkpoint the walk starts from.
    activeWhen: { "model.layers": 2, "model.d_model": 48, "model.heads": 2, "model.context": 80 },
  }),

  "rl.advantage": restart("algorithm", "Advantage estimator.", {
    ...opts(ADVANTAGE_NAMES),
    paper:
      "GRPO 2402.03300; Dr. GRPO 2503.20783; RLOO 2402.14740; REINFORCE++ 2501.03262; OPO 2505.23585; pass@k 2503.19595; LitePPO 2508.08221",
  }),
  "rl.rollout_correction.rollout_is": live(
    "algorithm",
    "Importance weights exp(old − sampler log-prob) on the policy loss, per token or per sequence (none = off).",
    {
      ...opts(["none", "token", "sequence"]),
      paper: "Yao et al. 2025 (truncated IS); verl rollout_correction",
    },
  ),
  "rl.rollout_correction.rollout_is_threshold": live("algorithm", "IS weights are truncated at this value.", {
    min: 0,
    activeWhen: { "rl.rollout_correction.rollout_is": "token" },
  }),
  "rl.rollout_correction.rollout_rs": live(
    "algorithm",
    "Reject tokens or sequences whose ratio is outside [lower, upper] (geometric: per-token mean ratio).",
    { ...opts(["none", "token", "sequence", "geometric"]), paper: "verl rollout_correction" },
  ),
  "rl.rollout_correction.rollout_rs_threshold": live(
    "algorithm",
    "Rejection upper bound (empty: the IS threshold).",
    {
      min: 0,
      activeWhen: { "rl.rollout_correction.rollout_rs": "token" },
    },
  ),
  "rl.rollout_correction.rollout_rs_threshold_lower": live(
    "algorithm",
    "Rejection lower bound (empty: 1 / upper).",
    {
      min: 0,
      activeWhen: { "rl.rollout_correction.rollout_rs": "token" },
    },
  ),
  "rl.top_entropy_quantile": live(
    "algorithm",
    "Policy loss only on this fraction of each minibatch's tokens, highest entropy first (1 = all).",
    { min: 0, max: 1, paper: "80/20 high-entropy tokens 2506.01939; TRL top_entropy_quantile" },
  ),
  "rl.policy_loss": restart(
    "algorithm",
    "Policy loss (gspo, gspo-token, gmpo and sapo fix their own aggregation; dual-clip is ppo-clip's only).",
    {
      ...opts(POLICY_LOSS_NAMES),
      paper:
        "PPO 1707.06347; GSPO 2507.18071; GMPO 2507.20673; CISPO (MiniMax-M1) 2506.13585; SAPO 2511.20347; Clip-Cov/KL-Cov 2505.22617",
    },
  ),
  "rl.sapo.tau_pos": live("algorithm", "SAPO gate temperature where A > 0.", {
    min: 0,
    paper: "SAPO 2511.20347",
    activeWhen: SAPO,
  }),
  "rl.sapo.tau_neg": live("algorithm", "SAPO gate temperature where A <= 0.", {
    min: 0,
    paper: "SAPO 2511.20347",
    activeWhen: SAPO,
  }),
  "rl.clip_cov.ratio": live("algorithm", "Clip-Cov: fraction of tokens whose gradient is removed.", {
    min: 0,
    max: 1,
    paper: "Entropy Mechanism 2505.22617",
    activeWhen: { ...CLIP_COV, "rl.clip_cov.ratio": 2e-4 },
  }),
  "rl.clip_cov.lb": live("algorithm", "Clip-Cov: candidates have covariance above this.", {
    paper: "Entropy Mechanism 2505.22617",
    activeWhen: CLIP_COV,
  }),
  "rl.clip_cov.ub": live("algorithm", "Clip-Cov: candidates have covariance below this.", {
    paper: "Entropy Mechanism 2505.22617",
    activeWhen: CLIP_COV,
  }),
  "rl.kl_cov.ratio": live("algorithm", "KL-Cov: fraction of tokens (largest covariance) given the KL term.", {
    min: 0,
    max: 1,
    paper: "Entropy Mechanism 2505.22617",
    activeWhen: { ...KL_COV, "rl.kl_cov.ratio": 2e-4 },
  }),
  "rl.kl_cov.coef": live("algorithm", "KL-Cov: coefficient kappa of |log-ratio| on those tokens.", {
    min: 0,
    paper: "Entropy Mechanism 2505.22617",
    activeWhen: KL_COV,
  }),
  "rl.clip_eps_low": live("algorithm", "Lower ratio clip: ratio >= 1 - eps_low.", {
    min: 0,
    max: 1,
    paper: "PPO 1707.06347",
  }),
  "rl.clip_eps_high": live("algorithm", "Upper ratio clip: ratio <= 1 + eps_high (clip-higher).", {
    min: 0,
    max: 10,
    paper: "DAPO 2503.14476",
  }),
  "rl.dual_clip_c": live("algorithm", "Dual-clip bound c > 1 for negative advantages (null = off).", {
    min: 1,
    paper: "Dual-clip 1912.09729",
  }),
  "rl.loss_agg": live("algorithm", "How per-token losses are averaged.", {
    ...opts(AGG_MODES),
    paper: "DAPO 2503.14476; Dr. GRPO 2503.20783",
  }),
  "rl.l_max": restart("algorithm", "Dr. GRPO constant length normaliser (null = max_new_tokens).", {
    min: 1,
    paper: "Dr. GRPO 2503.20783",
    activeWhen: { "rl.loss_agg": "seq-mean-token-sum-norm" },
  }),
  "rl.kl.estimator": restart("algorithm", "KL estimator to the reference.", {
    ...opts(KL_ESTIMATORS),
    activeWhen: KL,
    paper: "Schulman, Approximating KL",
  }),
  "rl.kl.coef": live("algorithm", "KL coefficient beta (0 = off).", {
    min: 0,
    paper: "DeepSeekMath 2402.03300",
  }),
  "rl.kl.in": restart("algorithm", "Put KL in the loss or fold it into the reward.", {
    ...opts(["loss", "reward"]),
    activeWhen: KL,
  }),
  "rl.entropy_coef": live("algorithm", "Entropy bonus coefficient (loss -= coef * entropy).", { min: 0 }),
  "rl.epochs": live("algorithm", "Update epochs over each rollout batch.", { min: 1, max: 100 }),
  "rl.micro_batch_size": live(
    "algorithm",
    "Sequences per micro-batch: a minibatch is back-propagated in pieces whose gradients add up (same update, less memory; 0 = whole minibatch). verl ppo_micro_batch_size_per_gpu.",
    { min: 0 },
  ),
  "rl.minibatches": live("algorithm", "Minibatches per epoch (must divide the rollout count).", {
    min: 1,
    max: 1024,
  }),
  "rl.prompts_per_step": restart("algorithm", "Prompts sampled per RL step.", { min: 1 }),
  "rl.group_size": restart("algorithm", "Rollouts per prompt (G).", { min: 1, max: 1024 }),
  "rl.lr": live("algorithm", "RL peak learning rate.", { min: 0, max: 1 }),
  "rl.warmup_steps": restart("algorithm", "Linear lr warm-up steps.", { min: 0 }),
  "rl.schedule": restart("algorithm", "Learning-rate decay after warm-up.", opts(LR_SCHEDULES)),
  "rl.min_lr_ratio": restart("algorithm", "Final lr as a fraction of the peak.", {
    min: 0,
    max: 1,
    activeWhen: { "rl.schedule": "cosine" },
  }),
  "rl.betas": restart("algorithm", "AdamW betas (beta1, beta2)."),
  "rl.weight_decay": live("algorithm", "AdamW decoupled weight decay.", { min: 0 }),
  "rl.grad_clip": live("algorithm", "Global gradient-norm clip (0 = off).", { min: 0 }),
  "rl.std_eps": live("algorithm", "Epsilon added to the group std.", { min: 0 }),
  "rl.std": live("algorithm", "Std convention for group statistics.", opts(["sample", "population"])),
  "rl.norm_adv_by_std": live("algorithm", "Divide group advantages by the std (off = Dr. GRPO).", {
    paper: "Dr. GRPO 2503.20783",
  }),
  "rl.singleton_group": live("algorithm", "Advantage of a group of one: zero, or the raw reward (verl).", {
    ...opts(["zero", "raw"]),
    activeWhen: { "rl.group_size": 1 },
  }),
  "rl.gamma": restart("algorithm", "Discount factor.", {
    min: 0,
    max: 1,
    paper: "GAE 1506.02438",
    activeWhen: GAE,
  }),
  "rl.lambda": restart("algorithm", "GAE lambda.", {
    min: 0,
    max: 1,
    paper: "GAE 1506.02438",
    activeWhen: GAE,
  }),
  "rl.lambda_critic": restart("algorithm", "Decoupled GAE: lambda for value targets (null = lambda).", {
    min: 0,
    max: 1,
    paper: "VAPO 2504.05118",
    activeWhen: GAE,
  }),
  "rl.length_adaptive_alpha": restart("algorithm", "Length-adaptive GAE alpha (null = off).", {
    min: 0,
    paper: "VAPO 2504.05118",
    activeWhen: GAE,
  }),
  "rl.value_coef": live("algorithm", "Weight of the critic loss.", { min: 0, activeWhen: GAE }),
  "rl.value_clip": live("algorithm", "Value clip range eps_v.", {
    min: 0,
    paper: "PPO 1707.06347",
    activeWhen: GAE,
  }),
  "rl.value_pretrain.steps": restart("algorithm", "Critic pretraining steps before PPO (0 = off).", {
    min: 0,
    paper: "VAPO 2504.05118",
    activeWhen: GAE,
  }),
  "rl.value_pretrain.stop_explained_var": restart("algorithm", "Stop value pretraining at this EV.", {
    min: -1,
    max: 1,
    paper: "VAPO 2504.05118",
    activeWhen: VALUE_PRETRAIN,
  }),
  "rl.mask_tool_output": restart("algorithm", "Exclude tool output tokens from the loss.", {
    paper: "ToRL 2503.23383",
    activeWhen: CALLS_TOOLS,
  }),
  "rl.positive_lm_coef": live("algorithm", "NLL weight on correct trajectories (0 = off).", {
    min: 0,
    paper: "VAPO 2504.05118",
    activeWhen: CALLS_TOOLS,
  }),
  "rl.history_window": restart("algorithm", "reinforce-history: batches in the baseline window.", {
    min: 1,
    activeWhen: HISTORY,
  }),
  "rl.history_ema": restart("algorithm", "reinforce-history: EMA factor (null = window).", {
    min: 0,
    max: 1,
    activeWhen: HISTORY,
  }),
  "rl.turn_gamma": restart("algorithm", "Turn-level discount for multi-turn returns.", {
    min: 0,
    max: 1,
    paper: "Kevin-32B",
    activeWhen: { ...MULTI_TURN, ...GAE },
  }),
  "rl.gigpo.step_weight": live("algorithm", "GiGPO step-advantage weight omega.", {
    min: 0,
    paper: "GiGPO 2505.10978",
    activeWhen: GIGPO,
  }),
  "rl.gigpo.gamma": restart("algorithm", "GiGPO step-return discount.", {
    min: 0,
    max: 1,
    paper: "GiGPO 2505.10978",
    activeWhen: GIGPO,
  }),
  "rl.gigpo.norm": restart("algorithm", "GiGPO normalisation.", {
    ...opts(["mean_norm", "mean_std_norm"]),
    activeWhen: GIGPO,
    paper: "GiGPO 2505.10978",
  }),
  "rl.gigpo.episode_stats": restart(
    "algorithm",
    "GiGPO episode stats over trajectories (paper) or rows (code).",
    {
      ...opts(["trajectories", "rows"]),
      activeWhen: GIGPO,
      paper: "GiGPO 2505.10978",
    },
  ),

  "rewards.terms": live("rewards", "Reward terms, summed with their weights."),
  "rewards.terms.*.name": restart("rewards", "Reward registry name."),
  "rewards.terms.*.weight": live("rewards", "Weight of this reward term."),
  "rewards.terms.*.options": live("rewards", "Options of this reward term."),
  "rewards.custom_js": live("rewards", "JS reward function run in the sandbox (empty = none)."),
  "rewards.custom_js_weight": live("rewards", "Weight of the custom JS reward."),

  "filters.list": live("filters", "Group filters applied in order."),
  "filters.list.*.name": restart("filters", "Filter registry name.", {
    activeWhen: { ...A_FILTER, "rl.prompts_per_step": 4 },
  }),
  "filters.list.*.options": live("filters", "Options of this filter.", {
    activeWhen: { "filters.list": [{ name: "starpo-variance", options: {} }] },
  }),
  "filters.refill": live("filters", "When groups are dropped: none, resample or duplicate.", {
    ...opts(REFILL_MODES),
    activeWhen: A_FILTER,
    paper: "DAPO 2503.14476; TAO-RL 2606.03762",
  }),
  "filters.max_gen_rounds": live("filters", "Cap on resample rounds (0 = no limit).", {
    min: 0,
    paper: "DAPO 2503.14476",
    activeWhen: RESAMPLE,
  }),
  "filters.oversample": live("filters", "Prompts rolled out per needed prompt (TAO-RL).", {
    min: 1,
    activeWhen: RESAMPLE,
  }),

  "shaping.kind": restart("algorithm", "Entropy-guided advantage shaping on post-tool tokens.", {
    ...opts(SHAPING_NAMES),
    activeWhen: CALLS_TOOLS,
    paper: "TAO-RL 2606.03762; 2506.14758",
  }),
  "shaping.coef": live("algorithm", "tao-code coefficient c.", {
    min: 0,
    paper: "TAO-RL 2606.03762",
    activeWhen: { ...CALLS_TOOLS, ...TAO_CODE },
  }),
  "shaping.restrict_to_post_tool": live("algorithm", "Shape only post-tool tokens.", {
    activeWhen: TAO_CODE,
  }),
  "shaping.detach_entropy": restart("algorithm", "Stop gradients through the entropy term.", {
    activeWhen: { ...TAO_CODE, "shaping.restrict_to_post_tool": false },
  }),
  "shaping.fallback_all_tokens": live("algorithm", "Shape all tokens when no post-tool token exists.", {
    activeWhen: TAO_CODE,
  }),
  "shaping.alpha": live("algorithm", "tao-additive alpha.", {
    min: 0,
    paper: "2506.14758",
    activeWhen: TAO_ADDITIVE,
  }),
  "shaping.kappa": live("algorithm", "tao-additive kappa (bonus <= |A|/kappa).", {
    min: 0,
    paper: "2506.14758",
    activeWhen: TAO_ADDITIVE,
  }),
  "shaping.q_h": live("algorithm", "tao-additive: top fraction of post-tool tokens by entropy.", {
    min: 0,
    max: 1,
    activeWhen: TAO_ADDITIVE,
  }),

  "sampling.temperature": live("sampling", "Sampling temperature (log-probs use the same).", {
    min: 0,
    max: 10,
  }),
  "sampling.top_k": live("sampling", "Top-k sampling (0 = off).", { min: 0 }),
  "sampling.top_p": live("sampling", "Nucleus sampling (1 = off).", { min: 0, max: 1 }),
  "sampling.max_new_tokens": restart("sampling", "Maximum generated tokens per trajectory.", { min: 1 }),

  "limits.max_tool_calls": live("limits", "Maximum tool calls per trajectory.", {
    min: 0,
    activeWhen: CALLS_TOOLS,
  }),
  "limits.max_tool_response_chars": live("limits", "Tool responses are cut (head+tail) to this.", {
    min: 1,
    activeWhen: CALLS_TOOLS,
  }),
  "limits.tool_timeout_s": live("limits", "Hard deadline per tool call (seconds).", {
    min: 0,
    max: 60,
    // A reward that runs for real time: the sandbox's clock is virtual (1 ms a read), so a loop on
    // Date.now() would end after 30 reads, not 30 ms.
    activeWhen: {
      "rewards.custom_js":
        "(x) => { let s = 0; for (let i = 0; i < 1e6; i++) s += i; return s > 0 ? 1 : 0; }",
    },
  }),
  "limits.memory_mb": live("limits", "Sandbox memory limit per call (MB).", {
    min: 0,
    max: 1024,
    activeWhen: {
      "rewards.custom_js":
        "(x) => { const a = []; for (let i = 0; i < 100000; i++) a.push({ i }); return 1; }",
    },
  }),
  "limits.notice_on_exceeded": live("limits", "Inject a notice when the call budget runs out.", {
    activeWhen: { ...CALLS_TOOLS, "limits.max_tool_calls": 0 },
  }),

  "stop.max_steps": live("run", "Stop after this many RL steps.", { min: 0 }),
  "stop.target": live("run", "Stop early when a metric reaches a value ({key, value} or null)."),
};

/** Paths that are one leaf even though their value is an object (free-form records). */
export const OPAQUE_PATHS: ReadonlySet<string> = new Set([
  "task.options",
  "model.sha256",
  "rewards.terms.*.options",
  "filters.list.*.options",
  "stop.target",
]);

/** Normalise array indices to `*`: "rewards.terms.0.weight" -> "rewards.terms.*.weight". */
export function metaKey(path: string): string {
  return path
    .split(".")
    .map((s) => (/^\d+$/.test(s) ? "*" : s))
    .join(".");
}

/**
 * Metadata for a dotted path: exact entry, else the nearest ancestor entry (so
 * "task.options.digits" uses "task.options"). undefined for paths not in the config.
 */
export function fieldMeta(path: string): FieldMeta | undefined {
  const parts = metaKey(path).split(".");
  for (let n = parts.length; n > 0; n--) {
    const m = FIELD_META[parts.slice(0, n).join(".")];
    if (m) return m;
  }
  return undefined;
}

/** Dotted paths of every leaf of a config-shaped object (arrays and opaque records are leaves). */
export function leafPaths(obj: unknown, prefix = ""): string[] {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj) || OPAQUE_PATHS.has(metaKey(prefix))) {
    return [prefix];
  }
  const out: string[] = [];
  for (const [k, v] of Object.entries(obj)) out.push(...leafPaths(v, prefix ? `${prefix}.${k}` : k));
  return out;
}
