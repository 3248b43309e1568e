// The import rules of docs/ARCHITECTURE.md held against the sources (cli/imports.ts): no
// circles, nothing of model/ imports export/, nothing below the wiring imports workers/ (a worker
// started by `new URL(...)` counts), app/ and export/ reach model/ only through its face
// (model/face.ts) and the face only its pure parts.
// Run: npx vitest run --project unit cli/imports.test.ts
import { describe, expect, it } from "vitest";
import { circles, type Edge, importEdges, importGraph, violations } from "./imports";

/** The sources' edges with one more import planted (the rules must catch it). */
function planted(edges: Map<string, Edge[]>, from: string, to: string, typeOnly = false) {
  const out = new Map(edges);
  out.set(from, [...(edges.get(from) ?? []), { to, typeOnly }]);
  return out;
}

describe("the import graph", () => {
  const edges = importEdges();

  it("reads the lab's imports: static, type-only and dynamic", () => {
    const graph = importGraph(edges);
    expect(graph.get("rl/rollout/task-driver.ts")).toContain("rl/common/phase-context.ts");
    expect(edges.get("rl/common/phase-context.ts")?.find((e) => e.to === "config/index.ts")?.typeOnly).toBe(
      true,
    );
    expect(edges.get("app/ExportRun.tsx")?.find((e) => e.to === "export/index.ts")?.typeOnly).toBe(false);
    // a worker started from a URL is an import
    expect(graph.get("sandbox/pool-browser.ts")).toContain("sandbox/sandbox.worker.ts");
    expect(graph.get("app/engine.ts")).toContain("workers/trainer.worker.ts");
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

  it("holds: no circles, model/ never imports export/, app/ and export/ see model/ only through its face", () => {
    expect(violations(edges)).toEqual([]);
  });

  it("catches a planted circle, a model/ -> export/ import and each way past the face", () => {
    expect(violations(planted(edges, "model/config.ts", "model/lora.ts", true))).toContain(
      "circle: model/config.ts, model/lora.ts",
    );
    expect(violations(planted(edges, "model/checkpoint.ts", "export/zip.ts"))).toContain(
      "model/ imports export/: model/checkpoint.ts -> export/zip.ts",
    );
    expect(violations(planted(edges, "app/configModel.ts", "model/checkpoint.ts", true))).toContain(
      "past the model's face: app/configModel.ts -> model/checkpoint.ts",
    );
    expect(violations(planted(edges, "app/chartData.ts", "rl/run/run-bundle.ts"))).toContain(
      "past the model's face: app/chartData.ts -> rl/run/run-bundle.ts -> model/checkpoint.ts",
    );
    expect(violations(planted(edges, "sandbox/pool-browser.ts", "workers/trainer.worker.ts"))).toContain(
      "below the wiring imports workers/: sandbox/pool-browser.ts -> workers/trainer.worker.ts",
    );
    expect(violations(planted(edges, "model/memory-plan.ts", "model/tokenizer.ts", true))).toContain(
      "the face reaches past its parts: model/memory-plan.ts -> model/tokenizer.ts",
    );
  });
});
