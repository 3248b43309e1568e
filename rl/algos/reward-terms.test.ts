// Worked numbers of ALGORITHMS.md §4 and §9 for the reward registry: correctness, format,
// ToRL, ToolRL (with its schedule), OTC-PPO/GRPO, ARTIST, Tool-N1, DAPO overlong, and the
// custom-js contract check. `npx vitest run rl/algos/`.
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  combineRewards,
  hasAnswerFormat,
  multisetJaccard,
  otcGrpoToolReward,
  otcPpoToolReward,
  REWARD,
  type RewardInput,
  toolrlParts,
  toolrlRanges,
  toolrlTurn,
} from "./reward-terms.ts";

const base: RewardInput = {
  text: "",
  correct: false,
  toolCalls: [],
  responseLength: 10,
  maxLength: 64,
  step: 0,
  totalSteps: 100,
};
const run = (name: string, x: Partial<RewardInput>, o: Record<string, unknown> = {}) => {
  const e = REWARD[name];
  if (e.kind !== "pure") throw new Error("not pure");
  return e.fn({ ...base, ...x }, o);
};
const calls = (...oks: boolean[]) => oks.map((ok) => ({ ok }));

describe("correctness and format", () => {
  it("correctness pos/neg", () => {
    expect(run("correctness", { correct: true })).toBe(1);
    expect(run("correctness", { correct: false })).toBe(0);
    expect(run("correctness", { correct: false }, { pos: 1, neg: -1 })).toBe(-1);
  });

  it("format demands one <answer> at the end", () => {
    const ok =
      "<think>use tool</think><tool_call>3*4</tool_call><tool_response>12</tool_response><answer>12</answer><|im_end|>";
    expect(hasAnswerFormat(ok)).toBe(true);
    expect(hasAnswerFormat("<answer>12</answer>")).toBe(true);
    expect(hasAnswerFormat("<answer>12</answer>", true)).toBe(false);
    expect(hasAnswerFormat("<answer>12</answer><answer>13</answer>")).toBe(false);
    expect(hasAnswerFormat("<answer>12</answer> garbage")).toBe(false);
    expect(hasAnswerFormat("<think><answer>1</answer></think>")).toBe(false);
    expect(hasAnswerFormat("<answer>12</answer><think>x</think>")).toBe(false);
    expect(hasAnswerFormat("no tags")).toBe(false);
    expect(run("format", { text: ok })).toBe(1);
    expect(run("format", { text: "12" }, { neg: -1 })).toBe(-1);
  });
});

describe("ToRL (§9.1)", () => {
  it("−0.5 on a failed call, additive with correctness", () => {
    expect(run("torl-exec-penalty", { toolCalls: calls(true, false) })).toBe(-0.5);
    expect(run("torl-exec-penalty", { toolCalls: calls(true) })).toBe(0);
    expect(run("torl-exec-penalty", { toolCalls: [] })).toBe(0);
    const total = combineRewards({ ...base, toolCalls: calls(false) }, [
      { name: "correctness", weight: 1, options: { pos: 1, neg: -1 } },
      { name: "torl-exec-penalty", weight: 1, options: {} },
    ]);
    expect(total.total).toBe(-1.5);
  });
});

describe("ToolRL (§9.2)", () => {
  const gt = [{ name: "get_weather", arguments: { city: "Paris", unit: "C" } }];
  const resp = (unit: string) =>
    `<think>check</think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris", "unit": "${unit}"}}\n</tool_call>`;
  it("reproduces the worked numbers", () => {
    expect(toolrlParts({ ...base, gtCalls: gt, text: resp("F") }, {})).toEqual({ format: 1, correct: 1.5 });
    expect(run("toolrl", { gtCalls: gt, text: resp("F") })).toBe(2.5);
    expect(run("toolrl", { gtCalls: gt, text: resp("C") })).toBe(4);
  });
  it("missing or unparseable calls give −3; no gt call gives 0; bad format 0", () => {
    expect(toolrlParts({ ...base, gtCalls: gt, text: "<think>x</think>" }, {}).correct).toBe(-3);
    expect(toolrlParts({ ...base, gtCalls: gt, text: "<tool_call>\n{oops\n</tool_call>" }, {})).toEqual({
      format: 0,
      correct: -3,
    });
    expect(
      toolrlParts({ ...base, gtCalls: [], text: "<think>x</think>\n<response>hi</response>" }, {}),
    ).toEqual({ format: 1, correct: 0 });
  });
  it("reads the calling turn of a trajectory that goes on after it (chat template, Hermes call)", () => {
    const call =
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}\n</tool_call>';
    const after =
      '<|im_end|>\n<|im_start|>user\n<tool_response>\n{"t": 20}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<answer>20</answer><|im_end|>';
    const text = `<think>check</think>\n${call}${after}`;
    expect(toolrlTurn(text)).toBe(`<think>check</think>\n${call}`);
    expect(toolrlParts({ ...base, gtCalls: gt, text }, {})).toEqual({ format: 1, correct: 3 });
    // the same once special tokens are decoded away (verl's form)
    const bare = `<think>check</think>\n${call}user\n<tool_response>\n{"t": 20}\n</tool_response>\nassistant\n<answer>20</answer>`;
    expect(toolrlParts({ ...base, gtCalls: gt, text: bare }, {})).toEqual({ format: 1, correct: 3 });
    // no think: format 0; an inline call still parses; text after the call in its own turn breaks the format
    expect(toolrlParts({ ...base, gtCalls: gt, text: `${call}${after}` }, {})).toEqual({
      format: 0,
      correct: 3,
    });
    expect(toolrlTurn(`<think>c</think><tool_call>{"a":1}</tool_call><tool_response>x</tool_response>`)).toBe(
      '<think>c</think><tool_call>{"a":1}</tool_call>',
    );
    expect(toolrlTurn("<think>x</think><answer>1</answer><|im_end|>")).toBe(
      "<think>x</think><answer>1</answer><|im_end|>",
    );
  });
  it("name/key Jaccard and greedy matching", () => {
    expect(multisetJaccard(["a", "a", "b"], ["a", "b", "c"])).toBeCloseTo(2 / 4, 12);
    expect(multisetJaccard([], ["a"])).toBe(0);
    // wrong tool name: r_name = 0, no match → S = 0 → −3
    const wrong = resp("C").replace("get_weather", "get_time");
    expect(toolrlParts({ ...base, gtCalls: gt, text: wrong }, {}).correct).toBe(-3);
  });
  it("dynamic scaling schedule", () => {
    expect(toolrlRanges(0, true)).toEqual({ format: { min: -2, max: 2 }, correct: { min: -2, max: 2 } });
    expect(toolrlRanges(150, true)).toEqual({ format: { min: -1, max: 1 }, correct: { min: -3, max: 3 } });
    const r = toolrlRanges(75, true);
    expect(r.format.max).toBeCloseTo(1.5, 12);
    expect(r.format.min).toBeCloseTo(-1, 12);
    expect(r.correct.max).toBeCloseTo(2.5, 12);
    expect(toolrlParts({ ...base, gtCalls: gt, text: resp("F"), step: 0 }, { schedule: true })).toEqual({
      format: 2,
      correct: 1,
    });
  });
});

describe("OTC (§9.3)", () => {
  it("reproduces the worked numbers", () => {
    const ppo = [0, 1, 2, 3].map((m) => otcPpoToolReward(m, 1));
    [1, 0.5, 0.309017, 0.222521].forEach((w, i) => {
      expect(ppo[i]).toBeCloseTo(w, 6);
    });
    const grpo = [1, 2, 3, 4].map((m) => otcGrpoToolReward(m, 1, 1));
    [1, 0.866025, Math.SQRT1_2, 0.587785].forEach((w, i) => {
      expect(grpo[i]).toBeCloseTo(w, 6);
    });
    expect(otcGrpoToolReward(1, 2, 1)).toBeCloseTo(0.866025, 6);
    expect(otcGrpoToolReward(4, 2, 1)).toBeCloseTo(0.866025, 6);
    expect(otcGrpoToolReward(0, 2, 1)).toBeCloseTo(0, 12);
    expect(otcGrpoToolReward(0, 0, 1)).toBe(1);
  });
  it("multiplies by correctness and uses the group's optimum", () => {
    expect(run("otc-ppo", { correct: true, toolCalls: calls(true) })).toBeCloseTo(0.5, 12);
    expect(run("otc-ppo", { correct: false, toolCalls: [] })).toBe(0);
    const group = { toolCalls: [3, 1, 0, 2], correct: [true, true, false, true] };
    expect(run("otc-grpo", { correct: true, toolCalls: calls(true, true), group })).toBeCloseTo(0.866025, 6);
    expect(run("otc-grpo", { correct: true, toolCalls: calls(true), group })).toBeCloseTo(1, 12);
    expect(
      run("otc-grpo", { correct: true, toolCalls: [], group: { toolCalls: [0], correct: [false] } }),
    ).toBe(1);
    expect(() => run("otc-grpo", { correct: true })).toThrow(/group/);
  });
});

describe("ARTIST (§9.4)", () => {
  it("success ratio, zero calls configurable", () => {
    expect(run("artist-tool-exec", { toolCalls: calls(true, true, false) })).toBeCloseTo(0.666667, 6);
    expect(run("artist-tool-exec", { toolCalls: [] })).toBe(0);
    expect(run("artist-tool-exec", { toolCalls: [] }, { zeroCalls: 1 })).toBe(1);
  });
});

describe("Tool-N1 (§9.5)", () => {
  const gold = [
    { name: "a", arguments: { x: 1, y: 2 } },
    { name: "b", arguments: {} },
  ];
  const pred = '<tool_call>[{"name":"b","arguments":{}},{"name":"a","arguments":{"y":2,"x":1}}]</tool_call>';
  it("reproduces the worked numbers", () => {
    expect(run("tool-n1", { gtCalls: gold, text: `<think>t</think>${pred}` })).toBe(1);
    expect(run("tool-n1", { gtCalls: gold, text: pred })).toBe(0);
  });
  it("takes the last block after the final assistant marker; wrong values fail", () => {
    const text = `<|im_start|>assistant\n<think>t</think><tool_call>{"name":"a","arguments":{"x":1,"y":3}}</tool_call>`;
    expect(run("tool-n1", { gtCalls: [gold[0]], text })).toBe(0);
    const fixed = text.replace('"y":3', '"y":2');
    expect(run("tool-n1", { gtCalls: [gold[0]], text: fixed })).toBe(1);
    expect(
      run("tool-n1", { gtCalls: [gold[0]], text: `<think>t</think><tool_call>{"name":"a"}</tool_call>` }),
    ).toBe(0);
  });
  it("no call with empty gold: 1 by default, 0 as in v0", () => {
    expect(run("tool-n1", { gtCalls: [], text: "<think>t</think>done" })).toBe(1);
    expect(
      run("tool-n1", { gtCalls: [], text: "<think>t</think>done" }, { emptyGoldMatchesNoCall: false }),
    ).toBe(0);
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: "x" })).toBe('{"a":"x","b":[1,{"c":2,"d":1}]}');
  });
});

describe("dapo-overlong (§4)", () => {
  it("reproduces the worked numbers", () => {
    const o = { maxLength: 20, cache: 4 };
    expect(run("dapo-overlong", { responseLength: 15 }, o)).toBe(0);
    expect(run("dapo-overlong", { responseLength: 18 }, o)).toBeCloseTo(-0.5, 12);
    expect(run("dapo-overlong", { responseLength: 20 }, o)).toBeCloseTo(-1, 12);
    expect(run("dapo-overlong", { responseLength: 25 }, o)).toBe(-1);
    expect(() => run("dapo-overlong", {}, { maxLength: 20, cache: 30 })).toThrow(/cache/);
  });
});

describe("custom-js and combineRewards", () => {
  it("declares the sandbox contract and checks values", () => {
    const e = REWARD["custom-js"];
    expect(e.kind).toBe("sandbox");
    if (e.kind !== "sandbox") return;
    expect(e.contract).toMatch(/function reward\(x, options\)/);
    expect(e.check(0.5)).toBe(0.5);
    expect(() => e.check("1")).toThrow(/finite number/);
    expect(() => e.check(Number.NaN)).toThrow(/finite number/);
  });
  it("weights terms and reports each", () => {
    const r = combineRewards(
      { ...base, correct: true, text: "<answer>1</answer>" },
      [
        { name: "correctness", weight: 1, options: {} },
        { name: "format", weight: 0.5, options: {} },
        { name: "custom-js", weight: 2, options: {} },
      ],
      { "custom-js": 0.25 },
    );
    expect(r).toEqual({ total: 2, terms: { correctness: 1, format: 1, "custom-js": 0.25 } });
    expect(() => combineRewards(base, [{ name: "custom-js", weight: 1, options: {} }])).toThrow(
      /sandbox value/,
    );
    expect(() => combineRewards(base, [{ name: "nope", weight: 1, options: {} }])).toThrow(/unknown reward/);
  });
});
