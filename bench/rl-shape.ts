// One RL step's GPU work at a pretrained model's layer shape: SmolLM2-135M's layers
// (d 576, 9 heads of 64 over 3 KV heads, MLP 1536, vocab 49,152, tied) with fewer of them, LoRA
// rank 16 on all seven targets, random weights; P prompts x S samples decoded to the context
// (random weights never stop), then the old policy's log-probs over the whole batch and one
// update (forward, backward on the response rows' log-probs, clipped AdamW on the adapter), as
// the GRPO trainer does with one epoch of one minibatch. No tools, no reward: those are CPU work.
// Used by bench/profile-rl-shape.ts (per-kernel timestamps) and the kernels bench's
// `rl_step_smollm2_l4_512` row (old vs new side by side).
import { type ModelConfig, modelConfig } from "../model/config";
import type { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";
import { LORA_TARGETS } from "../model/lora";
import { packSequences, scatterRows } from "../rl/update/score-batch";

export interface RlShape {
  layers: number;
  /** prompts x samples = rows decoded and trained */
  prompts: number;
  samples: number;
  promptTokens: number;
  /** prompt + response tokens of every row */
  context: number;
}

export const RL_SHAPE: RlShape = { layers: 4, prompts: 2, samples: 2, promptTokens: 384, context: 512 };

export function rlShapeConfig(s: RlShape = RL_SHAPE): ModelConfig {
  const mc = hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: s.context });
  return modelConfig({
    ...mc,
    layers: s.layers,
    lora: { rank: 16, alpha: 32, targets: [...LORA_TARGETS] },
  });
}

export function seededTokens(n: number, V: number, seed: number): number[] {
  let x = seed >>> 0 || 1;
  return Array.from({ length: n }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % V;
  });
}

export interface RlStepTimes {
  rolloutS: number;
  oldLogprobsS: number;
  updateS: number;
  totalS: number;
  /** mean log-prob of the response tokens under the old policy (a sanity figure) */
  meanLogp: number;
}

export type RlPhase = "rollout" | "old-logprobs" | "update";

/**
 * One step at shape `s` on `model` (made from rlShapeConfig(s)); `seed` varies the prompts and
 * samples. `onPhase` is called as each phase begins (bench/counts.ts files the work under it).
 */
export async function rlShapeStep(
  model: GpuModel,
  s: RlShape,
  seed: number,
  onPhase?: (phase: RlPhase) => void,
): Promise<RlStepTimes> {
  const V = model.config.vocab;
  const B = s.prompts * s.samples;
  const T = s.context;
  const R = s.context - s.promptTokens;
  const prompts: number[][] = [];
  for (let p = 0; p < s.prompts; p++) {
    const toks = seededTokens(s.promptTokens, V, seed * 101 + p + 1);
    for (let k = 0; k < s.samples; k++) prompts.push(toks);
  }
  const t0 = performance.now();
  onPhase?.("rollout");
  const gen = model.startGeneration({ temperature: 1, seed });
  await gen.prefill(prompts);
  const active = new Array(B).fill(true);
  const run = gen.decodeMany
    ? await gen.decodeMany(active, R, () => false)
    : await (async () => {
        const tokens: number[][] = prompts.map(() => []);
        for (let i = 0; i < R; i++) {
          const d = await gen.decode(active);
          for (let b = 0; b < B; b++) tokens[b].push(d.tokens[b]);
        }
        return { tokens };
      })();
  gen.finish();
  const t1 = performance.now();
  // packed as the trainer packs them (rl/update/score-batch.ts): prompt rows are not scored (ScoreBatch.scoreFrom)
  const { batch, index } = packSequences(
    prompts.map((prompt, b) => ({ prompt, response: run.tokens[b] })),
    T,
  );
  onPhase?.("old-logprobs");
  const old = await model.forwardScore(batch);
  let sum = 0;
  let n = 0;
  for (const idx of index)
    for (const i of idx)
      if (i >= 0) {
        sum += old.logp[i];
        n++;
      }
  const t2 = performance.now();
  onPhase?.("update");
  model.zeroGrad();
  await model.forwardScore(batch);
  const dlogp = scatterRows(
    index.map((idx) => Array.from(idx, () => -1 / n)),
    index,
    B * T,
  );
  await model.backward({ dlogp });
  // awaited at once: the fused update reads the norm back now instead of with the next forward
  await model.step({ lr: 1e-5, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 });
  const t3 = performance.now();
  return {
    rolloutS: (t1 - t0) / 1000,
    oldLogprobsS: (t2 - t1) / 1000,
    updateS: (t3 - t2) / 1000,
    totalS: (t3 - t0) / 1000,
    meanLogp: sum / n,
  };
}
