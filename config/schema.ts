// RunConfig: the one typed, versioned object that describes a run (model, task, SFT cold
// start, RL algorithm, rewards, filters, shaping, sampling, tool limits, stop rule, seed).
// It imports only zod and the registries' descriptions of rl/algos (pure, importing nothing
// else), so app/, rl/, cli/ and workers/ can all read it.
// Every field has a default with a comment saying where the value comes from
// (ALGORITHMS.md section, ALGORITHMS §14, or "lab choice"). Objects are strict, so an
// unknown field is an error that names it. Tested by config/config.test.ts
// (`npx vitest run config/`).
import { z } from "zod";
import { POLICY_LOSSES } from "../rl/algos/losses.ts";
import { own } from "./own.ts";
import { TASK_OPTIONS, taskOptionIssues } from "./task-options.ts";

export const CONFIG_VERSION = 2;

// Numbers with messages that read well after the dotted path ("rl.clip_eps_low: must be <= 1").
function num(opts: { min?: number; max?: number; gt?: number; lt?: number; int?: boolean } = {}) {
  let s = z.number({ error: "must be a number" });
  if (opts.int) s = s.int("must be an integer");
  if (opts.min !== undefined) s = s.min(opts.min, `must be >= ${opts.min}`);
  if (opts.max !== undefined) s = s.max(opts.max, `must be <= ${opts.max}`);
  if (opts.gt !== undefined) s = s.gt(opts.gt, `must be > ${opts.gt}`);
  if (opts.lt !== undefined) s = s.lt(opts.lt, `must be < ${opts.lt}`);
  return s;
}
const int = (min = 0, max?: number) => num({ int: true, min, max });
const betas = z.tuple([num({ min: 0, lt: 1 }), num({ min: 0, lt: 1 })]);
const options = z.record(z.string(), z.unknown());

export const LR_SCHEDULES = ["constant", "linear", "cosine"] as const;
export const ADVANTAGE_NAMES = [
  "gae",
  "grpo",
  "dr-grpo",
  "rloo",
  "reinforce-pp",
  "reinforce-pp-baseline",
  "remax",
  "gigpo",
  "reinforce-history",
  "opo",
  "grpo-passk",
  "liteppo",
] as const;
/** The policy-loss registry's names (rl/algos/losses.ts POLICY_LOSSES), in its order. */
export const POLICY_LOSS_NAMES = POLICY_LOSSES.map((e) => e.name) as [string, ...string[]];
export const AGG_MODES = [
  "token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-mean",
  "seq-mean-token-sum-norm",
] as const;
export const KL_ESTIMATORS = ["k1", "k2", "k3"] as const;
export const SHAPING_NAMES = ["none", "tao-code", "tao-additive"] as const;
export const REFILL_MODES = ["none", "resample", "duplicate"] as const;
export const TEMPLATE_NAMES = ["inline", "chatml-turns", "model"] as const;
export const TOKENIZATION_CHECKS = ["strict", "warn", "off"] as const;

export const LORA_TARGET_NAMES = [
  "q_proj",
  "k_proj",
  "v_proj",
  "o_proj",
  "gate_proj",
  "up_proj",
  "down_proj",
] as const;

export const LoraSchema = z
  .object({
    rank: int(0, 1024).default(0), // verl actor_rollout_ref.model.lora_rank / PEFT r; 0 = full fine-tuning (the demo)
    alpha: num({ gt: 0 }).default(16), // verl lora_alpha / PEFT lora_alpha (verl's default 16); scale = alpha/rank
    // PEFT target_modules; "all-linear" = every projection the model has (verl's default target_modules)
    targets: z
      .union([z.literal("all-linear"), z.array(z.enum(LORA_TARGET_NAMES)).min(1, "name at least one module")])
      .default("all-linear"),
  })
  .strict();

export const ModelSchema = z
  .object({
    layers: int(1, 64).default(3), // ALGORITHMS §14: 3 layers
    d_model: int(8, 4096).default(128), // ALGORITHMS §14: d_model 128
    heads: int(1, 64).default(4), // ALGORITHMS §14: 4 heads (head dim 32)
    context: int(8, 8192).default(128), // ALGORITHMS §14: context 128 tokens
    norm: z.enum(["layernorm", "rmsnorm"]).default("layernorm"), // ALGORITHMS §14: pre-LayerNorm GPT
    mlp: z.enum(["gelu", "swiglu"]).default("gelu"), // ALGORITHMS §14: GELU MLP
    positional: z.enum(["learned", "rope"]).default("learned"), // ALGORITHMS §14: learned absolute positions
    tied_embeddings: z.boolean().default(true), // ALGORITHMS §14: tied input/output embeddings
    init_std: num({ gt: 0, max: 1 }).default(0.02), // GPT-2/nanoGPT init std; lab choice
    lora: LoraSchema.prefault({}),
    gradient_checkpointing: z.boolean().default(false), // verl actor_rollout_ref.model.enable_gradient_checkpointing / transformers gradient_checkpointing: keep each layer's input, re-run its forward in backward (same gradients, less memory); lab default off (the tiny models fit)
    dtype: z.enum(["f32", "f16"]).default("f32"), // storage of the frozen base's linear weights: verl/FSDP model_dtype (mixed precision), transformers torch_dtype; f16 needs LoRA (model.lora.rank > 0) and a device with shader-f16 (else f32 storage of the same f16-rounded values); f32 math everywhere; lab default f32
    pretrained: z.string().min(1, "must not be empty").nullable().default(null), // null = the lab's own architecture above, randomly initialised; else a Hugging Face model (config.json + safetensors) whose architecture and weights are used: a folder path, "hf:<owner>/<name>" (the Hub, at model.revision) or "local:<name>" (files picked in the page, named by model.sha256)
    revision: z.string().min(1, "must not be empty").default("main"), // the Hub revision (branch, tag or commit) of an "hf:" model; a commit pins the weights a link names
    sha256: z
      .record(z.string(), z.string().regex(/^[0-9a-f]{64}$/, "must be 64 hex digits"))
      .nullable()
      .default(null), // the files of a "local:" model by SHA-256, so a link names its weights; null for other sources
    memory_budget_gb: num({ gt: 0, max: 1024 }).default(4), // lab choice: WebGPU reports no device memory; the plan's total must fit this (4 GB: a laptop GPU)
    tokenizer: z.string().min(1, "must not be empty").nullable().default(null), // null = the pretrained folder's tokenizer, or the lab's character tokenizer (ALGORITHMS §14); else a folder with tokenizer.json + tokenizer_config.json
  })
  .strict();

export const TaskSchema = z
  .object({
    name: z.string().min(1, "must not be empty").default("arithmetic"), // ALGORITHMS §14 calculator task (tasks/ registry name)
    options: options.default({}), // task-specific knobs, validated by the task itself
    template: z.enum(TEMPLATE_NAMES).default("inline"), // lab choice: the measured demo uses inline; "model" = the tokenizer's own chat template (Hermes tool calls)
    tool_prompt: z.enum(["hermes", "none"]).default("hermes"), // lab choice: where a model's template ignores tools, list them in the system message in the Hermes form
    tokenization_check: z.enum(TOKENIZATION_CHECKS).default("strict"), // verl tokenization_sanity_check_mode: each turn's tokens must extend the previous turn's
    eval_size: int(0).default(200), // held-out prompts per evaluation; lab choice
    eval_every: int(0).default(10), // evaluate every N RL steps (0 = only at step 0); lab choice
    buckets: z.array(z.string()).default(["easy", "hard"]), // ALGORITHMS §14 difficulty buckets for val/acc/<bucket> (those the task has; none of them = all the task's)
    split_version: z.union([z.literal(1), z.literal(2)]).default(2), // tasks/split.ts: 2 = canonical keys + dev side; configs of version 1 migrate to 1
    dev_size: int(0).default(0), // dev prompts per evaluation (split version 2), reported as dev/*; lab choice (0 = off)
  })
  .strict()
  // Each built-in task's options against its schema, here where a config is parsed, so a link,
  // a recipe or the CLI with task.options {digts: 3} is refused before anything runs.
  .superRefine((task, ctx) => {
    const schema = own(TASK_OPTIONS, task.name);
    if (!schema) {
      // refused here, where a link, a recipe or the CLI's arguments are parsed, so nothing (a run
      // folder, a stored run) is made for a task that cannot run
      ctx.addIssue({
        code: "custom",
        path: ["name"],
        message: `unknown task ${JSON.stringify(task.name)} (known: ${Object.keys(TASK_OPTIONS).join(", ")})`,
      });
      return;
    }
    const r = schema.safeParse(task.options);
    if (r.success) return;
    for (const issue of taskOptionIssues(task.name, schema, r.error.issues))
      ctx.addIssue({ code: "custom", path: ["options", ...issue.path], message: issue.message });
  });

export const SftSchema = z
  .object({
    steps: int(0).default(600), // ALGORITHMS §14: 600 SFT steps (0 = skip the cold start)
    batch: int(1).default(64), // ALGORITHMS §14: batch 64
    lr: num({ min: 0, max: 1 }).default(3e-3), // ALGORITHMS §14: lr 3e-3
    warmup_steps: int(0).default(50), // ALGORITHMS §14: 50 warm-up steps
    schedule: z.enum(LR_SCHEDULES).default("cosine"), // ALGORITHMS §14: cosine decay
    min_lr_ratio: num({ min: 0, max: 1 }).default(0.1), // ALGORITHMS §14: cosine to 0.1x
    betas: betas.default([0.9, 0.98]), // ALGORITHMS §14: AdamW (0.9, 0.98)
    weight_decay: num({ min: 0 }).default(0.01), // ALGORITHMS §14: wd 0.01
    grad_clip: num({ min: 0 }).default(1.0), // ALGORITHMS §14: clip 1.0 (0 = off)
    init_checkpoint: z.string().nullable().default(null), // start from this checkpoint instead of random init
  })
  .strict();

export const KlSchema = z
  .object({
    estimator: z.enum(KL_ESTIMATORS).default("k3"), // ALGORITHMS §2: verl low_var_kl = k3
    coef: num({ min: 0 }).default(0), // ALGORITHMS §14: no KL (verl default 0.001, DeepSeekMath 0.04)
    in: z.enum(["loss", "reward"]).default("loss"), // ALGORITHMS §2: GRPO puts KL in the loss
  })
  .strict();

export const GigpoSchema = z
  .object({
    step_weight: num({ min: 0 }).default(1.0), // ALGORITHMS §6: omega (step_advantage_w) = 1.0
    gamma: num({ min: 0, max: 1 }).default(0.95), // ALGORITHMS §6: run-script gamma 0.95
    norm: z.enum(["mean_norm", "mean_std_norm"]).default("mean_norm"), // ALGORITHMS §6: config default mean_norm
    episode_stats: z.enum(["trajectories", "rows"]).default("trajectories"), // ALGORITHMS §6: paper form; "rows" = code form
  })
  .strict();

export const ValuePretrainSchema = z
  .object({
    steps: int(0).default(0), // ALGORITHMS §12: critic pretraining steps before PPO (0 = off)
    stop_explained_var: num({ min: -1, max: 1 }).nullable().default(null), // ALGORITHMS §12: stop early when explained variance reaches this
  })
  .strict();

export const SapoSchema = z
  .object({
    tau_pos: num({ gt: 0 }).default(1.0), // ALGORITHMS §13: verl tau_pos 1.0 (gate temperature, A > 0)
    tau_neg: num({ gt: 0 }).default(1.05), // ALGORITHMS §13: verl tau_neg 1.05 (A <= 0)
  })
  .strict();

export const ClipCovSchema = z
  .object({
    ratio: num({ gt: 0, max: 1 }).default(2e-4), // ALGORITHMS §13: verl clip_cov_ratio 0.0002
    lb: num().default(1.0), // ALGORITHMS §13: verl clip_cov_lb 1.0
    ub: num().default(5.0), // ALGORITHMS §13: verl clip_cov_ub 5.0
  })
  .strict();

export const KlCovSchema = z
  .object({
    ratio: num({ gt: 0, max: 1 }).default(2e-4), // ALGORITHMS §13: verl kl_cov_ratio 0.0002
    coef: num({ min: 0 }).default(1.0), // ALGORITHMS §13: verl ppo_kl_coef 1.0 (kappa)
  })
  .strict();

export const RolloutCorrectionSchema = z
  .object({
    rollout_is: z.enum(["none", "token", "sequence"]).default("none"), // ALGORITHMS §13: verl rollout_is null (off)
    rollout_is_threshold: num({ gt: 0 }).default(2.0), // ALGORITHMS §13: verl rollout_is_threshold 2.0 (truncation C)
    rollout_rs: z.enum(["none", "token", "sequence", "geometric"]).default("none"), // ALGORITHMS §13: verl rollout_rs null (off)
    rollout_rs_threshold: num({ gt: 0 }).nullable().default(null), // verl: null = rollout_is_threshold
    rollout_rs_threshold_lower: num({ gt: 0 }).nullable().default(null), // verl: null = 1 / upper
  })
  .strict();

export const RlSchema = z
  .object({
    advantage: z.enum(ADVANTAGE_NAMES).default("grpo"), // ALGORITHMS §14: GRPO
    policy_loss: z.enum(POLICY_LOSS_NAMES).default("ppo-clip"), // ALGORITHMS §1: clipped surrogate
    clip_eps_low: num({ min: 0, max: 1 }).default(0.2), // ALGORITHMS §1, §14: clip 0.2
    clip_eps_high: num({ min: 0, max: 10 }).default(0.2), // ALGORITHMS §14: symmetric 0.2 (DAPO clip-higher: 0.28)
    dual_clip_c: num({ gt: 1 }).nullable().default(null), // null = off (the demo has none); verl uses 3.0
    sapo: SapoSchema.prefault({}), // policy_loss sapo
    clip_cov: ClipCovSchema.prefault({}), // policy_loss clip-cov
    kl_cov: KlCovSchema.prefault({}), // policy_loss kl-cov
    loss_agg: z.enum(AGG_MODES).default("token-mean"), // ALGORITHMS §1, §14: token-mean
    l_max: int(1).nullable().default(null), // Dr. GRPO constant normaliser; null = sampling.max_new_tokens (ALGORITHMS §3)
    kl: KlSchema.prefault({}),
    entropy_coef: num({ min: 0 }).default(0), // ALGORITHMS §1: verl entropy_coeff 0
    epochs: int(1, 100).default(2), // ALGORITHMS §14: 2 epochs
    minibatches: int(1, 1024).default(2), // ALGORITHMS §14: 2 minibatches
    micro_batch_size: int(0).default(0), // verl ppo_micro_batch_size_per_gpu (sequences per micro-batch, gradient accumulation); 0 = the whole minibatch; lab choice
    prompts_per_step: int(1).default(8), // ALGORITHMS §14: 8 prompts
    group_size: int(1, 1024).default(8), // ALGORITHMS §14: group 8
    lr: num({ min: 0, max: 1 }).default(3e-4), // ALGORITHMS §14: AdamW lr 3e-4
    warmup_steps: int(0).default(0), // ALGORITHMS §14: no RL warm-up (DAPO uses 20)
    schedule: z.enum(LR_SCHEDULES).default("constant"), // ALGORITHMS §14: constant lr
    min_lr_ratio: num({ min: 0, max: 1 }).default(0.1), // floor of linear/cosine decay; lab choice
    betas: betas.default([0.9, 0.99]), // ALGORITHMS §14: betas (0.9, 0.99)
    weight_decay: num({ min: 0 }).default(0), // ALGORITHMS §14: wd 0
    grad_clip: num({ min: 0 }).default(1.0), // ALGORITHMS §14: clip 1.0 (0 = off)
    std_eps: num({ min: 0 }).default(1e-4), // ALGORITHMS §14: TRL's 1e-4 (verl 1e-6, OpenRLHF 1e-9)
    std: z.enum(["sample", "population"]).default("sample"), // ALGORITHMS §0: sample std (torch.std default)
    norm_adv_by_std: z.boolean().default(true), // ALGORITHMS §2/§3: false = Dr. GRPO numerator only
    singleton_group: z.enum(["zero", "raw"]).default("zero"), // ALGORITHMS §2: recommended 'zero' (verl quirk = 'raw')
    gamma: num({ min: 0, max: 1 }).default(1.0), // ALGORITHMS §1: verl gamma 1.0
    lambda: num({ min: 0, max: 1 }).default(1.0), // ALGORITHMS §1: verl lambda 1.0 (TRL 0.95)
    lambda_critic: num({ min: 0, max: 1 }).nullable().default(null), // ALGORITHMS §12 decoupled GAE; null = use lambda
    length_adaptive_alpha: num({ gt: 0 }).nullable().default(null), // ALGORITHMS §12 lambda_policy = 1-1/(alpha*l); null = off
    value_coef: num({ min: 0 }).default(0.5), // weight of the critic loss; lab choice (separate critic in verl)
    value_clip: num({ min: 0 }).default(0.5), // ALGORITHMS §1: verl cliprange_value 0.5
    value_pretrain: ValuePretrainSchema.prefault({}),
    mask_tool_output: z.boolean().default(true), // ALGORITHMS §10: tool output gets no gradient
    positive_lm_coef: num({ min: 0 }).default(0), // ALGORITHMS §12 VAPO mu (paper 0.1); 0 = off
    history_window: int(1).default(10), // ALGORITHMS §12 reinforce-history: last K batches
    history_ema: num({ min: 0, lt: 1 }).nullable().default(null), // ALGORITHMS §12: EMA factor instead of a window; null = window
    turn_gamma: num({ min: 0, max: 1 }).default(0.4), // ALGORITHMS §12: Kevin-32B turn discount 0.4
    gigpo: GigpoSchema.prefault({}),
    rollout_correction: RolloutCorrectionSchema.prefault({}), // ALGORITHMS §13 IS correction; off by default
    top_entropy_quantile: num({ gt: 0, max: 1 }).default(1.0), // TRL top_entropy_quantile 1.0 (off): policy loss on the top-q entropy tokens
  })
  .strict();

export const RewardTermSchema = z
  .object({
    name: z.string().min(1, "must not be empty"), // a reward registry name (rl/algos/reward-terms.ts)
    weight: num().default(1), // multiplies the term; 1 = as the paper defines it
    options: options.default({}), // term-specific options (e.g. {pos: 1, neg: 0})
  })
  .strict();

export const RewardsSchema = z
  .object({
    // ALGORITHMS §14: reward 1 if correct else 0, strict (one <answer> then <|im_end|>)
    terms: z
      .array(RewardTermSchema)
      .default([{ name: "correctness", weight: 1, options: { pos: 1, neg: 0 } }]),
    custom_js: z.string().default(""), // source of a user reward run in the sandbox; "" = none
    custom_js_weight: num().default(1), // weight of the custom JS reward when custom_js is set
  })
  .strict();

export const FilterSchema = z
  .object({
    name: z.string().min(1, "must not be empty"), // a filter registry name (rl/algos/filters.ts)
    options: options.default({}), // filter-specific options (e.g. {p: 0.25} for starpo-variance)
  })
  .strict();

export const FiltersSchema = z
  .object({
    list: z.array(FilterSchema).default([]), // ALGORITHMS §14: no filtering
    refill: z.enum(REFILL_MODES).default("none"), // ALGORITHMS §4 resample / §8.1 duplicate; none = train on what survives
    max_gen_rounds: int(0).default(10), // ALGORITHMS §4: DAPO max_num_gen_batches 10 (0 = no limit)
    oversample: num({ min: 1 }).default(2), // ALGORITHMS §8.1: TAO-RL oversample_multiplier 2.0
  })
  .strict();

export const ShapingSchema = z
  .object({
    kind: z.enum(SHAPING_NAMES).default("none"), // ALGORITHMS §14: no shaping
    coef: num({ min: 0 }).default(0.01), // ALGORITHMS §8.3: tao-code aepo_shaping_coeff 0.01
    restrict_to_post_tool: z.boolean().default(true), // ALGORITHMS §8.4a: default true (abstract's form)
    detach_entropy: z.boolean().default(false), // ALGORITHMS §8.4a: code does not detach
    fallback_all_tokens: z.boolean().default(false), // ALGORITHMS §8.4a: code behaves as true
    alpha: num({ min: 0 }).default(0.4), // ALGORITHMS §8.4b: 0.4 for GRPO (0.1 for PPO)
    kappa: num({ gt: 0 }).default(2), // ALGORITHMS §8.4b: kappa 2
    q_h: num({ gt: 0, max: 1 }).default(0.2), // ALGORITHMS §8.4b: top 20% post-tool tokens by entropy
  })
  .strict();

export const SamplingSchema = z
  .object({
    temperature: num({ gt: 0, max: 10 }).default(1.0), // ALGORITHMS §14: temperature 1.0
    top_k: int(0).default(0), // 0 = off; lab choice
    top_p: num({ gt: 0, max: 1 }).default(1.0), // 1 = off; lab choice
    max_new_tokens: int(1).default(64), // ALGORITHMS §14: 64 new tokens
  })
  .strict();

export const LimitsSchema = z
  .object({
    max_tool_calls: int(0).default(3), // ALGORITHMS §14: max 3 calls
    max_tool_response_chars: int(1).default(256), // head+tail truncation; ZeroTIR uses 256 tokens
    tool_timeout_s: num({ gt: 0, max: 60 }).default(1), // hard per-call deadline; lab choice
    memory_mb: num({ gt: 0, max: 1024 }).default(16), // QuickJS runtime memory limit; lab choice
    notice_on_exceeded: z.boolean().default(true), // lab choice: inject a notice (mask 0) when calls run out
  })
  .strict();

export const StopSchema = z
  .object({
    max_steps: int(0).default(40), // ALGORITHMS §14: 40 RL steps (saturated by step 10)
    target: z
      .object({ key: z.string().min(1, "must not be empty"), value: num() })
      .strict()
      .nullable()
      .default(null), // stop when metrics[key] >= value; null = run to max_steps
  })
  .strict();

export const RunConfigSchema = z
  .object({
    version: z.literal(CONFIG_VERSION, { error: `must be ${CONFIG_VERSION}` }).default(CONFIG_VERSION), // schema version; migrateConfig upgrades older ones
    seed: int(0, 2 ** 32 - 1).default(1234), // one seed for data, init and sampling; lab choice
    seeds: int(1, 100).default(1), // run seed, seed+1, ..., seed+seeds-1 one after another (W&B-style group); lab choice
    model: ModelSchema.prefault({}),
    task: TaskSchema.prefault({}),
    sft: SftSchema.prefault({}),
    rl: RlSchema.prefault({}),
    rewards: RewardsSchema.prefault({}),
    filters: FiltersSchema.prefault({}),
    shaping: ShapingSchema.prefault({}),
    sampling: SamplingSchema.prefault({}),
    limits: LimitsSchema.prefault({}),
    stop: StopSchema.prefault({}),
    checkpoint_every: int(0).default(10), // checkpoint every N RL (and value-pretraining) steps, and at the end of each phase (0 = only there); lab choice
  })
  .strict()
  .superRefine((c, ctx) => {
    // Cross-field rules: each names the field that must change.
    if (c.model.d_model % c.model.heads !== 0) {
      ctx.addIssue({ code: "custom", path: ["model", "heads"], message: "must divide model.d_model" });
    } else if (c.model.positional === "rope" && (c.model.d_model / c.model.heads) % 2 !== 0) {
      ctx.addIssue({
        code: "custom",
        path: ["model", "heads"],
        message: "rope needs an even head dimension",
      });
    }
    const rollouts = c.rl.prompts_per_step * c.rl.group_size;
    if (rollouts % c.rl.minibatches !== 0) {
      ctx.addIssue({
        code: "custom",
        path: ["rl", "minibatches"],
        message: `must divide prompts_per_step*group_size (${rollouts})`,
      });
    }
    if (c.sampling.max_new_tokens >= c.model.context) {
      ctx.addIssue({
        code: "custom",
        path: ["sampling", "max_new_tokens"],
        message: "must be < model.context",
      });
    }
    if (c.rl.l_max !== null && c.rl.l_max < c.sampling.max_new_tokens) {
      ctx.addIssue({ code: "custom", path: ["rl", "l_max"], message: "must be >= sampling.max_new_tokens" });
    }
    if (c.rl.clip_cov.lb >= c.rl.clip_cov.ub) {
      ctx.addIssue({ code: "custom", path: ["rl", "clip_cov", "lb"], message: "must be < rl.clip_cov.ub" });
    }
    if (c.model.dtype === "f16" && c.model.lora.rank === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["model", "dtype"],
        message:
          "f16 stores a frozen base and needs LoRA (model.lora.rank > 0); full fine-tuning trains f32 weights",
      });
    }
    if (c.sft.warmup_steps > c.sft.steps && c.sft.steps > 0) {
      ctx.addIssue({ code: "custom", path: ["sft", "warmup_steps"], message: "must be <= sft.steps" });
    }
  });

export type RunConfig = z.infer<typeof RunConfigSchema>;
/** What a recipe or a URL may hold: any subset of the fields, nested. */
export type RunConfigInput = z.input<typeof RunConfigSchema>;
export type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

export type ConfigError = { path: string; message: string };
export type ParseResult = { ok: true; config: RunConfig } | { ok: false; errors: ConfigError[] };

export function defaultRunConfig(): RunConfig {
  return RunConfigSchema.parse({ version: CONFIG_VERSION });
}

export function issuesToErrors(issues: readonly z.core.$ZodIssue[]): ConfigError[] {
  const out: ConfigError[] = [];
  for (const issue of issues) {
    const base = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) out.push({ path: [...base, key].join("."), message: "unknown field" });
    } else {
      out.push({ path: base.join(".") || "(root)", message: issue.message });
    }
  }
  return out;
}

/** Validate (after migration) and fill defaults. Missing `version` means the current one. */
export function validateRunConfig(input: unknown): ParseResult {
  const r = RunConfigSchema.safeParse(input);
  if (r.success) return { ok: true, config: r.data };
  return { ok: false, errors: issuesToErrors(r.error.issues) };
}

/** The schema of a leaf of RunConfig by dotted path (defaults, optionals and nullables unwrapped). */
function leafSchema(path: string): z.ZodType | undefined {
  const unwrap = (x: z.ZodType): z.ZodType => {
    for (;;) {
      const def = (x as unknown as { _zod: { def: { type: string; innerType?: z.ZodType; in?: z.ZodType } } })
        ._zod.def;
      if (def.innerType) x = def.innerType;
      else if (def.type === "pipe" && def.in) x = def.in;
      else return x;
    }
  };
  let s: z.ZodType = RunConfigSchema;
  for (const key of path.split(".")) {
    const shape = (unwrap(s) as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
    const next = shape?.[key];
    if (!next) return undefined;
    s = next;
  }
  return unwrap(s);
}

/** True for the fields the schema declares whole numbers (z.int): the page refuses 2.5 there. */
export function isIntegerField(path: string): boolean {
  const s = leafSchema(path);
  return s instanceof z.ZodNumber && s.isInt === true;
}

export function formatConfigErrors(errors: readonly ConfigError[]): string {
  return errors.map((e) => `${e.path}: ${e.message}`).join("\n");
}
