// Loss masks and masked metrics (ALGORITHMS.md §10): which tokens get gradient (policy
// tokens only, with a switch to train on tool output for the mask on/off contrast), the
// TAO-RL post-tool mask (§8.2), and the actor metrics as masked means (NaN for an empty
// mask, never 0/0). Tested by rl/algos/masks.test.ts (`npx vitest run rl/algos/`).
import { KL, k3 as k3Fn } from "./losses.ts";
import { type Arr, clamp, maskedMean } from "./types.ts";

/** What produced a response token. "tool" = tool response (and its wrapper); "env" = other inserted text. */
export type TokenKind = "policy" | "tool" | "env" | "pad";

/**
 * Loss mask over a response. On (default): 1 for policy tokens only. Off (the "loss mask
 * off" contrast of ALGORITHMS §14): tool and env tokens also train; padding never does.
 * `scale` multiplies the whole trajectory (TAO-RL all-tools-failed, void turns).
 */
export function buildLossMask(kinds: readonly TokenKind[], maskToolOutput = true, scale = 1): Float64Array {
  return Float64Array.from(kinds, (k) => {
    if (k === "pad") return 0;
    if (k === "policy" || !maskToolOutput) return scale;
    return 0;
  });
}

/**
 * Post-tool mask (§8.2, DESIGN): 1 for every policy token generated after the first tool
 * response of the trajectory (inline: after </tool_response>; turns: the next assistant turn).
 * Zero tool calls give an all-zero mask.
 */
export function buildPostToolMask(kinds: readonly TokenKind[]): Float64Array {
  const out = new Float64Array(kinds.length);
  let seenTool = false;
  kinds.forEach((k, i) => {
    if (k === "tool") seenTool = true;
    else if (k === "policy" && seenTool) out[i] = 1;
  });
  return out;
}

export type ActorMetricInput = {
  mask: Arr; // (N)
  entropy?: Arr; // (N)
  postTool?: Arr; // (N)
  logprob?: Arr; // (N)
  oldLogprob?: Arr; // (N)
  refLogprob?: Arr; // (N)
};

/**
 * Token-mean metrics of §10 over flat arrays. Keys whose mask is empty or whose inputs are
 * missing are left out (metrics.jsonl never holds NaN).
 */
export function actorMetrics(x: ActorMetricInput, klEstimator = "k3"): Record<string, number> {
  const out: Record<string, number> = {};
  const put = (key: string, v: number) => {
    if (Number.isFinite(v)) out[key] = v;
  };
  if (x.entropy) {
    put("actor/entropy", maskedMean(x.entropy, x.mask));
    if (x.postTool) {
      const m = Float64Array.from(x.mask, (v, i) => v * (x.postTool as Arr)[i]);
      put("actor/entropy_post_tool", maskedMean(x.entropy, m));
    }
  }
  if (x.logprob && x.oldLogprob) {
    // The log-ratio clamped at ±20, as the loss's ratio sees it (verl logs the clamped value).
    const d = Float64Array.from(x.logprob, (lp, i) => -clamp(lp - (x.oldLogprob as Arr)[i], -20, 20));
    put("actor/ppo_kl", maskedMean(d, x.mask));
  }
  if (x.logprob && x.refLogprob) {
    const fn = KL[klEstimator] ?? k3Fn;
    const k = Float64Array.from(x.logprob, (lp, i) => fn(lp, (x.refLogprob as Arr)[i]).value);
    put("actor/kl_ref", maskedMean(k, x.mask));
  }
  return out;
}

/**
 * Policy loss on the highest-entropy tokens only (Wang et al. 2025, "Beyond the 80/20 Rule",
 * arXiv 2506.01939; TRL `top_entropy_quantile`): of the N valid tokens (mask > 0) of a batch,
 * the n = ceil(q·N) with the largest entropy get 1, all others 0. Ties are broken by position
 * (earlier first), so exactly n tokens are kept and runs replay; TRL instead keeps every token
 * at or above the (1 − q) quantile of the entropies, which keeps ties at the threshold together
 * (the two agree when the entropies are distinct). q = 1 keeps every valid token.
 */
export function topEntropyMask(entropy: Arr, mask: Arr, q: number): Float64Array {
  if (!(q > 0 && q <= 1)) throw new Error(`rl.top_entropy_quantile must be in (0, 1], got ${q}`);
  const valid: number[] = [];
  for (let i = 0; i < mask.length; i++) if (mask[i] > 0) valid.push(i);
  const n = Math.ceil(q * valid.length);
  valid.sort((a, b) => entropy[b] - entropy[a] || a - b);
  const out = new Float64Array(mask.length);
  for (let k = 0; k < n; k++) out[valid[k]] = 1;
  return out;
}
