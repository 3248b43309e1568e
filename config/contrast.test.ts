// Every claim preset declares what it changes against its baseline arm, and changes nothing
// else: both recipe files are resolved (base recipes, extends chains, defaults) and compared
// leaf by leaf. A path in `contrast.changes` covers its subtree; a declared change that does
// not differ fails too, so a declaration cannot go stale. Run: npx vitest run config/contrast.test.ts
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { contrastViolations, loadRecipeFile } from "./recipe-file.ts";

const dir = new URL("../public/recipes/", import.meta.url);
const read = async (f: string) => readFileSync(new URL(f, dir), "utf8");
const claims = readdirSync(dir).filter((f) => f.startsWith("claim-") && f.endsWith(".json"));

describe("claim presets: one declared contrast", () => {
  it("there are claim presets", () => expect(claims.length).toBeGreaterThanOrEqual(10));
  for (const file of claims) {
    it(file, async () => {
      const arm = await loadRecipeFile(file, read);
      if (!arm.ok) throw new Error(arm.error);
      const contrast = arm.recipe.contrast;
      expect(contrast, `${file} declares no "contrast"`).toBeDefined();
      if (!contrast) return;
      const base = await loadRecipeFile(contrast.baseline, read);
      if (!base.ok) throw new Error(base.error);
      expect(contrastViolations(arm.config, base.config, contrast.changes)).toEqual([]);
    });
  }
});

describe("contrastViolations", () => {
  const a = { rl: { lr: 1, clip: { low: 0.2, high: 0.2 } }, terms: [1, 2], seed: 1 };
  it("accepts exactly the declared changes, a path covering its subtree", () => {
    const b = { rl: { lr: 2, clip: { low: 0.1, high: 0.3 } }, terms: [1, 2], seed: 1 };
    expect(contrastViolations(b, a, ["rl.lr", "rl.clip"])).toEqual([]);
  });
  it("names an undeclared difference and a declared change that does not differ", () => {
    const b = { rl: { lr: 2, clip: { low: 0.2, high: 0.2 } }, terms: [1, 3], seed: 1 };
    expect(contrastViolations(b, a, ["rl.lr", "seed"])).toEqual([
      "terms differs from the baseline ([1,2] -> [1,3]) but is not declared in contrast.changes",
      "seed is declared in contrast.changes but equals the baseline",
    ]);
  });
  it("does not let a prefix of a name cover another key", () => {
    const b = { ...a, rl: { ...a.rl, lr: 3 } };
    expect(contrastViolations(b, a, ["rl.l"])).toHaveLength(2);
  });
});
