// Share links: round trip over random valid configs and edits, the committed v1 fixture,
// the length budget, named errors, and 1000 fuzzed links that must never make the decoder
// throw. Run: `npx vitest run config/link`.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyEdits, type ConfigEdit, EDIT_PHASES, type EditPhase, getPath, setPath } from "./edit.ts";
import {
  base64ToBytes,
  bytesToBase64,
  configDiff,
  crc32,
  decodeLink,
  deflateRaw,
  encodeLink,
  hasLink,
  jsonNesting,
  LINK_BUDGET_CHARS,
  LINK_VERSION,
  sealLink,
  shareUrl,
} from "./link.ts";
import { FIELD_META, leafPaths } from "./meta.ts";
import { parseRunConfig } from "./migrate.ts";
import { RECIPES, recipeConfig } from "./presets.ts";
import { parseRecipeFile } from "./recipe-file.ts";
import { defaultRunConfig, type RunConfig, RunConfigSchema } from "./schema.ts";

const DEFAULTS = defaultRunConfig();
const LEAVES = leafPaths(DEFAULTS).filter((p) => p !== "version");
const LIVE_NUMERIC = Object.entries(FIELD_META)
  .filter(([p, m]) => m.live && typeof getPath(DEFAULTS, p) === "number")
  .map(([p]) => p);

/** A candidate new value for a leaf, from two random draws; the caller keeps it only if valid. */
function perturb(path: string, current: unknown, u: number, k: number, s: string): unknown {
  const meta = FIELD_META[path];
  if (meta?.options) return meta.options[k % meta.options.length];
  if (typeof current === "boolean") return !current;
  if (typeof current === "string") return s.length ? s : current;
  if (Array.isArray(current)) {
    // + 0 turns -0 into 0: JSON (and so a link) has no -0, and toEqual tells them apart.
    if (current.every((x) => typeof x === "number")) return current.map((x) => Math.min(0.999, x * u) + 0);
    if (current.every((x) => typeof x === "string")) return [s || "b", ...current].slice(0, 1 + (k % 3));
    return current.slice(0, 1 + (k % Math.max(1, current.length)));
  }
  if (current === null && path === "stop.target") return { key: "val/acc", value: u };
  if (path.endsWith("options")) return { x: k, note: s };
  const lo = meta?.min ?? 0;
  const hi = meta?.max ?? Math.max(10, typeof current === "number" ? current * 4 : 10);
  const x = lo + u * (hi - lo);
  return (k % 2 === 0 ? Math.round(x) : x) + 0;
}

function tryPatch(config: RunConfig, path: string, value: unknown): RunConfig {
  const r = RunConfigSchema.safeParse(setPath(config, path, value));
  return r.success ? r.data : config;
}

const perturbation = fc.record({
  path: fc.constantFrom(...LEAVES),
  u: fc.double({ min: 0, max: 1, noNaN: true }),
  k: fc.nat(1000),
  s: fc.string({ unit: "binary", maxLength: 12 }),
});
const arbConfig = fc
  .tuple(fc.constantFrom(...Object.keys(RECIPES)), fc.array(perturbation, { maxLength: 12 }))
  .map(([recipe, ps]) => {
    let c = recipeConfig(recipe);
    for (const p of ps) c = tryPatch(c, p.path, perturb(p.path, getPath(c, p.path), p.u, p.k, p.s));
    return c;
  });
const arbEditDraws = fc.array(
  fc.record({
    phase: fc.constantFrom(...EDIT_PHASES),
    step: fc.nat(500),
    path: fc.constantFrom(...LIVE_NUMERIC),
    u: fc.double({ min: 0, max: 1, noNaN: true }),
    k: fc.nat(1000),
  }),
  { maxLength: 10 },
);

/** Keeps the draws that stay valid when applied in order, like a run's live edits. */
function validEdits(
  config: RunConfig,
  draws: { phase: EditPhase; step: number; path: string; u: number; k: number }[],
) {
  const edits: ConfigEdit[] = [];
  let cur = config;
  for (const d of draws) {
    const value = perturb(d.path, getPath(cur, d.path), d.u, d.k, "");
    const e: ConfigEdit = { phase: d.phase, step: d.step, path: d.path, value };
    const r = applyEdits(cur, [e]);
    if (r.ok) {
      edits.push(e);
      cur = r.config;
    }
  }
  return edits;
}

describe("share link round trip", () => {
  it("a default config is a short link that decodes to the defaults", async () => {
    const link = await encodeLink({ config: DEFAULTS });
    expect(link).toMatch(/^#run=v2\.\d+\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$/);
    expect(link.length).toBeLessThan(60);
    const r = await decodeLink(link);
    expect(r).toEqual({ ok: true, config: DEFAULTS, edits: [], version: LINK_VERSION });
  });

  it("stores only the non-default leaves", () => {
    const c = setPath(setPath(DEFAULTS, "rl.clip_eps_high", 0.28), "seed", 7);
    expect(configDiff(c, DEFAULTS)).toEqual({ "rl.clip_eps_high": 0.28, seed: 7 });
  });

  it("random valid configs with random edits and names come back identical", async () => {
    await fc.assert(
      fc.asyncProperty(arbConfig, arbEditDraws, fc.option(fc.string({ maxLength: 20 })), async (c, d, n) => {
        const edits = validEdits(c, d);
        const name = n || undefined;
        const link = await encodeLink({ config: c, edits, name });
        const r = await decodeLink(`https://lab.example/app/?x=1${link}`);
        expect(r.ok ? "" : r.error).toBe("");
        if (!r.ok) return;
        expect(r.config).toEqual(c);
        expect(r.edits).toEqual(edits);
        expect(r.name).toEqual(name);
      }),
      { numRuns: 100 },
    );
  });

  it("accepts a full URL, the hash, the bare parameter and other hash parameters", async () => {
    const config = recipeConfig("dapo", { seed: 99 });
    const link = await encodeLink({ config });
    for (const form of [
      link,
      link.slice(1),
      `http://localhost:5173/${link}`,
      `  https://x.y/#_hide=1&${link.slice(1)}&smoothing=0.6\n`,
      await shareUrl({ config }, "https://lab.example/p?q=1#old"),
    ]) {
      const r = await decodeLink(form);
      expect(r.ok && r.config).toEqual(config);
    }
    expect(hasLink(link)).toBe(true);
    expect(hasLink("https://lab.example/")).toBe(false);
  });

  it("refuses to encode an invalid config or edit", async () => {
    const bad = setPath(DEFAULTS, "rl.clip_eps_low", 7);
    await expect(encodeLink({ config: bad })).rejects.toThrow(/rl\.clip_eps_low/);
    await expect(
      encodeLink({ config: DEFAULTS, edits: [{ phase: "rl", step: 1, path: "model.layers", value: 2 }] }),
    ).rejects.toThrow(/model\.layers/);
  });
});

describe("v1 fixture", () => {
  it("the committed v1 link keeps decoding to the same config, edits and name", async () => {
    const link = readFileSync(new URL("./fixtures/link-v1.txt", import.meta.url), "utf8");
    const want = JSON.parse(
      readFileSync(new URL("./fixtures/link-v1.expected.json", import.meta.url), "utf8"),
    );
    const r = await decodeLink(link);
    // If this fails after a default changed: old links store only differences from the v1
    // defaults, so bump CONFIG_VERSION, freeze the v1 defaults into LINK_DEFAULTS[1] and add
    // a migration (config/link.ts header), rather than editing the fixture.
    expect(r.ok ? "" : r.error).toBe("");
    if (!r.ok) return;
    expect(r.version).toBe(1);
    // The fixture holds the version-1 config; decoding migrates it (config/migrate.ts), so
    // it must equal that config parsed the same way: the raw-key split, everything else as
    // it was.
    const migrated = parseRunConfig(want.config);
    if (!migrated.ok) throw new Error("fixture config does not parse");
    expect(r.config).toEqual(migrated.config);
    expect(r.config.task.split_version).toBe(1);
    // Version 1 edits have no phase: the migration rule makes sft.* edits SFT's, the rest RL's.
    expect(r.edits).toEqual(
      want.edits.map((e: ConfigEdit) => ({ ...e, phase: e.path.startsWith("sft.") ? "sft" : "rl" })),
    );
    expect(r.name).toBe(want.name);
  });
});

/** Ten live edits at late steps with awkward floats (17 significant digits): the JSON worst case. */
function tenEdits(config: RunConfig): ConfigEdit[] {
  const edits: ConfigEdit[] = [];
  for (let i = 0; i < 10; i++) {
    const path = LIVE_NUMERIC[(i * 7) % LIVE_NUMERIC.length];
    const cur = getPath(config, path) as number;
    const value = Number.isInteger(cur) ? cur + i + 1 : cur * (1 + Math.PI / (100 + i));
    // value_pretrain: the longest phase name.
    const e: ConfigEdit = { phase: "value_pretrain", step: 100 + 37 * i, path, value };
    if (applyEdits(config, [...edits, e]).ok) edits.push(e);
  }
  return edits;
}

describe("link length budget", () => {
  it(`the quick-demo recipe with 10 edits fits in ${LINK_BUDGET_CHARS} characters`, async () => {
    const text = readFileSync(new URL("../public/recipes/quick-demo.json", import.meta.url), "utf8");
    const r = parseRecipeFile(text, "quick-demo.json");
    if (!r.ok) throw new Error(r.error);
    const edits = tenEdits(r.config);
    expect(edits.length).toBeGreaterThanOrEqual(8);
    const link = await encodeLink({ config: r.config, edits, name: "quick-demo with ten edits" });
    expect(`https://agentic-rl-lab.example/${link}`.length).toBeLessThanOrEqual(LINK_BUDGET_CHARS);
    expect(link.length).toBeLessThan(LINK_BUDGET_CHARS / 2); // measured ~600: ample headroom
  });

  it(`every named recipe with 10 edits fits in ${LINK_BUDGET_CHARS} characters`, async () => {
    const lengths: Record<string, number> = {};
    for (const name of Object.keys(RECIPES)) {
      const config = recipeConfig(name, { seed: 3_999_999_999 });
      const edits = tenEdits(config);
      expect(edits.length).toBeGreaterThanOrEqual(8);
      const link = await encodeLink({ config, edits, name: `${name} with ten edits` });
      lengths[name] = `https://agentic-rl-lab.example/${link}`.length;
    }
    const worst = Math.max(...Object.values(lengths));
    expect(worst, JSON.stringify(lengths)).toBeLessThanOrEqual(LINK_BUDGET_CHARS);
  });
});

describe("bad links are named", () => {
  const good = encodeLink({ config: recipeConfig("grpo", { seed: 5 }) });

  it("not a lab link", async () => {
    for (const s of ["", "https://lab.example/", "#smoothing=0.6", "hello"]) {
      const r = await decodeLink(s);
      expect(r.ok ? "" : r.error).toMatch(/^not a lab link/);
    }
    expect(await decodeLink("#run=x1.2.3")).toMatchObject({ ok: false, error: /not a lab link/ });
  });

  it("truncated", async () => {
    const link = await good;
    for (const cut of [link.length - 1, link.length - 20, 12, 9, 6, 5]) {
      const r = await decodeLink(link.slice(0, cut));
      expect(r.ok ? "" : r.error).toMatch(/^truncated link/);
    }
  });

  it("checksum mismatch", async () => {
    const link = await good;
    const i = link.length - 5;
    const flipped = link.slice(0, i) + (link[i] === "A" ? "B" : "A") + link.slice(i + 1);
    expect(await decodeLink(flipped)).toMatchObject({ ok: false, error: /^checksum mismatch/ });
  });

  it("unknown version N", async () => {
    const link = await good;
    const r = await decodeLink(link.replace("v2.", "v7."));
    expect(r.ok ? "" : r.error).toMatch(/^unknown link version 7 /);
    expect(await decodeLink(link.replace("v2.", "v0."))).toMatchObject({ error: /unknown link version 0/ });
  });

  it("values nested 10,000 deep are refused by depth, not by a host's stack", async () => {
    // written as text: the host's own JSON.stringify cannot reach that depth either
    const text = `{"d":{"task.options":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}}`;
    const packed = bytesToBase64(await deflateRaw(new TextEncoder().encode(text)), true);
    const crc = crc32(packed).toString(16).padStart(8, "0");
    const r = await decodeLink(`#run=v${LINK_VERSION}.${packed.length}.${crc}.${packed}`);
    expect(r.ok ? "" : r.error).toMatch(
      /^corrupt link payload: its values nest 1000\d levels deep; a link's nest at most 64/,
    );
    expect(jsonNesting('{"a":[1,{"b":"[[[{"}],"c":"\\"{"}')).toBe(3);
  });

  it("invalid field names the path and the rule", async () => {
    const r = await decodeLink(await sealLink({ d: { "rl.clip_eps_low": 5 } }));
    expect(r.ok ? "" : r.error).toBe("invalid field rl.clip_eps_low: must be <= 1");
    const u = await decodeLink(await sealLink({ d: { "rl.clip_eps_lo": 0.1 } }));
    expect(u.ok ? "" : u.error).toBe("invalid field rl.clip_eps_lo: unknown field");
    const s = await decodeLink(await sealLink({ d: { "seed.x": 1 } }));
    expect(s.ok ? "" : s.error).toMatch(/^invalid field seed\.x: /);
  });

  it("invalid edit names its index, step and path", async () => {
    const r = await decodeLink(
      await sealLink({
        d: {},
        e: [
          ["rl", 2, "rl.lr", 0.001],
          ["rl", 4, "rl.lr", 5],
        ],
      }),
    );
    expect(r.ok ? "" : r.error).toBe("invalid edit 1 (rl step 4, rl.lr): rl.lr: must be <= 1");
    const restart = await decodeLink(await sealLink({ d: {}, e: [["sft", 1, "model.layers", 2]] }));
    expect(restart.ok ? "" : restart.error).toMatch(
      /^invalid edit 0 \(sft step 1, model\.layers\): .*restart/,
    );
    const phase = await decodeLink(await sealLink({ d: {}, e: [["warmup", 1, "rl.lr", 0.1]] }));
    expect(phase.ok ? "" : phase.error).toBe(
      'invalid edit 0: phase "warmup" is not one of sft, value_pretrain, rl',
    );
    const shape = await decodeLink(await sealLink({ d: {}, e: [[1, "rl.lr", 0.1]] }));
    expect(shape.ok ? "" : shape.error).toBe("invalid edit 0: not [phase, step, path, value]");
  });

  it("prototype paths are refused, not followed", async () => {
    for (const path of ["__proto__.polluted", "rl.constructor.x", "constructor.prototype.polluted"]) {
      const r = await decodeLink(await sealLink({ d: { [path]: 1 } }));
      expect(r.ok ? "" : r.error).toMatch(/^invalid field .*bad path/);
      const e = await decodeLink(await sealLink({ d: {}, e: [["rl", 1, path, 1]] }));
      expect(e.ok ? "" : e.error).toMatch(/^invalid edit 0: bad path/);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("payloads that pass the checksum but are not lab payloads", async () => {
    const cases: [unknown, RegExp][] = [
      [[1, 2], /not an object/],
      [{ d: 1 }, /config diff \(d\)/],
      [{ d: {}, e: {} }, /edits \(e\)/],
      [{ d: {}, n: 3 }, /name \(n\)/],
      [{ d: {}, z: 1 }, /unknown part "z"/],
      [{ d: {}, e: [["rl", -1, "rl.lr", 0.1]] }, /invalid edit 0: step -1/],
    ];
    for (const [payload, re] of cases) {
      const r = await decodeLink(await sealLink(payload));
      expect(r.ok ? "" : r.error).toMatch(re);
    }
    // Random bytes with a correct length and checksum: decompression or JSON fails, named.
    const junk = bytesToBase64(new Uint8Array([0xff, 0xfe, 1, 2, 3, 250, 9]), true);
    const sealed = `#run=v2.${junk.length}.${crc32(junk).toString(16).padStart(8, "0")}.${junk}`;
    expect(await decodeLink(sealed)).toMatchObject({ ok: false, error: /^corrupt link payload/ });
  });
});

describe("base64 and crc32", () => {
  it("round trips bytes in both alphabets", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (bytes, url) => {
        const text = bytesToBase64(bytes, url);
        expect(base64ToBytes(text)).toEqual(bytes);
        if (!url) expect(text).toBe(Buffer.from(bytes).toString("base64"));
      }),
    );
  });

  it("crc32 matches the standard check value", () => {
    expect(crc32("123456789")).toBe(0xcbf43926);
  });
});

// ---------------------------------------------------------------------------------------------
// 1000 fuzzed links: truncations, flipped characters, swapped versions, inserted and deleted
// characters, random strings, and hand-made payloads that pass the checksum.

const CHARS = "ABCxyz019-_.=#&%/ \u00e9\u{1F600}\u0000";
const arbMutation = fc.oneof(
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), ch: fc.constantFrom(...CHARS) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), ch: fc.constantFrom(...CHARS) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("version" as const), v: fc.oneof(fc.nat(20), fc.string({ maxLength: 4 })) }),
  fc.record({ kind: fc.constant("random" as const), s: fc.string({ unit: "binary", maxLength: 80 }) }),
  fc.record({ kind: fc.constant("prefixed" as const), s: fc.string({ maxLength: 80 }) }),
  fc.record({ kind: fc.constant("payload" as const), json: fc.jsonValue({ maxDepth: 3 }) }),
  fc.record({
    kind: fc.constant("field" as const),
    path: fc.constantFrom(...LEAVES, "rl.nope", "a.b.c", "seed.x", "__proto__.y"),
    value: fc.jsonValue({ maxDepth: 2 }),
  }),
);
type Mutation = typeof arbMutation extends fc.Arbitrary<infer T> ? T : never;

async function mutate(link: string, m: Mutation): Promise<string> {
  const at = (n: number) => n % (link.length + 1);
  switch (m.kind) {
    case "truncate":
      return link.slice(0, at(m.at));
    case "flip":
      return link.slice(0, at(m.at)) + m.ch + link.slice(at(m.at) + 1);
    case "insert":
      return link.slice(0, at(m.at)) + m.ch + link.slice(at(m.at));
    case "delete":
      return link.slice(0, at(m.at)) + link.slice(at(m.at) + 1);
    case "version":
      return link.replace(/^#run=v2/, `#run=v${m.v}`);
    case "random":
      return m.s;
    case "prefixed":
      return `#run=${m.s}`;
    case "payload":
      return sealLink(m.json);
    case "field":
      return sealLink({ d: { [m.path]: m.value }, e: [["rl", 1, m.path, m.value]] });
  }
}

describe("fuzzed links", () => {
  it("1000 mutated links: the decoder never throws, every failure has a message", async () => {
    const bases = await Promise.all([
      encodeLink({ config: DEFAULTS }),
      encodeLink({
        config: recipeConfig("dapo", { seed: 1 }),
        edits: [{ phase: "rl", step: 3, path: "rl.lr", value: 1e-4 }],
      }),
      encodeLink({ config: recipeConfig("gigpo"), name: "n" }),
    ]);
    let failures = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...bases), arbMutation, async (base, m) => {
        const link = await mutate(base, m);
        const r = await decodeLink(link);
        if (r.ok) {
          // A mutation that still decodes must give a valid config and valid edits.
          expect(RunConfigSchema.safeParse(r.config).success).toBe(true);
          expect(applyEdits(r.config, r.edits).ok).toBe(true);
        } else {
          failures++;
          expect(typeof r.error).toBe("string");
          expect(r.error.length).toBeGreaterThan(10);
          expect(r.error).not.toMatch(/^unreadable link/);
        }
      }),
      { numRuns: 1000 },
    );
    expect(failures).toBeGreaterThan(500);
  });
});
