// Public entry of rl/algos: every RL algorithm as pure CPU functions in registries
// (advantage, policy-loss, kl, agg, filter, shaping, reward, aux-loss, return), plus masks
// and masked metrics. Tests: `npx vitest run rl/algos/`.
export * from "./advantage.ts";
export * from "./filters.ts";
export * from "./losses.ts";
export * from "./masks.ts";
export * from "./registry.ts";
export * from "./reward-terms.ts";
export * from "./shaping.ts";
export * from "./types.ts";
