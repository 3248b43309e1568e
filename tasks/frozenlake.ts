// FrozenLake as a multi-turn text environment (RAGEN style). Each seed generates a map with
// a guaranteed path from start to goal; the model answers `<answer>Left</answer>` (Left,
// Down, Right, Up); optional slipperiness sends a move sideways. Reward 1 on the goal, 0
// in a hole, a small penalty for an invalid action; episodes stop at maxSteps. The GiGPO
// anchor key is the map id plus the agent's position. Tested by tasks/frozenlake.test.ts.

import {
  DELTAS,
  drawSeeds,
  evalSeedList,
  GRID_ACTIONS,
  type GridAction,
  parseAction,
  solverDemos,
} from "./env-util.ts";
import { hash32, Rng } from "./rng.ts";
import type { Env, EnvTask, StepResult } from "./types.ts";

export interface FrozenLakeConfig {
  /** The map is size x size. */
  size: number;
  /** Chance that a cell other than start and goal is frozen (walkable) rather than a hole. */
  frozenProb: number;
  /** Chance that a move goes to one of the two perpendicular directions instead. */
  slipProb: number;
  maxSteps: number;
  goalReward: number;
  /** Added when the text holds no valid action (RAGEN's format penalty). */
  invalidPenalty: number;
  /** Use the one-line instructions (FROZENLAKE_BRIEF): shorter episodes for small contexts. */
  brief: boolean;
}

export const DEFAULT_FROZENLAKE: FrozenLakeConfig = {
  size: 4,
  frozenProb: 0.8,
  slipProb: 0,
  maxSteps: 10,
  goalReward: 1,
  invalidPenalty: -0.1,
  brief: false,
};

export interface FrozenLakeState {
  mapId: string;
  /** Rows of S (start), F (frozen), H (hole), G (goal). */
  grid: string[];
  row: number;
  col: number;
  steps: number;
  done: boolean;
}

/** Cells reachable from the start, walking on S/F/G and stopping at holes. */
export function reachable(grid: string[], fromRow: number, fromCol: number): Set<string> {
  const n = grid.length;
  const seen = new Set([`${fromRow},${fromCol}`]);
  const queue: [number, number][] = [[fromRow, fromCol]];
  while (queue.length > 0) {
    const [r, c] = queue.shift() as [number, number];
    for (const [dr, dc] of Object.values(DELTAS)) {
      const nr = r + dr;
      const nc = c + dc;
      if (nr < 0 || nc < 0 || nr >= n || nc >= grid[nr].length || grid[nr][nc] === "H") continue;
      const k = `${nr},${nc}`;
      if (!seen.has(k)) {
        seen.add(k);
        queue.push([nr, nc]);
      }
    }
  }
  return seen;
}

/** A shortest move list from the agent to the goal that avoids holes; null when there is none. */
export function solveLake(s: Pick<FrozenLakeState, "grid" | "row" | "col">): GridAction[] | null {
  const n = s.grid.length;
  const start = `${s.row},${s.col}`;
  const prev = new Map<string, [string, GridAction] | null>([[start, null]]);
  const queue: [number, number][] = [[s.row, s.col]];
  for (let q = 0; q < queue.length; q++) {
    const [r, c] = queue[q];
    if (s.grid[r][c] === "G") {
      const path: GridAction[] = [];
      for (let k = `${r},${c}`, e = prev.get(k); e; k = e[0], e = prev.get(k)) path.unshift(e[1]);
      return path;
    }
    for (const a of GRID_ACTIONS) {
      const nr = r + DELTAS[a][0];
      const nc = c + DELTAS[a][1];
      const k = `${nr},${nc}`;
      if (nr < 0 || nc < 0 || nr >= n || nc >= n || s.grid[nr][nc] === "H" || prev.has(k)) continue;
      prev.set(k, [`${r},${c}`, a]);
      queue.push([nr, nc]);
    }
  }
  return null;
}

function findCell(grid: string[], ch: string): [number, number] {
  for (let r = 0; r < grid.length; r++) {
    const c = grid[r].indexOf(ch);
    if (c >= 0) return [r, c];
  }
  throw new Error(`frozenlake: no ${ch} in map`);
}

/** The map of a seed: start and goal at random distinct cells, holes at random, a path guaranteed. */
export function generateLake(seed: number, cfg: FrozenLakeConfig = DEFAULT_FROZENLAKE): string[] {
  const rng = new Rng(`frozenlake:${cfg.size}:${cfg.frozenProb}:${seed}`);
  const n = cfg.size;
  for (;;) {
    const cells = rng.shuffle(Array.from({ length: n * n }, (_, i) => i));
    const [s, g] = cells;
    const grid = Array.from({ length: n }, (_, r) =>
      Array.from({ length: n }, (_, c) => {
        const i = r * n + c;
        if (i === s) return "S";
        if (i === g) return "G";
        return rng.bool(cfg.frozenProb) ? "F" : "H";
      }).join(""),
    );
    const [sr, sc] = findCell(grid, "S");
    const [gr, gc] = findCell(grid, "G");
    // Goal next to the start makes a one-step episode; ask for at least 2 moves.
    if (Math.abs(sr - gr) + Math.abs(sc - gc) < 2) continue;
    if (reachable(grid, sr, sc).has(`${gr},${gc}`)) return grid;
  }
}

/** Text rendering: P agent, _ frozen, O hole, G goal; X the agent in a hole, * the agent on the goal. */
export function renderLake(s: FrozenLakeState): string {
  return s.grid
    .map((row, r) =>
      row
        .split("")
        .map((ch, c) => {
          const here = r === s.row && c === s.col;
          if (ch === "H") return here ? "X" : "O";
          if (ch === "G") return here ? "*" : "G";
          return here ? "P" : "_";
        })
        .join(""),
    )
    .join("\n");
}

const PERPENDICULAR: Record<GridAction, [GridAction, GridAction]> = {
  Left: ["Up", "Down"],
  Right: ["Up", "Down"],
  Up: ["Left", "Right"],
  Down: ["Left", "Right"],
};

export class FrozenLakeEnv implements Env<FrozenLakeState> {
  readonly name = "frozenlake";
  readonly actions = GRID_ACTIONS;
  readonly maxSteps: number;
  private s: FrozenLakeState | null = null;
  private rng = new Rng(0);

  constructor(readonly config: FrozenLakeConfig = DEFAULT_FROZENLAKE) {
    this.maxSteps = config.maxSteps;
  }

  reset(seed: number): string {
    const grid = generateLake(seed, this.config);
    const [row, col] = findCell(grid, "S");
    this.s = { mapId: hash32(grid.join("/")).toString(16), grid, row, col, steps: 0, done: false };
    this.rng = new Rng(`frozenlake-slip:${seed}`);
    return this.render();
  }

  private cur(): FrozenLakeState {
    if (!this.s) throw new Error("frozenlake: step() before reset()");
    return this.s;
  }

  step(text: string): StepResult {
    const s = this.cur();
    if (s.done) throw new Error("frozenlake: step() after the episode ended");
    const action = parseAction(text, GRID_ACTIONS);
    s.steps++;
    let reward = 0;
    let success = false;
    let moved: GridAction | null = null;
    if (action === null) {
      reward = this.config.invalidPenalty;
    } else {
      moved = action;
      if (this.config.slipProb > 0 && this.rng.bool(this.config.slipProb))
        moved = this.rng.pick(PERPENDICULAR[action]);
      const [dr, dc] = DELTAS[moved];
      const n = s.grid.length;
      // Moving into the edge leaves the agent in place, as in gym's FrozenLake.
      s.row = Math.min(n - 1, Math.max(0, s.row + dr));
      s.col = Math.min(n - 1, Math.max(0, s.col + dc));
      const cell = s.grid[s.row][s.col];
      if (cell === "G") {
        reward = this.config.goalReward;
        success = true;
        s.done = true;
      } else if (cell === "H") {
        s.done = true;
      }
    }
    const truncated = !s.done && s.steps >= this.maxSteps;
    if (truncated) s.done = true;
    return {
      observation: this.render(),
      reward,
      done: s.done,
      info: {
        action,
        valid: action !== null,
        success,
        truncated,
        steps: s.steps,
        moved,
        fell: s.grid[s.row][s.col] === "H",
      },
    };
  }

  state(): FrozenLakeState {
    const s = this.cur();
    return { ...s, grid: s.grid.slice() };
  }

  anchorKey(state?: FrozenLakeState): string {
    const s = state ?? this.cur();
    return `frozenlake:${s.mapId}:${s.row},${s.col}`;
  }

  render(state?: FrozenLakeState): string {
    return renderLake(state ?? this.cur());
  }
}

export const FROZENLAKE_INSTRUCTIONS =
  "You are on a frozen lake. P is you, _ is ice, O is a hole, G is the goal. Reach G without " +
  "falling into a hole. Answer with one move: <answer>Left</answer>, <answer>Down</answer>, " +
  "<answer>Right</answer> or <answer>Up</answer>.";

/** The same rules in 83 characters, for small contexts (`task.options.brief`). */
export const FROZENLAKE_BRIEF =
  "Lake: P you, _ ice, O hole, G goal. Reach G. Reply <answer>Left|Down|Right|Up</answer>.";

export function makeFrozenLakeTask(config: Partial<FrozenLakeConfig> = {}): EnvTask {
  const cfg = { ...DEFAULT_FROZENLAKE, ...config };
  const instructions = cfg.brief ? FROZENLAKE_BRIEF : FROZENLAKE_INSTRUCTIONS;
  const name = "frozenlake";
  const layout = (seed: number) => generateLake(seed, cfg).join("/");
  return {
    name,
    description: "FrozenLake grid navigation as a multi-turn text environment (RAGEN).",
    kind: "env",
    defaultTemplate: "chatml-turns",
    buckets: ["all"],
    instructions,
    make: () => new FrozenLakeEnv(cfg),
    sampleSeeds: (rng, n) => drawSeeds(name, layout, rng, n, false),
    evalSeeds: (n) => evalSeedList(name, layout, n),
    sftDemos(rng, n, knobs = {}) {
      // Demos are played without slipping, so the shortest path always arrives.
      const env = () => new FrozenLakeEnv({ ...cfg, slipProb: 0 });
      const plan = (e: Env) => solveLake(e.state() as FrozenLakeState);
      const seeds = (r: Rng, k: number) => drawSeeds(name, layout, r, k, false);
      return solverDemos(env, seeds, instructions, plan, rng, n, knobs.thinkRate ?? 0);
    },
  };
}

export const frozenLakeTask: EnvTask = makeFrozenLakeTask();
