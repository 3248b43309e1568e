// Tests of the inspector's token model: `npx vitest run app/tokenModel.test.ts`.
// The page loads no tokenizer: samples carry each token's piece from the worker, so these
// records are built from pieces (tags whole, other text one character a piece, as the
// character tokenizer cuts it; ids are positions in a local vocabulary).
import { describe, expect, it } from "vitest";
import type { SampleRecord } from "../workers/api";
import {
  displayText,
  groupSamples,
  inspectorTokens,
  matchesFilter,
  overlayScale,
  overlayValue,
  sampleAdvantage,
  tokenColour,
} from "./tokenModel";

const vocab: string[] = ["<|pad|>"];
function idOf(piece: string): number {
  if (!vocab.includes(piece)) vocab.push(piece);
  return vocab.indexOf(piece);
}
function piecesOf(text: string): string[] {
  return text.match(/<\/?[a-z_]+>|[\s\S]/g) ?? [];
}
const encode = (text: string) => piecesOf(text).map(idOf);

// "<tool_call>2*3</tool_call><tool_response>6</tool_response>=6" with the response inserted.
function toolSample(reward = 1, groupId = "g0"): SampleRecord {
  const call = encode("<tool_call>2*3</tool_call>");
  const resp = encode("<tool_response>6</tool_response>");
  const tail = encode("<answer>6</answer>");
  const tokens = [...call, ...resp, ...tail];
  const promptTokens = encode("2*3?");
  const mask = tokens.map((_, i) => (i >= call.length && i < call.length + resp.length ? 0 : 1));
  return {
    step: 3,
    groupId,
    problemId: "p",
    bucket: "easy",
    answer: "6",
    promptTokens,
    tokens,
    promptPieces: promptTokens.map((id) => vocab[id]),
    pieces: tokens.map((id) => vocab[id]),
    padId: 0,
    mask,
    postTool: tokens.map((_, i) => (i >= call.length + resp.length ? 1 : 0)),
    logprobs: tokens.map((_, i) => -0.1 * i),
    entropy: tokens.map(() => 0.5),
    advantages: tokens.map(() => (reward > 0 ? 0.8 : -0.8)),
    reward,
    rewardTerms: { correctness: reward },
    correct: reward > 0,
    toolCalls: [
      {
        raw: "2*3",
        response: "6",
        ok: true,
        status: "Success",
        executed: true,
        responseStart: call.length,
        responseEnd: call.length + resp.length,
      },
    ],
    finish: "stop",
    filter: "",
  };
}

describe("inspectorTokens", () => {
  it("gives prompt, trained policy and inserted tool-output roles from the mask", () => {
    const s = toolSample();
    const toks = inspectorTokens(s);
    const prompt = toks.filter((t) => t.role === "prompt");
    const tool = toks.filter((t) => t.role === "tool");
    const policy = toks.filter((t) => t.role === "policy");
    expect(prompt.map((t) => t.text).join("")).toBe("2*3?");
    expect(tool.map((t) => t.text).join("")).toBe("<tool_response>6</tool_response>");
    expect(policy.map((t) => t.text).join("")).toBe("<tool_call>2*3</tool_call><answer>6</answer>");
    expect(tool.every((t) => t.mask === 0 && t.toolCall === 0)).toBe(true);
    expect(tool.every((t) => t.logprob === null && t.entropy === null && t.advantage === null)).toBe(true);
    expect(policy.every((t) => t.logprob !== null && t.advantage !== null)).toBe(true);
    expect(prompt.every((t) => t.mask === 0)).toBe(true);
    expect(policy.every((t) => t.mask === 1)).toBe(true);
    expect(
      toks
        .filter((t) => t.postTool)
        .map((t) => t.text)
        .join(""),
    ).toBe("<answer>6</answer>");
  });

  it("shows spaces, tabs and newlines visibly", () => {
    expect(displayText("a b\n")).toBe("a␣b¶\n");
    expect(displayText("\tx")).toBe("→x");
  });

  it("shows the worker's BPE pieces as they are, and ids where a record has no pieces", () => {
    const s = toolSample();
    s.pieces = s.pieces!.map((p, i) => (i === 0 ? " world" : p));
    const first = inspectorTokens(s).find((t) => t.index === 0)!;
    expect(first.text).toBe(" world");
    expect(first.display).toBe("␣world");
    const bare = { ...toolSample(), pieces: undefined, promptPieces: undefined };
    const t = inspectorTokens(bare)[0];
    expect(t.text).toBe(`⟨${bare.promptTokens[0]}⟩`);
  });

  it("treats padding as its own untrained role", () => {
    const s = toolSample();
    s.tokens = [...s.tokens, 0];
    s.pieces = [...s.pieces!, "<|pad|>"];
    s.mask = [...s.mask, 1];
    const last = inspectorTokens(s).at(-1)!;
    expect(last.role).toBe("pad");
    expect(last.mask).toBe(0);
  });
});

describe("overlay colours", () => {
  it("keeps untrained tokens out of the heatmap", () => {
    const toks = inspectorTokens(toolSample());
    for (const t of toks) {
      const v = overlayValue(t, "logprob");
      if (t.role === "policy") expect(v).not.toBeNull();
      else expect(v).toBeNull();
    }
    expect(tokenColour(null, overlayScale([toolSample()], "entropy"))).toBeNull();
  });

  it("uses a symmetric signed scale for advantages, white at zero, text flipping on dark", () => {
    const scale = overlayScale([toolSample(1), toolSample(0)], "advantage");
    expect(scale).toEqual({ overlay: "advantage", signed: true, min: -0.8, max: 0.8 });
    expect(tokenColour(0, scale)?.background).toBe("rgb(255, 255, 255)");
    const hi = tokenColour(0.8, scale)!;
    const lo = tokenColour(-0.8, scale)!;
    expect(hi.background).toBe("rgb(230, 97, 1)");
    expect(lo.background).toBe("rgb(33, 102, 172)");
    expect(lo.color).toBe("#fff");
    expect(tokenColour(0.1, scale)!.color).toBe("#111");
  });

  it("shades unlikely tokens darker on the log-prob scale", () => {
    const scale = overlayScale([toolSample()], "logprob");
    expect(scale.max).toBe(0);
    const likely = tokenColour(0, scale)!;
    const unlikely = tokenColour(scale.min, scale)!;
    expect(likely.background).toBe("rgb(255, 255, 255)");
    expect(unlikely.t).toBe(0);
    expect(unlikely.background).toBe("rgb(33, 102, 172)");
  });
});

describe("groups and filters", () => {
  it("groups by prompt and flags zero reward variance", () => {
    const gs = groupSamples([toolSample(1, "a"), toolSample(1, "a"), toolSample(1, "b"), toolSample(0, "b")]);
    expect(gs.map((g) => [g.groupId, g.samples.length, g.zeroStd])).toEqual([
      ["a", 2, true],
      ["b", 2, false],
    ]);
  });

  it("averages advantages over trained tokens and filters trajectories", () => {
    const s = toolSample(0);
    s.advantages = s.advantages.map((a, i) => (s.mask[i] === 0 ? 100 : a));
    expect(sampleAdvantage(s)).toBeCloseTo(-0.8, 12);
    expect(matchesFilter(s, "failed-tools")).toBe(false);
    s.toolCalls[0].ok = false;
    expect(matchesFilter(s, "failed-tools")).toBe(true);
    expect(matchesFilter(s, "truncated")).toBe(false);
    expect(matchesFilter({ ...s, finish: "length" }, "truncated")).toBe(true);
    expect(matchesFilter(s, "extreme-adv", 1)).toBe(true);
    expect(matchesFilter(s, "extreme-adv", 2)).toBe(false);
  });
});

describe("the importance-ratio overlay and the selection marks", () => {
  it("colours policy tokens by log(ratio) on a signed scale; tool tokens and old records get none", () => {
    const s = toolSample();
    s.ratio = s.tokens.map((_, i) => (s.mask[i] ? Math.exp(i % 2 ? 0.01 : -0.02) : 1));
    s.selected = s.tokens.map((_, i) => (i === 1 ? 1 : 0));
    const toks = inspectorTokens(s).filter((t) => t.index >= 0);
    expect(toks[0].logratio).toBeCloseTo(-0.02, 12);
    expect(toks[1].logratio).toBeCloseTo(0.01, 12);
    expect(toks.filter((t) => t.role === "tool").every((t) => t.logratio === null && !t.selected)).toBe(true);
    expect(toks.map((t) => t.selected).filter(Boolean).length).toBe(1);
    expect(toks[1].selected).toBe(true);
    const scale = overlayScale([s], "logratio");
    expect(scale.signed).toBe(true);
    expect(scale.max).toBeCloseTo(0.02, 12);
    expect(tokenColour(overlayValue(toks[0], "logratio"), scale)!.t).toBeCloseTo(-1, 12);
    const old = toolSample();
    expect(inspectorTokens(old).every((t) => t.logratio === null && !t.selected)).toBe(true);
  });
});
