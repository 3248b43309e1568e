// Entropy-guided advantage shaping on post-tool tokens (ALGORITHMS.md §8.3-§8.4, TAO-RL):
// `tao-code` is the released code's multiplicative form Â = A·(1 + c·z(H)) with the
// restrict/detach/fallback switches; `tao-additive` is the reconstruction
// Â = A + min(α·H, |A|/κ) on the top-q_H post-tool tokens by entropy (entropy detached).
// Inputs are flat arrays over one micro-batch (concatenate sequences with `flatten`).
// Tested by rl/algos/shaping.test.ts (`npx vitest run rl/algos/`).
import type { Arr } from "./types.ts";

export type ShapingInput = {
  advantages: Arr; // (N)
  entropy: Arr; // (N)
  mask: Arr; // (N) loss mask
  postTool: Arr; // (N) 1 = policy token after a tool response
};

export type ShapingOptions = {
  coef: number; // tao-code c
  restrictToPostTool: boolean;
  detachEntropy: boolean; // tao-code only; tao-additive always detaches
  fallbackAllTokens: boolean; // tao-code: shape all tokens when no post-tool token exists
  alpha: number; // tao-additive α
  kappa: number; // tao-additive κ
  qH: number; // tao-additive: top fraction of post-tool tokens by entropy
};

export type ShapingOutput = {
  advantages: Float64Array; // (N) shaped Â
  selected: Uint8Array; // (N) tokens the shaping touched
  /**
   * Backward through the entropy: given dL/dÂ per token, returns dL/dH per token
   * (all zeros when the entropy is detached).
   */
  backward: (dAdv: Arr) => Float64Array;
};

export type ShapingFn = (input: ShapingInput, opts: ShapingOptions) => ShapingOutput;

const zerosBackward = (n: number) => () => new Float64Array(n);

/** tao-code (§8.3 / §8.4a). */
export const taoCode: ShapingFn = (input, opts) => {
  const N = input.mask.length;
  // μ_H, σ_H (population) over every loss-mask token of the micro-batch; σ := 1 with ≤ 1 token.
  let n = 0;
  let s = 0;
  for (let i = 0; i < N; i++)
    if (input.mask[i] !== 0) {
      n++;
      s += input.entropy[i];
    }
  const mu = n > 0 ? s / n : 0;
  let ss = 0;
  for (let i = 0; i < N; i++) if (input.mask[i] !== 0) ss += (input.entropy[i] - mu) ** 2;
  const sigmaIsConst = n <= 1;
  const sigma = sigmaIsConst ? 1 : Math.sqrt(ss / n);
  const denom = sigma + 1e-8;

  const selected = new Uint8Array(N);
  let any = false;
  for (let i = 0; i < N; i++) {
    const inCe = input.mask[i] !== 0 && (!opts.restrictToPostTool || input.postTool[i] !== 0);
    if (inCe) {
      selected[i] = 1;
      any = true;
    }
  }
  if (!any && opts.fallbackAllTokens) for (let i = 0; i < N; i++) if (input.mask[i] !== 0) selected[i] = 1;

  const advantages = Float64Array.from(input.advantages);
  for (let i = 0; i < N; i++) {
    if (selected[i])
      advantages[i] = input.advantages[i] * (1 + (opts.coef * (input.entropy[i] - mu)) / denom);
  }
  if (opts.detachEntropy) return { advantages, selected, backward: zerosBackward(N) };

  // Â_t = A_t(1 + c·z_t), z_t = (H_t − μ)/(σ + ε): μ and σ depend on every masked H, so the
  // gradient of one Â reaches all masked entropies.
  //   g_t = dL/dÂ_t·A_t·c (selected t);  dL/dH_s = g_s/D − Σg/(nD) − (H_s−μ)·Σ_t g_t(H_t−μ)/(nσD²)
  const backward = (dAdv: Arr) => {
    const dH = new Float64Array(N);
    let sg = 0;
    let sgh = 0;
    const g = new Float64Array(N);
    for (let t = 0; t < N; t++) {
      if (!selected[t]) continue;
      g[t] = dAdv[t] * input.advantages[t] * opts.coef;
      sg += g[t];
      sgh += g[t] * (input.entropy[t] - mu);
    }
    for (let i = 0; i < N; i++) {
      if (input.mask[i] === 0) continue;
      let d = g[i] / denom - sg / (n * denom);
      if (!sigmaIsConst && sigma > 0) d -= ((input.entropy[i] - mu) * sgh) / (n * sigma * denom * denom);
      dH[i] = d;
    }
    return dH;
  };
  return { advantages, selected, backward };
};

/** tao-additive (§8.4b): ψ = min(α·H, |A|/κ) on the top ceil(q_H·n) post-tool tokens; ties by index. */
export const taoAdditive: ShapingFn = (input, opts) => {
  const N = input.mask.length;
  const cand: number[] = [];
  for (let i = 0; i < N; i++) {
    if (input.mask[i] !== 0 && (!opts.restrictToPostTool || input.postTool[i] !== 0)) cand.push(i);
  }
  cand.sort((a, b) => input.entropy[b] - input.entropy[a] || a - b);
  const k = cand.length === 0 ? 0 : Math.max(1, Math.ceil(opts.qH * cand.length - 1e-9));
  const selected = new Uint8Array(N);
  const advantages = Float64Array.from(input.advantages);
  for (const i of cand.slice(0, k)) {
    selected[i] = 1;
    const A = input.advantages[i];
    advantages[i] = A + Math.min(opts.alpha * input.entropy[i], Math.abs(A) / opts.kappa);
  }
  return { advantages, selected, backward: zerosBackward(N) };
};

export const SHAPING: Record<string, ShapingFn> = {
  "tao-code": taoCode,
  "tao-additive": taoAdditive,
};
