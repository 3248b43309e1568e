// Group filters (ALGORITHMS.md §4 DAPO dynamic sampling, §7 StarPO-S variance filter,
// §9.6 ZeroTIR accuracy band, §8.1 TAO-RL tool-aware filter) and the refill planners
// (`resample`: ask for more prompts up to a cap, DAPO; `duplicate`: repeat surviving groups,
// TAO-RL). Each filter is a pure decision over a set of groups: which to keep and why.
// Tested by rl/algos/filters.test.ts (`npx vitest run rl/algos/`).
import { mean, std } from "./types.ts";

/** What a filter sees of one prompt group. Arrays are per trajectory, in group order. */
export type FilterGroup = {
  groupId: string;
  rewards: number[];
  acc?: number[]; // 0/1 correctness; filters that test accuracy fall back to rewards
  truncated?: boolean[]; // hit max new tokens
  toolCalls?: number[]; // calls attempted (TAO-RL use_code)
  toolSuccesses?: number[]; // calls that succeeded (TAO-RL valid_code)
};

export type FilterResult = {
  keep: boolean[]; // per group
  reasons: string[]; // per group: "kept" or why it was dropped
  /** Per group, per trajectory loss-mask multiplier (TAO-RL all-tools-failed); absent = all 1. */
  trajectoryScale?: number[][];
  metrics: { "filter/kept_frac": number };
};

export type FilterFn = (groups: readonly FilterGroup[], options: Record<string, unknown>) => FilterResult;

function opt<T>(options: Record<string, unknown>, key: string, fallback: T): T {
  const v = options[key];
  return v === undefined ? fallback : (v as T);
}

function result(keep: boolean[], reasons: string[], trajectoryScale?: number[][]): FilterResult {
  const kept = keep.filter(Boolean).length;
  return {
    keep,
    reasons,
    ...(trajectoryScale ? { trajectoryScale } : {}),
    metrics: { "filter/kept_frac": keep.length ? kept / keep.length : Number.NaN },
  };
}

const accOf = (g: FilterGroup) => g.acc ?? g.rewards;

/** DAPO (§4): keep iff std(metric) > 0 or the group has one sample. Options: metric "acc"|"reward". */
export const dapoDynamicSampling: FilterFn = (groups, options) => {
  const metric = opt<string>(options, "metric", "acc");
  const keep: boolean[] = [];
  const reasons: string[] = [];
  for (const g of groups) {
    const x = metric === "reward" ? g.rewards : accOf(g);
    const k = x.length === 1 || std(x) > 0;
    keep.push(k);
    reasons.push(k ? "kept" : `all-equal ${metric} (std 0)`);
  }
  return result(keep, reasons);
};

/**
 * StarPO-S (§7): keep the top floor(p·N) groups by reward std (sample); `type: "std_rev"`
 * keeps the lowest. Ties break by group index, so the choice is deterministic.
 */
export const starpoVariance: FilterFn = (groups, options) => {
  const p = opt<number>(options, "p", 0.25);
  const type = opt<string>(options, "type", "std");
  if (!(p > 0 && p <= 1)) throw new Error("starpo-variance: p must be in (0, 1]");
  const k = Math.floor(p * groups.length);
  const u = groups.map((g) => (g.rewards.length > 1 ? std(g.rewards) : 0));
  const order = groups
    .map((_, i) => i)
    .sort((a, b) => (type === "std_rev" ? u[a] - u[b] : u[b] - u[a]) || a - b);
  const chosen = new Set(p === 1 ? order : order.slice(0, k));
  const keep = groups.map((_, i) => chosen.has(i));
  const reasons = keep.map((kk, i) =>
    kk ? "kept" : `std ${u[i].toFixed(4)} outside top ${k} of ${groups.length}`,
  );
  return result(keep, reasons);
};

/** ZeroTIR (§9.6): keep iff lo + 1e-6 < mean(acc) < hi − 1e-6 (both ends strict). */
export const zerotirBand: FilterFn = (groups, options) => {
  const lo = opt<number>(options, "lo", 0.2);
  const hi = opt<number>(options, "hi", 0.8);
  const keep: boolean[] = [];
  const reasons: string[] = [];
  for (const g of groups) {
    const a = mean(accOf(g));
    const k = lo + 1e-6 < a && a < hi - 1e-6;
    keep.push(k);
    reasons.push(k ? "kept" : `accuracy ${a.toFixed(4)} outside (${lo}, ${hi})`);
  }
  return result(keep, reasons);
};

/**
 * TAO-RL (§8.1): drop degenerate groups (std(R) < 1e-3), groups whose responses all hit the
 * length limit, with `removeClip` groups with fewer than `minN` untruncated responses, and
 * optionally groups outside an accuracy band. Trajectories that called tools and had no
 * success get loss-mask scale 1 − strength (they stay in the group statistics).
 * Options: stdThreshold 1e-3, removeClip false, minN 4, accBand null | [lo, hi],
 * execErrorFilter true (TAO-RL's yaml has it off; choosing this filter opts in), strength 1.
 */
export const taoToolAware: FilterFn = (groups, options) => {
  const thr = opt<number>(options, "stdThreshold", 1e-3);
  const removeClip = opt<boolean>(options, "removeClip", false);
  const minN = opt<number>(options, "minN", 4);
  const band = opt<[number, number] | null>(options, "accBand", null);
  const execFilter = opt<boolean>(options, "execErrorFilter", true);
  const strength = opt<number>(options, "strength", 1);
  const keep: boolean[] = [];
  const reasons: string[] = [];
  const scale: number[][] = [];
  for (const g of groups) {
    const trunc = g.truncated ?? g.rewards.map(() => false);
    const untruncated = trunc.filter((t) => !t).length;
    const sd = g.rewards.length > 1 ? std(g.rewards) : 0;
    const a = mean(accOf(g));
    let reason = "kept";
    if (sd < thr) reason = `degenerate rewards (std ${sd.toFixed(4)} < ${thr})`;
    else if (untruncated === 0) reason = "all responses truncated";
    else if (removeClip && untruncated < minN) reason = `only ${untruncated} untruncated (< ${minN})`;
    else if (band && (a < band[0] || a > band[1]))
      reason = `accuracy ${a.toFixed(4)} outside [${band[0]}, ${band[1]}]`;
    keep.push(reason === "kept");
    reasons.push(reason);
    scale.push(
      g.rewards.map((_, i) => {
        const use = g.toolCalls?.[i] ?? 0;
        const valid = g.toolSuccesses?.[i] ?? 0;
        return execFilter && allToolsFailed(use, valid) ? 1 - strength : 1;
      }),
    );
  }
  return result(keep, reasons, scale);
};

/** TAO-RL all-tools-failed flag (§8.1): attempted at least one call and none succeeded. Zero calls: not flagged. */
export function allToolsFailed(toolCalls: number, toolSuccesses: number): boolean {
  return toolCalls > 0 && toolSuccesses === 0;
}

export const FILTER: Record<string, FilterFn> = {
  "dapo-dynamic-sampling": dapoDynamicSampling,
  "starpo-variance": starpoVariance,
  "zerotir-band": zerotirBand,
  "tao-tool-aware": taoToolAware,
};

/** Run filters in order; a group must pass every one. Trajectory scales multiply. */
export function applyFilters(
  groups: readonly FilterGroup[],
  list: readonly { name: string; options: Record<string, unknown> }[],
): FilterResult {
  const keep = groups.map(() => true);
  const reasons = groups.map(() => "kept");
  let scale: number[][] | undefined;
  for (const f of list) {
    const fn = FILTER[f.name];
    if (!fn) throw new Error(`unknown filter "${f.name}"`);
    // Later filters see only the survivors (StarPO's top-k is a fraction of what is left).
    const idx = groups.map((_, i) => i).filter((i) => keep[i]);
    const r = fn(
      idx.map((i) => groups[i]),
      f.options,
    );
    idx.forEach((gi, k) => {
      if (!r.keep[k]) {
        keep[gi] = false;
        reasons[gi] = `${f.name}: ${r.reasons[k]}`;
      }
      if (r.trajectoryScale) {
        scale ??= groups.map((g) => g.rewards.map(() => 1));
        const s = scale[gi];
        r.trajectoryScale[k].forEach((x, t) => {
          s[t] *= x;
        });
      }
    });
  }
  return result(keep, reasons, scale);
}

// ---------------------------------------------------------------- refill

export type ResamplePlan =
  | { action: "train"; takeGroups: number } // enough groups: train on the first `takeGroups`
  | { action: "resample"; prompts: number } // roll out this many more prompts
  | { action: "abort"; error: string };

/**
 * DAPO resample (§4): accumulate kept groups over generation rounds until `needed`; then keep
 * the first `needed`. `round` counts rounds done so far; `maxRounds` ≤ 0 means no limit.
 */
export function planResample(s: {
  kept: number;
  needed: number;
  round: number;
  maxRounds: number;
  genBatch: number;
}): ResamplePlan {
  if (s.kept >= s.needed) return { action: "train", takeGroups: s.needed };
  if (s.maxRounds > 0 && s.round >= s.maxRounds) {
    return {
      action: "abort",
      error: `filters kept ${s.kept} of ${s.needed} groups after ${s.round} generation rounds (filters.max_gen_rounds)`,
    };
  }
  return { action: "resample", prompts: s.genBatch };
}

/**
 * TAO-RL duplicate refill (§8.1): with fewer survivors than `needed`, repeat each survivor
 * ceil(needed/valid) times (the trainer gives the copies new uids) and cut to `needed`; with
 * more, a random subset of `needed` (`rand` in [0,1); without it, the first `needed`).
 * Returns indices into the surviving groups; empty when nothing survived.
 */
export function planDuplicate(valid: number, needed: number, rand?: () => number): number[] {
  if (valid === 0 || needed <= 0) return [];
  if (valid >= needed) {
    const idx = Array.from({ length: valid }, (_, i) => i);
    if (rand) {
      for (let i = idx.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [idx[i], idx[j]] = [idx[j], idx[i]];
      }
    }
    return idx.slice(0, needed).sort((a, b) => a - b);
  }
  const reps = Math.ceil(needed / valid);
  const out: number[] = [];
  for (let r = 0; r < reps; r++) for (let i = 0; i < valid; i++) out.push(i);
  return out.slice(0, needed);
}
