// The import rules of docs/ARCHITECTURE.md held against the sources (cli/imports.ts): no
// circles, nothing of model/ imports export/, app/ and export/ reach model/ only through its
// face (model/face.ts) and the face only its pure parts.
// Run: npx vitest run --project unit cli/imports.test.ts
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { circles, type Edge, importEdges, importGraph, violations } from "./imports";

/** The sources' edges with one more import planted (the rules must catch it). */
function planted(edges: Map<string, Edge[]>, from: string, to: string, typeOnly = false) {
  const out = new Map(edges);
  out.set(from, [...(edges.get(from) ?? []), { to, typeOnly }]);
  return out;
}

/** The edges of a tree of `files` (path -> text) written to a temporary folder. */
function edgesOf(files: Record<string, string>): Map<string, Edge[]> {
  const root = mkdtempSync(join(tmpdir(), "imports-"));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    return importEdges(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
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
  });

  it("reads a worker's script URL as an import of code that runs in another thread", () => {
    expect(edges.get("sandbox/pool-browser.ts")).toContainEqual({
      to: "sandbox/sandbox.worker.ts",
      typeOnly: false,
      worker: true,
    });
    expect(edges.get("app/engine.ts")).toContainEqual({
      to: "workers/trainer.worker.ts",
      typeOnly: false,
      worker: true,
    });
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
    expect(violations(planted(edges, "model/memory-plan.ts", "model/tokenizer.ts", true))).toContain(
      "the face reaches past its parts: model/memory-plan.ts -> model/tokenizer.ts",
    );
  });

  it("catches a planted sandbox/ -> workers/ worker import, through the parser", () => {
    const tree = edgesOf({
      "sandbox/pool-web.ts":
        'export const w = () => new Worker(new URL("../workers/trainer.worker.ts", import.meta.url), { type: "module" });\n',
      "sandbox/pool-thread.ts":
        'export const SCRIPT = new URL("../workers/trainer.worker.ts", import.meta.url).href;\n',
      "sandbox/not-an-import.ts":
        "export const s = \"new URL('../workers/trainer.worker.ts', import.meta.url)\";\n",
      "workers/trainer.worker.ts": "export {};\n",
    });
    expect(violations(tree).filter((v) => v.startsWith("the engine"))).toEqual([
      "the engine imports workers/: sandbox/pool-thread.ts -> workers/trainer.worker.ts",
      "the engine imports workers/: sandbox/pool-web.ts -> workers/trainer.worker.ts",
    ]);
    expect(violations(planted(edges, "rl/run/run-loop.ts", "workers/store.ts", true))).toContain(
      "the engine imports workers/: rl/run/run-loop.ts -> workers/store.ts",
    );
  });
});
