// Tests for config/: defaults, strict validation with dotted-path errors, deep merge,
// field metadata coverage, live edits and migrations. Run: `npx vitest run config/`.
import { describe, expect, it } from "vitest";
import {
  applyEdit,
  applyEdits,
  CONFIG_VERSION,
  defaultRunConfig,
  FIELD_META,
  fieldMeta,
  getPath,
  leafPaths,
  mergeConfig,
  migrateConfig,
  migrateWith,
  parseRunConfig,
  RECIPES,
  type RunConfig,
  recipeConfig,
  setPath,
} from "./index.ts";
import { encodeLink } from "./link.ts";

function errorsOf(input: unknown) {
  const r = parseRunConfig(input);
  if (r.ok) throw new Error("expected errors");
  return r.errors.map((e) => `${e.path}: ${e.message}`);
}

describe("defaults", () => {
  it("match the demo recipe", () => {
    const c = defaultRunConfig();
    expect(c.version).toBe(CONFIG_VERSION);
    expect(c.model).toMatchObject({ layers: 3, d_model: 128, heads: 4, context: 128, tied_embeddings: true });
    expect(c.rl).toMatchObject({
      advantage: "grpo",
      prompts_per_step: 8,
      group_size: 8,
      clip_eps_low: 0.2,
      clip_eps_high: 0.2,
      epochs: 2,
      minibatches: 2,
      lr: 3e-4,
      betas: [0.9, 0.99],
      weight_decay: 0,
      grad_clip: 1,
      loss_agg: "token-mean",
      std_eps: 1e-4,
      std: "sample",
    });
    expect(c.rl.kl.coef).toBe(0);
    expect(c.sampling).toMatchObject({ temperature: 1, max_new_tokens: 64 });
    expect(c.limits.max_tool_calls).toBe(3);
    expect(c.sft).toMatchObject({ steps: 600, batch: 64, lr: 3e-3, warmup_steps: 50, betas: [0.9, 0.98] });
  });

  it("are a fresh object each call and round-trip through parse", () => {
    const a = defaultRunConfig();
    a.rl.lr = 1;
    expect(defaultRunConfig().rl.lr).toBe(3e-4);
    const r = parseRunConfig(JSON.parse(JSON.stringify(defaultRunConfig())));
    expect(r.ok && r.config).toEqual(defaultRunConfig());
  });

  it("fill every missing field from a partial input", () => {
    const r = parseRunConfig({ rl: { lr: 1e-3 } });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.config.rl.lr).toBe(1e-3);
      expect(r.config.rl.group_size).toBe(8);
    }
  });
});

describe("validation", () => {
  it("names the field of an out-of-range value", () => {
    expect(errorsOf({ rl: { clip_eps_low: 1.5 } })).toEqual(["rl.clip_eps_low: must be <= 1"]);
    expect(errorsOf({ rl: { kl: { coef: -1 } } })).toEqual(["rl.kl.coef: must be >= 0"]);
    expect(errorsOf({ rl: { dual_clip_c: 1 } })).toEqual(["rl.dual_clip_c: must be > 1"]);
    expect(errorsOf({ model: { layers: 2.5 } })).toEqual(["model.layers: must be an integer"]);
  });

  it("rejects unknown fields at any depth", () => {
    expect(errorsOf({ rl: { clip_eps: 0.2 } })).toEqual(["rl.clip_eps: unknown field"]);
    expect(errorsOf({ bogus: 1 })).toEqual(["bogus: unknown field"]);
    expect(errorsOf({ rewards: { terms: [{ name: "format", wieght: 1 }] } })).toEqual([
      "rewards.terms.0.wieght: unknown field",
    ]);
  });

  it("rejects bad enum values and wrong types", () => {
    expect(errorsOf({ rl: { advantage: "ppo" } })[0]).toMatch(/^rl\.advantage: /);
    expect(errorsOf({ sampling: { temperature: "hot" } })).toEqual([
      "sampling.temperature: must be a number",
    ]);
    expect(errorsOf(42)[0]).toMatch(/^\(root\): /);
  });

  it("checks cross-field rules", () => {
    expect(errorsOf({ model: { d_model: 130 } })).toEqual(["model.heads: must divide model.d_model"]);
    expect(errorsOf({ rl: { minibatches: 3 } })).toEqual([
      "rl.minibatches: must divide prompts_per_step*group_size (64)",
    ]);
    expect(errorsOf({ sampling: { max_new_tokens: 200 } })).toEqual([
      "sampling.max_new_tokens: must be < model.context",
    ]);
    expect(errorsOf({ model: { positional: "rope", d_model: 96, heads: 32 } })).toEqual([
      "model.heads: rope needs an even head dimension",
    ]);
  });
});

describe("mergeConfig", () => {
  it("merges nested objects, replaces arrays, ignores undefined, does not mutate", () => {
    const base = defaultRunConfig();
    const merged = mergeConfig(base, {
      rl: { kl: { coef: 0.04 }, betas: [0.8, 0.9], lr: undefined },
      rewards: { terms: [{ name: "format", weight: 0.5, options: {} }] },
    });
    expect(merged.rl.kl).toEqual({ estimator: "k3", coef: 0.04, in: "loss" });
    expect(merged.rl.betas).toEqual([0.8, 0.9]);
    expect(merged.rl.lr).toBe(3e-4);
    expect(merged.rewards.terms).toHaveLength(1);
    expect(base.rl.kl.coef).toBe(0);
    expect(base.rewards.terms[0].name).toBe("correctness");
  });
});

describe("FIELD_META", () => {
  it("covers every leaf of the default config", () => {
    const c = defaultRunConfig();
    const missing = leafPaths(c).filter((p) => !FIELD_META[p]);
    expect(missing).toEqual([]);
  });

  it("covers leaves of populated arrays and records", () => {
    const c = mergeConfig(defaultRunConfig(), {
      filters: { list: [{ name: "starpo-variance", options: { p: 0.5 } }] },
      stop: { target: { key: "val/acc", value: 0.9 } },
      task: { options: { digits: 3 } },
    });
    for (const p of leafPaths(c)) expect(fieldMeta(p), p).toBeDefined();
    for (const p of ["rewards.terms.0.weight", "filters.list.0.options", "task.options.digits"]) {
      expect(fieldMeta(p), p).toBeDefined();
    }
  });

  it("has no entry for a path that is not in the schema", () => {
    const c = mergeConfig(defaultRunConfig(), { filters: { list: [{ name: "x", options: {} }] } });
    for (const key of Object.keys(FIELD_META)) {
      expect(getPath(c, key.replaceAll("*", "0")), key).not.toBeUndefined();
    }
  });

  it("marks the live and restart knobs of the brief", () => {
    for (const p of [
      "rewards.terms.0.weight",
      "rl.lr",
      "rl.clip_eps_low",
      "rl.kl.coef",
      "rl.entropy_coef",
      "sampling.temperature",
      "sampling.top_p",
      "limits.max_tool_calls",
      "filters.list.0.options",
    ]) {
      expect(fieldMeta(p)?.live, p).toBe(true);
    }
    for (const p of ["model.d_model", "task.name", "seed", "task.template", "rl.group_size"]) {
      expect(fieldMeta(p)?.live, p).toBe(false);
    }
  });

  it("lists options that the schema accepts (in the default config or the field's activeWhen context)", () => {
    const c = defaultRunConfig();
    for (const [path, meta] of Object.entries(FIELD_META)) {
      if (!meta.options || path.includes("*")) continue;
      let ctx = c; // model.dtype f16 needs LoRA: its context
      for (const [p, v] of Object.entries(meta.activeWhen ?? {})) ctx = setPath(ctx, p, v);
      for (const o of meta.options) {
        const ok = parseRunConfig(setPath(c, path, o)).ok || parseRunConfig(setPath(ctx, path, o)).ok;
        expect(ok, `${path}=${o}`).toBe(true);
      }
    }
  });
});

describe("getPath / setPath", () => {
  it("reads and writes nested and indexed paths without mutating", () => {
    const c = defaultRunConfig();
    expect(getPath(c, "rl.kl.estimator")).toBe("k3");
    expect(getPath(c, "rewards.terms.0.weight")).toBe(1);
    expect(getPath(c, "rl.nope.deeper")).toBeUndefined();
    const d = setPath(c, "rewards.terms.0.weight", 2);
    expect(d.rewards.terms[0].weight).toBe(2);
    expect(c.rewards.terms[0].weight).toBe(1);
    expect(() => setPath(c, "rl.lr.x", 1)).toThrow(/rl.lr: is not an object/);
  });
});

describe("applyEdit", () => {
  const c: RunConfig = defaultRunConfig();

  it("applies a live edit", () => {
    const r = applyEdit(c, { phase: "rl", step: 5, path: "rl.kl.coef", value: 0.01 });
    expect(r.ok && r.config.rl.kl.coef).toBe(0.01);
    const w = applyEdit(c, { phase: "rl", step: 5, path: "rewards.terms.0.weight", value: 0.5 });
    expect(w.ok && w.config.rewards.terms[0].weight).toBe(0.5);
  });

  it("refuses restart-only and unknown fields", () => {
    expect(applyEdit(c, { phase: "rl", step: 1, path: "model.d_model", value: 64 })).toEqual({
      ok: false,
      error: "model.d_model: needs a restart (not a live knob)",
    });
    expect(applyEdit(c, { phase: "rl", step: 1, path: "rl.group_size", value: 4 }).ok).toBe(false);
    expect(applyEdit(c, { phase: "rl", step: 1, path: "rl.bogus", value: 4 })).toEqual({
      ok: false,
      error: "rl.bogus: unknown field",
    });
  });

  it("validates the result and names the field", () => {
    expect(applyEdit(c, { phase: "rl", step: 1, path: "rl.clip_eps_low", value: 2 })).toEqual({
      ok: false,
      error: "rl.clip_eps_low: must be <= 1",
    });
    expect(applyEdit(c, { phase: "rl", step: 1, path: "rewards.terms.0.bogus", value: 1 })).toEqual({
      ok: false,
      error: "rewards.terms.0.bogus: unknown field",
    });
    expect(applyEdit(c, { phase: "rl", step: -1, path: "rl.lr", value: 1e-4 }).ok).toBe(false);
  });

  it("replays a list of edits in order", () => {
    const r = applyEdits(c, [
      { phase: "rl", step: 1, path: "rl.lr", value: 1e-4 },
      { phase: "rl", step: 3, path: "rl.lr", value: 5e-5 },
      { phase: "rl", step: 3, path: "sampling.temperature", value: 0.7 },
    ]);
    expect(r.ok && [r.config.rl.lr, r.config.sampling.temperature]).toEqual([5e-5, 0.7]);
  });
});

describe("migrateConfig", () => {
  it("passes current and version-less input through", () => {
    const v2 = { version: 2, seed: 7 };
    expect(migrateConfig(v2)).toEqual(v2);
    expect(migrateConfig({ seed: 7 })).toEqual({ seed: 7 });
    expect(CONFIG_VERSION).toBe(2);
  });

  it("1 -> 2: a version-1 run keeps the raw-key split it was made with", () => {
    expect(migrateConfig({ version: 1, seed: 7 })).toEqual({
      version: 2,
      seed: 7,
      task: { split_version: 1 },
    });
    const r = parseRunConfig({ version: 1, task: { name: "arithmetic", eval_size: 5 } });
    expect(r.ok && r.config.task).toMatchObject({ split_version: 1, eval_size: 5 });
    const now = parseRunConfig({ task: { eval_size: 5 } });
    expect(now.ok && now.config.task.split_version).toBe(2);
  });

  it("runs the step chain from an old version to the latest", () => {
    const steps = {
      1: (r: Record<string, unknown>) => ({ ...r, version: 2, renamed: r.old }),
      2: (r: Record<string, unknown>) => ({ ...r, version: 3 }),
    };
    expect(migrateWith({ version: 1, old: 5 }, steps, 3)).toEqual({ version: 3, old: 5, renamed: 5 });
    expect(migrateWith({ version: 2 }, steps, 3)).toEqual({ version: 3 });
    expect(() => migrateWith({ version: 1 }, { 1: (r) => r }, 2)).toThrow(/did not set version 2/);
    expect(() => migrateWith({ version: 1 }, {}, 2)).toThrow(/unknown config version 1/);
  });

  it("names an unknown version", () => {
    expect(() => migrateConfig({ version: 99 })).toThrow(/unknown config version 99/);
    expect(() => migrateConfig({ version: "1" })).toThrow(/unknown config version "1"/);
    expect(errorsOf({ version: 0 })).toEqual([
      "version: unknown config version 0 (this lab reads versions 1..2)",
    ]);
  });
});

describe("recipes", () => {
  it("every recipe is a valid config", () => {
    for (const name of Object.keys(RECIPES)) expect(() => recipeConfig(name), name).not.toThrow();
    expect(recipeConfig("demo")).toEqual(defaultRunConfig());
  });

  it("recipes set their method's knobs and keep the rest", () => {
    const d = recipeConfig("dapo");
    expect(d.rl.clip_eps_high).toBe(0.28);
    expect(d.filters.refill).toBe("resample");
    expect(d.rl.group_size).toBe(8);
    expect(recipeConfig("dr-grpo").rl.loss_agg).toBe("seq-mean-token-sum-norm");
    expect(recipeConfig("grpo", { rl: { kl: { coef: 0.001 } } }).rl.kl).toEqual({
      estimator: "k3",
      coef: 0.001,
      in: "loss",
    });
  });

  it("names the recipe and the field on errors", () => {
    expect(() => recipeConfig("nope")).toThrow(/unknown recipe "nope"/);
    expect(() => recipeConfig("ppo", { rl: { lambda: 2 } })).toThrow(/recipe ppo:\nrl.lambda: must be <= 1/);
  });
});

describe("task.options are checked where the config is parsed", () => {
  it("parseRunConfig and encodeLink refuse task.options {digts: 3}, naming the option", async () => {
    const bad = parseRunConfig({ task: { options: { digts: 3 } } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors[0].path).toBe("task.options.digts");
    if (!bad.ok) expect(bad.errors[0].message).toMatch(/^unknown option/);
    // A near miss is named: frozenlake's size.
    const near = parseRunConfig({ task: { name: "frozenlake", options: { sise: 4 } } });
    expect(!near.ok && near.errors[0].message).toMatch(/did you mean size\?/);
    const range = parseRunConfig({ task: { name: "frozenlake", options: { size: 1.5 } } });
    expect(!range.ok && range.errors).toEqual([{ path: "task.options.size", message: "must be an integer" }]);
    await expect(
      encodeLink({ config: mergeConfig(defaultRunConfig(), { task: { options: { digts: 3 } } }) }),
    ).rejects.toThrow(/task\.options\.digts: unknown option/);
    // Good options pass.
    expect(parseRunConfig({ task: { name: "frozenlake", options: { size: 4 } } }).ok).toBe(true);
  });
});
