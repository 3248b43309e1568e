// Hash-based train/eval split shared by all tasks: a problem key is held out when a hash
// of (task, key) falls below the eval fraction, so the split needs no stored list, is the
// same in every process, and train sampling can reject eval keys by recomputing it.
// Tested through the disjointness checks in tasks/*.test.ts.

import { hashUnit, Rng } from "./rng.ts";

/** Share of the key space held out for evaluation unless a task says otherwise. */
export const DEFAULT_EVAL_FRACTION = 0.1;

export function isEvalKey(taskName: string, key: string, fraction = DEFAULT_EVAL_FRACTION): boolean {
  return hashUnit(`${taskName}|${key}`) < fraction;
}

/**
 * Draws n items whose key is on the wanted side of the split. `draw` proposes candidates;
 * after `maxTries` proposals per wanted item the call fails loudly rather than loop forever
 * (a key space with almost nothing on one side is a configuration error).
 */
export function drawSplit<T>(
  rng: Rng,
  n: number,
  draw: (rng: Rng) => T,
  key: (item: T) => string,
  wantEval: boolean,
  taskName: string,
  fraction = DEFAULT_EVAL_FRACTION,
  unique = false,
  maxTries = 1000,
): T[] {
  const out: T[] = [];
  const seen = new Set<string>();
  let tries = 0;
  let misses = 0;
  while (out.length < n) {
    if (tries++ > maxTries * (n + 1)) {
      throw new Error(
        `${taskName}: could not draw ${n} ${wantEval ? "eval" : "train"} problems (got ${out.length})`,
      );
    }
    const item = draw(rng);
    const k = key(item);
    if (isEvalKey(taskName, k, fraction) !== wantEval) continue;
    // Small key spaces (the easy bucket) run out of unique keys; allow repeats after many misses.
    if (unique && seen.has(k) && misses++ < 200) continue;
    seen.add(k);
    out.push(item);
  }
  return out;
}

/** The fixed seed each task's eval set is drawn from. */
export function evalRng(taskName: string): Rng {
  return new Rng(`eval:${taskName}`);
}
