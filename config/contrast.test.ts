// Every claim preset declares what it changes against its baseline arm, and changes nothing
// else: both recipe files are resolved (base recipes, extends chains, defaults) and compared
// leaf by leaf. A path in `contrast.changes` covers its subtree; a declared change that does
// not differ fails too, so a declaration cannot go stale. The calculator claims extend and
// contrast the frozen claim-baseline.json (quick-demo as their tables ran it), and every arm
// with committed runs (docs/experiments/claims/<arm>/seed-<S>/config.json; the folder
// "quick-demo" holds claim-baseline's) still resolves to the config those runs recorded, so a
// change to the default demo cannot change what a committed table means.
// Run: npx vitest run config/contrast.test.ts
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { contrastViolations, loadRecipeFile } from "./recipe-file.ts";

const dir = new URL("../public/recipes/", import.meta.url);
const read = async (f: string) => readFileSync(new URL(f, dir), "utf8");
const BASELINE = "claim-baseline.json";
const claims = readdirSync(dir).filter(
  (f) => f.startsWith("claim-") && f.endsWith(".json") && f !== BASELINE,
);
const runsDir = new URL("../docs/experiments/claims/", import.meta.url);

/** Every leaf of a JSON value by dotted path (arrays whole). */
function leaves(v: unknown, path = "", out: Record<string, string> = {}): Record<string, string> {
  if (typeof v === "object" && v !== null && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) leaves(x, path ? `${path}.${k}` : k, out);
  } else out[path] = JSON.stringify(v);
  return out;
}

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

describe("the frozen claim baseline", () => {
  it("is no claim preset's arm, and every calculator claim extends it and is contrasted with it", async () => {
    const base = await loadRecipeFile(BASELINE, read);
    if (!base.ok) throw new Error(base.error);
    expect(base.recipe.contrast).toBeUndefined();
    for (const file of claims) {
      const raw = JSON.parse(await read(file)) as { extends?: string; contrast?: { baseline: string } };
      expect(raw.extends, `${file} extends the default demo`).not.toBe("quick-demo.json");
      expect(raw.contrast?.baseline, `${file} is contrasted with the default demo`).not.toBe(
        "quick-demo.json",
      );
    }
    const onBaseline = claims.filter(
      (f) => JSON.parse(readFileSync(new URL(f, dir), "utf8")).extends === BASELINE,
    );
    expect(onBaseline.length).toBeGreaterThanOrEqual(7);
  });

  const arms = readdirSync(runsDir).filter((a) => !a.includes("."));
  it("every arm with committed runs has its recipe file", () => {
    expect(arms).toContain("quick-demo");
    for (const arm of arms)
      expect(existsSync(new URL(arm === "quick-demo" ? BASELINE : `${arm}.json`, dir))).toBe(true);
  });
  for (const arm of arms) {
    const file = arm === "quick-demo" ? BASELINE : `${arm}.json`;
    it(`${file} resolves to the config of its committed runs (docs/experiments/claims/${arm})`, async () => {
      const r = await loadRecipeFile(file, read);
      if (!r.ok) throw new Error(r.error);
      const now = leaves(r.config);
      for (const seed of readdirSync(new URL(`${arm}/`, runsDir))) {
        const ran = leaves(JSON.parse(readFileSync(new URL(`${arm}/${seed}/config.json`, runsDir), "utf8")));
        // Fields added to the schema since carry their defaults; the seed is the run's own;
        // checkpoint_every only says when checkpoints were written (5 then, 2 now).
        const differ = Object.keys(ran).filter(
          (k) => k !== "seed" && k !== "checkpoint_every" && ran[k] !== now[k],
        );
        expect(
          differ.map((k) => `${seed} ${k}: ran ${ran[k]}, now ${now[k]}`),
          `${file} no longer resolves to what ${arm}/${seed} ran`,
        ).toEqual([]);
      }
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

describe("the README's claims table", () => {
  const root = new URL("../", import.meta.url);
  const readme = readFileSync(new URL("README.md", root), "utf8");
  const start = readme.indexOf("### Claims");
  const table = readme.slice(start, readme.indexOf("\n### ", start + 1));
  const experiments = readFileSync(new URL("docs/EXPERIMENTS.md", root), "utf8");
  it("names every claim preset", () => {
    expect(start, "README.md has no ### Claims section").toBeGreaterThan(0);
    const missing = [...claims, BASELINE].filter((f) => !table.includes(`\`${f.replace(/\.json$/, "")}\``));
    expect(missing, "claim presets missing from README's claims table").toEqual([]);
  });
  it("links sections of EXPERIMENTS.md that exist", () => {
    const links = [...table.matchAll(/\(docs\/EXPERIMENTS\.md#([\w-]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThanOrEqual(10);
    const dangling = links.filter((id) => !experiments.includes(`<a id="${id}"></a>`));
    expect(dangling, 'links without an <a id="..."> in docs/EXPERIMENTS.md').toEqual([]);
  });
});
