// Tests for tasks/frozenlake.ts: maps are solvable, a BFS policy reaches the goal with
// reward 1, holes end the episode, invalid actions are penalised, the step limit holds,
// slipperiness is seeded, anchor keys identify map + position, eval seeds are disjoint.
import { describe, expect, it } from "vitest";
import { DELTAS, GRID_ACTIONS, type GridAction, parseAction } from "./env-util.ts";
import {
  FROZENLAKE_BRIEF,
  FROZENLAKE_INSTRUCTIONS,
  FrozenLakeEnv,
  type FrozenLakeState,
  generateLake,
  makeFrozenLakeTask,
  reachable,
  solveLake,
} from "./frozenlake.ts";
import { Rng } from "./rng.ts";

/** Shortest action sequence from the agent to the goal avoiding holes (null when none). */
function solve(s: FrozenLakeState): GridAction[] | null {
  const n = s.grid.length;
  const prev = new Map<string, [string, GridAction]>();
  const start = `${s.row},${s.col}`;
  const queue: [number, number][] = [[s.row, s.col]];
  const seen = new Set([start]);
  while (queue.length > 0) {
    const [r, c] = queue.shift() as [number, number];
    if (s.grid[r][c] === "G") {
      const path: GridAction[] = [];
      let k = `${r},${c}`;
      while (k !== start) {
        const [p, a] = prev.get(k) as [string, GridAction];
        path.unshift(a);
        k = p;
      }
      return path;
    }
    for (const a of GRID_ACTIONS) {
      const [dr, dc] = DELTAS[a];
      const nr = r + dr;
      const nc = c + dc;
      if (nr < 0 || nc < 0 || nr >= n || nc >= n || s.grid[nr][nc] === "H" || seen.has(`${nr},${nc}`))
        continue;
      seen.add(`${nr},${nc}`);
      prev.set(`${nr},${nc}`, [`${r},${c}`, a]);
      queue.push([nr, nc]);
    }
  }
  return null;
}

describe("frozenlake", () => {
  it("every seed's map has a path, and following it earns the goal reward", () => {
    const env = new FrozenLakeEnv();
    for (let seed = 0; seed < 200; seed++) {
      env.reset(seed);
      const path = solve(env.state());
      expect(path, `seed ${seed}`).not.toBeNull();
      let last = { reward: 0, done: false, info: { success: false } };
      for (const a of path ?? []) last = env.step(`<think>go</think><answer>${a}</answer>`);
      expect(last).toMatchObject({ reward: 1, done: true, info: { success: true } });
      expect(env.render()).toContain("*");
    }
  });

  it("solveLake finds shortest paths (same length as the test's BFS)", () => {
    const env = new FrozenLakeEnv();
    for (let seed = 0; seed < 100; seed++) {
      env.reset(seed);
      expect(solveLake(env.state())?.length).toBe(solve(env.state())?.length);
    }
    expect(solveLake({ grid: ["SH", "HG"], row: 0, col: 0 })).toBeNull();
  });

  it("solver demos are chatml-turns episodes that reach the goal", () => {
    const task = makeFrozenLakeTask();
    const demos = task.sftDemos(new Rng(1), 20, { thinkRate: 0.5 });
    expect(demos).toHaveLength(20);
    expect(task.sftDemos(new Rng(1), 20, { thinkRate: 0.5 })).toEqual(demos);
    const evalSeeds = new Set(task.evalSeeds(50));
    for (const d of demos) {
      expect(d.messages[0]).toEqual({ role: "system", content: task.instructions });
      expect(evalSeeds.has(d.meta.seed as number)).toBe(false);
      const env = task.make();
      expect(d.messages[1]).toEqual({ role: "user", content: env.reset(d.meta.seed as number) });
      const turns = d.messages.slice(2);
      let last = null;
      for (let i = 0; i < turns.length; i += 2) {
        expect(turns[i].role).toBe("assistant");
        expect(turns[i].content).toMatch(
          /^(<think>\d+ moves left<\/think>)?<answer>(Left|Down|Right|Up)<\/answer>$/,
        );
        last = env.step(turns[i].content);
        if (i + 1 < turns.length) expect(turns[i + 1]).toEqual({ role: "user", content: last.observation });
      }
      expect(last?.info.success).toBe(true);
    }
  });

  it("brief: one-line instructions in the prompt and the demos, the same maps", () => {
    const brief = makeFrozenLakeTask({ brief: true });
    expect(brief.instructions).toBe(FROZENLAKE_BRIEF);
    expect(brief.instructions.length).toBeLessThan(FROZENLAKE_INSTRUCTIONS.length / 2);
    const demo = brief.sftDemos(new Rng(2), 1)[0];
    expect(demo.messages[0]).toEqual({ role: "system", content: FROZENLAKE_BRIEF });
    expect(brief.evalSeeds(5)).toEqual(makeFrozenLakeTask().evalSeeds(5));
  });

  it("is deterministic per seed and renders the grid", () => {
    expect(generateLake(5)).toEqual(generateLake(5));
    const env = new FrozenLakeEnv();
    const obs = env.reset(5);
    expect(obs.split("\n")).toHaveLength(4);
    expect(obs).toMatch(/^[P_OG\n]+$/);
    expect(obs.match(/P/g)).toHaveLength(1);
    expect(obs.match(/G/g)).toHaveLength(1);
  });

  it("falls into holes, penalises invalid actions and stops at the step limit", () => {
    const env = new FrozenLakeEnv({ ...new FrozenLakeEnv().config, maxSteps: 3 });
    // Find a map with a hole next to the start.
    for (let seed = 0; ; seed++) {
      env.reset(seed);
      const s = env.state();
      const a = GRID_ACTIONS.find((x) => s.grid[s.row + DELTAS[x][0]]?.[s.col + DELTAS[x][1]] === "H");
      if (!a) continue;
      expect(env.step(a)).toMatchObject({ reward: 0, done: true, info: { success: false, fell: true } });
      expect(env.render()).toContain("X");
      expect(() => env.step("Left")).toThrow(/after the episode/);
      break;
    }
    env.reset(1);
    const r1 = env.step("<answer>Jump</answer>");
    expect(r1).toMatchObject({ reward: -0.1, done: false, info: { valid: false, action: null } });
    env.step("nothing");
    const r3 = env.step("dance");
    expect(r3).toMatchObject({ done: true, info: { truncated: true, steps: 3 } });
  });

  it("parses actions from answers or bare words", () => {
    expect(parseAction("<answer> left </answer>", GRID_ACTIONS)).toBe("Left");
    expect(parseAction("Up", GRID_ACTIONS)).toBe("Up");
    expect(parseAction("<answer>Up</answer><answer>Down</answer>", GRID_ACTIONS)).toBe("Down");
    expect(parseAction("go left", GRID_ACTIONS)).toBeNull();
  });

  it("slipperiness is seeded and sometimes moves sideways", () => {
    const cfg = { ...new FrozenLakeEnv().config, slipProb: 0.5, maxSteps: 100, frozenProb: 1 };
    const run = () => {
      const env = new FrozenLakeEnv(cfg);
      env.reset(3);
      const moves: unknown[] = [];
      for (let i = 0; i < 30; i++) {
        const r = env.step("Right");
        moves.push(r.info.moved);
        if (r.done) break;
      }
      return moves;
    };
    const a = run();
    expect(run()).toEqual(a);
    expect(a.some((m) => m !== "Right")).toBe(true);
  });

  it("anchor keys are map id + position, shared by revisits and distinct across maps", () => {
    const cfg = { ...new FrozenLakeEnv().config, frozenProb: 1 };
    const env = new FrozenLakeEnv(cfg);
    env.reset(7);
    const k0 = env.anchorKey();
    const s = env.state();
    const a = GRID_ACTIONS.find((x) => {
      const [dr, dc] = DELTAS[x];
      const r = s.row + dr;
      const c = s.col + dc;
      return r >= 0 && c >= 0 && r < 4 && c < 4 && s.grid[r][c] !== "G";
    }) as GridAction;
    const back = { Left: "Right", Right: "Left", Up: "Down", Down: "Up" }[a];
    env.step(a);
    expect(env.anchorKey()).not.toBe(k0);
    env.step(back);
    expect(env.anchorKey()).toBe(k0);
    expect(env.anchorKey(s)).toBe(k0);
    const other = new FrozenLakeEnv(cfg);
    let seed = 8;
    do other.reset(seed++);
    while (other.state().grid.join() === s.grid.join());
    expect(other.anchorKey().split(":")[1]).not.toBe(k0.split(":")[1]);
  });

  it("eval seeds are deterministic and their maps never appear in training", () => {
    const task = makeFrozenLakeTask();
    const ev = task.evalSeeds(20);
    expect(task.evalSeeds(20)).toEqual(ev);
    const evalMaps = new Set(ev.map((s) => generateLake(s).join("/")));
    expect(evalMaps.size).toBe(20);
    const train = task.sampleSeeds(new Rng(1), 500);
    expect(task.sampleSeeds(new Rng(1), 500)).toEqual(train);
    for (const s of train) expect(evalMaps.has(generateLake(s).join("/"))).toBe(false);
    const g = generateLake(ev[0]);
    const sr = g.findIndex((row) => row.includes("S"));
    expect(reachable(g, sr, g[sr].indexOf("S")).size).toBeGreaterThan(2);
  });
});
