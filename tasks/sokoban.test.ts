// Tests for tasks/sokoban.ts: rooms are solvable (checked by an independent BFS solver over
// pushes), solving earns the rewards, walls block, step limits hold, anchor keys and the
// eval split behave.
import { describe, expect, it } from "vitest";
import { GRID_ACTIONS, type GridAction } from "./env-util.ts";
import { Rng } from "./rng.ts";
import {
  applyMove,
  DEFAULT_SOKOBAN,
  generateRoom,
  makeSokobanTask,
  renderRoom,
  SokobanEnv,
  type SokobanLayout,
  solveSokoban,
} from "./sokoban.ts";

/** Breadth-first search over (player, boxes); returns a shortest solution or null. */
function solve(l: SokobanLayout, limit = 200_000): GridAction[] | null {
  const key = (p: [number, number], b: [number, number][]) => `${p}|${b.map((x) => x.join(",")).join(";")}`;
  const solved = (b: [number, number][]) => b.every(([r, c]) => l.room[r][c] === "O");
  const start = key(l.player, l.boxes);
  const prev = new Map<string, [string, GridAction] | null>([[start, null]]);
  const queue: { p: [number, number]; b: [number, number][]; k: string }[] = [
    { p: l.player, b: l.boxes, k: start },
  ];
  while (queue.length > 0 && prev.size < limit) {
    const cur = queue.shift() as (typeof queue)[number];
    if (solved(cur.b)) {
      const path: GridAction[] = [];
      let k = cur.k;
      for (let e = prev.get(k); e; e = prev.get(k)) {
        path.unshift(e[1]);
        k = e[0];
      }
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

describe("sokoban", () => {
  it("generated rooms are unsolved at the start and solvable; solving pays +10", () => {
    const env = new SokobanEnv({ ...DEFAULT_SOKOBAN, maxSteps: 100 });
    for (let seed = 0; seed < 60; seed++) {
      const layout = generateRoom(seed);
      expect(layout.boxes.some(([r, c]) => layout.room[r][c] !== "O")).toBe(true);
      const path = solve(layout);
      expect(path, `seed ${seed}\n${renderRoom(layout)}`).not.toBeNull();
      env.reset(seed);
      let total = 0;
      let last = env.step("<answer>none</answer>");
      total += last.reward;
      for (const a of path ?? []) {
        last = env.step(`<answer>${a}</answer>`);
        total += last.reward;
      }
      expect(last).toMatchObject({ done: true, info: { success: true } });
      // -0.1 per step, -0.1 for the invalid one, +1 per box placed, +10 solved (one box).
      expect(total).toBeCloseTo(-0.1 * ((path?.length ?? 0) + 1) - 0.1 + 1 + 10, 6);
    }
  });

  it("solveSokoban agrees with the test's solver, and its demos solve their rooms", () => {
    for (let seed = 0; seed < 30; seed++) {
      const l = generateRoom(seed);
      expect(solveSokoban(l)?.length).toBe(solve(l)?.length);
    }
    const task = makeSokobanTask();
    const demos = task.sftDemos(new Rng(5), 10);
    expect(demos).toHaveLength(10);
    for (const d of demos) {
      const env = task.make();
      expect(d.messages[1].content).toBe(env.reset(d.meta.seed as number));
      const acts = d.messages.filter((m) => m.role === "assistant");
      let r = null;
      for (const m of acts) r = env.step(m.content);
      expect(r?.info.success).toBe(true);
      expect(d.messages[d.messages.length - 1].role).toBe("assistant");
    }
  });

  it("two-box rooms are solvable too", () => {
    const cfg = { ...DEFAULT_SOKOBAN, width: 7, height: 7, boxes: 2, reverseSteps: 40 };
    for (let seed = 0; seed < 15; seed++)
      expect(solve(generateRoom(seed, cfg)), `seed ${seed}`).not.toBeNull();
  });

  it("renders with the documented symbols and is deterministic", () => {
    expect(generateRoom(3)).toEqual(generateRoom(3));
    const obs = new SokobanEnv().reset(3);
    expect(obs).toMatch(/^[#_OX*PS\n]+$/);
    expect((obs.match(/[PS]/g) ?? []).length).toBe(1);
    const lines = obs.split("\n");
    expect(lines).toHaveLength(6);
    expect(lines[0]).toBe("######");
  });

  it("walls block, boxes are pushed, pulling is impossible", () => {
    const room = ["#####", "#___#", "#__O#", "#####"];
    expect(applyMove(room, [1, 1], [[1, 2]], "Right")).toEqual({
      player: [1, 2],
      boxes: [[1, 3]],
      pushed: 0,
    });
    expect(applyMove(room, [1, 2], [[1, 3]], "Right")).toBeNull();
    expect(applyMove(room, [1, 1], [], "Up")).toBeNull();
    expect(applyMove(room, [1, 2], [[1, 1]], "Right")).toEqual({
      player: [1, 3],
      boxes: [[1, 1]],
      pushed: -1,
    });
  });

  it("stops at the step limit", () => {
    const env = new SokobanEnv({ ...DEFAULT_SOKOBAN, maxSteps: 4 });
    env.reset(0);
    let r = env.step("Up");
    for (let i = 0; i < 3 && !r.done; i++) r = env.step(i % 2 ? "Up" : "Down");
    expect(r.done).toBe(true);
    expect(r.info.steps).toBeLessThanOrEqual(4);
  });

  it("anchor keys follow player and boxes", () => {
    const env = new SokobanEnv();
    env.reset(11);
    const k0 = env.anchorKey();
    const s0 = env.state();
    let moved: GridAction | undefined;
    for (const a of GRID_ACTIONS) {
      const n = applyMove(s0.room, s0.player, s0.boxes, a);
      if (n && n.pushed < 0) {
        moved = a;
        break;
      }
    }
    if (!moved) throw new Error("no free move");
    env.step(moved);
    expect(env.anchorKey()).not.toBe(k0);
    expect(env.anchorKey(s0)).toBe(k0);
    expect(k0).toContain(s0.roomId);
  });

  it("eval seeds never share a room with training seeds", () => {
    const task = makeSokobanTask();
    const ev = task.evalSeeds(15);
    expect(task.evalSeeds(15)).toEqual(ev);
    const rooms = new Set(ev.map((s) => renderRoom(generateRoom(s))));
    for (const s of task.sampleSeeds(new Rng(2), 300))
      expect(rooms.has(renderRoom(generateRoom(s)))).toBe(false);
  });
});
