// Unit tests of the transcript templates: exact text, per-token roles, prompts, tool responses.
import { describe, expect, it } from "vitest";
import { lossMask, type Message, promptTokens, render, STOP_STRINGS, toolResponseTokens } from "./template";
import { decode, encode } from "./tokenizer";

const convo: Message[] = [
  { role: "system", content: "calc" },
  { role: "user", content: "What is 347*29?" },
  { role: "assistant", content: "<think>use tool</think><tool_call>347*29</tool_call>" },
  { role: "tool", content: "10063" },
  { role: "assistant", content: "<answer>10063</answer>" },
];

// The text of the tokens with a given role, concatenated.
function textOf(r: { ids: number[]; roles: string[] }, role: string): string {
  return decode(r.ids.filter((_, i) => r.roles[i] === role));
}

describe("inline template", () => {
  it("renders the inline transcript and its roles", () => {
    const r = render(convo, "inline");
    expect(decode(r.ids)).toBe(
      "<|im_start|>system\ncalc<|im_end|>\n<|im_start|>user\nWhat is 347*29?<|im_end|>\n<|im_start|>assistant\n" +
        "<think>use tool</think><tool_call>347*29</tool_call><tool_response>10063</tool_response>" +
        "<answer>10063</answer><|im_end|>",
    );
    expect(r.roles.length).toBe(r.ids.length);
    expect(textOf(r, "assistant")).toBe(
      "<think>use tool</think><tool_call>347*29</tool_call><answer>10063</answer><|im_end|>",
    );
    expect(textOf(r, "tool")).toBe("<tool_response>10063</tool_response>");
    expect(textOf(r, "user")).toBe("What is 347*29?");
    expect(textOf(r, "system")).toBe("calc");
    const mask = lossMask(r.roles);
    expect(mask.reduce((a, b) => a + b, 0)).toBe(encode(textOf(r, "assistant")).length);
  });

  it("prompts end with the assistant header, or continue after a tool response", () => {
    const p = promptTokens(convo.slice(0, 2), "inline");
    expect(decode(p).endsWith("<|im_end|>\n<|im_start|>assistant\n")).toBe(true);
    const cont = promptTokens(convo.slice(0, 4), "inline");
    expect(decode(cont).endsWith("</tool_call><tool_response>10063</tool_response>")).toBe(true);
    // The rendered transcript starts with the continuation prompt: generation then extends it.
    expect(render(convo, "inline").ids.slice(0, cont.length)).toEqual(cont);
    expect(STOP_STRINGS.inline).toContain("</tool_call>");
  });

  it("tool response tokens equal the rendered ones", () => {
    const t = toolResponseTokens(["10063"], "inline");
    expect(decode(t.ids)).toBe("<tool_response>10063</tool_response>");
    expect(t.roles.every((r) => r === "tool")).toBe(true);
  });
});

describe("chatml-turns template", () => {
  const turns: Message[] = [
    { role: "user", content: "Q" },
    { role: "assistant", content: '<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}</tool_call>' },
    { role: "tool", content: "ra" },
    { role: "tool", content: "rb" },
    { role: "assistant", content: "<answer>1</answer>" },
  ];

  it("puts parallel tool responses in one user turn and starts a new assistant turn", () => {
    const r = render(turns, "chatml-turns");
    expect(decode(r.ids)).toBe(
      '<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}</tool_call><|im_end|>\n' +
        "<|im_start|>user\n<tool_response>ra</tool_response>\n<tool_response>rb</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\n<answer>1</answer><|im_end|>",
    );
    expect(textOf(r, "assistant")).toBe(
      '<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}</tool_call><|im_end|><answer>1</answer><|im_end|>',
    );
    expect(textOf(r, "tool")).toBe("<tool_response>ra</tool_response>\n<tool_response>rb</tool_response>");
    expect(STOP_STRINGS["chatml-turns"]).toEqual(["<|im_end|>"]);
  });

  it("a rollout that appends toolResponseTokens reproduces the rendered transcript", () => {
    const prompt = promptTokens(turns.slice(0, 1), "chatml-turns");
    const ids = [
      ...prompt,
      ...encode(turns[1].content + "<|im_end|>"),
      ...toolResponseTokens(["ra", "rb"], "chatml-turns").ids,
      ...encode("<answer>1</answer><|im_end|>"),
    ];
    expect(ids).toEqual(render(turns, "chatml-turns").ids);
    // Prompt after tool turns also ends with the assistant header.
    expect(
      decode(promptTokens(turns.slice(0, 4), "chatml-turns")).endsWith("<|im_end|>\n<|im_start|>assistant\n"),
    ).toBe(true);
  });
});
