// The page's dry run: three scripted episodes of a template as inspector samples whose
// trainable tokens are exactly the model's turns, and a module with a syntax error or a
// throwing reset reported with its line instead of episodes.
import { describe, expect, it } from "vitest";
import { decode } from "../../model/tokenizer";
import { DEFAULT_ENV_LIMITS } from "../../tasks/env-api/js-env";
import { envTemplate } from "../../tasks/env-api/templates";
import { envDryRun } from "./env-dry-run";

describe("envDryRun", () => {
  it("plays three kv-lookup episodes as samples: model turns trained, tool output masked", async () => {
    const r = await envDryRun(envTemplate("kv-lookup").source, DEFAULT_ENV_LIMITS);
    if (!r.ok) throw new Error(r.error);
    expect(r.scripted).toBe(true);
    expect(r.episodes.map((e) => e.success)).toEqual([true, true, true]);
    for (const s of r.samples) {
      const part = (m: number) => decode(s.tokens.filter((_, k) => s.mask[k] === m));
      expect(part(1)).toMatch(
        /^<tool_call>\{"name":"lookup".*<\/tool_call><\|im_end\|><answer>\d+<\/answer><\|im_end\|>$/,
      );
      expect(part(0)).toMatch(/<tool_response>\d+<\/tool_response>/);
      expect(decode(s.promptTokens)).toMatch(/key [a-h]\?/);
      expect(s.pieces).toHaveLength(s.tokens.length);
    }
  }, 240_000);

  it("reports a syntax error and a throwing reset with their lines", async () => {
    const bad = await envDryRun(
      "export default {\n  reset(seed) {\n    return {;\n  },\n};\n",
      DEFAULT_ENV_LIMITS,
    );
    expect(bad).toMatchObject({ ok: false, line: 3 });
    const src =
      "export default {\n  reset(seed) {\n    throw new RangeError('no seed ' + seed);\n  },\n  check() { return { success: true }; },\n};\n";
    const thrown = await envDryRun(src, DEFAULT_ENV_LIMITS);
    expect(thrown.ok).toBe(false);
    if (!thrown.ok) {
      expect(thrown.line).toBe(3);
      expect(thrown.error).toMatch(/^reset: RangeError: no seed \d+ \(line 3\)$/);
    }
  }, 240_000);
});
