// The committed cold starts never saw a held-out problem: the SFT demonstrations behind
// public/checkpoints/quick-demo-sft-v2.safetensors (quick-demo-sft.json: seed 11, 1200 steps
// of 32, drawn as rl/update/sft-step.ts draws them) are regenerated and checked against quick-demo's
// eval and dev sets under split version 2, by canonical key. The v1 checkpoint
// (quick-demo-sft.safetensors, kept for links made before split version 2) does leak under
// the new keys: its data drew `b*a` for held-out `a*b`. Likewise the ToolRL cold start,
// public/checkpoints/function-calling-sft-v2.safetensors (function-calling-sft.json on the
// library catalogue): its 1,600 demonstrations against claim-toolrl's eval set and the dev set;
// and public/models/lab-llama-toolrl (cli/recipes/lab-llama-toolrl-sft.json) against
// claim-toolrl-llama's.
// Run: npx vitest run tasks/checkpoint-data
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadRecipeFile } from "../config/recipe-file";
import { canonicalExpr, makeArithmeticTask } from "./arithmetic";
import { makeFunctionCallingTask } from "./function-calling";
import { createRng } from "./rng";

const read = async (f: string) => readFileSync(f, "utf8");

function metadataOf(file: string): Record<string, string> {
  const b = readFileSync(file);
  const n = Number(b.readBigUInt64LE(0));
  return JSON.parse(b.subarray(8, 8 + n).toString("utf8")).__metadata__ ?? {};
}

async function sftKeys(splitVersion: 1 | 2) {
  const r = await loadRecipeFile("public/recipes/quick-demo-sft.json", read);
  if (!r.ok) throw new Error(r.error);
  const c = r.config;
  const task = makeArithmeticTask({ ...(c.task.options as object), splitVersion });
  const keys = new Set<string>();
  for (let step = 0; step < c.sft.steps; step++)
    for (const d of task.sftDemos(createRng(`${c.seed}:sft:${step}`), c.sft.batch))
      keys.add(canonicalExpr(String(d.meta.expr)));
  return keys;
}

describe("committed cold-start data vs held-out sets", () => {
  it("quick-demo-sft-v2 was made under split version 2 and its demos miss every eval and dev problem", async () => {
    expect(metadataOf("public/checkpoints/quick-demo-sft-v2.safetensors")).toMatchObject({
      made_by: expect.stringContaining("quick-demo-sft.json"),
      split_version: "2",
    });
    const q = await loadRecipeFile("public/recipes/quick-demo.json", read);
    if (!q.ok) throw new Error(q.error);
    expect(q.config.sft.init_checkpoint).toBe("checkpoints/quick-demo-sft-v2.safetensors");
    const task = makeArithmeticTask({ ...(q.config.task.options as object), splitVersion: 2 });
    const held = [...task.evalSet(q.config.task.eval_size), ...(task.devSet?.(100) ?? [])].map((p) =>
      canonicalExpr(String(p.meta.expr)),
    );
    const seen = await sftKeys(2);
    expect(seen.size).toBeGreaterThan(1000);
    expect(held.filter((k) => seen.has(k))).toEqual([]);
  }, 240_000);

  it("the version-1 data does overlap the version-2 eval set (why the checkpoint was retrained)", async () => {
    const task = makeArithmeticTask({ mulDigits: [2, 2], splitVersion: 2 });
    const held = task.evalSet(100).map((p) => canonicalExpr(String(p.meta.expr)));
    const seen = await sftKeys(1);
    expect(held.filter((k) => seen.has(k)).length).toBeGreaterThan(20);
  }, 240_000);
});

describe("function-calling cold-start data vs held-out sets", () => {
  async function recipe(file: string) {
    const r = await loadRecipeFile(file, read);
    if (!r.ok) throw new Error(r.error);
    return r.config;
  }
  /** The keys of every SFT demonstration of function-calling-sft.json, over `library` and split `version`. */
  async function fcSftKeys(library: "seeds" | "catalogue", splitVersion: 1 | 2) {
    const c = await recipe("public/recipes/function-calling-sft.json");
    const { sft: knobs, ...opts } = c.task.options as { sft?: { thinkRate?: number } };
    const task = makeFunctionCallingTask({ ...opts, library, splitVersion });
    const keys = new Set<string>();
    for (let step = 0; step < c.sft.steps; step++)
      for (const d of task.sftDemos(createRng(`${c.seed}:sft:${step}`), c.sft.batch, knobs))
        keys.add(String(d.meta.key));
    return keys;
  }
  async function heldOut() {
    const q = await recipe("public/recipes/claim-toolrl.json");
    expect(q.sft.init_checkpoint).toBe("checkpoints/function-calling-sft-v2.safetensors");
    expect(q.task.options).toMatchObject({ library: "catalogue" });
    expect(q.task.eval_size).toBeGreaterThanOrEqual(100);
    const task = makeFunctionCallingTask({
      ...(q.task.options as object),
      splitVersion: q.task.split_version,
    });
    const key = (p: { meta: Record<string, unknown> }) => String(p.meta.key);
    return { eval: task.evalSet(q.task.eval_size).map(key), dev: (task.devSet?.(74) ?? []).map(key) };
  }

  it("function-calling-sft-v2 was made on the catalogue under split version 2 and its demos miss every eval and dev question", async () => {
    expect(metadataOf("public/checkpoints/function-calling-sft-v2.safetensors")).toMatchObject({
      made_by: expect.stringContaining("function-calling-sft.json"),
      split_version: "2",
      library: "catalogue",
    });
    const held = await heldOut();
    expect(new Set(held.eval).size).toBe(held.eval.length);
    const seen = await fcSftKeys("catalogue", 2);
    expect(seen.size).toBeGreaterThan(400);
    expect(held.eval.filter((k) => seen.has(k))).toEqual([]);
    expect(held.dev.filter((k) => seen.has(k))).toEqual([]);
  });

  it("the old cold start's data (seeds' library, split version 1) misses the new eval set but not the dev set", async () => {
    const held = await heldOut();
    const seen = await fcSftKeys("seeds", 1);
    expect(seen.size).toBeLessThan(25);
    expect(held.eval.filter((k) => seen.has(k))).toEqual([]);
    // Version 1 has no dev side: the keys that version 2 holds out for dev were trained on.
    expect(held.dev.filter((k) => seen.has(k)).length).toBeGreaterThan(0);
  });
});

describe("the lab-llama ToolRL cold start's data vs held-out sets", () => {
  it("public/models/lab-llama-toolrl was made by its recipe, and its demos miss every eval and dev question of claim-toolrl-llama", async () => {
    const made = JSON.parse(readFileSync("public/models/lab-llama-toolrl/config.json", "utf8")).made_by;
    expect(made).toContain("cli/recipes/lab-llama-toolrl-sft.json");
    expect(metadataOf("public/models/lab-llama-toolrl/model.safetensors").made_by).toBe(made);
    const sft = await loadRecipeFile("cli/recipes/lab-llama-toolrl-sft.json", read);
    const arm = await loadRecipeFile("public/recipes/claim-toolrl-llama.json", read);
    if (!sft.ok) throw new Error(sft.error);
    if (!arm.ok) throw new Error(arm.error);
    const { sft: knobs, ...opts } = sft.config.task.options as { sft?: { thinkRate?: number } };
    // The cold start saw the questions as the RL arms ask them (same task options).
    expect(arm.config.model.pretrained).toBe("models/lab-llama-toolrl");
    expect(arm.config.task.options).toEqual(sft.config.task.options);
    expect(arm.config.task.split_version).toBe(sft.config.task.split_version);
    const task = makeFunctionCallingTask({ ...opts, splitVersion: sft.config.task.split_version });
    const seen = new Set<string>();
    for (let step = 0; step < sft.config.sft.steps; step++)
      for (const d of task.sftDemos(createRng(`${sft.config.seed}:sft:${step}`), sft.config.sft.batch, knobs))
        seen.add(String(d.meta.key));
    expect(seen.size).toBeGreaterThan(400);
    const key = (p: { meta: Record<string, unknown> }) => String(p.meta.key);
    const held = [...task.evalSet(arm.config.task.eval_size), ...(task.devSet?.(74) ?? [])].map(key);
    expect(held.length).toBe(arm.config.task.eval_size + 74);
    expect(held.filter((k) => seen.has(k))).toEqual([]);
  });
});

describe("the lab-llama OTC cold start's data vs held-out sets", () => {
  it("public/models/lab-llama-otc was made by its recipe, and its demos miss every eval and dev problem of claim-otc-llama", async () => {
    const made = JSON.parse(readFileSync("public/models/lab-llama-otc/config.json", "utf8")).made_by;
    expect(made).toContain("cli/recipes/lab-llama-otc-sft.json");
    expect(metadataOf("public/models/lab-llama-otc/model.safetensors").made_by).toBe(made);
    const sft = await loadRecipeFile("cli/recipes/lab-llama-otc-sft.json", read);
    const arm = await loadRecipeFile("public/recipes/claim-otc-llama.json", read);
    if (!sft.ok) throw new Error(sft.error);
    if (!arm.ok) throw new Error(arm.error);
    const { sft: knobs, ...opts } = sft.config.task.options as { sft?: Record<string, unknown> };
    // The cold start saw the problems as the RL arms ask them (same task options, demos aside).
    expect(arm.config.model.pretrained).toBe("models/lab-llama-otc");
    expect(arm.config.task.options).toEqual(opts);
    expect(arm.config.task.split_version).toBe(sft.config.task.split_version);
    const task = makeArithmeticTask({ ...opts, splitVersion: sft.config.task.split_version });
    const seen = new Set<string>();
    for (let step = 0; step < sft.config.sft.steps; step++)
      for (const d of task.sftDemos(createRng(`${sft.config.seed}:sft:${step}`), sft.config.sft.batch, knobs))
        seen.add(canonicalExpr(String(d.meta.expr)));
    expect(seen.size).toBeGreaterThan(500);
    const key = (p: { meta: Record<string, unknown> }) => canonicalExpr(String(p.meta.expr));
    const held = [...task.evalSet(arm.config.task.eval_size), ...(task.devSet?.(64) ?? [])].map(key);
    expect(held.filter((k) => seen.has(k))).toEqual([]);
  });
});
