// CLI inputs: share links, bundle files and run folders. Run: `npx vitest run cli/link`.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ConfigEdit, recipeConfig } from "../config";
import { encodeLink } from "../config/link";
import { saveCheckpoint } from "../model/checkpoint";
import { modelConfig, paramLayout } from "../model/config";
import { encodeBundle } from "../rl/run/run-bundle";
import { bundleFromRunFolder, configFromLink, readBundle, readRunInput } from "./link";

const dir = mkdtempSync(join(tmpdir(), "lab-link-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const config = recipeConfig("demo", {
  seed: 5,
  model: { layers: 1, d_model: 8, heads: 1, context: 16 },
  sampling: { max_new_tokens: 8 },
});
const edit: ConfigEdit = { phase: "rl", step: 2, path: "rl.lr", value: 0.0005 };

function writeRunFolder(): string {
  const run = join(dir, "tiny-run");
  const mc = modelConfig({ layers: 1, dModel: 8, heads: 1, context: 16 });
  mkdirSync(run, { recursive: true });
  writeFileSync(join(run, "config.json"), JSON.stringify(config, null, 2));
  writeFileSync(
    join(run, "metrics.jsonl"),
    `${JSON.stringify({ step: 0, phase: "rl", time: 1, "reward/mean": 0.5 })}\n{"step": 1, "pha`, // crashed mid-line
  );
  writeFileSync(join(run, "samples.jsonl"), "");
  writeFileSync(
    join(run, "events.jsonl"),
    `${JSON.stringify({ step: 2, phase: "rl", kind: "edit", message: "rl.lr = 0.0005", edit })}\n`,
  );
  writeFileSync(
    join(run, "checkpoint.safetensors"),
    saveCheckpoint({ config: mc, weights: new Float32Array(paramLayout(mc).total) }),
  );
  return run;
}

describe("cli inputs", () => {
  it("a link gives the same config and edits; a bad link throws a named error", async () => {
    const link = await encodeLink({ config, edits: [edit], name: "shared" });
    const r = await configFromLink(`https://lab.example/${link}`);
    expect(r).toMatchObject({ config, edits: [edit], name: "shared", source: "link" });
    expect((await readRunInput(`https://lab.example/${link}`))?.config).toEqual(config);
    await expect(configFromLink(link.slice(0, -4))).rejects.toThrow(/^link: truncated link/);
  });

  it("a run folder becomes a bundle that reads back, and a bundle file is a run input", async () => {
    const run = bundleFromRunFolder(writeRunFolder());
    expect(run.name).toBe("tiny-run");
    expect(run.metrics).toHaveLength(1); // the half-written last line is dropped
    expect(run.edits).toEqual([edit]);
    expect(run.weights?.length).toBeGreaterThan(100);
    const file = join(dir, "tiny.lab-run.json.gz");
    writeFileSync(file, await encodeBundle(run));
    const input = await readRunInput(file);
    expect(input).toMatchObject({ source: "bundle", config, edits: [edit], name: "tiny-run" });
    expect(input?.bundle?.weights).toEqual(run.weights);
  });

  it("recipes are left to the recipe reader; bad bundles name the file", async () => {
    const recipe = join(dir, "r.json");
    writeFileSync(recipe, JSON.stringify({ name: "r", config: {} }));
    expect(await readRunInput(recipe)).toBeNull();
    const bad = new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3]);
    await expect(readBundle(bad, "x.gz")).rejects.toThrow(/^bundle x\.gz: truncated or corrupt file/);
  });
});
