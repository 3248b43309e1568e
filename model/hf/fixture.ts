// A tiny Hugging Face model's weights for tests: every tensor of a config.json's architecture
// (model/hf/read.ts's names and shapes), random f32 from a seeded LCG with norms at 1, as one
// safetensors file (model/hf/write.ts's writer). Used by rl/run/chat-run.test.ts and e2e/tiny-hf.ts.

import { hfModelConfig } from "./config";
import { hfTensors } from "./read";
import { writeSafetensors } from "./write";

export function randomHfSafetensors(
  config: Record<string, unknown>,
  o: { context: number; seed: number; scale: number },
): Uint8Array {
  let seed = o.seed;
  const tensors = hfTensors(hfModelConfig(config, "config.json", { context: o.context })).map((t) => {
    const norm = t.name.endsWith("norm.weight");
    const data = new Float32Array(t.size);
    for (let i = 0; i < t.size; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      data[i] = norm ? 1 : (seed / 2 ** 32 - 0.5) * o.scale;
    }
    return { name: t.name, shape: t.shape, data };
  });
  return writeSafetensors(tensors);
}
