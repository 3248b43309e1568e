// Seeded next-token sampling (temperature, top-k, top-p): the CPU reference the GPU sampler
// must equal. The random number for a draw depends only on (seed, sequence index, position
// of the token being sampled), not on the batch around it or on call order, so a sequence
// samples the same tokens whether it runs alone or in a batch, and a GPU kernel can compute
// it with u32 arithmetic.
// Procedure: temperature 0 -> argmax (lowest id wins ties). Otherwise z = logits / T,
// probabilities p = softmax(z); order tokens by p descending (lower id first on ties); keep
// the first topK; then keep the shortest prefix whose cumulative p reaches topP (at least
// one token); draw u in [0,1) scaled by the kept mass and walk the kept tokens in that order.
// The returned log-prob is log softmax(z)[token] (the full tempered distribution, T = 1 for
// greedy), which is what PPO-style ratios compare against.
// Tested by model/sampling.test.ts and the generation tests in model/cpu.test.ts.
import type { SamplingOptions } from "./api";

// lowbias32 (Chris Wellons' hash): good avalanche with only 32-bit multiplies.
function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d) >>> 0;
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

/** Uniform in [0,1) with 24 bits, from (seed, sequence, position). */
export function drawUniform(seed: number, seq: number, position: number): number {
  const h = mix32(mix32(mix32(seed >>> 0) ^ (seq >>> 0)) ^ (position >>> 0));
  return (h >>> 8) / 16777216;
}

export function logSoftmax(
  out: Float64Array,
  logits: ArrayLike<number>,
  offset: number,
  V: number,
  invTemp: number,
): void {
  let max = -Infinity;
  for (let v = 0; v < V; v++) max = Math.max(max, logits[offset + v] * invTemp);
  let sum = 0;
  for (let v = 0; v < V; v++) sum += Math.exp(logits[offset + v] * invTemp - max);
  const lse = max + Math.log(sum);
  for (let v = 0; v < V; v++) out[v] = logits[offset + v] * invTemp - lse;
}

/** Samples from logits[offset .. offset+V). Returns the token and its log-prob. */
export function sampleToken(
  logits: ArrayLike<number>,
  offset: number,
  V: number,
  options: SamplingOptions,
  seq: number,
  position: number,
): { token: number; logprob: number } {
  const lp = new Float64Array(V);
  if (!(options.temperature > 0)) {
    logSoftmax(lp, logits, offset, V, 1);
    let best = 0;
    for (let v = 1; v < V; v++) if (logits[offset + v] > logits[offset + best]) best = v;
    return { token: best, logprob: lp[best] };
  }
  logSoftmax(lp, logits, offset, V, 1 / options.temperature);
  const order = Array.from({ length: V }, (_, v) => v).sort((a, b) => lp[b] - lp[a] || a - b);
  let keep = options.topK && options.topK > 0 ? Math.min(options.topK, V) : V;
  const topP = options.topP ?? 1;
  if (topP < 1) {
    let cum = 0;
    for (let i = 0; i < keep; i++) {
      cum += Math.exp(lp[order[i]]);
      if (cum >= topP) {
        keep = i + 1;
        break;
      }
    }
  }
  let mass = 0;
  for (let i = 0; i < keep; i++) mass += Math.exp(lp[order[i]]);
  const u = drawUniform(options.seed, seq, position) * mass;
  let cum = 0;
  let token = order[keep - 1];
  for (let i = 0; i < keep; i++) {
    cum += Math.exp(lp[order[i]]);
    if (u < cum) {
      token = order[i];
      break;
    }
  }
  return { token, logprob: lp[token] };
}
