import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadRecipeFile, parseRecipeFile } from "./recipe-file";

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
  it("parses every committed recipe in public/recipes", async () => {
    const dir = "public/recipes";
    for (const f of readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "index.json")) {
      const r = await loadRecipeFile(`${dir}/${f}`, async (p) => readFileSync(p, "utf8"));
      expect(r.ok ? "ok" : r.error).toBe("ok");
    }
  });
  it("every init_checkpoint a committed recipe names is committed under public/", async () => {
    const dir = "public/recipes";
    for (const f of readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "index.json")) {
      const r = await loadRecipeFile(`${dir}/${f}`, async (p) => readFileSync(p, "utf8"));
      const init = r.ok ? r.config.sft.init_checkpoint : null;
      if (init) expect(existsSync(`public/${init}`) ? init : `${f}: public/${init} is missing`).toBe(init);
    }
  });
  it("starts from the file a recipe extends, and reports cycles and missing files", async () => {
    const files: Record<string, string> = {
      "r/a.json": JSON.stringify({ name: "a", config: { seed: 9, rl: { lr: 0.002 } } }),
      "r/b.json": JSON.stringify({
        name: "b",
        extends: "a.json",
        config: { rl: { mask_tool_output: false } },
      }),
      "r/c.json": JSON.stringify({ name: "c", extends: "d.json" }),
      "r/d.json": JSON.stringify({ name: "d", extends: "c.json" }),
      "r/e.json": JSON.stringify({ name: "e", extends: "nope.json" }),
      // a preset by bare name, itself extending a preset beside it
      "x/f.json": JSON.stringify({ name: "f", extends: "g.json", config: { seed: 4 } }),
      "presets/g.json": JSON.stringify({ name: "g", extends: "h.json", config: { rl: { lr: 0.003 } } }),
      "presets/h.json": JSON.stringify({ name: "h", config: { rl: { epochs: 2 } } }),
    };
    const read = async (p: string) => {
      if (!(p in files)) throw new Error("no such file");
      return files[p];
    };
    const b = await loadRecipeFile("r/b.json", read);
    expect(b.ok && [b.config.seed, b.config.rl.lr, b.config.rl.mask_tool_output]).toEqual([9, 0.002, false]);
    const c = await loadRecipeFile("r/c.json", read);
    expect(!c.ok && c.error).toMatch(/cycle/);
    const e = await loadRecipeFile("r/e.json", read, { presets: "presets" });
    expect(!e.ok && e.error).toBe('r/e.json: extends "nope.json": no such recipe in r/ or presets/');
    const f = await loadRecipeFile("x/f.json", read, { presets: "presets" });
    expect(f.ok && [f.config.seed, f.config.rl.lr, f.config.rl.epochs]).toEqual([4, 0.003, 2]);
    expect((await loadRecipeFile("x/f.json", read)).ok).toBe(false); // no presets folder given
  });

  it("refuses an extends that is a path, and never quotes another file's bytes", async () => {
    const secret = "root:x:0:0:root:/root:/bin/bash";
    const files: Record<string, string> = { "/etc/passwd": secret, "r/passwd": secret };
    const read = async (p: string) => {
      if (p in files) return files[p];
      if (p === "r/x.json") return JSON.stringify({ name: "x", extends: current });
      throw new Error("no such file");
    };
    let current = "";
    for (const target of ["../../../etc/passwd", "/etc/passwd", "sub/a.json", "..\\a.json", ".."]) {
      current = target;
      const r = await loadRecipeFile("r/x.json", read, { presets: "presets" });
      expect(!r.ok && r.error).toMatch(/^r\/x\.json: "extends" must be a recipe file's bare name/);
    }
    current = "passwd"; // a bare name beside it that is not a recipe
    const r = await loadRecipeFile("r/x.json", read);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/^r\/x\.json: extends r\/passwd: not valid JSON/);
    expect(!r.ok && r.error).not.toContain("root:x");
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
