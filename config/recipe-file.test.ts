import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseRecipeFile } from "./recipe-file";

describe("parseRecipeFile", () => {
  it("merges a recipe over the defaults and an optional base recipe", () => {
    const r = parseRecipeFile(JSON.stringify({ name: "x", base: "dapo", config: { seed: 3 } }), "x.json");
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.config.seed).toBe(3);
      expect(r.config.rl.clip_eps_high).toBe(0.28);
    }
  });
  it("names the file and the field of a bad recipe", () => {
    const bad = parseRecipeFile(
      JSON.stringify({ name: "x", config: { rl: { clip_eps_low: 5 } } }),
      "bad.json",
    );
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/bad\.json[\s\S]*rl\.clip_eps_low/);
    const broken = parseRecipeFile("{ nope", "broken.json");
    expect(!broken.ok && broken.error).toMatch(/broken\.json: not valid JSON/);
    const unknown = parseRecipeFile(JSON.stringify({ name: "x", confg: {} }), "u.json");
    expect(!unknown.ok && unknown.error).toMatch(/unknown field "confg"/);
  });
  it("parses every committed recipe in public/recipes", () => {
    const dir = "public/recipes";
    for (const f of readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "index.json")) {
      const r = parseRecipeFile(readFileSync(`${dir}/${f}`, "utf8"), f);
      expect(r.ok ? "ok" : r.error).toBe("ok");
    }
  });
});

describe("public/recipes/index.json", () => {
  it("lists every recipe file with its name, quick-demo first", () => {
    const dir = "public/recipes";
    const index = JSON.parse(readFileSync(`${dir}/index.json`, "utf8")) as { file: string; name: string }[];
    const files = readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "index.json");
    expect(index.map((e) => e.file).sort()).toEqual(files.sort());
    expect(index[0].name).toBe("quick-demo");
    for (const e of index) expect(JSON.parse(readFileSync(`${dir}/${e.file}`, "utf8")).name).toBe(e.name);
  });
});
