// cli/args.ts: flags, value options and positionals in order; a missing value and an unknown
// option reach the command's usage() with the option named.
import { describe, expect, it } from "vitest";
import { parseCliArgs } from "./args";

const spec = { flags: ["--quiet"], values: ["--out", "--seed"] };
const usage = (msg: string): never => {
  throw new Error(`usage: ${msg}`);
};

describe("parseCliArgs", () => {
  it("reads flags, values and positionals wherever they stand", () => {
    const p = parseCliArgs(
      ["a.json", "--out", "dir", "--quiet", "b", "--seed", "3", "--out", "d2"],
      spec,
      usage,
    );
    expect([...p.flags]).toEqual(["--quiet"]);
    expect(Object.fromEntries(p.values)).toEqual({ "--out": "d2", "--seed": "3" });
    expect(p.positionals).toEqual(["a.json", "b"]);
  });

  it("a value option takes the next argument even when it looks like an option", () => {
    expect(parseCliArgs(["--out", "--quiet"], spec, usage).values.get("--out")).toBe("--quiet");
  });

  it("names a value option without its value and an unknown option", () => {
    expect(() => parseCliArgs(["x", "--out"], spec, usage)).toThrow("usage: --out needs a value");
    expect(() => parseCliArgs(["--steps", "3"], spec, usage)).toThrow("usage: unknown option --steps");
    expect(parseCliArgs([], spec, usage)).toEqual({ flags: new Set(), values: new Map(), positionals: [] });
  });
});
