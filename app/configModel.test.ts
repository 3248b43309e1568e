// Tests of the config panel's model: `npx vitest run app/configModel.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig, setPath, validateRunConfig } from "../config";
import { VOCAB_SIZE } from "../model/tokenizer";
import {
  applyQuery,
  buildFieldSpecs,
  configDiff,
  type FormState,
  fieldForError,
  formatDiff,
  formErrors,
  fromSlider,
  groupFields,
  paramCountOf,
  paramsText,
  parseFieldInput,
  planChange,
  queryFor,
  SLIDER_STEPS,
  sliderScale,
  toSlider,
  typeIntoField,
} from "./configModel";

const specs = buildFieldSpecs();
const spec = (p: string) => specs.find((s) => s.path === p)!;
const fresh = (): FormState => ({ config: defaultRunConfig(), pending: {} });

describe("field specs", () => {
  it("covers every group with the right input kinds", () => {
    expect(spec("rl.lr").kind).toBe("number");
    expect(spec("rl.lr").meta.live).toBe(true);
    expect(spec("model.layers").integer).toBe(true);
    expect(spec("model.layers").meta.live).toBe(false);
    expect(spec("rl.advantage").kind).toBe("enum");
    expect(spec("model.tied_embeddings").kind).toBe("boolean");
    expect(spec("rl.dual_clip_c")).toMatchObject({ kind: "number", nullable: true });
    expect(spec("sft.init_checkpoint")).toMatchObject({ kind: "string", nullable: true });
    expect(spec("rewards.terms").kind).toBe("json");
    expect(spec("stop.target").kind).toBe("json");
    expect(spec("rewards.custom_js").kind).toBe("text");
    expect(specs.some((s) => s.path === "version")).toBe(false);
    expect(groupFields(specs).map((g) => g.group)).toEqual([
      "run",
      "task",
      "rewards",
      "algorithm",
      "filters",
      "sampling",
      "limits",
      "model",
      "sft",
    ]);
  });

  it("parses typed text per kind", () => {
    expect(parseFieldInput(spec("rl.lr"), "1e-3")).toEqual({ ok: true, value: 0.001 });
    expect(parseFieldInput(spec("rl.lr"), "abc")).toEqual({ ok: false, error: "must be a number" });
    expect(parseFieldInput(spec("model.layers"), "2.5")).toEqual({ ok: false, error: "must be an integer" });
    expect(parseFieldInput(spec("rl.dual_clip_c"), "")).toEqual({ ok: true, value: null });
    expect(parseFieldInput(spec("stop.target"), '{"key":"acc/mean","value":0.9}')).toEqual({
      ok: true,
      value: { key: "acc/mean", value: 0.9 },
    });
    expect(parseFieldInput(spec("stop.target"), "{oops").ok).toBe(false);
  });
});

describe("form errors by dotted path", () => {
  it("keeps a typing error's text and names the field, leaving the config valid", () => {
    const s = typeIntoField(fresh(), spec("rl.lr"), "fast");
    expect(s.pending["rl.lr"]).toBe("fast");
    expect((s.config as RunConfig).rl.lr).toBe(3e-4);
    expect(formErrors(s, specs)).toEqual({ "rl.lr": "must be a number" });
    const fixed = typeIntoField(s, spec("rl.lr"), "0.01");
    expect(fixed.pending).toEqual({});
    expect(formErrors(fixed, specs)).toEqual({});
  });

  it("reports the schema's range errors and cross-field rules at their paths", () => {
    let s = typeIntoField(fresh(), spec("rl.lr"), "2");
    expect(formErrors(s, specs)).toEqual({ "rl.lr": "must be <= 1" });
    s = typeIntoField(fresh(), spec("rl.minibatches"), "7");
    expect(formErrors(s, specs)["rl.minibatches"]).toMatch(/must divide prompts_per_step\*group_size \(64\)/);
    s = typeIntoField(fresh(), spec("model.heads"), "3");
    expect(formErrors(s, specs)["model.heads"]).toBe("must divide model.d_model");
  });

  it("routes errors inside arrays to their field", () => {
    const s = typeIntoField(fresh(), spec("rewards.terms"), '[{"name":"correctness","weight":"x"}]');
    const errors = formErrors(s, specs);
    expect(Object.keys(errors)).toEqual(["rewards.terms.0.weight"]);
    expect(fieldForError("rewards.terms.0.weight", specs)).toBe("rewards.terms");
    expect(fieldForError("rl.kl.coef", specs)).toBe("rl.kl.coef");
  });
});

describe("changes while a run goes", () => {
  const c = defaultRunConfig();
  it("sends live knobs as edits, refuses invalid ones, asks a restart for the rest", () => {
    expect(planChange(null, "rl.lr", 0.001)).toEqual({ kind: "idle" });
    expect(planChange(c, "rl.lr", 0.001, 4)).toEqual({ kind: "live", path: "rl.lr", value: 0.001 });
    expect(planChange(c, "rl.lr", 5, 4)).toEqual({
      kind: "live-invalid",
      path: "rl.lr",
      error: "must be <= 1",
    });
    expect(planChange(c, "model.layers", 4, 4)).toEqual({ kind: "restart", path: "model.layers" });
    expect(planChange(c, "rewards.terms.0.weight", 2, 4).kind).toBe("live");
    expect(planChange(c, "rewards.custom_js", "function reward(){return 1}", 4).kind).toBe("live");
  });
});

describe("diffs and URL state", () => {
  it("diffs leaf paths and formats the Changes column", () => {
    const a = defaultRunConfig();
    const b = defaultRunConfig();
    b.rl.lr = 0.001;
    b.rl.kl.coef = 0.05;
    b.filters.list = [{ name: "dapo-dynamic-sampling", options: {} }];
    const d = configDiff(a, b);
    expect(d.map((x) => x.path)).toEqual(["rl.kl.coef", "rl.lr", "filters.list"]);
    expect(formatDiff(d, 2)).toBe("rl.kl.coef 0→0.05, rl.lr 0.0003→0.001, +1 more");
    expect(formatDiff([])).toBe("—");
    expect(formatDiff([{ path: "seed", from: 1234, to: 1235 }])).toBe("seed 1234→1235");
  });

  it("round-trips a config through the query, holding only differences", () => {
    const base = defaultRunConfig();
    const c = defaultRunConfig();
    c.rl.kl.coef = 0.02;
    c.task.eval_every = 2;
    const q = queryFor(c, base, "ci-tiny");
    expect(q).toBe("preset=ci-tiny&task.eval_every=2&rl.kl.coef=0.02");
    const back = applyQuery(base, `?${q}`);
    expect(back.preset).toBe("ci-tiny");
    expect(back.notices).toEqual([]);
    expect(back.config).toEqual(c);
  });

  it("validates URL values together, so related values may change at once", () => {
    const r = applyQuery(
      defaultRunConfig(),
      "?sft.steps=10&sft.warmup_steps=2&model.d_model=32&model.heads=2",
    );
    expect(r.notices).toEqual([]);
    expect(r.config.sft).toMatchObject({ steps: 10, warmup_steps: 2 });
    // sft.steps alone breaks sft.warmup_steps (50 > 10): a cross-field error names another field.
    const bad = applyQuery(defaultRunConfig(), "?sft.steps=10");
    expect(bad.config.sft.steps).toBe(600);
    expect(bad.notices[0]).toMatch(/^sft\.steps: sft\.warmup_steps: must be <= sft\.steps/);
  });

  it("keeps the default for an unknown or invalid key, with a notice", () => {
    const base = defaultRunConfig();
    const r = applyQuery(base, "?rl.nope=1&rl.lr=7&sampling.temperature=0.5&_smoothing=0.9");
    expect(r.config.rl.lr).toBe(base.rl.lr);
    expect(r.config.sampling.temperature).toBe(0.5);
    expect(r.notices).toHaveLength(2);
    expect(r.notices[0]).toMatch(/^rl\.nope: unknown field/);
    expect(r.notices[1]).toMatch(/^rl\.lr: .*must be <= 1/);
    // The key is named once, and a word where a number belongs is named.
    expect(applyQuery(base, "?rl.lr=banana").notices).toEqual(["rl.lr: must be a number (kept the default)"]);
  });
});

describe("sliders", () => {
  it("are log-spaced for learning rates and KL, linear for bounded fields, absent otherwise", () => {
    const lr = sliderScale(spec("rl.lr"))!;
    expect(lr).toEqual({ min: 1e-6, max: 1e-1, log: true });
    expect(toSlider(1e-6, lr)).toBe(0);
    expect(toSlider(1e-1, lr)).toBe(SLIDER_STEPS);
    expect(toSlider(1e-4, lr)).toBe(400); // two of five decades
    expect(fromSlider(400, lr)).toBe(1e-4);
    expect(toSlider(0, sliderScale(spec("rl.kl.coef"))!)).toBe(0);
    const clip = sliderScale(spec("rl.clip_eps_low"))!;
    expect(clip).toEqual({ min: 0, max: 1, log: false });
    expect(fromSlider(250, clip)).toBe(0.25);
    expect(fromSlider(500, sliderScale(spec("model.layers"))!, true)).toBe(33);
    expect(sliderScale(spec("seed"))).toBeNull();
    expect(sliderScale(spec("rl.advantage"))).toBeNull();
  });
});

describe("parameter count", () => {
  it("counts the model's own layout (by hand: one GELU block, d 8, context 16, tied)", () => {
    const c = mergeConfig(defaultRunConfig(), { model: { layers: 1, d_model: 8, heads: 1, context: 16 } });
    // wte V*8, wpe 16*8; block: ln_1 16, qkv 3*64+24, proj 64+8, ln_2 16, fc 32*8+32, fc proj 8*32+8; ln_f 16.
    const block = 16 + (3 * 64 + 24) + (64 + 8) + 16 + (32 * 8 + 32) + (8 * 32 + 8);
    expect(paramCountOf(c)).toBe(VOCAB_SIZE * 8 + 16 * 8 + block + 16);
    // Untied: an lm_head of V*8 more; rope: no wpe; rmsnorm: no norm biases (3 norms of 8).
    const untied = mergeConfig(c, { model: { tied_embeddings: false } });
    expect(paramCountOf(untied)).toBe((paramCountOf(c) ?? 0) + VOCAB_SIZE * 8);
    const rope = mergeConfig(c, { model: { positional: "rope", norm: "rmsnorm" } });
    expect(paramCountOf(rope)).toBe((paramCountOf(c) ?? 0) - 16 * 8 - 3 * 8);
    expect(paramsText(defaultRunConfig())).toMatch(/^≈0\.\d\dM params$/);
    expect(paramCountOf(mergeConfig(c, { model: { heads: 3 } }))).toBeNull();
  });
});

describe("integer fields come from the schema ", () => {
  it("the page refuses 2.5 for every integer field of the schema, and only there", () => {
    const ints = specs.filter((s) => s.kind === "number" && s.integer).map((s) => s.path);
    // The four that the hand list missed are among them.
    for (const p of ["seeds", "model.lora.rank", "task.dev_size", "rl.micro_batch_size"])
      expect(ints).toContain(p);
    for (const p of ints) {
      const r = parseFieldInput(spec(p), "2.5");
      expect(r, p).toEqual({ ok: false, error: "must be an integer" });
      // The schema agrees: 2.5 there is refused by validation too.
      expect(validateRunConfig(setPath(defaultRunConfig(), p, 2.5)).ok, p).toBe(false);
    }
    // A real-valued field still takes 2.5 (where its range allows).
    expect(spec("rl.value_coef").integer).toBe(false);
    expect(parseFieldInput(spec("rl.value_coef"), "2.5").ok).toBe(true);
  });
});
