// Small seeded Sokoban rooms as a multi-turn text environment (RAGEN / gym-sokoban style).
// A room is made solvable by construction: boxes start on their targets and the player
// walks backwards, pulling boxes; every pull undone is a legal push, so the reversed walk
// solves the room. Rewards follow gym-sokoban: -0.1 a step, +1 a box onto a target, -1 a
// box off one, +10 when all are placed. GiGPO anchor: room id + player + boxes.
// Tested by tasks/sokoban.test.ts (includes a BFS solver that checks solvability).

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

export interface SokobanConfig {
  /** Room size including the outer wall. */
  width: number;
  height: number;
  boxes: number;
  /** Interior wall cells to try to add (kept only when the floor stays connected). */
  innerWalls: number;
  /** Steps of reverse play; more makes harder rooms. */
  reverseSteps: number;
  maxSteps: number;
  stepPenalty: number;
  boxOnReward: number;
  boxOffPenalty: number;
  solvedReward: number;
  invalidPenalty: number;
}

export const DEFAULT_SOKOBAN: SokobanConfig = {
  width: 6,
  height: 6,
  boxes: 1,
  innerWalls: 2,
  reverseSteps: 20,
  maxSteps: 20,
  stepPenalty: -0.1,
  boxOnReward: 1,
  boxOffPenalty: -1,
  solvedReward: 10,
  invalidPenalty: -0.1,
};

export interface SokobanState {
  roomId: string;
  /** Static cells: "#" wall, "_" floor, "O" target. */
  room: string[];
  player: [number, number];
  /** Box positions, kept sorted so equal states have equal keys. */
  boxes: [number, number][];
  steps: number;
  done: boolean;
}

export interface SokobanLayout {
  room: string[];
  player: [number, number];
  boxes: [number, number][];
}

const cellKey = (r: number, c: number) => `${r},${c}`;

function sortBoxes(boxes: [number, number][]): [number, number][] {
  return boxes.slice().sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

function floorCells(room: string[]): [number, number][] {
  const out: [number, number][] = [];
  room.forEach((row, r) => {
    for (let c = 0; c < row.length; c++) if (row[c] !== "#") out.push([r, c]);
  });
  return out;
}

function connected(room: string[]): boolean {
  const cells = floorCells(room);
  if (cells.length === 0) return false;
  const seen = new Set([cellKey(...cells[0])]);
  const queue = [cells[0]];
  while (queue.length > 0) {
    const [r, c] = queue.pop() as [number, number];
    for (const [dr, dc] of Object.values(DELTAS)) {
      const k = cellKey(r + dr, c + dc);
      if (room[r + dr]?.[c + dc] !== undefined && room[r + dr][c + dc] !== "#" && !seen.has(k)) {
        seen.add(k);
        queue.push([r + dr, c + dc]);
      }
    }
  }
  return seen.size === cells.length;
}

/** The room of a seed, made by reverse play from the solved state (so it is solvable). */
export function generateRoom(seed: number, cfg: SokobanConfig = DEFAULT_SOKOBAN): SokobanLayout {
  const rng = new Rng(
    `sokoban:${cfg.width}x${cfg.height}:${cfg.boxes}:${cfg.innerWalls}:${cfg.reverseSteps}:${seed}`,
  );
  for (;;) {
    const grid: string[][] = Array.from({ length: cfg.height }, (_, r) =>
      Array.from({ length: cfg.width }, (_, c) =>
        r === 0 || c === 0 || r === cfg.height - 1 || c === cfg.width - 1 ? "#" : "_",
      ),
    );
    for (let w = 0; w < cfg.innerWalls; w++) {
      const r = rng.int(1, cfg.height - 2);
      const c = rng.int(1, cfg.width - 2);
      grid[r][c] = "#";
      if (!connected(grid.map((row) => row.join("")))) grid[r][c] = "_";
    }
    const floor = rng.shuffle(floorCells(grid.map((row) => row.join(""))));
    if (floor.length < cfg.boxes + 2) continue;
    const targets = floor.slice(0, cfg.boxes);
    for (const [r, c] of targets) grid[r][c] = "O";
    const room = grid.map((row) => row.join(""));
    let boxes = targets.map(([r, c]) => [r, c] as [number, number]);
    let player = floor[cfg.boxes];
    const boxAt = (r: number, c: number) => boxes.findIndex(([br, bc]) => br === r && bc === c);
    for (let i = 0; i < cfg.reverseSteps; i++) {
      const [dr, dc] = DELTAS[rng.pick(GRID_ACTIONS)];
      const nr = player[0] + dr;
      const nc = player[1] + dc;
      if (room[nr][nc] === "#" || boxAt(nr, nc) >= 0) continue;
      // The box behind the player follows it: a pull, the reverse of a push.
      const behind = boxAt(player[0] - dr, player[1] - dc);
      if (behind >= 0 && rng.bool(0.8)) boxes[behind] = [player[0], player[1]];
      player = [nr, nc];
    }
    boxes = sortBoxes(boxes);
    const onTarget = boxes.filter(([r, c]) => room[r][c] === "O").length;
    if (onTarget < cfg.boxes) return { room, player, boxes };
  }
}

/** # wall, _ floor, O target, X box, * box on target, P player, S player on a target. */
export function renderRoom(s: Pick<SokobanState, "room" | "player" | "boxes">): string {
  const boxes = new Set(s.boxes.map(([r, c]) => cellKey(r, c)));
  return s.room
    .map((row, r) =>
      row
        .split("")
        .map((ch, c) => {
          if (r === s.player[0] && c === s.player[1]) return ch === "O" ? "S" : "P";
          if (boxes.has(cellKey(r, c))) return ch === "O" ? "*" : "X";
          return ch;
        })
        .join(""),
    )
    .join("\n");
}

/** One move on a layout: the new player and boxes, or null when the move is blocked. */
export function applyMove(
  room: string[],
  player: [number, number],
  boxes: [number, number][],
  action: GridAction,
): { player: [number, number]; boxes: [number, number][]; pushed: number } | null {
  const [dr, dc] = DELTAS[action];
  const nr = player[0] + dr;
  const nc = player[1] + dc;
  if (room[nr][nc] === "#") return null;
  const i = boxes.findIndex(([r, c]) => r === nr && c === nc);
  if (i < 0) return { player: [nr, nc], boxes, pushed: -1 };
  const br = nr + dr;
  const bc = nc + dc;
  if (room[br][bc] === "#" || boxes.some(([r, c]) => r === br && c === bc)) return null;
  const next = boxes.slice();
  next[i] = [br, bc];
  return { player: [nr, nc], boxes: sortBoxes(next), pushed: i };
}

/** Breadth-first search over (player, boxes): a shortest solution, or null within `limit` states. */
export function solveSokoban(l: SokobanLayout, limit = 200_000): GridAction[] | null {
  const key = (p: [number, number], b: [number, number][]) =>
    `${p.join(",")}|${b.map((x) => x.join(",")).join(";")}`;
  const start = key(l.player, l.boxes);
  const prev = new Map<string, [string, GridAction] | null>([[start, null]]);
  const queue: { p: [number, number]; b: [number, number][]; k: string }[] = [
    { p: l.player, b: l.boxes, k: start },
  ];
  for (let q = 0; q < queue.length && prev.size < limit; q++) {
    const cur = queue[q];
    if (placed(l.room, cur.b) === cur.b.length) {
      const path: GridAction[] = [];
      for (let k = cur.k, e = prev.get(k); e; k = e[0], e = prev.get(k)) path.unshift(e[1]);
      return path;
    }
    for (const a of GRID_ACTIONS) {
      const next = applyMove(l.room, cur.p, cur.b, a);
      if (!next) continue;
      const k = key(next.player, next.boxes);
      if (prev.has(k)) continue;
      prev.set(k, [cur.k, a]);
      queue.push({ p: next.player, b: next.boxes, k });
    }
  }
  return null;
}

function placed(room: string[], boxes: [number, number][]): number {
  return boxes.filter(([r, c]) => room[r][c] === "O").length;
}

export class SokobanEnv implements Env<SokobanState> {
  readonly name = "sokoban";
  readonly actions = GRID_ACTIONS;
  readonly maxSteps: number;
  private s: SokobanState | null = null;

  constructor(readonly config: SokobanConfig = DEFAULT_SOKOBAN) {
    this.maxSteps = config.maxSteps;
  }

  reset(seed: number): string {
    const { room, player, boxes } = generateRoom(seed, this.config);
    this.s = { roomId: hash32(room.join("/")).toString(16), room, player, boxes, steps: 0, done: false };
    return this.render();
  }

  private cur(): SokobanState {
    if (!this.s) throw new Error("sokoban: step() before reset()");
    return this.s;
  }

  step(text: string): StepResult {
    const s = this.cur();
    if (s.done) throw new Error("sokoban: step() after the episode ended");
    const action = parseAction(text, GRID_ACTIONS);
    s.steps++;
    const cfg = this.config;
    let reward = cfg.stepPenalty;
    let success = false;
    let blocked = false;
    if (action === null) {
      reward += cfg.invalidPenalty;
    } else {
      const before = placed(s.room, s.boxes);
      const next = applyMove(s.room, s.player, s.boxes, action);
      if (next === null) {
        blocked = true;
      } else {
        s.player = next.player;
        s.boxes = next.boxes;
        const after = placed(s.room, s.boxes);
        if (after > before) reward += cfg.boxOnReward;
        if (after < before) reward += cfg.boxOffPenalty;
        if (after === s.boxes.length) {
          reward += cfg.solvedReward;
          success = true;
          s.done = true;
        }
      }
    }
    const truncated = !s.done && s.steps >= this.maxSteps;
    if (truncated) s.done = true;
    return {
      observation: this.render(),
      reward,
      done: s.done,
      info: { action, valid: action !== null, success, truncated, steps: s.steps, blocked },
    };
  }

  state(): SokobanState {
    const s = this.cur();
    return {
      ...s,
      player: [s.player[0], s.player[1]],
      boxes: s.boxes.map(([r, c]) => [r, c] as [number, number]),
    };
  }

  anchorKey(state?: SokobanState): string {
    const s = state ?? this.cur();
    return `sokoban:${s.roomId}:p${s.player.join(",")}:b${s.boxes.map((b) => b.join(",")).join(";")}`;
  }

  render(state?: SokobanState): string {
    return renderRoom(state ?? this.cur());
  }
}

export const SOKOBAN_INSTRUCTIONS =
  "You are solving Sokoban. # is a wall, _ floor, O a target, X a box, * a box on a target, " +
  "P you (S: you on a target). Push every box onto a target; you can push but not pull. " +
  "Answer with one move: <answer>Left</answer>, <answer>Down</answer>, <answer>Right</answer> or <answer>Up</answer>.";

export function makeSokobanTask(config: Partial<SokobanConfig> = {}): EnvTask {
  const cfg = { ...DEFAULT_SOKOBAN, ...config };
  const name = "sokoban";
  const layout = (seed: number) => renderRoom(generateRoom(seed, cfg));
  return {
    name,
    description: "Seeded Sokoban rooms, solvable by construction, as a multi-turn text environment.",
    kind: "env",
    defaultTemplate: "chatml-turns",
    buckets: ["all"],
    instructions: SOKOBAN_INSTRUCTIONS,
    make: () => new SokobanEnv(cfg),
    sampleSeeds: (rng, n) => drawSeeds(name, layout, rng, n, false),
    evalSeeds: (n) => evalSeedList(name, layout, n),
    sftDemos(rng, n, knobs = {}) {
      const plan = (e: Env) => solveSokoban(e.state() as SokobanState);
      const seeds = (r: Rng, k: number) => drawSeeds(name, layout, r, k, false);
      return solverDemos(
        () => new SokobanEnv(cfg),
        seeds,
        SOKOBAN_INSTRUCTIONS,
        plan,
        rng,
        n,
        knobs.thinkRate ?? 0,
      );
    },
  };
}

export const sokobanTask: EnvTask = makeSokobanTask();
