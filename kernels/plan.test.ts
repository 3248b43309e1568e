// The kernel plan (kernels/plan.ts): which plan an adapter gets, the override and its errors,
// entries a device without subgroups cannot take; and the guards that keep the plan the only
// selector: no legacy or all-rows path in model/ or kernels/ (kernels/dev/ holds old variants),
// and no public mutable field on Runtime or GpuModel.
// Run: npx vitest run --project unit kernels/plan.test.ts
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
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

const ROOT = new URL("../", import.meta.url).pathname;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return p.endsWith("kernels/dev") ? [] : files(p);
    return /\.(ts|wgsl)$/.test(f) ? [p] : [];
  });
}

/** Public properties of a class that are neither readonly nor accessors. */
function mutableFields(path: string, cls: string): string[] {
  const src = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isClassDeclaration(n) && n.name?.text === cls)
      for (const m of n.members) {
        if (!ts.isPropertyDeclaration(m)) continue;
        const mods = ts.getModifiers(m) ?? [];
        const kinds = mods.map((x) => x.kind);
        if (kinds.includes(ts.SyntaxKind.ReadonlyKeyword) || kinds.includes(ts.SyntaxKind.PrivateKeyword))
          continue;
        if (ts.isPrivateIdentifier(m.name)) continue;
        out.push(m.name.getText(src));
      }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

describe("the plan is the only selector", () => {
  it("no legacy or all-rows path in model/ or kernels/ outside kernels/dev/", () => {
    const hits = [...files(join(ROOT, "model")), ...files(join(ROOT, "kernels"))]
      .filter((p) => !p.endsWith("kernels/plan.test.ts"))
      .filter((p) => /legacy|Legacy|AllRows/.test(readFileSync(p, "utf8")));
    expect(hits.map((p) => p.slice(ROOT.length))).toEqual([]);
  });

  it("Runtime and GpuModel have no public mutable field (GpuModel.recompute is a memory choice, not a kernel)", () => {
    expect(mutableFields(join(ROOT, "kernels/runtime.ts"), "Runtime")).toEqual([]);
    expect(mutableFields(join(ROOT, "model/gpu.ts"), "GpuModel")).toEqual(["recompute"]);
  });
});
