// Untrusted model files: a seeded fuzz over every file a model source supplies (the tiny Qwen3 of
// e2e/tiny-hf.ts: config.json, model.safetensors, a 1,050-id real-format tokenizer.json and
// tokenizer_config.json with Qwen3's template; the sharded tiny llama's index), each mutation
// (byte flips, truncations, field swaps, huge numbers) ending in success or a ModelFileError
// naming the file, with the heap bounded; then the named cases of the issue one by one.
// Run: npx vitest run --project unit model/untrusted.test.ts
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsByteStore } from "../cli/model-store";
import { tinyHfModel } from "../e2e/tiny-hf";
import { HF_CONFIG_MAX, hfModelConfig } from "./hf/config";
import { nodeModelDir } from "./hf/node";
import { blobModelDir, loadHfModel, type ModelDir } from "./hf/read";
import { type ByteSource, MAX_SAFETENSORS_HEADER, openSafetensors, safetensorsHead } from "./safetensors";
import { checkRevision, parseModelSource } from "./source";
import { checkModelFiles, ModelFileError } from "./untrusted";

const HF = new URL("./golden/hf/", import.meta.url).pathname;
const TINY = tinyHfModel();

/** mulberry32: the fuzz's seeded generator. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)],
  };
}
type Rng = ReturnType<typeof rng>;

const HUGE = [
  1e9,
  1e7,
  2 ** 31,
  2 ** 53,
  2 ** 64,
  1e300,
  -1,
  0,
  0.5,
  -1e9,
  "896",
  "",
  null,
  true,
  [],
  {},
] as const;

function flip(bytes: Uint8Array, r: Rng): Uint8Array {
  const out = bytes.slice();
  for (let k = 1 + r.int(4); k > 0; k--) out[r.int(out.length)] ^= 1 << r.int(8);
  return out;
}
const truncate = (bytes: Uint8Array, r: Rng) => bytes.slice(0, r.int(bytes.length));

/** Every path to a value in a JSON tree (objects and lists), up to `limit` of them at random. */
function paths(x: unknown, r: Rng, limit = 4000): (string | number)[][] {
  const out: (string | number)[][] = [];
  const walk = (v: unknown, p: (string | number)[]) => {
    if (out.length >= limit) return;
    out.push(p);
    if (Array.isArray(v)) {
      const n = v.length;
      for (let k = 0; k < Math.min(n, 8); k++) walk(v[r.int(n)], [...p, r.int(n)]);
    } else if (v && typeof v === "object") {
      for (const [k, c] of Object.entries(v)) walk(c, [...p, k]);
    }
  };
  walk(x, []);
  return out.slice(1);
}
const getAt = (x: unknown, p: (string | number)[]) =>
  p.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)?.[k], x);
function setAt(x: unknown, p: (string | number)[], value: unknown) {
  const parent = getAt(x, p.slice(0, -1)) as Record<string | number, unknown>;
  if (parent && typeof parent === "object") parent[p[p.length - 1]] = value;
}

/** A JSON file mutated structurally: a huge or wrong-typed value, two values swapped, a field dropped. */
function mutateJson(bytes: Uint8Array, r: Rng): Uint8Array {
  const j = JSON.parse(new TextDecoder().decode(bytes));
  const ps = paths(j, r);
  const p = r.pick(ps);
  const kind = r.int(3);
  if (kind === 0) setAt(j, p, r.pick(HUGE));
  else if (kind === 1) {
    const q = r.pick(ps);
    const [a, b] = [structuredClone(getAt(j, p)), structuredClone(getAt(j, q))];
    setAt(j, p, b);
    setAt(j, q, a);
  } else {
    const parent = getAt(j, p.slice(0, -1));
    if (Array.isArray(parent)) parent.splice(Number(p[p.length - 1]), 1);
    else if (parent && typeof parent === "object")
      delete (parent as Record<string, unknown>)[p[p.length - 1]];
  }
  return new TextEncoder().encode(JSON.stringify(j));
}

type Header = Record<string, { shape: unknown; data_offsets: number[]; dtype: unknown }>;

/** The same safetensors bytes with the header JSON edited (the data unchanged). */
function withHeader(bytes: Uint8Array, edit: (h: Header) => void): Uint8Array {
  const len = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len)));
  edit(header);
  const head = safetensorsHead(header);
  const out = new Uint8Array(head.length + bytes.length - 8 - len);
  out.set(head);
  out.set(bytes.subarray(8 + len), head.length);
  return out;
}

/** The safetensors header mutated: a tensor's shape, offsets or dtype, or the length field. */
function mutateSafetensors(bytes: Uint8Array, r: Rng): Uint8Array {
  const kind = r.int(5);
  if (kind === 0) {
    const out = bytes.slice();
    const big = r.pick([
      BigInt(bytes.length),
      BigInt(bytes.length - 7),
      100_000_000n,
      2n ** 63n,
      2n ** 64n - 1n,
    ]);
    new DataView(out.buffer).setBigUint64(0, big, true);
    return out;
  }
  return withHeader(bytes, (header) => {
    const names = Object.keys(header).filter((k) => k !== "__metadata__");
    const e = header[r.pick(names)];
    const other = header[r.pick(names)];
    const size = e.data_offsets[1] - e.data_offsets[0];
    if (kind === 1)
      e.shape = r.pick([[2 ** 31, 2 ** 31, 2 ** 31], [2 ** 53], [-1], [1.5], [1e9, 1e9], "x", []]);
    else if (kind === 2)
      e.data_offsets = r.pick([
        [other.data_offsets[0], other.data_offsets[0] + size],
        [bytes.length, bytes.length + size],
        [e.data_offsets[1], e.data_offsets[0]],
        [0, 2 ** 60],
        [-8, size - 8],
      ]);
    else if (kind === 3) e.dtype = r.pick(["F64", "I8", "F32", "BF16", "Q4", 7]);
    else (header as Record<string, unknown>).__metadata__ = r.pick([{ a: 1 }, [], "x", { format: "pt" }]);
  });
}

function dirOf(name: string, files: Record<string, Uint8Array>): ModelDir {
  return blobModelDir(
    name,
    new Map(Object.entries(files).map(([k, v]) => [k, new Blob([v as Uint8Array<ArrayBuffer>])])),
  );
}

const heap = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/**
 * `n` mutations of `file` of `base`, each checked (and loaded, when it passes): success or a
 * ModelFileError naming a file of the model; the heap never grows by more than 256 MB.
 */
async function fuzz(
  base: Record<string, Uint8Array>,
  file: string,
  n: number,
  seed: number,
  mutate: (b: Uint8Array, r: Rng) => Uint8Array,
): Promise<{ ok: number; refused: Record<string, number> }> {
  const r = rng(seed);
  const start = heap();
  let peak = 0;
  let ok = 0;
  const refused: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const how = r.int(10);
    const bytes = how < 2 ? flip(base[file], r) : how < 3 ? truncate(base[file], r) : mutate(base[file], r);
    const dir = dirOf("m", { ...base, [file]: bytes });
    try {
      const { config } = await checkModelFiles(dir);
      // What passes the check loads (weights bounded by the checked config).
      await loadHfModel(dir, { context: config.context });
      ok++;
    } catch (err) {
      if (!(err instanceof ModelFileError)) throw new Error(`case ${i}: not a ModelFileError: ${err}`);
      // The file refused, or the shard a mutated index names and the folder lacks.
      expect(err.file, `case ${i}: ${err.message}`).toMatch(/^[\w.-]+\.(json|safetensors)$/);
      expect(err.message, `case ${i}`).toContain(err.file);
      refused[err.file] = (refused[err.file] ?? 0) + 1;
    }
    peak = Math.max(peak, heap() - start);
  }
  expect(peak).toBeLessThan(256 * 1024 * 1024);
  return { ok, refused };
}

const tiny = () => Object.fromEntries(Object.entries(TINY).map(([k, v]) => [k, new Uint8Array(v)]));
/** The tiny model without its tokenizer files (optional to the check; the fuzz of the weights and config runs faster without the template's renders). */
function weightsOnly(): Record<string, Uint8Array> {
  const { "tokenizer.json": _, "tokenizer_config.json": __, ...rest } = tiny();
  return rest;
}
function llama(): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const f of readdirSync(`${HF}llama`))
    if (f !== "golden.bin") out[f] = new Uint8Array(readFileSync(`${HF}llama/${f}`));
  return out;
}

describe("fuzz: every file a model source supplies ends in success or a ModelFileError naming it", () => {
  it("the fixtures themselves pass", async () => {
    expect((await checkModelFiles(dirOf("tiny", tiny()))).files).toEqual([
      "config.json",
      "tokenizer.json",
      "tokenizer_config.json",
      "tiny/model.safetensors",
    ]);
    expect((await checkModelFiles(nodeModelDir(`${HF}llama`))).files).toHaveLength(3);
  });

  it("config.json: 300 mutations", async () => {
    const { ok, refused } = await fuzz(weightsOnly(), "config.json", 300, 1, mutateJson);
    expect(refused["config.json"]).toBeGreaterThan(100);
    expect(ok).toBeGreaterThan(10);
  });

  it("tokenizer.json: 200 mutations", async () => {
    // Without the chat template (its renders are tokenizer_config.json's fuzz), so 200 run fast.
    const t = tiny();
    const { chat_template: _, ...cfg } = JSON.parse(new TextDecoder().decode(t["tokenizer_config.json"]));
    t["tokenizer_config.json"] = new TextEncoder().encode(JSON.stringify(cfg));
    const { ok, refused } = await fuzz(t, "tokenizer.json", 200, 2, mutateJson);
    expect(refused["tokenizer.json"]).toBeGreaterThan(50);
    expect(ok).toBeGreaterThan(10);
  });

  it("tokenizer_config.json: 200 mutations (the chat template among them)", async () => {
    const { ok, refused } = await fuzz(tiny(), "tokenizer_config.json", 200, 3, mutateJson);
    expect(refused["tokenizer_config.json"]).toBeGreaterThan(50);
    expect(ok).toBeGreaterThan(10);
  });

  it("model.safetensors: 300 mutations", async () => {
    const { ok, refused } = await fuzz(weightsOnly(), "model.safetensors", 300, 4, mutateSafetensors);
    expect(refused["model.safetensors"]).toBeGreaterThan(150);
    expect(ok).toBeGreaterThan(0);
  });

  it("model.safetensors.index.json: 200 mutations", async () => {
    const { refused } = await fuzz(llama(), "model.safetensors.index.json", 200, 5, mutateJson);
    expect(refused["model.safetensors.index.json"]).toBeGreaterThan(50);
  });
});

describe("the named cases", () => {
  const cfg = () => JSON.parse(new TextDecoder().decode(tiny()["config.json"]));

  it("config.json: absurd or wrong-typed sizes are refused naming the field", () => {
    const cases: [string, unknown, RegExp][] = [
      ["num_hidden_layers", 1e9, /num_hidden_layers is 1000000000; the lab reads at most 1024/],
      ["hidden_size", 1e7, /hidden_size is 10000000; the lab reads at most 65536/],
      ["hidden_size", -16, /hidden_size must be a positive integer, got -16/],
      ["intermediate_size", "24", /intermediate_size must be a positive integer, got "24"/],
      ["vocab_size", 2 ** 53, /vocab_size is 9007199254740992; the lab reads at most 2097152/],
      ["rms_norm_eps", -1e-6, /rms_norm_eps must be a positive number, got -0\.000001/],
      ["rope_theta", "1e6", /rope_theta must be a positive number, got "1e6"/],
    ];
    for (const [field, value, msg] of cases) {
      const j = JSON.parse(JSON.stringify({ ...cfg(), [field]: value }));
      expect(() => hfModelConfig(j, "m/config.json"), field).toThrow(msg);
    }
    // config.json's text "1e999" parses to Infinity: the message shows the number, not JSON's null
    const text = JSON.stringify({ ...cfg(), rope_theta: 0 }).replace('"rope_theta":0', '"rope_theta":1e999');
    expect(() => hfModelConfig(JSON.parse(text), "m/config.json")).toThrow(
      /rope_theta must be a positive number, got Infinity/,
    );
    expect(HF_CONFIG_MAX.vocab_size).toBe(1 << 21);
  });

  it("tokenizer files: malformed, truncated, ids beyond vocab_size, special tokens out of range", async () => {
    const t = tiny();
    const tok = JSON.parse(new TextDecoder().decode(t["tokenizer.json"]));
    const refuse = async (files: Record<string, unknown>, file: string, msg: RegExp) => {
      const enc = Object.fromEntries(
        Object.entries(files).map(([k, v]) => [
          k,
          v instanceof Uint8Array ? v : new TextEncoder().encode(JSON.stringify(v)),
        ]),
      );
      const err = await checkModelFiles(dirOf("m", { ...t, ...enc })).catch((e) => e);
      expect(err).toBeInstanceOf(ModelFileError);
      expect(err.file).toBe(file);
      expect(err.message).toMatch(msg);
    };
    await refuse(
      { "tokenizer.json": t["tokenizer.json"].subarray(0, 5000) },
      "tokenizer.json",
      /m\/tokenizer\.json: not valid JSON/,
    );
    await refuse(
      { "tokenizer.json": { ...tok, model: { ...tok.model, vocab: 7 } } },
      "tokenizer.json",
      /model\.vocab is neither/,
    );
    // An added token far beyond config.json's vocab_size (1,050 rows).
    const far = structuredClone(tok);
    far.added_tokens[0].id = 100_000;
    await refuse(
      { "tokenizer.json": far },
      "tokenizer.json",
      /tokenizer\.json has ids up to 100000, beyond config\.json's vocab_size 1050/,
    );
    const neg = structuredClone(tok);
    neg.added_tokens[1].id = -3;
    await refuse({ "tokenizer.json": neg }, "tokenizer.json", /added_tokens\[1\] has no integer id/);
    const merges = structuredClone(tok);
    merges.model.merges = Array.from({ length: (1 << 21) + 1 }, () => "a b");
    await refuse(
      { "tokenizer.json": merges },
      "tokenizer.json",
      /model\.merges has 2097153 entries; at most 2097152 are read/,
    );
    const tc = JSON.parse(new TextDecoder().decode(t["tokenizer_config.json"]));
    await refuse(
      { "tokenizer_config.json": { ...tc, added_tokens_decoder: { "99999999": { content: "x" } } } },
      "tokenizer_config.json",
      /added_tokens_decoder has the id "99999999"/,
    );
    await refuse(
      { "tokenizer_config.json": { ...tc, eos_token: 5 } },
      "tokenizer_config.json",
      /eos_token is 5/,
    );
    await refuse(
      { "tokenizer_config.json": { ...tc, chat_template: "{% for i in range(100000000) %}{% endfor %}" } },
      "tokenizer_config.json",
      /^m\/tokenizer_config\.json: chat_template refused by the template sandbox's maxRange budget: range\(0, 100000000, 1\) has 100000000 items/,
    );
  });

  it("safetensors: header beyond the file, a 100 MB header, overflow, overlap, out of range, dtype/size", async () => {
    // A 100 MB header is refused from its length field: nothing of it is read.
    const reads: number[] = [];
    const huge: ByteSource = {
      name: "big.safetensors",
      size: 200_000_000,
      read: async (offset, length) => {
        reads.push(length);
        const b = new Uint8Array(length);
        if (offset === 0) new DataView(b.buffer).setBigUint64(0, 100_000_000n, true);
        return b;
      },
    };
    await expect(openSafetensors(huge)).rejects.toThrow(
      `big.safetensors: the safetensors header is 100000000 bytes; the lab reads headers of at most ${MAX_SAFETENSORS_HEADER}`,
    );
    expect(reads).toEqual([8]);
    const st = tiny()["model.safetensors"];
    const named = async (edit: (b: Uint8Array) => Uint8Array, msg: RegExp) => {
      const err = await checkModelFiles(dirOf("m", { ...tiny(), "model.safetensors": edit(st) })).catch(
        (e) => e,
      );
      expect(err).toBeInstanceOf(ModelFileError);
      expect(err.file).toBe("model.safetensors");
      expect(err.message).toMatch(msg);
    };
    await named((b) => {
      const o = b.slice();
      new DataView(o.buffer).setBigUint64(0, BigInt(b.length), true);
      return o;
    }, /m\/model\.safetensors: truncated or not a safetensors file \(header length \d+, file size \d+\)/);
    const header = (edit: (h: Header) => void) => (b: Uint8Array) => withHeader(b, edit);
    await named(
      header((h) => {
        h["model.norm.weight"].shape = [2 ** 31, 2 ** 31, 2 ** 31];
      }),
      /tensor model\.norm\.weight has shape \[2147483648,2147483648,2147483648\], whose size overflows/,
    );
    await named(
      header((h) => {
        h["model.norm.weight"].data_offsets = [...h["model.layers.0.input_layernorm.weight"].data_offsets];
      }),
      /m\/model\.safetensors: tensors \S+ and \S+ overlap/,
    );
    await named(
      header((h) => {
        const [a, b] = h["model.norm.weight"].data_offsets;
        h["model.norm.weight"].data_offsets = [a + 1e6, b + 1e6];
      }),
      /m\/model\.safetensors is truncated: tensor model\.norm\.weight needs bytes up to \d+/,
    );
    await named(
      header((h) => {
        h["model.norm.weight"].dtype = "F16";
      }),
      /tensor model\.norm\.weight: data_offsets \[\d+, \d+\) do not hold 16 F16 values/,
    );
  });

  it("model.safetensors.index.json: '..', absolute paths and the index itself are refused", async () => {
    const base = llama();
    const index = JSON.parse(new TextDecoder().decode(base["model.safetensors.index.json"]));
    for (const bad of [
      "../model-00001-of-00002.safetensors",
      "/etc/passwd.safetensors",
      "sub/x.safetensors",
      "model.safetensors.index.json",
      "C:\\x.safetensors",
    ]) {
      const edited = structuredClone(index);
      edited.weight_map["model.norm.weight"] = bad;
      const dir = dirOf("m", {
        ...base,
        "model.safetensors.index.json": new TextEncoder().encode(JSON.stringify(edited)),
      });
      const err = await checkModelFiles(dir).catch((e) => e);
      expect(err).toBeInstanceOf(ModelFileError);
      expect(err.file).toBe("model.safetensors.index.json");
      expect(err.message).toBe(
        `m/model.safetensors.index.json: weight_map names ${JSON.stringify(bad)} for tensor model.norm.weight; a shard must be a *.safetensors file name beside the index (no folders, "..", or absolute paths)`,
      );
    }
  });

  it("model.revision is checked as strictly as repo ids; the CLI cache writes nothing outside its folder", async () => {
    for (const ok of ["main", "v1.0", "refs/pr/12", "fedcba9876543210fedcba9876543210fedcba98"])
      expect(checkRevision(ok)).toBe(ok);
    for (const bad of ["../../etc", "..", "a/../b", "/abs", "a//b", "", "x y", "a\\b", "main/", "ü"])
      expect(() => parseModelSource("hf:acme/tiny", { revision: bad, sha256: null }), bad).toThrow(
        /^model\.revision: /,
      );
    // The cache refuses a key that would leave it, whatever made the key.
    const root = join(mkdtempSync(join(tmpdir(), "lab-cache-")), "models");
    mkdirSync(root);
    const store = fsByteStore(root);
    await expect(store.put("hub/acme/tiny@../../x/manifest", new Blob(["x"]))).rejects.toThrow(
      /has an empty, "\." or "\.\." segment/,
    );
    await store.put("hub/acme/tiny@refs/pr/1/manifest", new Blob(["x"]));
    expect(readdirSync(join(root, ".."))).toEqual(["models"]);
    // A fuzz of revisions: each is refused, or its manifest key stays inside the cache.
    const r = rng(6);
    const alphabet = "ab./_-\\%:~ \u00e9";
    for (let i = 0; i < 300; i++) {
      const rev = Array.from({ length: 1 + r.int(10) }, () => alphabet[r.int(alphabet.length)]).join("");
      let checked: string;
      try {
        checked = checkRevision(rev);
      } catch {
        continue;
      }
      await store.put(`hub/acme/tiny@${checked}/manifest`, new Blob(["x"]));
    }
    expect(readdirSync(join(root, ".."))).toEqual(["models"]);
  });
});
