// Model sources: a share link naming a model source round-trips (a Hub repo at a revision, local
// files by hash); a source that is not cached is said, naming the model; and the Hub client
// (@huggingface/hub under model/hub.ts) against e2e/fake-hub.ts served over HTTP on two localhost
// origins, the Hub and its file CDN (the tiny Qwen3 of model/golden/hf): sizes and hashes before
// downloading, Range requests, an interrupted download that resumes at the first missing chunk,
// the second open with zero requests, the cached files reading back byte for byte, the token to
// the Hub only, Xet files, and private, missing and gated models named.
// Run: `npx vitest run --project unit model/source.test.ts`.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, parseRunConfig } from "../config";
import { decodeLink, encodeLink } from "../config/link";
import { type FakeRequest, type FakeResponse, fakeHub, fakeXetHash } from "../e2e/fake-hub";
import { hfModelConfig } from "./hf/config";
import { loadHfWeights, readHfConfig } from "./hf/read";
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

// The fake Hub of e2e/fake-hub.ts (the endpoints and headers the official client reads) on two
// origins: the Hub, and the file CDN its LFS files redirect to. Listings come two entries a page.
// `cut` drops the connection of one request.
let hub: Server;
let cdn: Server;
let endpoint: string;
const requests: string[] = [];
const auths: string[] = [];
const cdnAuths: string[] = [];
let cut: ((range: string) => boolean) | null = null;
const LFS = ["model.safetensors"];
const serve = (handler: () => (req: FakeRequest) => FakeResponse, log: string, authLog: string[]) =>
  createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const range = req.headers.range ?? "";
    const cursor = url.searchParams.get("cursor");
    requests.push(`${log}${url.pathname}${cursor ? `?cursor=${cursor}` : ""}${range ? ` ${range}` : ""}`);
    authLog.push(req.headers.authorization ?? "");
    if (cut?.(range)) {
      cut = null;
      res.destroy(); // the connection drops mid-download
      return;
    }
    const host = req.headers.host ?? "";
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const out = handler()({ method: req.method ?? "GET", url: `http://${host}${req.url}`, headers });
    res.writeHead(out.status, out.headers);
    res.end(out.body ? Buffer.from(out.body) : undefined);
  });
let handle: (req: FakeRequest) => FakeResponse;
beforeAll(async () => {
  hub = serve(() => handle, "", auths);
  cdn = serve(() => handle, "cdn:", cdnAuths);
  const listen = async (s: Server) => {
    await new Promise<void>((ok) => s.listen(0, "127.0.0.1", ok));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };
  endpoint = await listen(hub);
  const cdnUrl = await listen(cdn);
  const files = { ...FILES, "onnx/model.safetensors": Buffer.from("nested: not read") };
  handle = fakeHub(
    {
      "acme/tiny": { commit: COMMIT, files, lfs: LFS },
      "acme/gated": { commit: COMMIT, files, lfs: LFS, gated: "manual", tokens: ["hf_granted"] },
      "acme/xet": { commit: COMMIT, files, lfs: LFS, xet: LFS },
      "acme/private": { commit: COMMIT, files, private: true, tokens: ["hf_granted"] },
    },
    { hubUrl: endpoint, cdnUrl, pageSize: 2 },
  );
});
afterAll(async () => {
  await new Promise<void>((ok) => hub.close(() => ok()));
  await new Promise<void>((ok) => cdn.close(() => ok()));
});

describe("the Hub client and the model cache", () => {
  const chunkBytes = 16 * 1024; // model.safetensors (52,040 bytes) is 4 chunks
  it("a gated model: without a token a message says where to ask for access; a token goes to the Hub as Authorization, never to the file CDN", async () => {
    const store = memoryByteStore();
    auths.length = 0;
    await expect(hubModelInfo("acme/gated", "main", store, { endpoint })).rejects.toThrow(
      `hf:acme/gated: the model is gated or private (HTTP 401): ask for access on ${endpoint}/acme/gated, then put a Hub token`,
    );
    expect(auths).toEqual([""]); // one call (the model info says "gated"), no listing
    auths.length = 0;
    const other = await hubModelInfo("acme/gated", "main", store, { endpoint, token: "hf_other" });
    await expect(downloadHub(other, store, { endpoint, chunkBytes, token: "hf_other" })).rejects.toThrow(
      /^hf:acme\/gated: the Hub refused your token \(HTTP 403\): .*ask for access on /,
    );
    expect(auths.length).toBeGreaterThan(2);
    expect(auths.every((a) => a === "Bearer hf_other")).toBe(true);
    auths.length = 0;
    cdnAuths.length = 0;
    const info = await hubModelInfo("acme/gated", "main", memoryByteStore(), {
      endpoint,
      token: "hf_granted",
    });
    const granted = memoryByteStore();
    await downloadHub(info, granted, { endpoint, chunkBytes, token: "hf_granted" });
    expect(auths.length).toBeGreaterThan(2);
    expect(auths.every((a) => a === "Bearer hf_granted")).toBe(true);
    // The weights (an LFS file) come from the CDN origin: the token is not sent there.
    expect(cdnAuths.length).toBeGreaterThan(1);
    expect(cdnAuths.every((a) => a === "")).toBe(true);
    const blob = await openCached(
      { kind: "hub", repo: "acme/gated", revision: "main" },
      "model.safetensors",
      granted,
    );
    expect(Buffer.from(await blob!.arrayBuffer()).equals(FILES["model.safetensors"])).toBe(true);
    // The token is sent, never stored: no key or stored byte holds it.
    for (const k of await granted.keys()) {
      expect(k).not.toContain("hf_granted");
      expect(await (await granted.get(k))!.text()).not.toContain("hf_granted");
    }
  });

  it("a private model, a missing one, a bad revision and a malformed token are each named", async () => {
    const store = memoryByteStore();
    await expect(hubModelInfo("acme/private", "main", store, { endpoint })).rejects.toThrow(
      "hf:acme/private@main: no such model or revision on the Hub (HTTP 401), or a private one: a private model needs a Hub token",
    );
    await expect(hubModelInfo("acme/nothing", "main", store, { endpoint })).rejects.toThrow(
      "hf:acme/nothing@main: no such model or revision on the Hub (HTTP 401)",
    );
    await expect(hubModelInfo("acme/tiny", "v9", store, { endpoint })).rejects.toThrow(
      "hf:acme/tiny@v9: no such model or revision on the Hub (HTTP 404)",
    );
    await expect(hubModelInfo("acme/tiny", "main", store, { endpoint, token: "my token" })).rejects.toThrow(
      'Hub token: a Hugging Face token starts with "hf_"',
    );
    const info = await hubModelInfo("acme/private", "main", store, { endpoint, token: "hf_granted" });
    expect(info.files.map((f) => f.path)).toEqual(["config.json", "model.safetensors"]);
    await expect(
      hubModelInfo("acme/tiny", "main", store, { endpoint: "http://127.0.0.1:9" }),
    ).rejects.toThrow(/^hf:acme\/tiny@main: cannot reach the Hub \(/);
  });

  it("a file stored with Xet: its Xet hash is listed and its bytes come through the download URL the client names", async () => {
    const store = memoryByteStore();
    const info = await hubModelInfo("acme/xet", "main", store, { endpoint });
    const w = FILES["model.safetensors"];
    expect(info.files.find((f) => f.path === "model.safetensors")).toEqual({
      path: "model.safetensors",
      size: w.length,
      sha256: createHash("sha256").update(w).digest("hex"),
      xetHash: fakeXetHash(w),
    });
    requests.length = 0;
    await downloadHub(info, store, { endpoint, chunkBytes });
    // The client asks for the Xet file info (its Accept header), then the lab's Range requests.
    expect(requests.filter((r) => r.includes("model.safetensors"))[0]).toBe(
      `/acme/xet/resolve/${COMMIT}/model.safetensors bytes=0-0`,
    );
    const blob = await openCached(
      { kind: "hub", repo: "acme/xet", revision: "main" },
      "model.safetensors",
      store,
    );
    expect(Buffer.from(await blob!.arrayBuffer()).equals(w)).toBe(true);
  });

  it("shows the size first, resumes an interrupted download, and opens the second time with no request", async () => {
    const store: ByteStore = memoryByteStore();
    requests.length = 0;
    const info = await hubModelInfo("acme/tiny", "main", store, { endpoint });
    expect(info.commit).toBe(COMMIT);
    // The listing's LFS hash is the file's SHA-256; README.md and the onnx/ folder are not read.
    const weightsSha = createHash("sha256").update(FILES["model.safetensors"]).digest("hex");
    expect(info.files).toEqual([
      { path: "config.json", size: FILES["config.json"].length },
      { path: "model.safetensors", size: 52040, sha256: weightsSha },
    ]);
    // modelInfo, then listFiles at the commit (two pages, the second named by the Link header).
    expect(requests).toEqual([
      "/api/models/acme/tiny/revision/main",
      `/api/models/acme/tiny/tree/${COMMIT}`,
      `/api/models/acme/tiny/tree/${COMMIT}?cursor=2`,
    ]);

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
    // fileDownloadInfo (the redirect to the CDN followed), then only the missing chunks, from the CDN.
    const cdnFile = `cdn:/repos/${weightsSha}`;
    expect(requests).toEqual([
      `/acme/tiny/resolve/${COMMIT}/model.safetensors bytes=0-0`,
      `${cdnFile} bytes=0-0`,
      `${cdnFile} bytes=32768-49151`,
      `${cdnFile} bytes=49152-52039`,
    ]);
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
