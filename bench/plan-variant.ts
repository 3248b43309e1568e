// A model on a variant of the device's kernel plan (kernels/plan.ts planWith): the benchmarks'
// in-tree baselines, such as one decode token per submit. Older code is compared by building it
// from its git tag beside this tree (bench/base-tag.ts), not through switches in the engine.
import { tuneMatmulTile } from "../kernels/autotune";
import { devicePlan, type KernelPlan, planWith } from "../kernels/plan";
import { Runtime } from "../kernels/runtime";
import type { ModelConfig } from "../model/config";
import { GpuModel } from "../model/gpu";

export async function variantModel(
  device: GPUDevice,
  changes: Partial<Omit<KernelPlan, "name">>,
  config: ModelConfig,
  weights?: Float32Array,
  seed = 0,
  adapter?: Float32Array,
): Promise<GpuModel> {
  const tile = (await tuneMatmulTile(device)).tile;
  const plan = planWith(devicePlan(device).plan, { matmulTile: tile, ...changes });
  return new GpuModel(new Runtime(device, { plan }), config, weights, seed, { adapter });
}
