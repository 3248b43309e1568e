// A claim preset's description in parts (the paper's finding, what to watch), and every claim
// recipe in public/recipes/ names a baseline that exists, for the page's "paired arm" button.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { claimParts } from "./presets";

const index = JSON.parse(readFileSync("public/recipes/index.json", "utf8")) as {
  file: string;
  description: string;
}[];

describe("claim presets on the page", () => {
  it("splits a claim into its source, finding and what to compare", () => {
    const p = claimParts(
      "Claim (DAPO, arXiv 2503.14476): dynamic sampling drops groups whose rewards are all equal, so accuracy rises faster. This arm runs the dapo recipe; compare groups/zero_std_frac and val/acc with quick-demo.",
    );
    expect(p).toEqual({
      source: "DAPO, arXiv 2503.14476",
      claim: "dynamic sampling drops groups whose rewards are all equal, so accuracy rises faster.",
      watch: "groups/zero_std_frac and val/acc with quick-demo",
    });
    expect(claimParts("The default demo.")).toBeNull();
  });

  it("every claim recipe with a contrast names a baseline in the index", () => {
    const files = new Set(index.map((e) => e.file));
    let claims = 0;
    for (const e of index) {
      const recipe = JSON.parse(readFileSync(`public/recipes/${e.file}`, "utf8"));
      if (!recipe.contrast) continue;
      claims++;
      expect(files.has(recipe.contrast.baseline), `${e.file}: ${recipe.contrast.baseline}`).toBe(true);
    }
    expect(claims).toBeGreaterThan(5);
  });
});
