// Model sources: a share link naming a model source round-trips (a Hub repo at a revision, local
// files by hash); a source that is not cached is said, naming the model; and the Hub client
// against a fake Hub served over HTTP on localhost (the tiny Qwen3 of model/golden/hf): sizes
// before downloading, Range requests, an interrupted download that resumes at the first missing
// chunk, the second open with zero requests, and the cached files reading back byte for byte.
// Run: `npx vitest run --project unit model/source.test.ts`.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, parseRunConfig } from "../config";
import { decodeLink, encodeLink } from "../config/link";
import { hfModelConfig, loadHfWeights, readHfConfig } from "./hf/read";
import {
  addLocalFiles,
  type ByteStore,
  downloadHub,
  hubModelInfo,
  listCache,
  memoryByteStore,
  openCached,
  sha256Hex,
  sourceState,
} from "./hub";
import { blobSource } from "./safetensors";
import { modelSourceOf, parseModelSource, sourceFields } from "./source";

const DIR = "model/golden/hf/qwen3";
const FILES: Record<string, Buffer> = {
  "config.json": readFileSync(`${DIR}/config.json`),
  "model.safetensors": readFileSync(`${DIR}/model.safetensors`),
  "README.md": Buffer.from("not a model file"),
};
const COMMIT = "0123456789abcdef0123456789abcdef01234567";

describe("model sources in links", () => {
  it("a link naming a Hub model at a revision round-trips", async () => {
    const c = mergeConfig(defaultRunConfig(), {
      model: sourceFields({ kind: "hub", repo: "HuggingFaceTB/SmolLM2-135M-Instruct", revision: COMMIT }),
    });
    const back = await decodeLink(await encodeLink({ config: c }));
    expect(back.ok).toBe(true);
    if (!back.ok) return;
    expect(back.config.model.pretrained).toBe("hf:HuggingFaceTB/SmolLM2-135M-Instruct");
    expect(modelSourceOf(back.config)).toEqual({
      kind: "hub",
      repo: "HuggingFaceTB/SmolLM2-135M-Instruct",
      revision: COMMIT,
    });
  });

  it("a link naming local files by hash round-trips", async () => {
    const sha256 = { "config.json": "a".repeat(64), "model.safetensors": "b".repeat(64) };
    const c = mergeConfig(defaultRunConfig(), {
      model: sourceFields({ kind: "local", name: "tiny", sha256 }),
    });
    const back = await decodeLink(await encodeLink({ config: c }));
    expect(back.ok && modelSourceOf(back.config)).toEqual({ kind: "local", name: "tiny", sha256 });
  });

  it("bad sources are errors naming the field", () => {
    const m = defaultRunConfig().model;
    expect(() => parseModelSource("hf:not a repo", m)).toThrow(
      /model.pretrained: "not a repo" is not a Hugging Face repo id/,
    );
    expect(() => parseModelSource("local:tiny", m)).toThrow(/model.sha256 must list each file's SHA-256/);
    const bad = parseRunConfig(
      mergeConfig(defaultRunConfig(), { model: { sha256: { "config.json": "xyz" } } }),
    );
    expect(bad.ok).toBe(false);
    expect(JSON.stringify(bad)).toContain("must be 64 hex digits");
    expect(parseModelSource("model/golden/hf/qwen3", m)).toEqual({
      kind: "folder",
      path: "model/golden/hf/qwen3",
    });
  });

  it("a model that is not cached is said, naming it", async () => {
    const store = memoryByteStore();
    const hub = { kind: "hub", repo: "acme/tiny", revision: "main" } as const;
    expect(await sourceState(hub, store)).toEqual({ state: "missing", bytes: 0 });
    await expect(openCached(hub, "config.json", store)).rejects.toThrow(
      "model.pretrained: hf:acme/tiny@main is not downloaded in this browser; download it from the model picker",
    );
    const local = { kind: "local", name: "tiny", sha256: { "config.json": "c".repeat(64) } } as const;
    expect((await sourceState(local, store)).missing).toEqual(["config.json"]);
    await expect(openCached(local, "config.json", store)).rejects.toThrow(
      /local:tiny \(1 files\) is not in this browser: config.json \(sha256 cccccccccccc...\) is missing; pick the model's files again/,
    );
  });
});

// A fake Hub: the model-info API and /resolve with Range; `cut` makes one chunk request fail.
let server: Server;
let endpoint: string;
const requests: string[] = [];
let cut: ((range: string) => boolean) | null = null;
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const range = req.headers.range ?? "";
    requests.push(`${url.pathname}${range ? ` ${range}` : ""}`);
    if (url.pathname === `/api/models/acme/tiny/revision/main` && url.searchParams.get("blobs") === "true") {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          id: "acme/tiny",
          sha: COMMIT,
          siblings: Object.entries(FILES).map(([rfilename, b]) => ({ rfilename, size: b.length })),
        }),
      );
      return;
    }
    const m = /^\/acme\/tiny\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const body = m && m[1] === COMMIT ? FILES[m[2]] : undefined;
    if (!body) {
      res.statusCode = 404;
      res.end();
      return;
    }
    const r = /^bytes=(\d+)-(\d+)$/.exec(range);
    if (!r) {
      res.end(body);
      return;
    }
    if (cut?.(range)) {
      cut = null;
      res.destroy(); // the connection drops mid-download
      return;
    }
    const [a, b] = [Number(r[1]), Number(r[2])];
    res.statusCode = 206;
    res.setHeader("content-range", `bytes ${a}-${b}/${body.length}`);
    res.end(body.subarray(a, b + 1));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

describe("the Hub client and the model cache", () => {
  const chunkBytes = 16 * 1024; // model.safetensors (52,040 bytes) is 4 chunks
  it("shows the size first, resumes an interrupted download, and opens the second time with no request", async () => {
    const store: ByteStore = memoryByteStore();
    requests.length = 0;
    const info = await hubModelInfo("acme/tiny", "main", store, { endpoint });
    expect(info.commit).toBe(COMMIT);
    expect(info.files).toEqual([
      { path: "config.json", size: FILES["config.json"].length, sha256: undefined },
      { path: "model.safetensors", size: 52040, sha256: undefined },
    ]);
    expect(requests).toEqual(["/api/models/acme/tiny/revision/main"]);

    // The third chunk of the weights fails: the first two (and config.json) stay stored.
    cut = (range) => range === `bytes=${2 * chunkBytes}-${3 * chunkBytes - 1}`;
    requests.length = 0;
    await expect(downloadHub(info, store, { endpoint, chunkBytes })).rejects.toThrow(
      /model.safetensors bytes 32768-49151: download interrupted .*downloading again resumes here/,
    );
    expect(await sourceState({ kind: "hub", repo: "acme/tiny", revision: "main" }, store)).toMatchObject({
      state: "partial",
    });
    expect((await listCache(store)).map((e) => e.complete)).toEqual([false]);
    requests.length = 0;
    const progress: number[] = [];
    await downloadHub(info, store, { endpoint, chunkBytes, onProgress: (p) => progress.push(p.done) });
    const res = `/acme/tiny/resolve/${COMMIT}/model.safetensors`;
    expect(requests).toEqual([`${res} bytes=32768-49151`, `${res} bytes=49152-52039`]);
    expect(progress.at(-1)).toBe(52040 + FILES["config.json"].length);

    // A second open: the manifest and every chunk come from the store.
    requests.length = 0;
    const again = await hubModelInfo("acme/tiny", "main", store, { endpoint });
    const src = { kind: "hub", repo: "acme/tiny", revision: "main" } as const;
    const blob = await openCached(src, "model.safetensors", store);
    expect(Buffer.from(await blob!.arrayBuffer()).equals(FILES["model.safetensors"])).toBe(true);
    expect(again).toEqual({ ...info, chunkBytes });
    expect(requests).toEqual([]);
    // The weights load from the cache like from the folder.
    const dir = {
      name: "hf:acme/tiny",
      open: async (f: string) => {
        const b = await openCached(src, f, store);
        return b ? blobSource(b, f) : null;
      },
    };
    const mc = await readHfConfig(dir);
    expect(mc).toEqual(hfModelConfig(JSON.parse(FILES["config.json"].toString())));
    let floats = 0;
    await loadHfWeights(dir, mc, (_o, d) => {
      floats += d.length;
    });
    expect(floats).toBeGreaterThan(0);
    expect(await listCache(store)).toEqual([
      { id: "hf:acme/tiny@main", bytes: 52040 + FILES["config.json"].length, complete: true },
    ]);
  });

  it("stores picked files by SHA-256 and finds them again by the hashes a link records", async () => {
    const store = memoryByteStore();
    const files = new Map(Object.entries(FILES).map(([k, v]) => [k, new Blob([new Uint8Array(v)])]));
    const src = await addLocalFiles("tiny", files, store);
    expect(Object.keys(src.sha256)).toEqual(["config.json", "model.safetensors"]);
    expect(src.sha256["config.json"]).toBe(await sha256Hex(new Blob([new Uint8Array(FILES["config.json"])])));
    const back = parseModelSource("local:tiny", sourceFields(src) as never);
    expect(await sourceState(back, store)).toMatchObject({ state: "cached", missing: [] });
    const b = await openCached(back, "config.json", store);
    expect(Buffer.from(await b!.arrayBuffer()).equals(FILES["config.json"])).toBe(true);
  });
});
