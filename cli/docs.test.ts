// The repository carries its own specification: no tracked file points at documents outside
// it or at issue numbers it does not hold, and docs/ARCHITECTURE.md stays one short page.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// Built from pieces so that this file does not match itself.
const OUTSIDE = [
  String.raw`\.\./${"shared"}`,
  `DEMO${"-"}RECIPE`,
  String.raw`DESIGN(\.md|:)`,
  String.raw`UX\.${"md"}`,
  String.raw`STYLE\.${"md"}`,
  String.raw`${"issue"}s? #?[0-9]+`,
].join("|");

describe("the docs", () => {
  it("no tracked file cites a document outside the repository or an issue number", () => {
    let hits = "";
    try {
      hits = execFileSync("git", ["grep", "-nE", OUTSIDE], { encoding: "utf8" });
    } catch (e) {
      // git grep exits 1 when nothing matches
      if ((e as { status?: number }).status !== 1) throw e;
    }
    expect(hits.split("\n").filter(Boolean)).toEqual([]);
  });

  it("docs/ARCHITECTURE.md is at most 150 lines", () => {
    const lines = readFileSync("docs/ARCHITECTURE.md", "utf8").trimEnd().split("\n").length;
    expect(lines).toBeLessThanOrEqual(150);
  });
});
