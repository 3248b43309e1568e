// The registry listing names every canonical entry of the brief exactly once, and the
// config schema's enums match the registries. `npx vitest run rl/algos/`.
import { describe, expect, it } from "vitest";
import { ADVANTAGE_NAMES, AGG_MODES, KL_ESTIMATORS, POLICY_LOSS_NAMES } from "../../config/index.ts";
import { listRegistries, REGISTRIES } from "./registry.ts";

describe("listRegistries", () => {
  it("lists every canonical name", () => {
    const lines = listRegistries().map((e) => `${e.registry}: ${e.name}`);
    expect(new Set(lines).size).toBe(lines.length);
    for (const want of [
      "advantage: gae",
      "advantage: grpo",
      "advantage: dr-grpo",
      "advantage: rloo",
      "advantage: reinforce-pp",
      "advantage: reinforce-pp-baseline",
      "advantage: remax",
      "advantage: gigpo",
      "advantage: reinforce-history",
      "policy-loss: ppo-clip",
      "policy-loss: vanilla-pg",
      "kl: k1",
      "kl: k2",
      "kl: k3",
      "agg: token-mean",
      "agg: seq-mean-token-sum",
      "agg: seq-mean-token-mean",
      "agg: seq-mean-token-sum-norm",
      "filter: dapo-dynamic-sampling",
      "filter: starpo-variance",
      "filter: zerotir-band",
      "filter: tao-tool-aware",
      "shaping: tao-code",
      "shaping: tao-additive",
      "reward: correctness",
      "reward: format",
      "reward: torl-exec-penalty",
      "reward: toolrl",
      "reward: otc-ppo",
      "reward: otc-grpo",
      "reward: artist-tool-exec",
      "reward: tool-n1",
      "reward: dapo-overlong",
      "reward: custom-js",
      "aux-loss: positive-lm",
      "return: turn-discount",
    ]) {
      expect(lines).toContain(want);
    }
  });

  it("config enums match the registries", () => {
    expect([...ADVANTAGE_NAMES].sort()).toEqual(Object.keys(REGISTRIES.advantage).sort());
    expect([...POLICY_LOSS_NAMES].sort()).toEqual(Object.keys(REGISTRIES["policy-loss"]).sort());
    expect([...AGG_MODES].sort()).toEqual(Object.keys(REGISTRIES.agg).sort());
    expect([...KL_ESTIMATORS].sort()).toEqual(Object.keys(REGISTRIES.kl).sort());
  });
});
