// The plan a real device gets (Dawn in Node): what it reports leads to the plan its Runtimes read,
// and a forced plan (LAB_KERNEL_PLAN, as the gpu-discrete project sets it) is the one that runs,
// with nothing dropped on an adapter that has subgroups, so the forced pass really runs the GPUs'
// kernels. Run: npx vitest run --project gpu kernels/plan.gpu.test.ts
import { describe, expect, it } from "vitest";
import { canUseSubgroups } from "./device";
import { devicePlan, PLANS, planFor, planOverride } from "./plan";
import { gpuRuntime } from "./testing";

describe("the device's plan", () => {
  it("is the adapter's own plan, or the forced one whole", async () => {
    const rt = await gpuRuntime();
    const choice = devicePlan(rt.device);
    expect(rt.plan).toBe(choice.plan);
    const forced = planOverride();
    if (!forced) {
      const info = (rt.device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
      expect(choice.plan.name).toBe(planFor({ info, subgroups: canUseSubgroups(rt.device) }).name);
      return;
    }
    expect(choice.plan.name).toBe(forced);
    expect(choice.why).toMatch(/forced/);
    if (canUseSubgroups(rt.device)) {
      expect(choice.dropped).toEqual([]);
      expect(choice.plan).toEqual(PLANS[choice.plan.name]);
    }
  });
});
