// The guards that keep the kernel plan (kernels/plan.ts) the only selector of a kernel: no
// baseline path kept beside the current one in model/ or kernels/ (old variants live in
// kernels/dev/, benchmarks build older code from a pinned commit), and no public mutable field on
// Runtime or GpuModel that could pick a variant. Kept outside kernels/ so the words it looks for
// appear nowhere there. Run: npx vitest run --project unit cli/kernel-plan-guard.test.ts
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

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
    const hits = [...files(join(ROOT, "model")), ...files(join(ROOT, "kernels"))].filter((p) =>
      /legacy|Legacy|AllRows/.test(readFileSync(p, "utf8")),
    );
    expect(hits.map((p) => p.slice(ROOT.length))).toEqual([]);
  });

  it("Runtime and GpuModel have no public mutable field (GpuModel.recompute is a memory choice, not a kernel)", () => {
    expect(mutableFields(join(ROOT, "kernels/runtime.ts"), "Runtime")).toEqual([]);
    expect(mutableFields(join(ROOT, "model/gpu.ts"), "GpuModel")).toEqual(["recompute"]);
  });
});
