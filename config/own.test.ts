// Names a user gives that are keys of Object.prototype ("constructor", "toString", "__proto__",
// "hasOwnProperty") find nothing in the lab's registries: each lookup is refused with the
// "unknown ..." error naming the field, never a TypeError from something the prototype holds.
// Run: npx vitest run --project unit config/own.test.ts
import { describe, expect, it } from "vitest";
import { klTerm } from "../rl/algos/losses.ts";
import { getTask } from "../tasks/index.ts";
import { parseRunConfig, recipeConfig } from "./index.ts";
import { own } from "./own.ts";
import { parseRecipeFile } from "./recipe-file.ts";

const PROTO_NAMES = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"];

describe("lookups by user-given names use own properties only", () => {
  it("own() sees own properties only", () => {
    const r: Record<string, number> = { a: 1 };
    for (const n of PROTO_NAMES) expect(own(r, n)).toBeUndefined();
    expect(own(r, "a")).toBe(1);
  });

  for (const name of PROTO_NAMES) {
    it(`"${name}" is an unknown task, recipe, base and KL estimator`, () => {
      const parsed = parseRunConfig({ task: { name } });
      expect(parsed.ok).toBe(false);
      if (!parsed.ok)
        expect(parsed.errors.map((e) => `${e.path}: ${e.message}`)).toContain(
          `task.name: unknown task ${JSON.stringify(name)} (known: arithmetic, word-problems, function-calling, frozenlake, sokoban, env)`,
        );
      expect(() => recipeConfig(name)).toThrow(`unknown recipe "${name}"`);
      const file = parseRecipeFile(JSON.stringify({ name: "r", base: name, config: {} }), "r.json");
      expect(file.ok).toBe(false);
      if (!file.ok) expect(file.error).toContain(`r.json: unknown base recipe ${JSON.stringify(name)}`);
      expect(() => getTask(name, {})).toThrow(`task.name: unknown task "${name}"`);
      expect(() => klTerm(name, [0], [0], [1], 1)).toThrow(`unknown KL estimator "${name}"`);
    });
  }
});
