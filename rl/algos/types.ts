// Shared data shapes and small numeric helpers for rl/algos: a batch of trajectories with
// per-token arrays over the response region, masked sums and means, group statistics.
// Everything here is pure CPU code on plain arrays (no GPU, no model), so every algorithm
// in this folder is a function of numbers that tests can pin down.
// Tested through the other rl/algos/*.test.ts files (`npx vitest run rl/algos/`).

/** Any array of numbers: number[], Float32Array, Float64Array. */
export type Arr = ArrayLike<number>;

/** One GiGPO step row: the action's token range [start, end) and its anchor state. */
export type StepRow = {
  anchor: string; // exact key of the environment state the action was taken in
  reward: number; // step reward r_t
  start: number; // first response token of the action
  end: number; // one past its last token
  invalid?: boolean; // action failed to parse (GiGPO invalid-action penalty)
};

/**
 * One trajectory of a batch. Per-token arrays all have the response length T and are
 * indexed by response position. `mask` is the loss mask (1 = sampled from the policy).
 */
export type Trajectory = {
  groupId: string; // uid of the prompt; the group is all trajectories sharing it
  reward: number; // scalar outcome reward (sum of the reward terms)
  mask: Arr; // (T) 1 = policy token, 0 = env/tool/pad
  oldLogprob?: Arr; // (T) behaviour policy at rollout
  refLogprob?: Arr; // (T) frozen reference model
  logprob?: Arr; // (T) current policy
  entropy?: Arr; // (T)
  values?: Arr; // (T) critic at rollout
  postTool?: Arr; // (T) 1 = policy token after a tool response
  tokenRewards?: Arr; // (T) explicit token rewards; default: reward on the last policy token
  baselineReward?: number; // ReMax: reward of the greedy decode for this prompt
  steps?: StepRow[]; // GiGPO multi-turn rows
  toolCalls?: number; // calls attempted
  toolSuccesses?: number; // calls with sandbox status Success
  correct?: boolean;
  truncated?: boolean; // hit max new tokens
};

export function sum(x: Arr): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return s;
}

export function mean(x: Arr): number {
  return x.length === 0 ? Number.NaN : sum(x) / x.length;
}

/** Std with the sample (N-1, torch.std default) or population (N) convention. N-1 = 0 gives NaN. */
export function std(x: Arr, kind: "sample" | "population" = "sample"): number {
  const n = x.length;
  const d = kind === "sample" ? n - 1 : n;
  if (d <= 0) return Number.NaN;
  const m = mean(x);
  let s = 0;
  for (let i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
  return Math.sqrt(s / d);
}

export function maskedSum(x: Arr, m: Arr): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) if (m[i] !== 0) s += m[i] * x[i];
  return s;
}

/** Σ m·x / Σ m; NaN when the mask is empty (callers skip it, never report 0/0 as 0). */
export function maskedMean(x: Arr, m: Arr): number {
  const n = sum(m);
  return n === 0 ? Number.NaN : maskedSum(x, m) / n;
}

/** Index of the last token with m = 1, or -1. Outcome rewards land there (ALGORITHMS §10). */
export function lastPolicyIndex(m: Arr): number {
  for (let i = m.length - 1; i >= 0; i--) if (m[i] !== 0) return i;
  return -1;
}

/** Group indices of `items` by key, in first-seen order. */
export function groupIndices<T>(items: readonly T[], key: (t: T) => string): number[][] {
  const map = new Map<string, number[]>();
  items.forEach((t, i) => {
    const k = key(t);
    const g = map.get(k);
    if (g) g.push(i);
    else map.set(k, [i]);
  });
  return [...map.values()];
}

/** Per-token array with `value` on masked tokens and 0 elsewhere. */
export function broadcast(value: number, m: Arr): Float64Array {
  const out = new Float64Array(m.length);
  for (let i = 0; i < m.length; i++) out[i] = m[i] !== 0 ? value : 0;
  return out;
}

/** Concatenate per-sequence arrays into one flat array (for the per-token loss functions). */
export function flatten(xs: readonly Arr[]): Float64Array {
  let n = 0;
  for (const x of xs) n += x.length;
  const out = new Float64Array(n);
  let o = 0;
  for (const x of xs) {
    for (let i = 0; i < x.length; i++) out[o + i] = x[i];
    o += x.length;
  }
  return out;
}

/** Split a flat array back into pieces of the given lengths. */
export function unflatten(x: Arr, lengths: readonly number[]): Float64Array[] {
  const out: Float64Array[] = [];
  let o = 0;
  for (const n of lengths) {
    const a = new Float64Array(n);
    for (let i = 0; i < n; i++) a[i] = x[o + i];
    out.push(a);
    o += n;
  }
  return out;
}

export function clamp(x: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, x));
}
