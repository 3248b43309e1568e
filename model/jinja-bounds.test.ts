// The chat-template sandbox (model/jinja-bounds.ts): hostile templates are refused by the budget
// they go over (checked by the error's budget, never by timing), real templates render as the
// library renders them.
// Run: npx vitest run --project unit model/jinja-bounds.test.ts
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";
import { describe, expect, it } from "vitest";
import { jinjaChat } from "./chat";
import { BoundedTemplate, TEMPLATE_BUDGET, TemplateBudgetError } from "./jinja-bounds";
import { QWEN3_DIR, qwen3Tokenizer } from "./qwen3-fixture";

function refusal(text: string, items: Record<string, unknown> = {}, budget = { ...TEMPLATE_BUDGET }) {
  try {
    new BoundedTemplate(text, budget).render(items);
  } catch (err) {
    if (err instanceof TemplateBudgetError) return err;
    throw err;
  }
  throw new Error("the template rendered");
}

const HOSTILE = {
  // The measured crash: the library materializes the range and the process runs out of memory.
  rangeLoop: "{% for i in range(100000000) %}{% endfor %}",
  recursiveMacro: "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
  // 100 MB of output: 100,000 iterations of a 1,000-character piece.
  output100MB: `{% for i in range(100000) %}${"x".repeat(1000)}{% endfor %}`,
  doubling:
    "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
  listDoubling:
    "{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = ns.a + ns.a %}{% endfor %}",
  nestedLoops: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
  deepBrackets: `{{ ${"(".repeat(5000)}1${")".repeat(5000)} }}`,
  deepBlocks: `${"{% if true %}".repeat(3000)}x${"{% endif %}".repeat(3000)}`,
};

describe("hostile chat templates are refused by their budget", () => {
  it("a range of 100,000,000 items is refused by the range cap before any item is made", () => {
    const err = refusal(HOSTILE.rangeLoop);
    expect(err.budget).toBe("maxRange");
    expect(err.message).toBe(
      "range(0, 100000000, 1) has 100000000 items; the template sandbox allows 100000 (Jinja2's MAX_RANGE)",
    );
    // The cap is Jinja2's: 100,000 items pass.
    expect(new BoundedTemplate("{{ range(100000) | length }}").render()).toBe("100000");
    expect(refusal("{{ range(0, 200001, 2) | length }}").budget).toBe("maxRange");
    expect(new BoundedTemplate("{{ range(10, 0, -3) | join(',') }}").render()).toBe("10,7,4,1");
  });

  it("a macro calling itself is refused by the depth budget", () => {
    const err = refusal(HOSTILE.recursiveMacro);
    expect(err.budget).toBe("maxDepth");
    expect(err.message).toContain("evaluation nests deeper than 400 levels");
    // Bounded recursion renders.
    expect(
      new BoundedTemplate(
        "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
      ).render(),
    ).toBe("54321");
  });

  it("100 MB of output, a string doubling and a list doubling are refused by the text and item budgets", () => {
    const big = refusal(HOSTILE.output100MB);
    expect(big.budget).toBe("maxText");
    expect(big.message).toContain("more than 4000000 characters of text");
    expect(refusal(HOSTILE.doubling).budget).toBe("maxString");
    expect(refusal(HOSTILE.listDoubling).budget).toBe("maxItems");
  });

  it("nested loops are refused by the step budget; the time budget refuses what runs long", () => {
    const err = refusal(HOSTILE.nestedLoops);
    expect(err.budget).toBe("maxSteps");
    expect(err.message).toContain("more than 1000000 steps");
    const slow = refusal(
      "{% for i in range(100000) %}{{ i }}{% endfor %}",
      {},
      {
        ...TEMPLATE_BUDGET,
        maxSteps: 1e12,
        maxText: 1e12,
        timeMs: 1,
      },
    );
    expect(slow.budget).toBe("timeMs");
    expect(slow.message).toMatch(/^the render ran for more than 1 ms/);
  });

  it("deep nesting is refused before parsing", () => {
    for (const t of [HOSTILE.deepBrackets, HOSTILE.deepBlocks]) {
      const err = refusal(t);
      expect(err.budget).toBe("maxNesting");
      expect(err.message).toMatch(/^brackets or blocks nest \d+ deep; the budget is 100$/);
    }
    // A unary chain deep enough to overflow the parser's stack: refused, not crashed.
    const unary = refusal(`{{ ${"- ".repeat(20000)}1 }}`);
    expect(unary.budget).toBe("maxNesting");
  });

  it("JinjaChat refuses a hostile tokenizer_config.json at construction, naming the file and the budget", () => {
    const cfg = JSON.parse(readFileSync(`${QWEN3_DIR}/tokenizer_config.json`, "utf8"));
    // The refusals above through JinjaChat (the same wrapping for every budget; the quick ones).
    const quick = {
      rangeLoop: HOSTILE.rangeLoop,
      recursiveMacro: HOSTILE.recursiveMacro,
      deepBlocks: HOSTILE.deepBlocks,
    };
    for (const [name, chat_template] of Object.entries(quick)) {
      let err: unknown;
      try {
        jinjaChat(
          qwen3Tokenizer(),
          { ...cfg, chat_template },
          {
            tools: [],
            check: "warn",
            toolPrompt: "hermes",
            source: "evil/tokenizer_config.json",
          },
        );
      } catch (e) {
        err = e;
      }
      expect(err, name).toBeInstanceOf(TemplateBudgetError);
      expect((err as Error).message, name).toMatch(
        /^evil\/tokenizer_config\.json: chat_template refused by the template sandbox's (maxRange|maxDepth|maxText|maxString|maxItems|maxSteps|maxNesting) budget: /,
      );
    }
  });
});

describe("real templates render as the library renders them", () => {
  it("Qwen3's template with tools and a conversation", () => {
    const text = JSON.parse(readFileSync(`${QWEN3_DIR}/tokenizer_config.json`, "utf8")).chat_template;
    const items = {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "What is 2+2?" },
        {
          role: "assistant",
          content: "",
          tool_calls: [{ type: "function", function: { name: "calc", arguments: { code: "2+2" } } }],
        },
        { role: "tool", content: "4" },
        { role: "assistant", content: "<think>\nok\n</think>\n\n4" },
      ],
      tools: [
        { type: "function", function: { name: "calc", description: "d", parameters: { type: "object" } } },
      ],
      add_generation_prompt: true,
      eos_token: "<|im_end|>",
    };
    expect(new BoundedTemplate(text).render(items)).toBe(new Template(text).render(items));
  });

  it("filters, namespaces, loops and macros", () => {
    const text =
      "{% set ns = namespace(n=0) %}{% for m in messages if m.role != 'x' %}{% set ns.n = ns.n + 1 %}" +
      "{{ loop.index }}:{{ m.content | trim | upper }}{% if not loop.last %}, {% endif %}{% endfor %}" +
      "{% macro q(s) %}[{{ s }}]{% endmacro %} {{ q(ns.n) }} {{ messages | map(attribute='role') | join('|') }}" +
      "{{ {'a': 1} | tojson }}{{ '%d' if false else 'z' }}{{ raise_exception is defined }}";
    const items = {
      messages: [
        { role: "user", content: " hi " },
        { role: "x", content: "no" },
        { role: "assistant", content: "yo" },
      ],
    };
    expect(new BoundedTemplate(text).render(items)).toBe(new Template(text).render(items));
  });
});
