// The kernel plan (kernels/plan.ts): which plan an adapter gets, the override and its errors,
// entries a device without subgroups cannot take, one frozen table. The guards that keep the plan
// the only selector are cli/kernel-plan-guard.test.ts.
// Run: npx vitest run --project unit kernels/plan.test.ts
import { describe, expect, it } from "vitest";
import { describePlan, PLAN_NAMES, PLANS, planFor, resolvePlan } from "./plan";

const lavapipe = { vendor: "mesa", architecture: "", description: "llvmpipe (LLVM 15.0.6, 256 bits)" };

describe("choosing a plan", () => {
  it("picks by what the adapter reports", () => {
    expect(planFor({ info: lavapipe, subgroups: true }).name).toBe("cpu");
    expect(planFor({ info: { vendor: "google", architecture: "swiftshader" }, subgroups: true }).name).toBe(
      "swiftshader",
    );
    expect(planFor({ info: { vendor: "", isFallbackAdapter: true }, subgroups: false }).name).toBe("cpu");
    expect(planFor({ info: { vendor: "nvidia", architecture: "ampere" }, subgroups: true }).name).toBe(
      "discrete",
    );
    expect(planFor({ info: { vendor: "apple", architecture: "metal-3" }, subgroups: true }).name).toBe(
      "integrated",
    );
    expect(planFor({ info: { vendor: "intel", architecture: "gen-12lp" }, subgroups: true }).name).toBe(
      "integrated",
    );
    // Firefox's wgpu: empty strings, no subgroups
    expect(planFor({ info: { vendor: "", architecture: "" }, subgroups: false }).name).toBe("no-subgroups");
  });

  it("takes the override, refuses an unknown one naming the choices, drops what the device lacks", () => {
    const forced = resolvePlan({ info: lavapipe, subgroups: true }, "discrete");
    expect(forced.plan).toBe(PLANS.discrete);
    expect(forced.why).toMatch(/forced/);
    expect(() => resolvePlan({ info: lavapipe, subgroups: true }, "fast")).toThrow(
      /kernel plan override "fast".*discrete, integrated, cpu, swiftshader, no-subgroups/,
    );
    const bare = resolvePlan({ info: lavapipe, subgroups: false }, "cpu");
    expect([bare.plan.reductions, bare.plan.subgroupMatmul, bare.plan.rowsShuffle]).toEqual([
      "workgroup",
      false,
      false,
    ]);
    expect(bare.dropped.length).toBe(4);
    expect(describePlan(bare)).toMatch(/^plan cpu .*dropped: reductions/);
  });

  it("is one frozen table with every plan", () => {
    expect(Object.keys(PLANS)).toEqual([...PLAN_NAMES]);
    expect(Object.isFrozen(PLANS)).toBe(true);
    for (const p of Object.values(PLANS)) expect(Object.isFrozen(p)).toBe(true);
    expect(() => {
      (PLANS.discrete as { attention: string }).attention = "loop";
    }).toThrow();
  });
});
