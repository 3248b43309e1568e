// Tests for tasks/index.ts: every registered task honours the common contract (seeded
// sampling, eval/train disjointness, verify on its own reference answer, demos end with an
// assistant turn; environments reset, step and give anchor keys), and task.options checked by
// each task's own schema with errors that name the option.

import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { prepareEnvEngine } from "./env-api/engine.ts";
import { getTask, TASK_NAMES, TASKS } from "./index.ts";
import { didYouMean } from "./options.ts";
import { Rng } from "./rng.ts";
import { isEnvTask } from "./types.ts";

describe("task registry", () => {
  it("names the built-in tasks", () => {
    expect(TASK_NAMES.sort()).toEqual([
      "arithmetic",
      "env",
      "frozenlake",
      "function-calling",
      "sokoban",
      "word-problems",
    ]);
    expect(() => getTask("nope")).toThrow(/unknown task "nope"/);
  });

  it("checks task.options with the task's schema and names each bad option", () => {
    const err = (name: string, options: unknown) => {
      try {
        getTask(name, options);
        return "";
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(err("arithmetic", { digts: 3, evalFraction: "lots" }).split("\n")).toEqual([
      "task.options.evalFraction: must be a number",
      "task.options.digts: unknown option (arithmetic options: hardFraction, hardMulFraction, mulDigits, sumDigits, easyMulFraction, easyMulMax, easyAddMax, random, evalFraction, oneOp, sft)",
    ]);
    expect(err("arithmetic", { sumDigts: 3 })).toMatch(
      /^task\.options\.sumDigts: unknown option; did you mean sumDigits\?/,
    );
    expect(err("word-problems", { evalFraction: 2 })).toBe("task.options.evalFraction: must be <= 1");
    expect(err("frozenlake", { size: 3, sft: { thinkrate: 0.5 } })).toMatch(
      /^task\.options\.sft\.thinkrate: unknown option; did you mean thinkRate\?/,
    );
    expect(err("arithmetic", { random: { steps: 2, digits: 2, operators: [], parens: false } })).toBe(
      "task.options.random.operators: needs at least one operator",
    );
    expect(err("sokoban", { boxes: 1.5 })).toBe("task.options.boxes: must be an integer");
    expect(didYouMean("digts", ["digits", "size"])).toBe("digits");
    expect(didYouMean("temperature", ["digits", "size"])).toBeUndefined();
  });

  it("every committed recipe's task options pass its task's schema", async () => {
    // A recipe on a JS environment (task "env") needs the environment engine loaded first;
    // without this the test passed only when another test in the same worker had loaded it.
    await prepareEnvEngine();
    const dir = new URL("../public/recipes/", import.meta.url);
    for (const f of readdirSync(dir).filter((x) => x.endsWith(".json") && x !== "index.json")) {
      const r = JSON.parse(readFileSync(new URL(f, dir), "utf8"));
      const task = r.config?.task;
      if (task) expect(() => getTask(task.name ?? "arithmetic", task.options ?? {}), f).not.toThrow();
    }
  });

  for (const name of Object.keys(TASKS)) {
    it(`${name} honours the contract`, async () => {
      // A JS environment (task "env") is a module: here the FrozenLake template.
      if (name === "env") await prepareEnvEngine();
      const t = name === "env" ? getTask(name, { api_version: 1, template: "frozenlake-js" }) : getTask(name);
      expect(t.name).toBe(name === "env" ? "frozenlake-js" : name);
      if (isEnvTask(t)) {
        const seeds = t.sampleSeeds(new Rng(1), 5);
        expect(t.sampleSeeds(new Rng(1), 5)).toEqual(seeds);
        const env = t.make();
        const obs = env.reset(seeds[0]);
        expect(env.reset(seeds[0])).toBe(obs);
        expect(typeof env.anchorKey()).toBe("string");
        const r = env.step(`<answer>${env.actions[0]}</answer>`);
        expect(r.info.valid).toBe(true);
        expect(env.maxSteps).toBeGreaterThan(0);
        const demo = t.sftDemos(new Rng(2), 2);
        expect(demo[demo.length - 1].messages.at(-1)?.role).toBe("assistant");
        return;
      }
      const ps = t.sample(new Rng(1), 30);
      expect(t.sample(new Rng(1), 30)).toEqual(ps);
      const evalIds = new Set(t.evalSet(20).map((p) => p.id));
      for (const p of t.sample(new Rng(2), 500)) expect(evalIds.has(p.id)).toBe(false);
      for (const p of ps) {
        expect(t.buckets).toContain(p.bucket);
        expect(t.verify(p, p.answer).correct).toBe(true);
        expect(p.messages[p.messages.length - 1].role).toBe("user");
      }
      for (const d of t.sftDemos(new Rng(3), 10))
        expect(d.messages[d.messages.length - 1].role).toBe("assistant");
    });
  }
});
