// ALGORITHMS.md §10 masks and masked metrics: the worked entropy example, the loss-mask
// switch, post-tool masks and empty-mask edge cases. `npx vitest run rl/algos/`.
import { describe, expect, it } from "vitest";
import { actorMetrics, buildLossMask, buildPostToolMask, type TokenKind } from "./masks.ts";

const kinds: TokenKind[] = ["policy", "policy", "tool", "tool", "policy"];

describe("masks (§10)", () => {
  it("loss mask on by default, switchable, pads never train, trajectory scale", () => {
    expect(Array.from(buildLossMask(kinds))).toEqual([1, 1, 0, 0, 1]);
    expect(Array.from(buildLossMask([...kinds, "env", "pad"], false))).toEqual([1, 1, 1, 1, 1, 1, 0]);
    expect(Array.from(buildLossMask(kinds, true, 0))).toEqual([0, 0, 0, 0, 0]);
  });

  it("post-tool mask marks policy tokens after a tool response only", () => {
    expect(Array.from(buildPostToolMask(kinds))).toEqual([0, 0, 0, 0, 1]);
    expect(Array.from(buildPostToolMask(["policy", "env", "policy"]))).toEqual([0, 0, 0]);
  });

  it("reproduces the entropy example", () => {
    const m = actorMetrics({
      mask: buildLossMask(kinds),
      entropy: [1, 2, 9, 9, 3],
      postTool: buildPostToolMask(kinds),
    });
    expect(m["actor/entropy"]).toBeCloseTo(2.0, 12);
    expect(m["actor/entropy_post_tool"]).toBeCloseTo(3.0, 12);
  });

  it("leaves out metrics of empty masks (zero tool calls) instead of reporting 0/0", () => {
    const m = actorMetrics({ mask: [1, 1], entropy: [1, 3], postTool: [0, 0] });
    expect(m).toEqual({ "actor/entropy": 2 });
    expect(actorMetrics({ mask: [0, 0], entropy: [1, 3] })).toEqual({});
  });

  it("ppo_kl and kl_ref as masked means", () => {
    const m = actorMetrics(
      { mask: [1, 0], logprob: [-1, -7], oldLogprob: [-0.5, 0], refLogprob: [-1.5, 0] },
      "k1",
    );
    expect(m["actor/ppo_kl"]).toBeCloseTo(0.5, 12);
    expect(m["actor/kl_ref"]).toBeCloseTo(0.5, 12);
    const k3 = actorMetrics({ mask: [1], logprob: [-1], refLogprob: [-1.5] });
    expect(k3["actor/kl_ref"]).toBeCloseTo(0.106531, 6);
  });
});
