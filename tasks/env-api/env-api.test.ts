// The environment API on the real QuickJS sandbox: every template dry-runs, the FrozenLake
// rewrite matches the built-in on the same seeds and actions, episodes replay exactly, the
// split keeps eval seeds out of training, and bad environments end an episode with an error
// that names the fault (and its line) instead of stopping the run.
import { beforeAll, describe, expect, it } from "vitest";
import { FrozenLakeEnv } from "../frozenlake.ts";
import { getTask } from "../index.ts";
import { Rng } from "../rng.ts";
import { prepareEnvEngine } from "./engine.ts";
import { dryRun, EnvError, makeJsEnvTask, playEpisode } from "./js-env.ts";
import { ENV_TEMPLATES, envTemplate } from "./templates.ts";

beforeAll(async () => {
  await prepareEnvEngine();
}, 240_000);

const env = (body: string) => `export default {\n${body}\n};\n`;

describe("templates", () => {
  for (const t of ENV_TEMPLATES) {
    it(`${t.name} dry-runs three episodes with its scripted policy, each a success`, () => {
      const task = makeJsEnvTask(t.source);
      expect(task.name).toBe(t.name);
      const eps = dryRun(task);
      expect(eps).toHaveLength(3);
      for (const e of eps) {
        expect(e.error).toBeUndefined();
        expect(e.success).toBe(true);
        expect(e.rewards.every(Number.isFinite)).toBe(true);
        expect(e.messages.at(-1)?.role).toBe("assistant");
      }
      // The same seeds play the same episodes.
      expect(dryRun(task).map((e) => e.messages)).toEqual(eps.map((e) => e.messages));
    });
  }

  it("the registry builds a template by name and checks the API version", () => {
    const t = getTask("env", { api_version: 1, template: "kv-lookup" });
    expect(t.name).toBe("kv-lookup");
    expect(() => getTask("env", { api_version: 2, template: "kv-lookup" })).toThrow(/api_version: must be 1/);
    expect(() => getTask("env", { api_version: 1 })).toThrow(/exactly one of source/);
    expect(() => getTask("env", { api_version: 1, template: "nope" })).toThrow(
      /unknown environment template/,
    );
  });

  it("kv-lookup uses the seeded Math.random: a seed gives one table, seeds differ", () => {
    const task = makeJsEnvTask(envTemplate("kv-lookup").source);
    const a = task.make();
    const b = task.make();
    a.reset(7);
    b.reset(7);
    expect(a.state()).toEqual(b.state());
    b.reset(8);
    expect(a.state()).not.toEqual(b.state());
  });

  it("eval seeds never train, by the split rule on what a seed starts", () => {
    const task = makeJsEnvTask(envTemplate("guess-number").source);
    const key = (s: number) => {
      const e = task.make();
      e.reset(s);
      return JSON.stringify(e.state());
    };
    // 16 secrets: the held-out side has the few of them the hash puts there, each once.
    const evalSeeds = task.evalSeeds(8);
    const evalKeys = new Set(evalSeeds.map(key));
    expect(evalKeys.size).toBe(evalSeeds.length);
    expect(evalSeeds.length).toBeGreaterThan(0);
    const train = task.sampleSeeds(new Rng(3), 100).map(key);
    expect(train.some((k) => evalKeys.has(k))).toBe(false);
    expect(new Set(train).size).toBe(16 - evalKeys.size);
  });

  it("kv-lookup's demos are SFT conversations: tool call, tool output, answer", () => {
    const task = makeJsEnvTask(envTemplate("kv-lookup").source);
    const [d] = task.sftDemos(new Rng(1), 1);
    expect(d.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(d.messages[3].content).toBe(`<answer>${d.messages[2].content}</answer>`);
  });
});

describe("FrozenLake on the API", () => {
  it("gives the built-in's observations, rewards, ends and successes on the same seeds and actions", () => {
    const task = makeJsEnvTask(envTemplate("frozenlake-js").source);
    const rng = new Rng("parity");
    const words = ["Left", "Down", "Right", "Up", "<answer>Up</answer>", "<answer>right</answer>", "jump"];
    let goals = 0;
    let holes = 0;
    for (let seed = 0; seed < 40; seed++) {
      const builtin = new FrozenLakeEnv();
      const js = task.make();
      expect(js.reset(seed)).toBe(builtin.reset(seed));
      for (let turn = 0; turn < 12; turn++) {
        // Half the episodes follow the shortest path, so goals are reached too.
        const text = seed % 2 === 0 ? js.policyTurn() : rng.pick(words);
        const a = builtin.step(text);
        const b = js.step(text);
        expect([b.observation, b.reward, b.done, b.info.success, b.info.valid]).toEqual([
          a.observation,
          a.reward,
          a.done,
          a.info.success,
          a.info.valid,
        ]);
        expect(b.info.truncated).toBe(a.info.truncated);
        if (a.done) {
          if (a.info.success) goals++;
          else if (a.info.fell) holes++;
          break;
        }
      }
    }
    expect(goals).toBeGreaterThan(15);
    expect(holes).toBeGreaterThan(0);
  });
});

describe("bad environments", () => {
  it("a syntax error names its line", () => {
    const src = env("  name: 'x',\n  reset(seed) { return { prompt: 'hi' ; },");
    let err: unknown;
    try {
      makeJsEnvTask(src);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EnvError);
    expect((err as EnvError).errorName).toBe("SyntaxError");
    expect((err as EnvError).line).toBe(3);
  });

  it("an environment whose episodes never vary says why it has no held-out episode", () => {
    const task = makeJsEnvTask(
      env(
        "name: 'same', reset(seed) { return { prompt: 'hi', state: {} }; }, check() { return { success: true }; },",
      ),
    );
    expect(() => task.evalSeeds(2)).toThrow(
      /same: no held-out episode among the first 400 seeds .*it returned 1 different one; let the prompt or state vary with the seed/,
    );
    expect(task.evalSeeds(0)).toEqual([]);
  });

  it("a module without export default, or without check, says what is missing", () => {
    expect(() => makeJsEnvTask("const x = 1;")).toThrow(/must `export default`/);
    expect(() => makeJsEnvTask(env("reset() { return { prompt: 'a' }; },"))).toThrow(
      /check\(state, episode\) must be a function/,
    );
  });

  it("a tool that throws is a failed call the model sees, with the line", () => {
    const task = makeJsEnvTask(
      env(`  tools: [{ name: "boom", description: "d", run(args) {
    throw new TypeError("bad key " + args.k);
  } }],
  reset() { return { prompt: "go", state: {} }; },
  check() { return { success: false }; },`),
    );
    const e = task.make();
    e.reset(1);
    const r = e.step('<tool_call>{"name":"boom","arguments":{"k":3}}</tool_call>');
    expect(r.done).toBe(false);
    expect(r.observation).toBe("<tool_response>Error: tool: TypeError: bad key 3 (line 3)</tool_response>");
  });

  it("a step that never ends the episode is ended by the turn limit, which says so", () => {
    const task = makeJsEnvTask(
      env(`  maxTurns: 4,
  reset() { return { prompt: "go", state: { n: 0 } }; },
  step(state) { state.n++; return { observation: "again", reward: 0.5, done: false }; },
  check(state) { return { success: state.n === 4, score: 0 }; },`),
    );
    const ep = playEpisode(task.make(), 0, () => "x");
    expect(ep.turns).toBe(4);
    expect(ep.success).toBe(true);
    expect(ep.envReturn).toBe(2);
    expect(ep.ended).toBe("the turn limit (4 turns) ended the episode");
    expect(ep.steps.at(-1)?.info.truncated).toBe(true);
  });

  it("a reward that is not a finite number ends the episode with an error naming it", () => {
    const task = makeJsEnvTask(
      env(`  reset() { return { prompt: "go", state: {} }; },
  step() { return { observation: "o", reward: 0 / 0, done: false }; },
  check() { return { success: true }; },`),
    );
    const ep = playEpisode(task.make(), 0, () => "x");
    expect(ep.turns).toBe(1);
    expect(ep.success).toBe(false);
    expect(ep.error).toBe("step: step(state, text).reward must be a finite number, got NaN");
  });

  it("a state that JSON cannot carry is refused, naming where", () => {
    const task = makeJsEnvTask(
      env(`  reset() { return { prompt: "go", state: { seen: [] } }; },
  step(state) { state.seen.push(new Map()); return { observation: "o", done: false }; },
  check() { return { success: true }; },`),
    );
    const ep = playEpisode(task.make(), 0, () => "x");
    expect(ep.error).toBe(
      "step: the state after step().seen[0] is a Map, not JSON (use plain objects and arrays)",
    );
    const bad = makeJsEnvTask(
      env(
        `  reset() { return { prompt: "go", state: { f() {} } }; },\n  check() { return { success: true }; },`,
      ),
    );
    expect(() => bad.make().reset(0)).toThrow(/reset\(seed\).state.f is a function, not JSON/);
  });

  it("a step that loops forever is stopped by the call's limit and ends the episode", () => {
    const task = makeJsEnvTask(
      env(`  reset() { return { prompt: "go", state: {} }; },
  step() { for (;;) {} },
  check() { return { success: true }; },`),
      { timeoutS: 0.2, memoryMB: 16, maxToolCalls: 3 },
    );
    const ep = playEpisode(task.make(), 0, () => "x");
    expect(ep.error).toMatch(/^step: .*Timeout/);
  });
});
