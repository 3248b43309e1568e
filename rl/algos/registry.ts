// One list of every registry entry of rl/algos, for `registry: name` listings (CLI
// `--list`, the config panel's option lists). Tested by rl/algos/registry.test.ts.
import { ADVANTAGE, RETURN } from "./advantage.ts";
import { FILTER } from "./filters.ts";
import { AGG, AUX_LOSS, KL, POLICY_LOSS } from "./losses.ts";
import { REWARD } from "./reward-terms.ts";
import { SHAPING } from "./shaping.ts";

export const REGISTRIES: Record<string, Record<string, unknown>> = {
  advantage: ADVANTAGE,
  "policy-loss": POLICY_LOSS,
  kl: KL,
  agg: AGG,
  filter: FILTER,
  shaping: SHAPING,
  reward: REWARD,
  "aux-loss": AUX_LOSS,
  return: RETURN,
};

export function listRegistries(): { registry: string; name: string }[] {
  return Object.entries(REGISTRIES).flatMap(([registry, table]) =>
    Object.keys(table).map((name) => ({ registry, name })),
  );
}
