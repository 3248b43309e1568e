// The import rules of docs/ARCHITECTURE.md held against the sources (cli/imports.ts).
// Run: npx vitest run --project unit cli/imports.test.ts
import { describe, expect, it } from "vitest";
import { circles, importEdges, importGraph, violations } from "./imports";

describe("the import graph", () => {
  const edges = importEdges();

  it("reads the lab's imports: static, type-only and dynamic", () => {
    const graph = importGraph(edges);
    expect(graph.get("rl/driver.ts")).toContain("rl/context.ts");
    expect(edges.get("rl/context.ts")?.find((e) => e.to === "config/index.ts")?.typeOnly).toBe(true);
    expect(graph.get("app/bridge.ts")?.length).toBeGreaterThan(3);
  });

  it("finds a circle when there is one", () => {
    const g = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts"]],
    ]);
    expect(circles(g)).toEqual([["a.ts", "b.ts", "c.ts"]]);
  });

  it("has no circles, and nothing in model/ imports export/", () => {
    const broken = violations(edges).filter((v) => v.startsWith("circle") || v.startsWith("model/ imports"));
    expect(broken).toEqual([]);
  });
});
