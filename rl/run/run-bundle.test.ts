// Run bundles: round trip (gzip and plain, with weights), named errors for bad files, and
// 1000 mutated bundles that must never make the decoder throw. Run: `npx vitest run rl/run/run-bundle`.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { recipeConfig } from "../../config";
import { loadCheckpoint, saveCheckpoint } from "../../model/checkpoint";
import { modelConfig, paramLayout } from "../../model/config";
import {
  BUNDLE_FORMAT,
  bundleFileName,
  bundleJson,
  decodeBundle,
  encodeBundle,
  looksLikeBundle,
  type RunBundle,
} from "./run-bundle";
import type { SampleRecord } from "./trainer";

const config = recipeConfig("demo", {
  seed: 77,
  model: { layers: 1, d_model: 8, heads: 1, context: 16 },
  sampling: { max_new_tokens: 8 },
});

function weights(): Uint8Array {
  const mc = modelConfig({ layers: 1, dModel: 8, heads: 1, context: 16 });
  const w = new Float32Array(paramLayout(mc).total).map((_, i) => Math.sin(i));
  return saveCheckpoint({ config: mc, weights: w, metadata: { rl_step: "3" } });
}

function sample(step: number): SampleRecord {
  return {
    step,
    groupId: `g${step}`,
    problemId: `p${step}`,
    bucket: "hard",
    answer: "10063",
    promptTokens: [1, 2, 3],
    tokens: [4, 5, 6, 7],
    mask: [1, 1, 0, 1],
    postTool: [0, 0, 0, 1],
    logprobs: [-0.5, -1.25, 0, -0.125],
    entropy: [],
    advantages: [0.5, 0.5, 0, 0.5],
    reward: 1,
    rewardTerms: { correctness: 1 },
    correct: true,
    toolCalls: [
      {
        raw: "347*29",
        response: "10063",
        ok: true,
        status: "Success",
        executed: true,
        responseStart: 2,
        responseEnd: 3,
      },
    ],
    finish: "answer",
    filter: "kept",
  };
}

function makeRun(withWeights = true): RunBundle {
  return {
    name: "tiny run",
    createdAt: "2026-01-02T03:04:05.000Z",
    config,
    edits: [{ phase: "rl", step: 2, path: "rl.lr", value: 0.0005 }],
    metrics: [
      { step: 0, phase: "sft", time: 0.1, loss: 2.5, "actor/lr": 0.003 },
      { step: 0, phase: "rl", time: 1.5, "reward/mean": 0.25, "val/acc": 0.1 },
      { step: 1, phase: "rl", time: 2.5, "reward/mean": 0.5, event: "note" },
    ],
    samples: [sample(0), sample(1)],
    events: [
      {
        step: 2,
        phase: "rl",
        kind: "edit",
        message: "rl.lr = 0.0005",
        edit: { phase: "rl", step: 2, path: "rl.lr", value: 0.0005 },
      },
    ],
    ...(withWeights ? { weights: weights() } : {}),
  };
}

describe("bundle round trip", () => {
  it("gzip with weights comes back identical, and the weights load", async () => {
    const run = makeRun();
    const bytes = await encodeBundle(run);
    expect(bytes[0]).toBe(0x1f);
    expect(looksLikeBundle(bytes)).toBe(true);
    const r = await decodeBundle(bytes);
    expect(r.ok ? "" : r.error).toBe("");
    if (!r.ok) return;
    expect(r.run).toEqual(run);
    expect(loadCheckpoint(r.run.weights!).metadata?.rl_step).toBe("3");
  });

  it("plain JSON without weights is read too", async () => {
    const run = makeRun(false);
    const bytes = await encodeBundle(run, { compress: false });
    expect(JSON.parse(new TextDecoder().decode(bytes)).format).toBe(BUNDLE_FORMAT);
    expect(looksLikeBundle(bytes)).toBe(true);
    expect(looksLikeBundle(new TextEncoder().encode('{"name":"x","config":{}}'))).toBe(false);
    const r = await decodeBundle(bytes);
    expect(r).toEqual({ ok: true, run });
  });

  it("null metrics (NaN written by JSON) are dropped; null per-token values are kept", async () => {
    const json = bundleJson(makeRun(false)) as {
      metrics: Record<string, unknown>[];
      samples: SampleRecord[];
    };
    json.metrics[1]["actor/kl_ref"] = null;
    (json.samples[0].logprobs as (number | null)[])[2] = null;
    const r = await decodeBundle(new TextEncoder().encode(JSON.stringify(json)));
    expect(r.ok ? "" : r.error).toBe("");
    if (!r.ok) return;
    expect("actor/kl_ref" in r.run.metrics[1]).toBe(false);
    expect(r.run.samples[0].logprobs[2]).toBeNull();
  });

  it("a file nested 10,000 deep is refused by its depth, not by a host's stack", async () => {
    const text = `{"format":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`;
    const r = await decodeBundle(new TextEncoder().encode(text));
    expect(r.ok ? "" : r.error).toMatch(/^its values nest 10001 levels deep; a bundle's nest at most 64/);
  });

  it("names files safely", () => {
    expect(bundleFileName({ name: "dapo / run #3" })).toBe("dapo-run-3.lab-run.json.gz");
    expect(bundleFileName({ name: "" }, false)).toBe("run.lab-run.json");
  });
});

async function errorOf(mutate: (j: Record<string, any>) => void): Promise<string> {
  const json = structuredClone(bundleJson(makeRun())) as Record<string, any>;
  mutate(json);
  const r = await decodeBundle(new TextEncoder().encode(JSON.stringify(json)));
  return r.ok ? "" : r.error;
}

describe("bad bundles are named", () => {
  it("not a bundle, not JSON, empty, corrupt gzip", async () => {
    expect(await decodeBundle(new Uint8Array())).toEqual({ ok: false, error: "empty file" });
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe, 0x00]);
    expect(await decodeBundle(png)).toMatchObject({ error: /^the file is neither gzip nor UTF-8 text/ });
    expect(await decodeBundle(new TextEncoder().encode("{nope"))).toMatchObject({ error: /not valid JSON/ });
    expect(await decodeBundle(new TextEncoder().encode('{"format":"x"}'))).toMatchObject({
      error: /^format is "x"/,
    });
    const gz = await encodeBundle(makeRun());
    const cut = await decodeBundle(gz.subarray(0, gz.length >> 1));
    expect(cut.ok ? "" : cut.error).toMatch(/^truncated or corrupt file/);
    // Random bytes gzipped decompress fine: the error says the gzip holds no text, not "neither gzip".
    const noise = new Uint8Array(256).map((_, i) => (i * 151 + 7) & 0xff);
    const gzNoise = new Uint8Array(
      await new Response(new Blob([noise]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
    );
    expect(await decodeBundle(gzNoise)).toMatchObject({ error: /^the gzip file holds no UTF-8 text/ });
  });

  it("names the field that is wrong", async () => {
    expect(await errorOf((j) => (j.version = 3))).toMatch(/^unknown bundle version 3/);
    expect(await errorOf((j) => (j.extra = 1))).toBe("extra: unknown field");
    expect(await errorOf((j) => (j.createdAt = "yesterday"))).toMatch(/^createdAt:/);
    expect(await errorOf((j) => (j.config.rl.clip_eps_low = 3))).toBe("config.rl.clip_eps_low: must be <= 1");
    expect(await errorOf((j) => (j.config.version = 9))).toMatch(
      /^config\.version: unknown config version 9/,
    );
    expect(await errorOf((j) => (j.edits[0].value = 4))).toMatch(/^edits: rl\.lr: must be <= 1/);
    expect(await errorOf((j) => (j.edits[0].phase = "warmup"))).toBe(
      "edits[0]: must be {phase (sft | value_pretrain | rl), step, path, value}",
    );
    expect(await errorOf((j) => (j.metrics[2].time = "late"))).toBe(
      "metrics[2].time: must be a finite number",
    );
    expect(await errorOf((j) => (j.metrics[1].phase = "warmup"))).toMatch(
      /^metrics\[1\]\.phase: must be one of/,
    );
    expect(await errorOf((j) => (j.metrics[0].loss = [1]))).toBe(
      "metrics[0].loss: must be a number or a string",
    );
    expect(await errorOf((j) => (j.samples[1].tokens = [1, "x"]))).toBe(
      "samples[1].tokens: must be a list of integer token ids",
    );
    expect(await errorOf((j) => (j.samples[0].pieces = ["a"]))).toBe(
      "samples[0].pieces: must be a list of strings, one per token",
    );
    expect(await errorOf((j) => delete j.samples[0].toolCalls[0].ok)).toBe(
      "samples[0].toolCalls[0].ok: must be a boolean",
    );
    expect(await errorOf((j) => (j.events[0].kind = "boom"))).toMatch(/^events\[0\]\.kind: must be one of/);
    expect(await errorOf((j) => (j.weights = "!!"))).toMatch(/^weights: not base64/);
    expect(await errorOf((j) => (j.weights = j.weights.slice(0, 400)))).toMatch(
      /^weights: not a valid safetensors checkpoint/,
    );
    expect(await errorOf((j) => (j.config.model.layers = 2))).toMatch(
      /^weights: the checkpoint's model \(1 layers.*\) is not config\.model \(2 layers/,
    );
  });

  it("a pretrained run's weights are checked against its context, not the lab's unused model fields", async () => {
    // model.pretrained: the shape comes from the folder's config.json; config.model.layers etc. stay at their defaults.
    const pretrained = (context: number) =>
      errorOf((j) => {
        j.config.model = {
          ...j.config.model,
          layers: 3,
          d_model: 128,
          heads: 4,
          pretrained: "models/x",
          context,
        };
      });
    expect(await pretrained(16)).toBe("");
    expect(await pretrained(32)).toMatch(
      /^weights: the checkpoint's context 16 is not model.context 32 \(model.pretrained models\/x\)/,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// 1000 mutated bundles: JSON-level (replace or delete a random node) and byte-level (truncate,
// flip, insert) on the gzip and the plain forms.

type Json = unknown;
function nodes(x: Json, path: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(path);
  if (Array.isArray(x)) {
    for (const [i, v] of x.entries()) nodes(v, [...path, i], out);
  } else if (x && typeof x === "object") for (const [k, v] of Object.entries(x)) nodes(v, [...path, k], out);
  return out;
}
function replaceAt(x: Json, path: (string | number)[], value: Json, del: boolean): Json {
  if (path.length === 0) return value;
  const copy = structuredClone(x) as any;
  let cur = copy;
  for (const k of path.slice(0, -1)) cur = cur[k];
  const last = path[path.length - 1];
  if (del && !Array.isArray(cur)) delete cur[last];
  else cur[last] = value;
  return copy;
}

describe("mutated bundles", () => {
  it("1000 mutations: the decoder never throws, every failure has a message", async () => {
    const base = bundleJson(makeRun()) as Record<string, unknown>;
    delete base.weights; // weights have their own tests above; without them the fuzz stays fast
    const paths = nodes(base);
    const plain = new TextEncoder().encode(JSON.stringify(base));
    const gz = await encodeBundle({ ...makeRun(false) });
    const arb = fc.oneof(
      fc.record({
        kind: fc.constant("json" as const),
        path: fc.constantFrom(...paths),
        value: fc.jsonValue({ maxDepth: 2 }),
        del: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant("bytes" as const),
        gzip: fc.boolean(),
        op: fc.constantFrom("truncate", "flip", "insert"),
        at: fc.nat(),
        byte: fc.integer({ min: 0, max: 255 }),
      }),
    );
    let failures = 0;
    await fc.assert(
      fc.asyncProperty(arb, async (m) => {
        let bytes: Uint8Array;
        if (m.kind === "json") {
          bytes = new TextEncoder().encode(JSON.stringify(replaceAt(base, m.path, m.value, m.del)) ?? "");
        } else {
          const src = m.gzip ? gz : plain;
          const at = m.at % src.length;
          if (m.op === "truncate") bytes = src.slice(0, at);
          else if (m.op === "flip") {
            bytes = src.slice();
            bytes[at] ^= m.byte || 1;
          } else bytes = new Uint8Array([...src.subarray(0, at), m.byte, ...src.subarray(at)]);
        }
        const r = await decodeBundle(bytes);
        if (r.ok) {
          // Whatever still decodes re-encodes and decodes to the same run.
          const again = await decodeBundle(await encodeBundle(r.run));
          expect(again).toEqual(r);
        } else {
          failures++;
          expect(r.error.length).toBeGreaterThan(5);
          expect(r.error).not.toMatch(/^unreadable bundle/);
        }
      }),
      { numRuns: 1000 },
    );
    expect(failures).toBeGreaterThan(300);
  });
});
