// The chat formats (model/chat.ts) on Qwen3's real tokenizer and chat template: the rendered
// text of a conversation with tools and tool results, the role of every token and the loss
// mask, the turn-by-turn tokenization check (passing on Qwen3, failing strict on a template
// whose turns re-tokenize across the boundary and on Qwen3's own think-block rewrite), the
// tool turns a rollout appends, and a template that ignores tools.
// Run: `npx vitest run model/chat`.
import { describe, expect, it } from "vitest";
import { type ChatTool, hermesMessages, JinjaChat, jinjaChat } from "./chat";
import { qwen3Files, qwen3Tokenizer } from "./qwen3-fixture";
import { lossMask, type Message } from "./template";

const tok = qwen3Tokenizer();
const config = qwen3Files().config;

const calculator: ChatTool = {
  name: "calculator",
  description: "Evaluates an integer expression.",
  parameters: { type: "object", properties: { code: { type: "string" } }, required: ["code"] },
  codeArg: "code",
};
const convo: Message[] = [
  { role: "system", content: "You are a calculator." },
  { role: "user", content: "What is 347*29?" },
  { role: "assistant", content: "<think>use tool</think><tool_call>347*29</tool_call>" },
  { role: "tool", content: "10063" },
  { role: "assistant", content: "<think>done</think><answer>10063</answer>" },
];
const qwen = (check: "strict" | "warn" | "off" = "strict") =>
  jinjaChat(tok, config, { tools: [calculator], check, toolPrompt: "hermes" });

// Qwen3's template with `tools`: the tool block in the system turn, calls as Hermes JSON with
// Python's json.dumps spacing, reasoning in <think>\n..\n</think>\n\n, tool results as a user turn.
const TOOLS_BLOCK =
  "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
  "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
  '{"type": "function", "function": {"name": "calculator", "description": "Evaluates an integer expression.", ' +
  '"parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}\n</tools>\n\n' +
  "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
const ASSISTANT_1 =
  '<think>\nuse tool\n</think>\n\n<tool_call>\n{"name": "calculator", "arguments": {"code": "347*29"}}\n</tool_call><|im_end|>';
const ASSISTANT_2 = "<think>\ndone\n</think>\n\n<answer>10063</answer><|im_end|>";
const TOOL_TURN = "<|im_start|>user\n<tool_response>\n10063\n</tool_response><|im_end|>\n";
const EXPECTED =
  `<|im_start|>system\nYou are a calculator.\n\n${TOOLS_BLOCK}<|im_end|>\n` +
  "<|im_start|>user\nWhat is 347*29?<|im_end|>\n" +
  `<|im_start|>assistant\n${ASSISTANT_1}\n` +
  TOOL_TURN +
  `<|im_start|>assistant\n${ASSISTANT_2}\n`;

function textOf(r: { ids: number[]; roles: string[] }, role: string): string {
  return tok.decode(r.ids.filter((_, i) => r.roles[i] === role));
}

describe("Qwen3's own chat template", () => {
  it("reads tools and tool calls itself", () => {
    const chat = qwen();
    expect(chat.rendersTools).toBe(true);
    expect(chat.rendersToolCalls).toBe(true);
    expect(chat.turnEndId).toBe(151645);
    expect(chat.callEndId).toBeUndefined();
  });

  it("renders a conversation with tools and tool results to the expected text", () => {
    const r = qwen().render(convo);
    expect(tok.decode(r.ids)).toBe(EXPECTED);
  });

  it("gives every token its role: only what the assistant writes is trainable", () => {
    const r = qwen().render(convo);
    expect(r.roles).toHaveLength(r.ids.length);
    expect(textOf(r, "assistant")).toBe(ASSISTANT_1 + ASSISTANT_2);
    expect(textOf(r, "template")).toBe("<|im_start|>assistant\n\n<|im_start|>assistant\n\n");
    expect(textOf(r, "tool")).toBe(TOOL_TURN);
    expect(textOf(r, "system")).toBe(
      `<|im_start|>system\nYou are a calculator.\n\n${TOOLS_BLOCK}<|im_end|>\n`,
    );
    expect(textOf(r, "user")).toBe("<|im_start|>user\nWhat is 347*29?<|im_end|>\n");
    const mask = lossMask(r.roles);
    r.ids.forEach((id, i) => {
      expect(mask[i]).toBe(r.roles[i] === "assistant" ? 1 : 0);
      // Both closing <|im_end|> of the assistant are trained; the others are not.
      if (id === tok.eosId) expect(mask[i]).toBe(r.roles[i] === "assistant" ? 1 : 0);
    });
    expect(r.ids.filter((id, i) => id === tok.eosId && mask[i] === 1)).toHaveLength(2);
  });

  it("passes the turn-by-turn check: the tokens equal one tokenization of the whole text", () => {
    const r = qwen("strict").render(convo);
    expect(r.mismatches).toBe(0);
    expect(r.ids).toEqual(tok.encode(EXPECTED));
  });

  it("prompts with the generation header, and appends tool turns as the template renders them", () => {
    const chat = qwen();
    const prompt = chat.promptText(convo.slice(0, 2));
    expect(prompt).toBe(EXPECTED.slice(0, EXPECTED.indexOf("<|im_start|>assistant\n") + 22));
    expect(chat.promptTokens(convo.slice(0, 2))).toEqual(tok.encode(prompt));
    // After the model's <|im_end|>: the "\n" the template puts there, the tool turn, the next header.
    const appended = chat.toolResponseTokens(["10063"]);
    expect(tok.decode(appended.ids)).toBe(`\n${TOOL_TURN}<|im_start|>assistant\n`);
    expect(appended.roles.every((r) => r === "tool")).toBe(true);
    const two = tok.decode(chat.toolResponseTokens(["a", "b"]).ids);
    expect(two).toBe(
      "\n<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
    );
    expect(tok.decode(chat.continuation())).toBe("\n<|im_start|>assistant\n");
  });

  it("fails strict on its own rewrite of an earlier turn (a call turn without reasoning loses its empty think block)", () => {
    const noThink: Message[] = [
      { role: "user", content: "What is 2+2?" },
      { role: "assistant", content: "<tool_call>2+2</tool_call>" },
      { role: "tool", content: "4" },
      { role: "assistant", content: "<think>ok</think><answer>4</answer>" },
    ];
    expect(() => qwen("strict").render(noThink)).toThrow(
      /rendering through message 3 \(tool\) changes the text before it.*<think>\\n\\n<\/think>\\n\\n<tool_c. became .<tool_call>/,
    );
    const warned = qwen("warn").render(noThink);
    expect(warned.mismatches).toBe(1);
    expect(warned.ids).toEqual(
      tok.encode(
        qwen()
          .promptText(noThink)
          .replace(/<\|im_start\|>assistant\n$/, ""),
      ),
    );
    expect(qwen("off").render(noThink).mismatches).toBe(0);
  });
});

describe("the incremental tokenization check", () => {
  // Each turn is its content and a space: the space that ends one turn merges with the next
  // turn's first word (" Sure" is one token), so the tokens re-tokenize across the boundary.
  const merging = { ...config, chat_template: "{% for m in messages %}{{ m.content }} {% endfor %}" };
  const msgs: Message[] = [
    { role: "user", content: "Hi." },
    { role: "assistant", content: "Sure" },
  ];

  it("strict: an error naming the turn and the token", () => {
    const chat = jinjaChat(tok, merging, {
      tools: [],
      check: "strict",
      toolPrompt: "hermes",
      source: "merge",
    });
    expect(() => chat.render(msgs)).toThrow(
      /merge: chat template: the tokens through message 2 \(assistant\) do not extend the tokens before it: token 2 was " " and is " Sure"/,
    );
  });

  it("warn: counts the turn and re-tokenizes, keeping the roles of the common prefix", () => {
    const chat = jinjaChat(tok, merging, { tools: [], check: "warn", toolPrompt: "hermes" });
    const r = chat.render(msgs);
    expect(r.mismatches).toBe(1);
    expect(r.ids).toEqual(tok.encode("Hi. Sure "));
    expect(r.ids.map((id) => tok.piece(id))).toEqual(["Hi", ".", " Sure", " "]);
    expect(r.roles).toEqual(["user", "user", "assistant", "assistant"]);
  });
});

describe("a template that ignores tools (SmolLM2-Instruct's kind)", () => {
  // Plain ChatML: role and content, nothing of `tools` or `tool_calls`.
  const plain = {
    ...config,
    chat_template:
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
  };

  it("gets the tools in the system message and the calls written into the content", () => {
    const chat = new JinjaChat(tok, plain, { tools: [calculator], check: "strict", toolPrompt: "hermes" });
    expect(chat.rendersTools).toBe(false);
    expect(chat.rendersToolCalls).toBe(false);
    const text = tok.decode(chat.render(convo).ids);
    expect(text.startsWith("<|im_start|>system\nYou are a calculator.\n\n# Tools\n")).toBe(true);
    expect(text).toContain('<tools>\n{"type":"function","function":{"name":"calculator"');
    expect(text).toContain(
      '<|im_start|>assistant\n<think>use tool</think>\n<tool_call>\n{"name":"calculator","arguments":{"code":"347*29"}}\n</tool_call><|im_end|>\n',
    );
    expect(text).toContain("<|im_start|>tool\n10063<|im_end|>\n");
    expect(tok.decode(chat.toolResponseTokens(["3"]).ids)).toBe(
      "\n<|im_start|>tool\n3<|im_end|>\n<|im_start|>assistant\n",
    );
    const prompt = chat.promptText([{ role: "user", content: "hi" }]);
    expect(prompt.startsWith("<|im_start|>system\n# Tools\n")).toBe(true);
  });

  it("toolPrompt none leaves the system message alone", () => {
    const chat = new JinjaChat(tok, plain, { tools: [calculator], check: "strict", toolPrompt: "none" });
    expect(chat.promptText([{ role: "user", content: "hi" }])).toBe(
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    );
  });
});

describe("hermesMessages", () => {
  it("turns inline calls into structured ones: bare code for the code tool, JSON as written", () => {
    const out = hermesMessages(
      [
        {
          role: "assistant",
          content:
            '<think>t</think><tool_call>1+2</tool_call><tool_call>{"name":"f","arguments":{"x":1}}</tool_call>',
        },
      ],
      [calculator],
    );
    expect(out[0]).toEqual({
      role: "assistant",
      content: "<think>t</think>",
      tool_calls: [
        { type: "function", function: { name: "calculator", arguments: { code: "1+2" } } },
        { type: "function", function: { name: "f", arguments: { x: 1 } } },
      ],
    });
    expect(() => hermesMessages([{ role: "assistant", content: "<tool_call>1</tool_call>" }], [])).toThrow(
      /message 1 \(assistant\): bare code/,
    );
  });
});
