// Named recipes: partial RunConfigs over the defaults (which are the measured demo, GRPO on
// the calculator task). Each recipe sets the knobs its method's paper or reference code
// names, citing ALGORITHMS.md; everything else stays the lab default so runs compare on the
// same model, task and budget. `recipeConfig(name)` merges and validates.
// Tested by config/config.test.ts (every recipe parses).
import { mergeConfig } from "./edit.ts";
import { parseRunConfig } from "./migrate.ts";
import { own } from "./own.ts";
import { defaultRunConfig, formatConfigErrors, type RunConfig, type RunConfigInput } from "./schema.ts";

export type Recipe = { help: string; config: RunConfigInput };

const dapoClip = { clip_eps_low: 0.2, clip_eps_high: 0.28 }; // §4 clip-higher

export const RECIPES: Record<string, Recipe> = {
  demo: { help: "The measured demo: GRPO, 8x8, token-mean, no KL; the quick demo's algorithm.", config: {} },
  grpo: {
    help: "GRPO as in DeepSeekMath: seq-mean-token-mean, k3 KL in the loss, beta 0.04.",
    config: {
      rl: {
        advantage: "grpo",
        loss_agg: "seq-mean-token-mean",
        std_eps: 1e-6,
        kl: { estimator: "k3", coef: 0.04, in: "loss" },
      },
    },
  },
  "dr-grpo": {
    help: "Dr. GRPO: no std, constant length normaliser, no KL.",
    config: {
      rl: {
        advantage: "dr-grpo",
        norm_adv_by_std: false,
        loss_agg: "seq-mean-token-sum-norm",
        kl: { coef: 0 },
      },
    },
  },
  dapo: {
    help: "DAPO: clip-higher, token-mean, +1/-1 reward, overlong penalty, dynamic sampling.",
    config: {
      rl: { ...dapoClip, loss_agg: "token-mean", kl: { coef: 0 } },
      rewards: {
        terms: [
          { name: "correctness", weight: 1, options: { pos: 1, neg: -1 } },
          { name: "dapo-overlong", weight: 1, options: {} },
        ],
      },
      filters: {
        list: [{ name: "dapo-dynamic-sampling", options: {} }],
        refill: "resample",
        max_gen_rounds: 10,
      },
    },
  },
  ppo: {
    help: "PPO with a critic: token-level GAE, dual-clip c=3, clipped value loss.",
    config: { rl: { advantage: "gae", gamma: 1, lambda: 0.95, dual_clip_c: 3, value_clip: 0.5 } },
  },
  rloo: { help: "RLOO: leave-one-out baseline, PPO loss.", config: { rl: { advantage: "rloo" } } },
  "reinforce-pp": {
    help: "REINFORCE++: k1 KL in the reward, batch-whitened returns.",
    config: { rl: { advantage: "reinforce-pp", kl: { estimator: "k1", coef: 0.001, in: "reward" } } },
  },
  "reinforce-pp-baseline": {
    help: "REINFORCE++-baseline: group-centred, batch-whitened; k2 KL in the loss, 1e-5.",
    config: { rl: { advantage: "reinforce-pp-baseline", kl: { estimator: "k2", coef: 1e-5, in: "loss" } } },
  },
  remax: { help: "ReMax: greedy-decode baseline.", config: { rl: { advantage: "remax" } } },
  gigpo: {
    help: "GiGPO: episode + anchor-state step advantages; needs a multi-turn task.",
    config: {
      task: { template: "chatml-turns" },
      rl: {
        advantage: "gigpo",
        kl: { estimator: "k3", coef: 0.01, in: "loss" },
        gigpo: { step_weight: 1, gamma: 0.95 },
      },
    },
  },
  "starpo-s": {
    help: "StarPO-S: variance filter p=0.25, critic, clip-higher, no KL, entropy 0.001.",
    config: {
      rl: { advantage: "gae", gamma: 1, lambda: 1, ...dapoClip, kl: { coef: 0 }, entropy_coef: 0.001 },
      filters: { list: [{ name: "starpo-variance", options: { p: 0.25 } }], refill: "none" },
    },
  },
  "tao-rl": {
    help: "TAO-RL (code form): tool-aware filter with duplicate refill, tao-code shaping.",
    config: {
      rl: { ...dapoClip, dual_clip_c: 3, loss_agg: "token-mean", kl: { coef: 0 }, entropy_coef: 0.001 },
      filters: { list: [{ name: "tao-tool-aware", options: {} }], refill: "duplicate", oversample: 2 },
      shaping: { kind: "tao-code", coef: 0.01, restrict_to_post_tool: true },
    },
  },
  "tao-additive": {
    help: "TAO-RL reconstruction: additive clipped entropy bonus on top-20% post-tool tokens.",
    config: {
      rl: { ...dapoClip, loss_agg: "token-mean", kl: { coef: 0 } },
      filters: { list: [{ name: "tao-tool-aware", options: {} }], refill: "duplicate" },
      shaping: { kind: "tao-additive", alpha: 0.4, kappa: 2, q_h: 0.2 },
    },
  },
  vapo: {
    // The paper's alpha 0.05 suits thousand-token responses; 0.5 gives lambda 0.9-0.97 at 20-60 tokens (§12).
    help: "VAPO: critic with decoupled and length-adaptive GAE, clip-higher, positive-example LM loss.",
    config: {
      rl: {
        advantage: "gae",
        ...dapoClip,
        loss_agg: "token-mean",
        lambda_critic: 1,
        length_adaptive_alpha: 0.5,
        positive_lm_coef: 0.1,
        value_pretrain: { steps: 50, stop_explained_var: null },
      },
    },
  },
  gspo: {
    // The paper's ranges: a geometric-mean sequence ratio moves far less than a token ratio.
    help: "GSPO: sequence-level ratio and clip (3e-4 / 4e-4, the paper's), seq-mean-token-mean, no KL.",
    config: { rl: { policy_loss: "gspo", clip_eps_low: 3e-4, clip_eps_high: 4e-4, kl: { coef: 0 } } },
  },
  cispo: {
    // MiniMax-M1 sets no lower bound on the weight (eps_low 1 = weight >= 0) and tunes the upper one.
    help: "CISPO: clipped stop-gradient IS weight on -A*lp, weight <= 1.28 and no lower bound, token-mean.",
    config: {
      rl: {
        policy_loss: "cispo",
        clip_eps_low: 1,
        clip_eps_high: 0.28,
        loss_agg: "token-mean",
        kl: { coef: 0 },
      },
    },
  },
  "clip-cov": {
    help: "Clip-Cov: PPO clip, gradient removed on the top 0.02% tokens with covariance in (1, 5), verl defaults.",
    config: {
      rl: { policy_loss: "clip-cov", loss_agg: "token-mean", clip_cov: { ratio: 2e-4, lb: 1, ub: 5 } },
    },
  },
  "kl-cov": {
    help: "KL-Cov: unclipped -A*ratio with |log-ratio| (kappa 1) on the top 0.02% tokens by covariance, verl defaults.",
    config: { rl: { policy_loss: "kl-cov", loss_agg: "token-mean", kl_cov: { ratio: 2e-4, coef: 1 } } },
  },
  torl: {
    help: "ToRL: +1/-1 correctness, one tool call, no KL.",
    config: {
      rl: { kl: { coef: 0 } },
      rewards: { terms: [{ name: "correctness", weight: 1, options: { pos: 1, neg: -1 } }] },
      limits: { max_tool_calls: 1 },
    },
  },
  zerotir: {
    help: "ZeroTIR: 0/1 correctness, accuracy band (0, 0.8) with resampling, 2 tool calls.",
    config: {
      filters: { list: [{ name: "zerotir-band", options: { lo: 0, hi: 0.8 } }], refill: "resample" },
      limits: { max_tool_calls: 2 },
    },
  },
  otc: {
    help: "OTC-GRPO: correctness times a tool-efficiency reward.",
    config: { rewards: { terms: [{ name: "otc-grpo", weight: 1, options: { c: 1, alpha: 1 } }] } },
  },
  artist: {
    help: "ARTIST: answer (2 if correct) + format + tool success ratio.",
    config: {
      rewards: {
        terms: [
          { name: "correctness", weight: 1, options: { pos: 2, neg: 0 } },
          { name: "format", weight: 1, options: {} },
          { name: "artist-tool-exec", weight: 1, options: {} },
        ],
      },
    },
  },
  toolrl: {
    help: "ToolRL on function calling: format + tool-call correctness.",
    config: {
      task: { name: "function-calling", template: "chatml-turns" },
      rewards: { terms: [{ name: "toolrl", weight: 1, options: { schedule: false } }] },
    },
  },
  "tool-n1": {
    help: "Nemotron Tool-N1 on function calling: binary format and call match.",
    config: {
      task: { name: "function-calling", template: "chatml-turns" },
      rewards: { terms: [{ name: "tool-n1", weight: 1, options: {} }] },
    },
  },
};

/** The full, validated config of a recipe, optionally with further overrides. Throws on errors. */
export function recipeConfig(name: string, override: unknown = {}): RunConfig {
  const recipe = own(RECIPES, name);
  if (!recipe) throw new Error(`unknown recipe "${name}" (known: ${Object.keys(RECIPES).join(", ")})`);
  const r = parseRunConfig(mergeConfig(mergeConfig(defaultRunConfig(), recipe.config), override));
  if (!r.ok) throw new Error(`recipe ${name}:\n${formatConfigErrors(r.errors)}`);
  return r.config;
}
