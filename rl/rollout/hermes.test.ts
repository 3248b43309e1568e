// Hermes tool calls with a model's own chat template: parsing and running calls written as
// `<tool_call>{"name": .., "arguments": {..}}</tool_call>` (valid, malformed JSON, unknown
// tool, wrong argument types, bare code, two calls in one turn), each failure a tool result
// the model sees; and a whole rollout on Qwen3's tokenizer and template with a scripted
// policy and the real QuickJS sandbox, whose tokens and mask equal the SFT rendering of the
// same conversation. Run: `npx vitest run rl/rollout/hermes`.
import { beforeAll, describe, expect, it } from "vitest";
import { jinjaChat } from "../../model/chat";
import { qwen3Files, qwen3Tokenizer } from "../../model/qwen3-fixture";
import { lossMask } from "../../model/template";
import { InProcessSandbox } from "../../sandbox/run-code";
import { CALCULATOR_TOOL } from "../../tasks/arithmetic";
import type { TaskTool, UserToolSpec } from "../../tasks/types";
import { ScriptedPolicy } from "../../testing/scripted-policy";
import { rollout } from "./agent-loop";
import { checkFormat } from "./answer-format";
import { parseAnswer } from "./parse";
import { chatToolsOf, makeToolProtocol } from "./tool-protocol";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

const lookup: UserToolSpec = {
  name: "get_user_checked_out_books",
  description: "Books a user has checked out",
  parameters: { type: "object", properties: { user_id: { type: "string" } }, required: ["user_id"] },
  body: "(args) => ({ u1: ['Dune'], u2: [] })[args.user_id] ?? []",
};
const TOOLS: TaskTool[] = [CALCULATOR_TOOL, lookup];
const call = (name: string, args: unknown) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

async function runTurn(text: string) {
  const p = makeToolProtocol(TOOLS, sandbox, { timeoutS: 1, memoryMB: 16 }, "hermes");
  const calls = p.parse(text);
  return { calls, outcomes: await p.execute(calls) };
}

describe("Hermes tool calls", () => {
  it("valid: the code tool takes its code as the string argument `code`, a user tool its JSON", async () => {
    const { calls, outcomes } = await runTurn(call("calculator", { code: "347*29" }));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: "calculator", arguments: { code: "347*29" } });
    expect(outcomes[0]).toMatchObject({ ok: true, text: "10063", status: "Success" });
    const user = await runTurn(call("get_user_checked_out_books", { user_id: "u1" }));
    expect(user.outcomes[0]).toMatchObject({ ok: true, text: '["Dune"]' });
  });

  it("malformed JSON: a failed result naming the parse error", async () => {
    const { calls, outcomes } = await runTurn(
      '<tool_call>\n{"name": "calculator", "arguments": {"code": "1+1"}\n</tool_call>',
    );
    expect(calls[0].error).toMatch(/^Error: invalid JSON/);
    expect(outcomes[0]).toMatchObject({ ok: false, status: "ParseError" });
    expect(outcomes[0].text).toMatch(/^Error: invalid JSON/);
  });

  it("unknown tool: a failed result naming it", async () => {
    const { outcomes } = await runTurn(call("weather", { city: "Oslo" }));
    expect(outcomes[0]).toEqual({ ok: false, text: 'Error: unknown tool "weather"', status: "UnknownTool" });
  });

  it("wrong argument types: failed results naming the argument", async () => {
    const code = await runTurn(call("calculator", { code: 347 }));
    expect(code.outcomes[0]).toEqual({
      ok: false,
      text: 'Error: bad arguments for calculator: "code" must be a string',
      status: "BadArguments",
    });
    const user = await runTurn(call("get_user_checked_out_books", { user_id: 5 }));
    expect(user.outcomes[0].ok).toBe(false);
    expect(user.outcomes[0].text).toMatch(/user_id: expected string/);
    const notObject = await runTurn('<tool_call>{"name": "calculator", "arguments": "347*29"}</tool_call>');
    expect(notObject.outcomes[0]).toMatchObject({ ok: false, status: "ParseError" });
    expect(notObject.outcomes[0].text).toMatch(/"arguments" is not a JSON object/);
  });

  it("bare code is not a Hermes call", async () => {
    const { outcomes } = await runTurn("<tool_call>347*29</tool_call>");
    expect(outcomes[0]).toMatchObject({
      ok: false,
      status: "ParseError",
      text: "Error: tool call is not JSON",
    });
  });

  it("two calls in one turn: both parsed and run, results in order", async () => {
    const { calls, outcomes } = await runTurn(
      `<think>\ntwo\n</think>\n\n${call("calculator", { code: "6*7" })}\n${call("get_user_checked_out_books", { user_id: "u2" })}`,
    );
    expect(calls.map((c) => c.name)).toEqual(["calculator", "get_user_checked_out_books"]);
    expect(outcomes.map((o) => o.text)).toEqual(["42", "[]"]);
  });
});

describe("a rollout in Qwen3's own format", () => {
  const tok = qwen3Tokenizer();
  const chat = jinjaChat(tok, qwen3Files().config, {
    tools: chatToolsOf([CALCULATOR_TOOL]),
    check: "strict",
    toolPrompt: "hermes",
  });
  // What a Qwen3 model writes: the template's own spacing (Python's json.dumps).
  const turn1 =
    '<think>\nuse tool\n</think>\n\n<tool_call>\n{"name": "calculator", "arguments": {"code": "347*29"}}\n</tool_call><|im_end|>';
  const turn2 = "<think>\ndone\n</think>\n\n<answer>10063</answer><|im_end|>";

  it("stops at <|im_end|>, runs the call, appends the template's tool turn, and matches the SFT rendering", async () => {
    const question = [{ role: "user" as const, content: "What is 347*29?" }];
    const prompt = chat.promptTokens(question);
    const policy = new ScriptedPolicy([[turn1, turn2]], 4096, tok);
    const [t] = await rollout(policy, [prompt], {
      chat,
      sampling: { temperature: 1, seed: 1 },
      limits: { maxToolCalls: 2, maxNewTokens: 200, maxToolResponseChars: 100, overLimitNotice: "" },
      tools: makeToolProtocol([CALCULATOR_TOOL], sandbox, { timeoutS: 1, memoryMB: 16 }, chat.callSyntax),
    });
    expect(t.finish).toBe("stop");
    expect(t.toolCalls).toHaveLength(1);
    expect(t.toolCalls[0].outcome).toMatchObject({ ok: true, text: "10063" });
    const inserted = t.tokens.slice(t.toolCalls[0].responseStart, t.toolCalls[0].responseEnd);
    expect(tok.decode(inserted)).toBe(
      "\n<|im_start|>user\n<tool_response>\n10063\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
    );
    // The same conversation rendered for SFT: identical tokens (less the "\n" after the last
    // <|im_end|>, which the model never writes), and the rollout's mask is the SFT loss mask.
    const sft = chat.render([
      ...question,
      { role: "assistant", content: "<think>use tool</think><tool_call>347*29</tool_call>" },
      { role: "tool", content: "10063" },
      { role: "assistant", content: "<think>done</think><answer>10063</answer>" },
    ]);
    const all = [...prompt, ...t.tokens];
    expect(all).toEqual(sft.ids.slice(0, -1));
    const mask = lossMask(sft.roles).slice(prompt.length, -1);
    expect(t.mask).toEqual([...mask]);
    // The verifier's strict answer and the format check read the Qwen3 transcript as they read the lab's.
    expect(parseAnswer(t.text, { mode: "strict" })).toMatchObject({ ok: true, answer: "10063" });
    expect(checkFormat(t.text)).toEqual({ ok: true, errors: [] });
  });
});
