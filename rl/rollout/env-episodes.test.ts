// The multi-turn environment loop with a scripted policy (exact, known tokens) on FrozenLake:
// turns end at <|im_end|>, observations come back as masked user turns, each turn is one
// GiGPO step row with the anchor of the state it acted in, and budgets end turns and episodes.
import { describe, expect, it } from "vitest";
import { decode, encode, IM_END_ID } from "../../model/tokenizer";
import { type FrozenLakeState, makeFrozenLakeTask, solveLake } from "../../tasks/frozenlake";
import { Rng } from "../../tasks/rng";
import { ScriptedPolicy } from "../../testing/scripted-policy";
import { turnDiscount } from "../algos/advantage";
import { envRollout, observationTurnTokens, turnTokenRewards } from "./env-episodes";

const task = makeFrozenLakeTask({ maxSteps: 4 });
const sampling = { temperature: 1, seed: 1 };

/** A training seed whose shortest path has at most `maxLen` moves, with that path. */
function seedWithPath(maxLen: number): { seed: number; path: string[] } {
  for (const seed of task.sampleSeeds(new Rng(3), 50)) {
    const env = task.make();
    env.reset(seed);
    const path = solveLake(env.state() as FrozenLakeState);
    if (path && path.length <= maxLen) return { seed, path };
  }
  throw new Error("no short seed");
}

describe("envRollout (FrozenLake, scripted policy)", () => {
  it("plays a solving episode: step rows, anchors, masks and the observation turns", async () => {
    const { seed, path } = seedWithPath(4);
    const policy = new ScriptedPolicy([path.map((a) => `<answer>${a}</answer><|im_end|>`)], 2048);
    const [ep] = await envRollout(policy, task, [seed], { sampling, maxNewTokensPerTurn: 40 });
    expect(ep.success).toBe(true);
    expect(ep.envReturn).toBe(1);
    expect(ep.traj.finish).toBe("stop");
    expect(ep.steps).toHaveLength(path.length);
    // Anchors: the state before each action, replayed independently.
    const env = task.make();
    env.reset(seed);
    const anchors: string[] = [];
    const observations: string[] = [];
    for (const a of path) {
      anchors.push(env.anchorKey());
      observations.push(env.step(`<answer>${a}</answer>`).observation);
    }
    expect(ep.steps.map((s) => s.anchor)).toEqual(anchors);
    expect(ep.steps.map((s) => s.reward)).toEqual(path.map((_, k) => (k === path.length - 1 ? 1 : 0)));
    ep.steps.forEach((s, k) => {
      expect(decode(ep.traj.tokens.slice(s.start, s.end))).toBe(`<answer>${path[k]}</answer><|im_end|>`);
      expect(ep.traj.mask.slice(s.start, s.end).every((m) => m === 1)).toBe(true);
      expect(s.invalid).toBe(false);
    });
    // Between turns: the next observation as a user turn of environment tokens.
    expect(policy.appended.map((a) => a.tokens)).toEqual(
      observations.slice(0, -1).map((o) => observationTurnTokens(o)),
    );
    const policyTokens = ep.traj.mask.reduce((a, b) => a + b, 0);
    expect(policyTokens).toBe(path.reduce((n, a) => n + encode(`<answer>${a}</answer><|im_end|>`).length, 0));
    expect(ep.traj.text).toBe(decode(ep.traj.tokens));
  });

  it("flags invalid actions, penalises them and stops at maxSteps", async () => {
    const { seed } = seedWithPath(4);
    const policy = new ScriptedPolicy([["jump<|im_end|>"]], 2048);
    const [ep] = await envRollout(policy, task, [seed], { sampling, maxNewTokensPerTurn: 40 });
    expect(ep.steps).toHaveLength(4);
    expect(ep.steps.every((s) => s.invalid)).toBe(true);
    expect(ep.invalidActions).toBe(4);
    expect(ep.envReturn).toBeCloseTo(-0.4, 12);
    expect(ep.success).toBe(false);
    // The agent never moved: every action was taken in the start state.
    expect(new Set(ep.steps.map((s) => s.anchor)).size).toBe(1);
  });

  it("cuts a turn at the per-turn budget, closes it with a masked <|im_end|>, and batches episodes", async () => {
    const { seed, path } = seedWithPath(4);
    const policy = new ScriptedPolicy(
      [
        ["Left Left Left Left Left Left"], // never ends its turn
        path.map((a) => `<answer>${a}</answer><|im_end|>`),
      ],
      2048,
    );
    const eps = await envRollout(policy, task, [seed, seed], { sampling, maxNewTokensPerTurn: 8 });
    const [cut, solved] = eps;
    expect(cut.traj.finish).toBe("length");
    for (const s of cut.steps) expect(s.end - s.start).toBe(8);
    const firstEnd = cut.steps[0].end;
    expect(cut.traj.tokens[firstEnd]).toBe(IM_END_ID);
    expect(cut.traj.mask[firstEnd]).toBe(0);
    // "Left Lef" is not an action.
    expect(cut.steps[0].invalid).toBe(true);
    // The second sequence is not disturbed by the first (its own script, short enough here).
    expect(solved.steps.length).toBeGreaterThan(0);
    expect(solved.traj.tokens.length).toBeGreaterThan(0);
  });

  it("ends an episode when the context is full", async () => {
    const { seed } = seedWithPath(4);
    const policy = new ScriptedPolicy([["jump<|im_end|>"]], 260);
    const [ep] = await envRollout(policy, task, [seed], { sampling, maxNewTokensPerTurn: 40 });
    expect(ep.traj.finish).toBe("context");
    expect(ep.traj.promptTokens.length + ep.traj.tokens.length).toBeLessThanOrEqual(260);
    expect(ep.steps.length).toBeLessThan(4);
  });
});

describe("turnTokenRewards", () => {
  it("makes the reward-to-go of every turn its turn-discounted return (scores [0,0,1], γ 0.4)", () => {
    const steps = [
      { anchor: "a", reward: 0, start: 0, end: 2 },
      { anchor: "b", reward: 0, start: 4, end: 6 },
      { anchor: "c", reward: 1, start: 8, end: 10 },
    ];
    const r = turnTokenRewards(steps, 10, 0.4, turnDiscount);
    const togo = (t: number) => r.slice(t).reduce((a, b) => a + b, 0);
    expect(togo(0)).toBeCloseTo(0.16, 12);
    expect(togo(4)).toBeCloseTo(0.4, 12);
    expect(togo(8)).toBeCloseTo(1, 12);
    // γ_turn = 1: the plain step reward on each turn's last token.
    expect([...turnTokenRewards(steps, 10, 1, turnDiscount)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  });
});
