// Hash-based train/eval split shared by all tasks: a problem key is held out when a hash
// of (task, key) falls below the eval fraction, so the split needs no stored list, is the
// same in every process, and train sampling can reject eval keys by recomputing it.
//
// The split is versioned (RunConfig `task.split_version`), because changing the key changes
// which items are held out, and a link or bundle must replay with the split it was made with:
//   1  the task's raw problem key (arithmetic: the expression as written, so `3*7` could be
//      held out while `7*3` trains); two sides, eval (hash < f) and train.
//   2  the task's canonical key (arithmetic: commutative operands sorted, so a problem and its
//      twin share a side), three sides: eval (hash < f, the reported held-out set), dev
//      (f <= hash < 1.5 f, for choosing stopping steps without looking at eval) and train;
//      eval and dev sets hold each problem once.
// Tested by tasks/split.test.ts and the disjointness checks in tasks/*.test.ts.

import { hashUnit, Rng } from "./rng.ts";

/** Share of the key space held out for evaluation unless a task says otherwise. */
export const DEFAULT_EVAL_FRACTION = 0.1;

export type SplitVersion = 1 | 2;
/** The split new runs get (RunConfig task.split_version's default). */
export const SPLIT_VERSION: SplitVersion = 2;
export type SplitSide = "train" | "eval" | "dev";

/** The dev slice is half the eval slice, right above it in hash order. */
export const DEV_FRACTION_OF_EVAL = 0.5;

export function isEvalKey(taskName: string, key: string, fraction = DEFAULT_EVAL_FRACTION): boolean {
  return hashUnit(`${taskName}|${key}`) < fraction;
}

/** The side of the split a key falls on (version 1 has no dev side). */
export function splitSide(
  taskName: string,
  key: string,
  fraction = DEFAULT_EVAL_FRACTION,
  version: SplitVersion = SPLIT_VERSION,
): SplitSide {
  const h = hashUnit(`${taskName}|${key}`);
  if (h < fraction) return "eval";
  if (version >= 2 && h < fraction * (1 + DEV_FRACTION_OF_EVAL)) return "dev";
  return "train";
}

export interface DrawOptions {
  taskName: string;
  fraction?: number;
  version?: SplitVersion;
  /**
   * true: no key twice (when one bucket's held-out keys run out, the rest of the draws come
   * from the other buckets). "prefer": no key twice until 200 draws in a row repeat, then
   * repeats (what version 1 did for small key spaces, and what function-calling's few
   * single-call questions still need). false: repeats allowed.
   */
  unique?: boolean | "prefer";
  /** Proposals per wanted item before the draw fails loudly. */
  maxTries?: number;
  /** Return what was found when the tries run out instead of failing (a bucket's quota). */
  upTo?: boolean;
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
  want: SplitSide,
  opts: DrawOptions,
): T[] {
  const { taskName, fraction = DEFAULT_EVAL_FRACTION, version = SPLIT_VERSION, unique = false } = opts;
  const maxTries = opts.maxTries ?? 1000;
  if (want === "dev" && version < 2) throw new Error(`${taskName}: split version 1 has no dev set`);
  const out: T[] = [];
  const seen = new Set<string>();
  let tries = 0;
  let misses = 0;
  while (out.length < n) {
    if (tries++ > maxTries * (n + 1)) {
      if (opts.upTo) break;
      throw new Error(
        `${taskName}: could not draw ${n} ${want} problems (got ${out.length}${unique ? " distinct ones" : ""}); ` +
          "the task's key space is too small for this many",
      );
    }
    const item = draw(rng);
    const k = key(item);
    if (splitSide(taskName, k, fraction, version) !== want) continue;
    if (unique && seen.has(k) && (unique === true || misses++ < 200)) continue;
    seen.add(k);
    out.push(item);
  }
  return out;
}

/** The fixed seed each task's eval set is drawn from (the dev set draws from its own). */
export function evalRng(taskName: string, side: "eval" | "dev" = "eval"): Rng {
  return new Rng(side === "eval" ? `eval:${taskName}` : `dev:${taskName}`);
}
