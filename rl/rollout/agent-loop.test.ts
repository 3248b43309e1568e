// The agent loop with a scripted policy (exact, known tokens) and the real QuickJS sandbox:
// tools run, responses are appended as environment tokens (mask 0), limits and stops hold.
import { beforeAll, describe, expect, it } from "vitest";
import { builtinChat } from "../../model/chat";
import { promptTokens, type TemplateName } from "../../model/template";
import { CHAR_TOKENIZER, decode, encode } from "../../model/tokenizer";
import { InProcessSandbox } from "../../sandbox/run-code";
import { CALCULATOR_TOOL, ONE_OP_CALCULATOR_TOOL } from "../../tasks/arithmetic";
import { ONE_OP_ERROR } from "../../tasks/calc";
import type { UserToolSpec } from "../../tasks/types";
import { ScriptedPolicy } from "../../testing/scripted-policy";
import { type RolloutLimits, rollout } from "./agent-loop";
import { makeToolProtocol } from "./tool-protocol";

const limits: RolloutLimits = {
  maxToolCalls: 2,
  maxNewTokens: 64,
  maxToolResponseChars: 32,
  overLimitNotice: "",
};
const sampling = { temperature: 1, seed: 1 };
let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});
const charChat = (t: TemplateName) => builtinChat(t, CHAR_TOKENIZER);
const prompt = (q: string, template: TemplateName = "inline") =>
  promptTokens([{ role: "user", content: q }], template);

describe("rollout (inline template)", () => {
  it("runs a tool call, appends the response as masked tokens, and continues", async () => {
    const policy = new ScriptedPolicy([
      ["<tool_call>347*29</tool_call>", "<answer>10063</answer><|im_end|>"],
    ]);
    const tools = makeToolProtocol([CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 });
    const [t] = await rollout(policy, [prompt("What is 347*29?")], {
      chat: charChat("inline"),
      sampling,
      limits,
      tools,
    });
    expect(t.text).toBe(
      "<tool_call>347*29</tool_call><tool_response>10063</tool_response><answer>10063</answer><|im_end|>",
    );
    expect(t.finish).toBe("stop");
    expect(t.toolCalls).toHaveLength(1);
    expect(t.toolCalls[0].outcome.ok).toBe(true);
    // Token in, token out: the masked span is exactly the inserted tokens.
    const inserted = encode("<tool_response>10063</tool_response>");
    const { responseStart, responseEnd } = t.toolCalls[0];
    expect(t.tokens.slice(responseStart, responseEnd)).toEqual(inserted);
    expect(t.mask.slice(responseStart, responseEnd).every((m) => m === 0)).toBe(true);
    expect(t.mask.filter((m) => m === 1)).toHaveLength(t.tokens.length - inserted.length);
    expect(policy.appended).toEqual([{ seq: 0, tokens: inserted }]);
    // Post-tool tokens: exactly the policy tokens after the response.
    const after = encode("<answer>10063</answer><|im_end|>").length;
    expect(t.postTool.reduce((a, b) => a + b, 0)).toBe(after);
    expect(t.postTool.slice(responseEnd).every((p) => p === 1)).toBe(true);
  });

  it("returns a failed call for code the calculator refuses, and errors as the last line only", async () => {
    const policy = new ScriptedPolicy([
      ["<tool_call>alert(1)</tool_call>", "<tool_call>(1+</tool_call>", "<answer>0</answer><|im_end|>"],
    ]);
    const tools = makeToolProtocol([CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 });
    const [t] = await rollout(policy, [prompt("What is 1+1?")], {
      chat: charChat("inline"),
      sampling,
      limits,
      tools,
    });
    expect(t.toolCalls.map((c) => c.outcome.ok)).toEqual([false, false]);
    expect(t.toolCalls[0].outcome.text).toBe("SyntaxError");
    expect(t.toolCalls[1].outcome.text).toMatch(/^SyntaxError/);
    expect(t.toolCalls[1].outcome.text).not.toContain("\n");
  });

  it("refuses more than one operator with the one-operation calculator (the oneOp task's) and runs one", async () => {
    const policy = new ScriptedPolicy([
      ["<tool_call>(12+34)*56</tool_call>", "<tool_call>-12+34</tool_call>", "<answer>0</answer><|im_end|>"],
    ]);
    const tools = makeToolProtocol([ONE_OP_CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 });
    const [t] = await rollout(policy, [prompt("What is (12+34)*56?")], {
      chat: charChat("inline"),
      sampling,
      limits,
      tools,
    });
    expect(t.toolCalls.map((c) => [c.outcome.ok, c.outcome.text, c.outcome.status])).toEqual([
      [false, ONE_OP_ERROR, "Refused: operators"],
      [true, "22", "Success"],
    ]);
  });

  it("stops executing calls beyond maxToolCalls and appends the notice as environment tokens", async () => {
    const policy = new ScriptedPolicy([
      [
        "<tool_call>1+1</tool_call>",
        "<tool_call>2+2</tool_call>",
        "<tool_call>3+3</tool_call>",
        "<answer>6</answer><|im_end|>",
      ],
    ]);
    const tools = makeToolProtocol([CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 });
    const [t] = await rollout(policy, [prompt("q")], {
      chat: charChat("inline"),
      sampling,
      limits: { ...limits, overLimitNotice: "no more calls" },
      tools,
    });
    expect(t.toolCalls.map((c) => c.executed)).toEqual([true, true, false]);
    expect(t.text).toContain("<tool_response>no more calls</tool_response>");
    const last = t.toolCalls[2];
    expect(t.mask.slice(last.responseStart, last.responseEnd).every((m) => m === 0)).toBe(true);
  });

  it("ends at maxNewTokens with finish 'length' and counts only policy tokens", async () => {
    const policy = new ScriptedPolicy([
      ["<tool_call>1+1</tool_call>", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
    ]);
    const tools = makeToolProtocol([CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 });
    const [t] = await rollout(policy, [prompt("q")], {
      chat: charChat("inline"),
      sampling,
      limits: { ...limits, maxNewTokens: 20 },
      tools,
    });
    expect(t.finish).toBe("length");
    expect(t.mask.reduce((a, b) => a + b, 0)).toBe(20);
  });

  it("stops exactly at <|im_end|> and handles a batch whose sequences end at different times", async () => {
    const policy = new ScriptedPolicy([
      ["<answer>5</answer><|im_end|>xxxx"],
      ["<tool_call>2*3</tool_call>", "<answer>6</answer><|im_end|>"],
    ]);
    const tools = makeToolProtocol([CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 });
    const ts = await rollout(policy, [prompt("a"), prompt("b")], {
      chat: charChat("inline"),
      sampling,
      limits,
      tools,
    });
    expect(ts[0].text).toBe("<answer>5</answer><|im_end|>");
    expect(ts[1].text).toBe(
      "<tool_call>2*3</tool_call><tool_response>6</tool_response><answer>6</answer><|im_end|>",
    );
  });

  it("ends with finish 'context' when the context is full", async () => {
    const p = prompt("q");
    const policy = new ScriptedPolicy(
      [["bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"]],
      p.length + 10,
    );
    const [t] = await rollout(policy, [p], { chat: charChat("inline"), sampling, limits });
    expect(t.finish).toBe("context");
    expect(t.tokens).toHaveLength(10);
  });
});

describe("rollout (chatml-turns template)", () => {
  const lookup: UserToolSpec = {
    name: "get_user_checked_out_books",
    description: "Books a user has checked out",
    parameters: { type: "object", properties: { user_id: { type: "string" } }, required: ["user_id"] },
    body: "(args) => ({ u1: ['Dune'], u2: [] })[args.user_id] ?? []",
  };

  it("runs the calls of a turn, answers them in a user turn, and continues in a new assistant turn", async () => {
    const policy = new ScriptedPolicy([
      [
        '<tool_call>{"name":"get_user_checked_out_books","arguments":{"user_id":"u1"}}</tool_call><tool_call>{"name":"get_user_checked_out_books","arguments":{}}</tool_call><|im_end|>',
        "<answer>Dune</answer><|im_end|>",
      ],
    ]);
    const tools = makeToolProtocol([lookup], sandbox, { timeoutS: 1, memoryMB: 16 });
    const [t] = await rollout(policy, [prompt("What does u1 have?", "chatml-turns")], {
      chat: charChat("chatml-turns"),
      sampling,
      limits: { ...limits, maxToolResponseChars: 200, maxNewTokens: 400 },
      tools,
    });
    expect(t.toolCalls).toHaveLength(2);
    expect(t.toolCalls[0].outcome).toMatchObject({ ok: true, text: '["Dune"]' });
    // Missing required argument: a failed call whose message names the field, not an exception.
    expect(t.toolCalls[1].outcome.ok).toBe(false);
    expect(t.toolCalls[1].outcome.text).toMatch(/user_id/);
    expect(t.text).toContain(
      '<|im_end|>\n<|im_start|>user\n<tool_response>["Dune"]</tool_response>\n<tool_response>',
    );
    expect(t.text.endsWith("<|im_start|>assistant\n<answer>Dune</answer><|im_end|>")).toBe(true);
    const masked = decode(t.tokens.filter((_, i) => t.mask[i] === 0));
    expect(masked.startsWith("\n<|im_start|>user\n<tool_response>")).toBe(true);
    expect(masked.endsWith("<|im_start|>assistant\n")).toBe(true);
  });
});

describe("rollout timing", () => {
  it("adds the wall time spent on tool calls to stats.toolSeconds", async () => {
    const sb = await InProcessSandbox.create();
    const tools = makeToolProtocol([CALCULATOR_TOOL], sb, { timeoutS: 1, memoryMB: 16 });
    const slow = {
      ...tools,
      execute: async (calls: Parameters<typeof tools.execute>[0]) => {
        await new Promise((r) => setTimeout(r, 50));
        return tools.execute(calls);
      },
    };
    const stats = { toolSeconds: 0 };
    const policy = new ScriptedPolicy([["<tool_call>1+1</tool_call>", "<answer>2</answer><|im_end|>"]]);
    await rollout(policy, [prompt("q")], { chat: charChat("inline"), sampling, limits, tools: slow, stats });
    expect(stats.toolSeconds).toBeGreaterThanOrEqual(0.045);
  });
});
