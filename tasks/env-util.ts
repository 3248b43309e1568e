// Helpers shared by the grid environments (FrozenLake, Sokoban): reading an action out of
// the model's text, the four moves, and the seed split that keeps eval layouts out of
// training. Tested through tasks/frozenlake.test.ts and tasks/sokoban.test.ts.

import type { Rng } from "./rng.ts";
import { DEFAULT_EVAL_FRACTION, isEvalKey } from "./split.ts";
import type { Demo, Env, Message } from "./types.ts";

export const GRID_ACTIONS = ["Left", "Down", "Right", "Up"] as const;
export type GridAction = (typeof GRID_ACTIONS)[number];

/** Row and column deltas of each move. */
export const DELTAS: Record<GridAction, [number, number]> = {
  Left: [0, -1],
  Down: [1, 0],
  Right: [0, 1],
  Up: [-1, 0],
};

/**
 * The action in `text`: the content of the last `<answer>..</answer>` when there is one,
 * else the whole text; matched case-insensitively against `actions`. null when invalid.
 */
export function parseAction<A extends string>(text: string, actions: readonly A[]): A | null {
  const answers = [...text.matchAll(/<answer>([\s\S]*?)<\/answer>/g)];
  const body = (answers.length > 0 ? answers[answers.length - 1][1] : text).trim().toLowerCase();
  return actions.find((a) => a.toLowerCase() === body) ?? null;
}

/** Seeds on one side of the split; the key is the layout a seed generates, so eval layouts never train. */
export function drawSeeds(
  taskName: string,
  layoutKey: (seed: number) => string,
  rng: Rng,
  n: number,
  wantEval: boolean,
  fraction = DEFAULT_EVAL_FRACTION,
): number[] {
  const out: number[] = [];
  for (let tries = 0; out.length < n; tries++) {
    if (tries > 1000 * (n + 1)) throw new Error(`${taskName}: could not draw ${n} seeds`);
    const seed = rng.uint32();
    if (isEvalKey(taskName, layoutKey(seed), fraction) === wantEval) out.push(seed);
  }
  return out;
}

/** Eval seeds: the first n eval-side seeds counting up from 0, with distinct layouts. */
export function evalSeedList(
  taskName: string,
  layoutKey: (seed: number) => string,
  n: number,
  fraction = DEFAULT_EVAL_FRACTION,
): number[] {
  const out: number[] = [];
  const seen = new Set<string>();
  for (let seed = 0; out.length < n; seed++) {
    if (seed > 1000 * (n + 1)) throw new Error(`${taskName}: could not find ${n} eval seeds`);
    const key = layoutKey(seed);
    if (!seen.has(key) && isEvalKey(taskName, key, fraction)) {
      seen.add(key);
      out.push(seed);
    }
  }
  return out;
}

/**
 * Plays `plan` (the solver's moves for this seed) in a fresh episode and records it as a
 * conversation; returns null when the plan does not reach the goal (a solver bug, or slip).
 */
export function solverEpisode(
  env: Env,
  seed: number,
  instructions: string,
  plan: (env: Env) => string[] | null,
  think: boolean,
): Demo | null {
  const messages: Message[] = [
    { role: "system", content: instructions },
    { role: "user", content: env.reset(seed) },
  ];
  const actions = plan(env);
  if (actions === null) return null;
  for (const [i, a] of actions.entries()) {
    const t = think ? `<think>${actions.length - i} moves left</think>` : "";
    messages.push({ role: "assistant", content: `${t}<answer>${a}</answer>` });
    const r = env.step(a);
    if (r.done) {
      if (!r.info.success) return null;
      return { id: `${env.name}:seed${seed}#demo`, messages, bucket: "all", meta: { seed, actions, think } };
    }
    messages.push({ role: "user", content: r.observation });
  }
  return null;
}

/** n solver episodes on training seeds (seeds the solver cannot finish are skipped). */
export function solverDemos(
  makeEnv: () => Env,
  seeds: (rng: Rng, n: number) => number[],
  instructions: string,
  plan: (env: Env) => string[] | null,
  rng: Rng,
  n: number,
  thinkRate: number,
): Demo[] {
  const out: Demo[] = [];
  const seedRng = rng.fork("seeds");
  const r = rng.fork("think");
  for (let tries = 0; out.length < n; tries++) {
    if (tries > 20 * (n + 1)) throw new Error("solver demos: too many unsolved seeds");
    const [seed] = seeds(seedRng, 1);
    const d = solverEpisode(makeEnv(), seed, instructions, plan, r.bool(thinkRate));
    if (d) out.push({ ...d, id: `${d.id}${out.length}` });
  }
  return out;
}
