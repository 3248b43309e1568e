// `npm run train` with a model folder it refuses (a broken config.json, a safetensors header
// that lies, a tokenizer with a backtracking pattern) exits naming the file and writes no run
// folder: the model and task load before anything is written.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const train = (args: string[]) =>
  spawnSync(
    process.execPath,
    ["--import", "tsx", "--import", "./cli/raw-loader.mjs", "cli/train.ts", ...args],
    {
      encoding: "utf8",
      timeout: 480_000,
    },
  );

/** A copy of the lab-made Llama with one file spoiled, and a recipe that trains it one step. */
function spoiled(file: string, spoil: (text: Buffer) => Buffer | string) {
  const dir = mkdtempSync(join(tmpdir(), "lab-refused-model-"));
  const model = join(dir, "model");
  cpSync(resolve("public/models/lab-llama"), model, { recursive: true });
  writeFileSync(join(model, file), spoil(readFileSync(join(model, file))));
  const recipe = join(dir, "recipe.json");
  const base = JSON.parse(readFileSync("public/recipes/lab-llama-calculator.json", "utf8"));
  base.config.model.pretrained = model;
  base.config.stop = { max_steps: 1 };
  writeFileSync(recipe, JSON.stringify(base));
  return { dir, model, recipe, out: join(dir, "run") };
}

describe("npm run train with a refused model folder", () => {
  const cases: [string, string, (b: Buffer) => Buffer | string, RegExp][] = [
    ["config.json", "a config.json that is not JSON", (b) => b.subarray(0, 40), /config\.json/],
    [
      "model.safetensors",
      "a safetensors header longer than the file",
      (b) => Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]), b.subarray(8)]),
      /model\.safetensors/,
    ],
    [
      "tokenizer.json",
      "a tokenizer whose split pattern backtracks",
      (b) => {
        const t = JSON.parse(b.toString("utf8"));
        t.pre_tokenizer = {
          type: "Split",
          pattern: { Regex: "(.|.)*\\u0000" },
          behavior: "Isolated",
          invert: false,
        };
        return JSON.stringify(t);
      },
      /tokenizer\.json/,
    ],
  ];
  for (const [file, what, spoil, named] of cases)
    it(`${what}: named, exit 1, no run folder`, () => {
      const s = spoiled(file, spoil);
      const r = train([s.recipe, "--backend", "cpu", "--out", s.out, "--quiet"]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(named);
      expect(r.stderr).not.toMatch(/\n\s+at .*\(/); // a message, not a stack trace
      expect(existsSync(s.out)).toBe(false);
    });
});
