// Tests for tasks/index.ts: every registered task honours the common contract (seeded
// sampling, eval/train disjointness, verify on its own reference answer, demos end with an
// assistant turn; environments reset, step and give anchor keys).
import { describe, expect, it } from "vitest";
import { getTask, TASK_NAMES, TASKS } from "./index.ts";
import { Rng } from "./rng.ts";
import { isEnvTask } from "./types.ts";

describe("task registry", () => {
  it("names the built-in tasks", () => {
    expect(TASK_NAMES.sort()).toEqual([
      "arithmetic",
      "frozenlake",
      "function-calling",
      "sokoban",
      "word-problems",
    ]);
    expect(() => getTask("nope")).toThrow(/unknown task "nope"/);
  });

  for (const name of Object.keys(TASKS)) {
    it(`${name} honours the contract`, () => {
      const t = getTask(name);
      expect(t.name).toBe(name);
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
