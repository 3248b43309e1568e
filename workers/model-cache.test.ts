// The model cache (workers/model-cache.ts, its memory ByteStore in Node): a model the lab refuses
// (model/untrusted.ts: here a chat template that loops over range(100000000)) leaves nothing in
// the cache, picked as files (checked before anything is stored, an accepted model of the same
// name kept), downloaded from a Hub (e2e/fake-hub.ts over HTTP: every chunk removed once the
// check refuses it), or already cached from before the check (removed when the picker asks).
// Run: `npx vitest run --project unit workers/model-cache.test.ts`.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeHub } from "../e2e/fake-hub";
import { tinyHfModel } from "../e2e/tiny-hf";
import { addLocalFiles } from "../model/hub";
import type { ModelSource } from "../model/source";
import { addLocalModel, downloadModel, listModelCache, modelInfo, modelStore } from "./model-cache";

const COMMIT = "0123456789abcdef0123456789abcdef01234567";
const RANGE_LOOP = "{% for i in range(100000000) %}{% endfor %}";
const REFUSAL =
  "tokenizer_config.json: chat_template refused by the template sandbox's maxRange budget: range(0, 100000000, 1) has 100000000 items";

let good: Record<string, Buffer>;
let evil: Record<string, Buffer>;
let server: Server;
let endpoint: string;

const blob = (b: Buffer) => new Blob([new Uint8Array(b)]);
const picked = (files: Record<string, Buffer>) =>
  Object.entries(files).map(([path, b]) => ({ path: `folder/${path}`, blob: blob(b) }));
const asMap = (files: Record<string, Buffer>) => new Map(Object.entries(files).map(([p, b]) => [p, blob(b)]));

beforeAll(async () => {
  good = tinyHfModel();
  const cfg = JSON.parse(good["tokenizer_config.json"].toString());
  evil = {
    ...good,
    "tokenizer_config.json": Buffer.from(JSON.stringify({ ...cfg, chat_template: RANGE_LOOP })),
  };
  server = createServer((req, res) => {
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const out = handle({ method: req.method ?? "GET", url: `${endpoint}${req.url}`, headers });
    res.writeHead(out.status, out.headers);
    res.end(out.body ? Buffer.from(out.body) : undefined);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  handle = fakeHub(
    {
      "acme/evil": { commit: COMMIT, files: evil, lfs: ["model.safetensors"] },
      "acme/good": { commit: COMMIT, files: good, lfs: ["model.safetensors"] },
    },
    { hubUrl: endpoint },
  );
}, 60_000);
let handle: ReturnType<typeof fakeHub>;
afterAll(async () => {
  await new Promise<void>((ok) => server.close(() => ok()));
});

describe("a refused model leaves nothing in the model cache", () => {
  it("picked files: refused before anything is stored; an accepted model of the same name stays", async () => {
    await expect(addLocalModel("tiny", picked(evil))).rejects.toThrow(
      `refused: local:tiny/${REFUSAL}; the template sandbox allows 100000 (Jinja2's MAX_RANGE) (nothing of local:tiny is kept in this browser)`,
    );
    expect(await modelStore().keys()).toEqual([]);
    const s = await addLocalModel("tiny", picked(good));
    const keys = (await modelStore().keys()).sort();
    expect(keys).toContain("local/tiny");
    expect((await modelInfo(s)).refused).toBeUndefined();
    await expect(addLocalModel("tiny", picked(evil))).rejects.toThrow(REFUSAL);
    expect((await modelStore().keys()).sort()).toEqual(keys);
    expect((await listModelCache()).map((e) => e.id)).toEqual(["local:tiny"]);
    for (const k of keys) await modelStore().delete(k);
  });

  it("a Hub download: every chunk and manifest of the refused model is removed; an accepted one is kept", async () => {
    const s: ModelSource = { kind: "hub", repo: "acme/evil", revision: "main" };
    await expect(downloadModel(s, () => {}, { endpoint })).rejects.toThrow(
      `refused: hf:acme/evil/${REFUSAL}; the template sandbox allows 100000 (Jinja2's MAX_RANGE) (nothing of hf:acme/evil@main is kept in this browser)`,
    );
    expect(await modelStore().keys()).toEqual([]);
    expect(await listModelCache()).toEqual([]);
    const ok = await downloadModel({ kind: "hub", repo: "acme/good", revision: "main" }, () => {}, {
      endpoint,
    });
    expect(ok.state.state).toBe("cached");
    expect((await listModelCache()).map((e) => e.id)).toEqual(["hf:acme/good@main"]);
    for (const k of await modelStore().keys()) await modelStore().delete(k);
  });

  it("a refused model cached before it was checked is removed when the picker asks about it; files another model shares stay", async () => {
    const store = modelStore();
    const other = await addLocalFiles("other", asMap(good), store);
    const s = await addLocalFiles("old", asMap(evil), store);
    expect((await listModelCache()).map((e) => e.id).sort()).toEqual(["local:old", "local:other"]);
    const info = await modelInfo(s);
    expect(info.refused).toContain(REFUSAL);
    expect(info.state.state).toBe("missing");
    expect((await listModelCache()).map((e) => e.id)).toEqual(["local:other"]);
    // Only the refused template is gone: the weights and tokenizer both models name stay.
    const keys = await store.keys();
    expect(keys.filter((k) => k.startsWith("sha256/")).length).toBe(Object.keys(good).length);
    expect((await modelInfo(other)).state.state).toBe("cached");
    for (const k of keys) await store.delete(k);
  });
});
