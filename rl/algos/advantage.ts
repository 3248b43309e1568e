// Advantage estimators (ALGORITHMS.md §1-§6, §12), one named function per registry entry,
// in the style of verl core_algos.py. Outcome estimators compute one scalar per trajectory
// and broadcast it to the tokens with mask = 1; GAE, REINFORCE++ and ReMax work per token.
// Every function is pure: batch + options (+ state for the history baseline) in, per-token
// advantages (and value targets where a critic exists) out.
// Tested by rl/algos/advantage.test.ts (`npx vitest run rl/algos/`).
import { KL } from "./losses.ts";
import {
  type Arr,
  broadcast,
  clamp,
  groupIndices,
  lastPolicyIndex,
  mean,
  std,
  sum,
  type Trajectory,
} from "./types.ts";

export type AdvantageOptions = {
  stdEps: number; // ε_std added to the group std (verl 1e-6, TRL/demo 1e-4)
  std: "sample" | "population"; // group-std and whitening convention (§0)
  normByStd: boolean; // GRPO divides by std; Dr. GRPO does not (§3)
  singletonGroup: "zero" | "raw"; // G = 1: advantage 0 (recommended) or the raw reward (verl quirk)
  gamma: number; // discount (GAE, REINFORCE++)
  lambda: number; // GAE λ (policy side when decoupled)
  lambdaCritic: number | null; // decoupled GAE: λ for value targets (§12); null = lambda
  lengthAdaptiveAlpha: number | null; // §12: λ_policy = 1 − 1/(α·l) per sequence; null = off
  whiten: boolean; // GAE: whiten advantages over the batch's masked tokens (verl does)
  klCoef: number; // KL-in-reward β: r[t] −= β·KL_t on policy tokens (GAE, REINFORCE++, ReMax)
  klEstimator: "k1" | "k2" | "k3"; // KL_t estimator, evaluated at lp_old vs lp_ref (§1 and §5 use k1)
  gigpo: {
    stepWeight: number; // ω
    gamma: number; // step-return discount
    norm: "mean_norm" | "mean_std_norm";
    episodeStats: "trajectories" | "rows"; // paper form vs reference-code form (§6)
    invalidPenalty: number; // subtracted from a row's scores when its action failed to parse
  };
  history: { window: number; ema: number | null }; // reinforce-history baseline (§12)
};

export const DEFAULT_ADVANTAGE_OPTIONS: AdvantageOptions = {
  stdEps: 1e-6,
  std: "sample",
  normByStd: true,
  singletonGroup: "zero",
  gamma: 1,
  lambda: 1,
  lambdaCritic: null,
  lengthAdaptiveAlpha: null,
  whiten: true,
  klCoef: 0,
  klEstimator: "k1",
  gigpo: { stepWeight: 1, gamma: 0.95, norm: "mean_norm", episodeStats: "trajectories", invalidPenalty: 0.1 },
  history: { window: 10, ema: null },
};

/** Carried between steps by estimators that need it (only reinforce-history today). */
export type AdvantageState = { rewardHistory?: number[]; emaBaseline?: number };

export type AdvantageResult = {
  advantages: Float64Array[]; // per trajectory, (T), 0 on mask = 0 tokens for outcome estimators
  returns?: Float64Array[]; // value targets R = A + V (GAE only)
  scalar?: Float64Array; // per-trajectory outcome advantage before broadcasting (outcome estimators)
  state?: AdvantageState;
};

export type AdvantageFn = (
  batch: readonly Trajectory[],
  opts: AdvantageOptions,
  state?: AdvantageState,
) => AdvantageResult;

export function withAdvantageDefaults(partial: Partial<AdvantageOptions> = {}): AdvantageOptions {
  return {
    ...DEFAULT_ADVANTAGE_OPTIONS,
    ...partial,
    gigpo: { ...DEFAULT_ADVANTAGE_OPTIONS.gigpo, ...partial.gigpo },
    history: { ...DEFAULT_ADVANTAGE_OPTIONS.history, ...partial.history },
  };
}

function fromScalars(batch: readonly Trajectory[], scalar: Float64Array): AdvantageResult {
  return { advantages: batch.map((t, i) => broadcast(scalar[i], t.mask)), scalar };
}

/** Per-group outcome advantage; `center` maps the group's rewards to advantages (size ≥ 2). */
function groupOutcome(
  batch: readonly Trajectory[],
  opts: AdvantageOptions,
  center: (r: number[]) => number[],
): AdvantageResult {
  const scalar = new Float64Array(batch.length);
  for (const idx of groupIndices(batch, (t) => t.groupId)) {
    const r = idx.map((i) => batch[i].reward);
    if (r.length === 1) {
      scalar[idx[0]] = opts.singletonGroup === "raw" ? r[0] : 0;
      continue;
    }
    const a = center(r);
    idx.forEach((i, k) => {
      scalar[i] = a[k];
    });
  }
  return fromScalars(batch, scalar);
}

/** GRPO (§2): (R − mean)/(std + ε); Dr. GRPO when normByStd is false. */
export const grpo: AdvantageFn = (batch, opts) =>
  groupOutcome(batch, opts, (r) => {
    const m = mean(r);
    const d = opts.normByStd ? std(r, opts.std) + opts.stdEps : 1;
    return r.map((x) => (x - m) / d);
  });

/** Dr. GRPO (§3): R − mean(R), no std; pair with loss_agg seq-mean-token-sum-norm. */
export const drGrpo: AdvantageFn = (batch, opts) => grpo(batch, { ...opts, normByStd: false });

/** RLOO (§5): R_i minus the mean of the other G−1 rewards. */
export const rloo: AdvantageFn = (batch, opts) =>
  groupOutcome(batch, opts, (r) => {
    const s = sum(r);
    return r.map((x) => x - (s - x) / (r.length - 1));
  });

/**
 * Token rewards: explicit `tokenRewards`, else the outcome reward on the last policy token;
 * minus β·KL(lp_old, lp_ref) on policy tokens when KL goes into the reward (§1, §5). The KL
 * uses the rollout log-probs, so it is a constant of the update (no gradient).
 */
export function tokenRewards(t: Trajectory, klCoef: number, klEstimator = "k1"): Float64Array {
  const T = t.mask.length;
  const r = new Float64Array(T);
  if (t.tokenRewards) {
    for (let i = 0; i < T; i++) r[i] = t.tokenRewards[i];
  } else {
    const last = lastPolicyIndex(t.mask);
    if (last >= 0) r[last] = t.reward;
  }
  if (klCoef !== 0) {
    if (!t.oldLogprob || !t.refLogprob) throw new Error("KL in reward needs oldLogprob and refLogprob");
    const kl = KL[klEstimator];
    if (!kl) throw new Error(`unknown KL estimator "${klEstimator}"`);
    for (let i = 0; i < T; i++)
      if (t.mask[i] !== 0) r[i] -= klCoef * kl(t.oldLogprob[i], t.refLogprob[i]).value;
  }
  return r;
}

/**
 * Whiten in place over masked tokens of all sequences: (x − μ)/sqrt(var + 1e-8) (verl
 * masked_whiten). Needs ≥ 2 masked tokens; with fewer, values are left as they are
 * (verl raises instead; a training step should not die on a tiny batch).
 */
export function whitenInPlace(
  xs: Float64Array[],
  masks: readonly Arr[],
  kind: "sample" | "population",
): void {
  let n = 0;
  let s = 0;
  xs.forEach((x, j) => {
    for (let i = 0; i < x.length; i++)
      if (masks[j][i] !== 0) {
        n++;
        s += x[i];
      }
  });
  if (n < 2) return;
  const mu = s / n;
  let ss = 0;
  xs.forEach((x, j) => {
    for (let i = 0; i < x.length; i++) if (masks[j][i] !== 0) ss += (x[i] - mu) * (x[i] - mu);
  });
  const variance = ss / (kind === "sample" ? n - 1 : n);
  const inv = 1 / Math.sqrt(variance + 1e-8);
  xs.forEach((x, j) => {
    for (let i = 0; i < x.length; i++) x[i] = masks[j][i] !== 0 ? (x[i] - mu) * inv : 0;
  });
}

/** VAPO length-adaptive λ (§12), clamped to [0,1]; the clamp for l ≤ 1/α is a lab choice, not the paper's. */
export function lengthAdaptiveLambda(policyLength: number, alpha: number): number {
  if (policyLength <= 0) return 0;
  return clamp(1 - 1 / (alpha * policyLength), 0, 1);
}

/**
 * One GAE scan (§1). Env tokens (m = 0) are transparent: nextV and gae carry through them.
 * Returns per-token A (gae as it stands at each position) and R = A + V.
 */
export function gaeScan(r: Arr, v: Arr, m: Arr, gamma: number, lambda: number) {
  const T = m.length;
  const adv = new Float64Array(T);
  const ret = new Float64Array(T);
  let nextV = 0;
  let gae = 0;
  for (let t = T - 1; t >= 0; t--) {
    const delta = r[t] + gamma * nextV - v[t];
    const g = delta + gamma * lambda * gae;
    if (m[t] !== 0) {
      nextV = v[t];
      gae = g;
    }
    adv[t] = gae;
    ret[t] = gae + v[t];
  }
  return { adv, ret };
}

/** PPO's token-level GAE with a critic (§1), decoupled and length-adaptive λ (§12). */
export const gae: AdvantageFn = (batch, opts) => {
  const advantages: Float64Array[] = [];
  const returns: Float64Array[] = [];
  for (const t of batch) {
    if (!t.values) throw new Error("gae needs values (critic predictions)");
    const r = tokenRewards(t, opts.klCoef, opts.klEstimator);
    const lamPolicy =
      opts.lengthAdaptiveAlpha !== null
        ? lengthAdaptiveLambda(sum(t.mask), opts.lengthAdaptiveAlpha)
        : opts.lambda;
    const lamCritic = opts.lambdaCritic ?? opts.lambda;
    const policy = gaeScan(r, t.values, t.mask, opts.gamma, lamPolicy);
    const critic = lamCritic === lamPolicy ? policy : gaeScan(r, t.values, t.mask, opts.gamma, lamCritic);
    advantages.push(policy.adv);
    returns.push(critic.ret);
  }
  if (opts.whiten)
    whitenInPlace(
      advantages,
      batch.map((t) => t.mask),
      opts.std,
    );
  else
    advantages.forEach((a, j) => {
      for (let i = 0; i < a.length; i++) if (batch[j].mask[i] === 0) a[i] = 0;
    });
  return { advantages, returns };
};

/** Discounted reward-to-go; env tokens pass the running return through unchanged. */
function rewardToGo(r: Arr, m: Arr, gamma: number): Float64Array {
  const out = new Float64Array(m.length);
  let run = 0;
  for (let t = m.length - 1; t >= 0; t--) {
    if (m[t] !== 0) run = r[t] + gamma * run;
    out[t] = run;
  }
  return out;
}

/** REINFORCE++ (§5): per-token discounted return with KL in the reward, whitened over the batch. */
export const reinforcePP: AdvantageFn = (batch, opts) => {
  const advantages = batch.map((t) =>
    rewardToGo(tokenRewards(t, opts.klCoef, opts.klEstimator), t.mask, opts.gamma),
  );
  whitenInPlace(
    advantages,
    batch.map((t) => t.mask),
    opts.std,
  );
  return { advantages };
};

/**
 * REINFORCE++-baseline (§5): group-mean-centred reward, broadcast, then global whitening. A
 * group of one has no baseline: rl.singleton_group "zero" centres it to 0, "raw" keeps its
 * reward (verl's group mean 0), as in the other group estimators.
 */
export const reinforcePPBaseline: AdvantageFn = (batch, opts) => {
  const centred = groupOutcome(batch, opts, (r) => {
    const m = mean(r);
    return r.map((x) => x - m);
  });
  whitenInPlace(
    centred.advantages,
    batch.map((t) => t.mask),
    opts.std,
  );
  return centred;
};

/** ReMax (§5): reward-to-go minus the greedy decode's reward for the same prompt. */
export const remax: AdvantageFn = (batch, opts) => ({
  advantages: batch.map((t) => {
    if (t.baselineReward === undefined) throw new Error("remax needs baselineReward (greedy decode reward)");
    const ret = rewardToGo(tokenRewards(t, opts.klCoef, opts.klEstimator), t.mask, 1);
    for (let i = 0; i < ret.length; i++) ret[i] = t.mask[i] !== 0 ? ret[i] - t.baselineReward : 0;
    return ret;
  }),
});

/** (x − mean)/F over a set, with the singleton rule of the reference code (mean 0, std 1 or A = 0). */
function normalise(
  values: number[],
  norm: "mean_norm" | "mean_std_norm",
  eps: number,
  kind: "sample" | "population",
) {
  const m = mean(values);
  const f = norm === "mean_std_norm" ? std(values, kind) + eps : 1;
  return { m, f };
}

/**
 * GiGPO (§6): episode advantage over the group plus ω × step advantage over anchor-state
 * groups, broadcast to each step's action tokens. Trajectories without `steps` are one step
 * covering the whole response, with no step-level term.
 */
export const gigpo: AdvantageFn = (batch, opts) => {
  const g = opts.gigpo;
  const advantages = batch.map((t) => new Float64Array(t.mask.length));
  for (const idx of groupIndices(batch, (t) => t.groupId)) {
    type Row = { traj: number; step: StepLike; ret: number; episode: number };
    type StepLike = { anchor: string | null; start: number; end: number };
    const rows: Row[] = [];
    const episode = new Map<number, number>();
    for (const i of idx) {
      const t = batch[i];
      const steps = t.steps;
      if (!steps || steps.length === 0) {
        episode.set(i, t.reward);
        rows.push({
          traj: i,
          step: { anchor: null, start: 0, end: t.mask.length },
          ret: 0,
          episode: t.reward,
        });
        continue;
      }
      const R = sum(steps.map((s) => s.reward));
      episode.set(i, R);
      let run = 0;
      const rets = new Array<number>(steps.length);
      for (let k = steps.length - 1; k >= 0; k--) {
        run = steps[k].reward + g.gamma * run;
        rets[k] = run;
      }
      steps.forEach((s, k) => {
        const pen = s.invalid ? g.invalidPenalty : 0;
        rows.push({ traj: i, step: s, ret: rets[k] - pen, episode: R - pen });
      });
    }
    // Episode level: over trajectories (paper) or over step rows (reference code).
    const epValues =
      g.episodeStats === "rows" ? rows.map((r) => r.episode) : idx.map((i) => episode.get(i) ?? 0);
    const single = epValues.length === 1;
    const ep = single ? { m: 0, f: 1 } : normalise(epValues, g.norm, opts.stdEps, opts.std);
    // Step level: rows sharing an anchor state within this task group.
    const byAnchor = new Map<string, Row[]>();
    for (const r of rows) {
      if (r.step.anchor === null) continue;
      const list = byAnchor.get(r.step.anchor);
      if (list) list.push(r);
      else byAnchor.set(r.step.anchor, [r]);
    }
    const stepAdv = new Map<Row, number>();
    for (const list of byAnchor.values()) {
      if (list.length === 1) {
        stepAdv.set(list[0], 0);
        continue;
      }
      const { m, f } = normalise(
        list.map((r) => r.ret),
        g.norm,
        opts.stdEps,
        opts.std,
      );
      for (const r of list) stepAdv.set(r, (r.ret - m) / f);
    }
    for (const r of rows) {
      const epScore = g.episodeStats === "rows" ? r.episode : (episode.get(r.traj) ?? 0);
      const a = (epScore - ep.m) / ep.f + g.stepWeight * (stepAdv.get(r) ?? 0);
      const t = batch[r.traj];
      const out = advantages[r.traj];
      for (let k = Math.max(0, r.step.start); k < Math.min(r.step.end, out.length); k++) {
        out[k] = t.mask[k] !== 0 ? a : 0;
      }
    }
  }
  return { advantages };
};

/**
 * REINFORCE with a history baseline (§12): b = mean reward of the last K batches (or an EMA
 * with factor β); A = R − b. With no history yet, b is this batch's mean. No critic, no group.
 */
export const reinforceHistory: AdvantageFn = (batch, opts, state = {}) => {
  const batchMean = batch.length ? mean(batch.map((t) => t.reward)) : 0;
  const hist = state.rewardHistory ?? [];
  let b: number;
  let next: AdvantageState;
  if (opts.history.ema !== null) {
    b = state.emaBaseline ?? batchMean;
    const beta = opts.history.ema;
    next = { ...state, emaBaseline: beta * b + (1 - beta) * batchMean };
  } else {
    const window = hist.slice(-opts.history.window);
    b = window.length ? mean(window) : batchMean;
    next = { ...state, rewardHistory: [...hist, batchMean].slice(-opts.history.window) };
  }
  const scalar = Float64Array.from(batch, (t) => t.reward - b);
  return { ...fromScalars(batch, scalar), state: next };
};

/**
 * OPO (§13, arXiv 2505.23585): the optimal baseline is the length-weighted mean reward of the
 * group, b = Σ_j |y_j|·R_j / Σ_j |y_j| (|y| = the response's policy tokens, mask > 0);
 * A_i = R_i − b, no std. A singleton group has b = 0 (verl). A group whose responses are all
 * empty falls back to the plain mean.
 */
export const opo: AdvantageFn = (batch) => {
  const scalar = new Float64Array(batch.length);
  const len = batch.map((t) => Array.from(t.mask).filter((m) => m > 0).length);
  for (const idx of groupIndices(batch, (t) => t.groupId)) {
    let b = 0;
    if (idx.length > 1) {
      const L = sum(idx.map((i) => len[i]));
      b = L > 0 ? sum(idx.map((i) => len[i] * batch[i].reward)) / L : mean(idx.map((i) => batch[i].reward));
    }
    for (const i of idx) scalar[i] = batch[i].reward - b;
  }
  return fromScalars(batch, scalar);
};

/**
 * GRPO pass@k (§13, arXiv 2503.19595): in each group only the best response (the first of the
 * largest rewards) gets a nonzero advantage, R_max − R_second, divided by the group's std + ε
 * when normByStd (the sample std, torch's unbiased default, whatever rl.std says); a tie at
 * the top gives every response 0. Groups of fewer than 2 are an error (pass@k needs a second
 * sample to compare with).
 */
export const grpoPassk: AdvantageFn = (batch, opts) => {
  const scalar = new Float64Array(batch.length);
  for (const idx of groupIndices(batch, (t) => t.groupId)) {
    if (idx.length < 2)
      throw new Error(
        `rl.advantage grpo-passk: group "${batch[idx[0]].groupId}" has 1 response; needs rl.group_size >= 2`,
      );
    const r = idx.map((i) => batch[i].reward);
    let best = 0;
    for (let k = 1; k < r.length; k++) if (r[k] > r[best]) best = k;
    const second = Math.max(...r.filter((_, k) => k !== best));
    const d = opts.normByStd ? std(r, "sample") + opts.stdEps : 1;
    scalar[idx[best]] = (r[best] - second) / d;
  }
  return fromScalars(batch, scalar);
};

/**
 * LitePPO's normalization ("Tricks or Traps", arXiv 2508.08221): the group mean as baseline,
 * the std of the whole batch's rewards (rl.std convention) as scale:
 * A_i = (R_i − mean_group(R)) / (std_batch(R) + ε). A singleton group keeps rl.singleton_group's
 * rule (0 or the raw reward) for its numerator. A batch of one trajectory has std 0.
 */
export const liteppo: AdvantageFn = (batch, opts) => {
  const all = batch.map((t) => t.reward);
  const d = (batch.length > 1 ? std(all, opts.std) : 0) + opts.stdEps;
  const centred = groupOutcome(batch, { ...opts }, (r) => {
    const m = mean(r);
    return r.map((x) => x - m);
  }).scalar!;
  return fromScalars(
    batch,
    centred.map((a) => a / d),
  );
};

export const ADVANTAGE: Record<string, AdvantageFn> = {
  gae,
  grpo,
  "dr-grpo": drGrpo,
  rloo,
  "reinforce-pp": reinforcePP,
  "reinforce-pp-baseline": reinforcePPBaseline,
  remax,
  gigpo,
  "reinforce-history": reinforceHistory,
  opo,
  "grpo-passk": grpoPassk,
  liteppo,
};

/**
 * Turn-level discounted return (§12, Kevin-32B): ret_k = Σ_{j≥k} γ_turn^{j−k}·s_j.
 */
export function turnDiscount(scores: Arr, gammaTurn: number): Float64Array {
  const out = new Float64Array(scores.length);
  let run = 0;
  for (let k = scores.length - 1; k >= 0; k--) {
    run = scores[k] + gammaTurn * run;
    out[k] = run;
  }
  return out;
}

export const RETURN: Record<string, (scores: Arr, gamma: number) => Float64Array> = {
  "turn-discount": turnDiscount,
};
