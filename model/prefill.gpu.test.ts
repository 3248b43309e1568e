// GPU test of the batched prefill (GpuGenerationSession.prefillBatched: whole prompts in one
// forward with the training kernels, keys and values copied into the caches) against the CPU
// model's generation session (one token per step): prompts of unequal lengths, one repeated (run
// once, then each row's cache grows apart with its own appended tokens), grouped-query
// attention, RoPE, SwiGLU, a LoRA adapter on every target; the next-token logits of every row
// after the prefill and after appended tokens agree within STYLE's model tolerance.
// Run: npx vitest run --project gpu model/prefill
import { expect, it } from "vitest";
import { assertClose, gpuRuntime, randn } from "../kernels/testing";
import { modelConfig } from "./config";
import { CpuModel } from "./cpu";
import { GpuModel } from "./gpu";
import { LORA_TARGETS, loraLayout } from "./lora";

it("batched prefill equals the CPU model's one token per step: logits after the prompts and after appends", async () => {
  const rt = await gpuRuntime();
  const config = modelConfig({
    layers: 2,
    dModel: 64,
    heads: 4,
    kvHeads: 2,
    context: 32,
    vocab: 107,
    norm: "rmsnorm",
    mlp: "swiglu",
    positional: "rope",
    lora: { rank: 4, alpha: 8, targets: [...LORA_TARGETS] },
  });
  const adapter = randn(loraLayout(config, config.lora).total, 5, 0.1);
  const model = new GpuModel(rt, config, undefined, 3, { adapter });
  const prompts = [
    [5, 9, 11, 2, 7],
    [1, 2, 3, 4, 5, 6, 7, 8],
    [40, 41, 42],
    [5, 9, 11, 2, 7], // row 0's prompt again (a GRPO group): prefilled once, its own cache after
  ];
  const cpu = new CpuModel(config, await model.getWeights(), 0, adapter);
  const run = async (m: GpuModel | CpuModel) => {
    const dispatches0 = rt.counters.dispatches;
    const gen = m.startGeneration({ temperature: 1, seed: 1 });
    await gen.prefill(prompts);
    const dispatches = rt.counters.dispatches - dispatches0;
    const logits = [];
    for (let b = 0; b < prompts.length; b++) logits.push(await gen.nextLogits(b));
    for (let b = 0; b < prompts.length; b++) await gen.append(b, [b + 20, b + 30]);
    for (let b = 0; b < prompts.length; b++) logits.push(await gen.nextLogits(b));
    const lengths = gen.lengths();
    gen.finish();
    return { logits, lengths, dispatches };
  };
  const batched = await run(model);
  const stepwise = await run(cpu);
  expect(batched.lengths).toEqual([7, 10, 5, 7]);
  expect(stepwise.lengths).toEqual(batched.lengths);
  // one forward (76 dispatches for 2 layers with LoRA on every target), where 8 feed steps, one a
  // token, would be about 8 times that
  expect(batched.dispatches).toBeLessThan(100);
  batched.logits.forEach((l, i) => {
    assertClose(`logits ${i}`, l, stepwise.logits[i], { atol: 1e-4, rtol: 1e-3 });
  });
  model.dispose();
});
