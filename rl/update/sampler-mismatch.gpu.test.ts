// The sampler-trainer mismatch on the WebGPU backend (Dawn in Node): tokens drawn by the
// KV-cache decode path (the `sample` kernel) and scored by the training forward, under the same
// temperature and top-k/top-p (rl/update/sampler-mismatch.ts), agree to float32 rounding; docs/EXPERIMENTS.md
// measures the same on quick-demo. `npx vitest run --project gpu rl/update/sampler-mismatch.gpu.test.ts`.

import { beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../kernels/runtime";
import { gpuRuntime } from "../../kernels/testing";
import { modelConfig } from "../../model/config";
import { CpuModel } from "../../model/cpu";
import { generate } from "../../model/generate";
import { GpuModel } from "../../model/gpu";
import { encode } from "../../model/tokenizer";
import { scoreAll } from "./minibatch-loop";
import { mismatchMetrics } from "./sampler-mismatch";

let rt: Runtime;
beforeAll(async () => {
  rt = await gpuRuntime();
});

describe("decode path vs training forward on the GPU", () => {
  it("agree to float32 rounding with and without top-k/top-p", async () => {
    const config = modelConfig({ layers: 2, dModel: 32, heads: 2, context: 40 });
    const model = new GpuModel(rt, config, await new CpuModel(config, undefined, 5).getWeights());
    const prompts = [encode("12*34="), encode("ab"), encode("<think>x"), encode("q")];
    for (const s of [
      { temperature: 1, topK: 0, topP: 1, seed: 1 },
      { temperature: 0.8, topK: 20, topP: 0.9, seed: 2 },
    ]) {
      const session = model.startGeneration(s);
      await session.prefill(prompts);
      const out = await generate(session, { maxNewTokens: 16, stop: [], context: config.context });
      session.finish();
      const rows = prompts.map((p, b) => ({ prompt: p, response: out[b].tokens }));
      const old = await scoreAll(model, rows, rows.length, config.context, {
        temperature: s.temperature,
        truncation: s,
      });
      const trainer = old.truncLogp ?? old.logp;
      const m = mismatchMetrics(
        trainer,
        out.map((o) => o.logprobs),
        out.map((o) => o.tokens.map(() => 1)),
      );
      expect(m["rollout/logprob_diff_max"], JSON.stringify(s)).toBeLessThan(1e-4);
      expect(Math.abs(m["rollout/is_ratio_mean"] - 1), JSON.stringify(s)).toBeLessThan(1e-5);
      expect(m["rollout/trunc_dropped_frac"]).toBe(0);
    }
    model.dispose();
  });
});
