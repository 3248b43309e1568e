// The session checks the memory plan before it makes a model: a run over model.memory_budget_gb
// (or over an adapter's buffer limit) is refused with the plan's numbers and what to change, and
// no model is made. Run: `npx vitest run --project unit rl/run/build-trainer.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../../config";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { createTrainer } from "./build-trainer";

describe("createTrainer and the memory plan", () => {
  it("refuses a run over the budget before making a model, and starts one that fits", async () => {
    const sandbox = await InProcessSandbox.create();
    let made = 0;
    const deps = {
      makeModel: async (...a: ConstructorParameters<typeof CpuModel>) => {
        made++;
        return new CpuModel(...a);
      },
      sandbox,
      readFile: async (p: string): Promise<Uint8Array> => {
        throw new Error(`no file ${p}`);
      },
    };
    const tiny = { layers: 1, d_model: 16, heads: 2, context: 64 };
    // 1 MB: the tiny model's weights and Adam state fit, its 64-sequence SFT batch does not.
    const over = mergeConfig(defaultRunConfig(), { model: { ...tiny, memory_budget_gb: 0.001 } });
    await expect(createTrainer(over, deps)).rejects.toThrow(
      /model: the memory plan does not fit \(the plan needs .* MB, over the budget of 1\.0 MB\)[\s\S]*KV cache: 1\.6 MB \(2 x 1 layers x 200 sequences[\s\S]*total: 14\.4 MB of a 1\.0 MB budget\nchange: .*sft\.batch/,
    );
    const limited = { maxBufferSize: 64 * 1024, maxStorageBufferBindingSize: 64 * 1024 };
    await expect(
      createTrainer(mergeConfig(defaultRunConfig(), { model: tiny }), { ...deps, limits: limited }),
    ).rejects.toThrow(/buffer .* over the adapter's maxBufferSize of 66 KB/);
    expect(made).toBe(0);
    await createTrainer(mergeConfig(defaultRunConfig(), { model: tiny }), deps);
    expect(made).toBe(1);
  });
});
