// Models from the Hugging Face Hub and from picked files, kept in a byte store (the browser's
// Cache Storage: workers/model-cache.ts) so the second open makes no request.
// The Hub API is spoken by the official client, @huggingface/hub; this file keeps the lab's own
// chunked, resumable store and its messages (gated and private models, bad answers).
//   hubModelInfo   modelInfo (the commit a revision resolves to) and listFiles at that commit:
//                  the files the lab reads, their sizes and hashes, shown before anything downloads.
//   downloadHub    fileDownloadInfo names each file's URL; the file comes in chunks fetched with
//                  Range requests, every chunk stored as it arrives, so an interrupted download
//                  resumes at the first missing chunk.
//   addLocalFiles  picked files stored by SHA-256 (the hashes the run config records).
//   openCached     a cached file as one Blob over its chunks (read lazily by the safetensors reader).
// Store layout (keys): hub/<repo>@<rev>/manifest, hub/<repo>@<commit>/<file>#<chunk>,
// local/<name> (the manifest: file -> sha256), sha256/<hex> (a local file's bytes).
// No DOM: fetch, Blob and crypto.subtle are web standards (also in Node). Tested through the
// page by e2e/model.e2e.test.ts and in Node by model/source.test.ts, both against e2e/fake-hub.ts
// (the Hub's endpoints and headers as the official client reads them).
import {
  fileDownloadInfo,
  HubApiError,
  InvalidApiResponseFormatError,
  type ListFileEntry,
  listFiles,
  modelInfo,
} from "@huggingface/hub";
import { checkRepoId, checkRevision, isModelFile, type ModelSource, sourceLabel } from "./source";

/** Blobs by key: Cache Storage in the page's worker, a Map in tests. */
export interface ByteStore {
  get(key: string): Promise<Blob | null>;
  put(key: string, data: Blob): Promise<void>;
  delete(key: string): Promise<void>;
  keys(): Promise<string[]>;
}

export interface HubFile {
  path: string;
  size: number;
  /** The LFS object's SHA-256 (safetensors and other large files), when the Hub gives it. */
  sha256?: string;
  /** The Xet content hash, for a file the Hub stores with Xet. */
  xetHash?: string;
}

export interface HubManifest {
  repo: string;
  /** The revision asked for (a branch, tag or commit). */
  revision: string;
  /** The commit it resolved to: chunks are stored under it, so a moved branch never mixes files. */
  commit: string;
  files: HubFile[];
  /** Bytes per stored chunk, recorded when the download completes. */
  chunkBytes?: number;
}

export interface DownloadProgress {
  file: string;
  /** Bytes of all files present (cached before or fetched now). */
  done: number;
  total: number;
  /** Bytes fetched over the network in this call. */
  fetched: number;
}

export const HUB_ENDPOINT = "https://huggingface.co";
/** The largest model file the lab downloads (a browser tab holds far less). */
export const MAX_FILE_BYTES = 2 ** 40;
/** Bytes per stored chunk (one Range request each). */
export const CHUNK_BYTES = 8 * 1024 * 1024;

const manifestKey = (repo: string, revision: string) => `hub/${repo}@${revision}/manifest`;
const chunkKey = (m: HubManifest, file: string, i: number) => `hub/${m.repo}@${m.commit}/${file}#${i}`;
const chunkCount = (size: number, chunk: number) => Math.max(1, Math.ceil(size / chunk));

const jsonBlob = (x: unknown) => new Blob([JSON.stringify(x)], { type: "application/json" });
async function readJson<T>(store: ByteStore, key: string): Promise<T | null> {
  const b = await store.get(key);
  return b ? (JSON.parse(await b.text()) as T) : null;
}

/**
 * The request headers for the Hub: `Authorization: Bearer <token>` when the person gave a Hub
 * token (gated and private models), nothing else. Only the Hub's own URLs get them (a browser
 * drops Authorization on a redirect to another origin, such as the Hub's file CDN).
 */
function authHeaders(token: string | undefined): Record<string, string> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** What to do about a 401/403 from the Hub: a gated or private model needs a token with access. */
function accessMessage(repo: string, status: number, token: string | undefined, endpoint: string): string {
  const page = `${endpoint}/${repo}`;
  return token
    ? `hf:${repo}: the Hub refused your token (HTTP ${status}): the model is gated or private and this token has no access to it; ask for access on ${page} (logged in as the token's owner), or use a token with read access`
    : `hf:${repo}: the model is gated or private (HTTP ${status}): ask for access on ${page}, then put a Hub token with read access (huggingface.co/settings/tokens) in the model picker's "Hub token" field`;
}

/** The official client's options for one call: where the Hub is, which fetch, which token. */
function clientOptions(opts: { endpoint?: string; fetch?: typeof fetch; token?: string }) {
  if (opts.token && !/^hf_[\x21-\x7e]+$/.test(opts.token))
    throw new Error(
      'Hub token: a Hugging Face token starts with "hf_" and has no spaces (huggingface.co/settings/tokens)',
    );
  return {
    hubUrl: opts.endpoint ?? HUB_ENDPOINT,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...(opts.token ? { accessToken: opts.token } : {}),
  };
}

/**
 * Runs one call of the official client and says what went wrong in the lab's words: a 401/403 as
 * the gated/private message, a 404 as no such model or file, a network failure as one, a malformed
 * answer as one. Errors of the lab's own checks pass through.
 */
async function hubCall<T>(
  where: string,
  repo: string,
  opts: { endpoint?: string; token?: string },
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof HubApiError) {
      const s = err.statusCode;
      // The Hub answers 401 for a private repo (or none) without a token, 403 for a gated one the token may not read.
      if (s === 403 || (s === 401 && opts.token))
        throw new Error(accessMessage(repo, s, opts.token, opts.endpoint ?? HUB_ENDPOINT));
      if (s === 401 || s === 404)
        throw new Error(
          `${where}: no such model or revision on the Hub (HTTP ${s}), or a private one: a private model needs a Hub token in the model picker`,
        );
      throw new Error(`${where}: the Hub answered HTTP ${s}`);
    }
    if (err instanceof InvalidApiResponseFormatError || err instanceof SyntaxError)
      throw new Error(`${where}: the Hub's answer is malformed (${err.message})`);
    // fetch rejects with a TypeError when the request never gets an answer.
    if (err instanceof TypeError) throw new Error(`${where}: cannot reach the Hub (${err.message})`);
    throw err;
  }
}

const HEX40 = /^[0-9a-f]{40}$/;
const HEX64 = /^[0-9a-f]{64}$/;
/** The most entries a repo's top-level listing may have (the answer is untrusted: pages could go on). */
const MAX_LISTING = 10_000;

/**
 * The manifest of a repo at a revision: from the store when it is there (no request), else two
 * calls of the official client: `modelInfo` (the commit the revision resolves to, gated or not),
 * then `listFiles` at that commit (sizes, LFS SHA-256, Xet hashes).
 */
export async function hubModelInfo(
  repo: string,
  revision: string,
  store: ByteStore,
  opts: { endpoint?: string; fetch?: typeof fetch; token?: string } = {},
): Promise<HubManifest> {
  checkRepoId(repo);
  checkRevision(revision);
  const cached = await readJson<HubManifest>(store, manifestKey(repo, revision));
  if (cached) return cached;
  const where = `hf:${repo}@${revision}`;
  const client = clientOptions(opts);
  const info = await hubCall(where, repo, opts, () =>
    modelInfo({ ...client, name: repo, revision, additionalFields: ["sha"] }),
  );
  // A gated model's file list is public, its files are not: say so before a download fails.
  if (info.gated && !opts.token) throw new Error(accessMessage(repo, 401, undefined, client.hubUrl));
  // The answer is untrusted too: the commit and file names become cache keys, sizes loop bounds.
  if (typeof info.sha !== "string" || !HEX40.test(info.sha))
    throw new Error(`${where}: the Hub's commit ${JSON.stringify(info.sha)} is not 40 hex digits`);
  const commit = info.sha;
  // The lab reads top-level files only (isModelFile), so the listing is not recursive.
  const listing = await hubCall(where, repo, opts, async () => {
    const out: ListFileEntry[] = [];
    for await (const e of listFiles({ ...client, repo, revision: commit })) {
      out.push(e);
      if (out.length > MAX_LISTING)
        throw new Error(`${where}: the Hub lists more than ${MAX_LISTING} files at the top of the repo`);
    }
    return out;
  });
  const files: HubFile[] = [];
  for (const e of listing) {
    if (e?.type !== "file" || typeof e.path !== "string" || !isModelFile(e.path)) continue;
    const size = e.lfs?.size ?? e.size;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0 || size > MAX_FILE_BYTES)
      throw new Error(
        `${where}: the Hub gives no size, or one beyond ${MAX_FILE_BYTES} bytes, for ${e.path}`,
      );
    const f: HubFile = { path: e.path, size };
    if (e.lfs !== undefined) {
      if (!HEX64.test(String(e.lfs.oid)))
        throw new Error(`${where}: the Hub's LFS hash of ${e.path} is not a SHA-256 (64 hex digits)`);
      f.sha256 = e.lfs.oid;
    }
    if (e.xetHash !== undefined) {
      if (!HEX64.test(String(e.xetHash)))
        throw new Error(`${where}: the Hub's Xet hash of ${e.path} is not 64 hex digits`);
      f.xetHash = e.xetHash;
    }
    files.push(f);
  }
  if (!files.some((f) => f.path === "config.json"))
    throw new Error(`${where}: the repo has no config.json (not a transformers model)`);
  if (!files.some((f) => f.path.endsWith(".safetensors")))
    throw new Error(`${where}: the repo has no .safetensors weights (only safetensors are read)`);
  return { repo, revision, commit, files };
}

/** Bytes of a manifest's files already in the store. */
export async function cachedBytes(m: HubManifest, store: ByteStore, chunk = CHUNK_BYTES): Promise<number> {
  const keys = new Set(await store.keys());
  let n = 0;
  for (const f of m.files)
    for (let i = 0; i < chunkCount(f.size, chunk); i++)
      if (keys.has(chunkKey(m, f.path, i))) n += Math.min(chunk, f.size - i * chunk);
  return n;
}

/**
 * Fetches every file of `m` that the store does not hold yet, chunk by chunk (Range requests),
 * storing each chunk as it arrives; the manifest is stored last, so a model counts as cached only
 * when every chunk is there. The official client's `fileDownloadInfo` names each file's download
 * URL at the commit (and checks its size); the token goes only to the Hub's own origin, never to a
 * file CDN. Throws (keeping what arrived) when a request fails.
 */
export async function downloadHub(
  m: HubManifest,
  store: ByteStore,
  opts: {
    endpoint?: string;
    fetch?: typeof fetch;
    chunkBytes?: number;
    onProgress?: (p: DownloadProgress) => void;
    signal?: AbortSignal;
    token?: string;
  } = {},
): Promise<void> {
  const chunk = opts.chunkBytes ?? CHUNK_BYTES;
  const doFetch = opts.fetch ?? fetch;
  const client = clientOptions(opts);
  const hubOrigin = new URL(client.hubUrl).origin;
  const total = m.files.reduce((a, f) => a + f.size, 0);
  const keys = new Set(await store.keys());
  let done = await cachedBytes(m, store, chunk);
  let fetched = 0;
  for (const f of m.files) {
    const missing = [...Array(chunkCount(f.size, chunk)).keys()].filter(
      (i) => !keys.has(chunkKey(m, f.path, i)),
    );
    if (!missing.length) continue;
    const where = `hf:${m.repo}@${m.revision}: ${f.path}`;
    const info = await hubCall(where, m.repo, opts, () =>
      fileDownloadInfo({ ...client, repo: m.repo, path: f.path, revision: m.commit }),
    );
    if (!info) throw new Error(`${where}: the Hub has no such file at commit ${m.commit}`);
    if (info.size !== f.size)
      throw new Error(`${where}: the Hub's download gives ${info.size} bytes, its file list ${f.size}`);
    const toHub = new URL(info.url).origin === hubOrigin;
    for (const i of missing) {
      const start = i * chunk;
      const end = Math.min(f.size, start + chunk) - 1; // inclusive
      const at = `${where} bytes ${start}-${end}`;
      let res: Response;
      try {
        res = await doFetch(info.url, {
          headers: { Range: `bytes=${start}-${end}`, ...(toHub ? authHeaders(opts.token) : {}) },
          signal: opts.signal,
        });
      } catch (err) {
        throw new Error(
          `${at}: download interrupted (${(err as Error).message}); downloading again resumes here`,
        );
      }
      if ((res.status === 401 || res.status === 403) && toHub)
        throw new Error(accessMessage(m.repo, res.status, opts.token, client.hubUrl));
      // A file CDN's signed link expires: the next download asks the Hub for a fresh one.
      if (res.status === 401 || res.status === 403)
        throw new Error(
          `${at}: the download link expired (HTTP ${res.status}); downloading again resumes here`,
        );
      if (!res.ok) throw new Error(`${at}: HTTP ${res.status}`);
      let body: Blob;
      try {
        body = await res.blob();
      } catch (err) {
        throw new Error(
          `${at}: download interrupted (${(err as Error).message}); downloading again resumes here`,
        );
      }
      // A server that ignores Range answers 200 with the whole file.
      if (res.status === 200 && body.size === f.size) body = body.slice(start, end + 1);
      if (body.size !== end - start + 1)
        throw new Error(`${at}: got ${body.size} bytes, expected ${end - start + 1}`);
      await store.put(chunkKey(m, f.path, i), body);
      done += body.size;
      fetched += body.size;
      opts.onProgress?.({ file: f.path, done, total, fetched });
    }
  }
  const stored = { ...m, chunkBytes: chunk };
  await store.put(manifestKey(m.repo, m.revision), jsonBlob(stored));
  if (m.commit !== m.revision) await store.put(manifestKey(m.repo, m.commit), jsonBlob(stored));
}

/** SHA-256 of bytes, lowercase hex. */
export async function sha256Hex(data: Blob): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await data.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Stores picked files (name -> Blob) by SHA-256; returns the local source that names them. */
export async function addLocalFiles(
  name: string,
  files: Map<string, Blob>,
  store: ByteStore,
): Promise<ModelSource & { kind: "local" }> {
  const sha256: Record<string, string> = {};
  for (const [path, blob] of files) {
    if (!isModelFile(path)) continue;
    const hex = await sha256Hex(blob);
    sha256[path] = hex;
    if (!(await store.get(`sha256/${hex}`))) await store.put(`sha256/${hex}`, blob);
  }
  if (!sha256["config.json"]) throw new Error(`local:${name}: the files include no config.json`);
  if (!Object.keys(sha256).some((p) => p.endsWith(".safetensors")))
    throw new Error(`local:${name}: the files include no .safetensors weights`);
  await store.put(`local/${name}`, jsonBlob(sha256));
  return { kind: "local", name, sha256 };
}

/** What the store holds for a source: "cached", "partial" (some chunks) or "missing", with sizes. */
export interface CacheState {
  state: "cached" | "partial" | "missing";
  bytes: number;
  total?: number;
  /** Files a local source lacks (by name). */
  missing?: string[];
}

export async function sourceState(s: ModelSource, store: ByteStore): Promise<CacheState> {
  if (s.kind === "folder") return { state: "missing", bytes: 0 };
  if (s.kind === "local") {
    const missing: string[] = [];
    let bytes = 0;
    for (const [path, hex] of Object.entries(s.sha256)) {
      const b = await store.get(`sha256/${hex}`);
      if (b) bytes += b.size;
      else missing.push(path);
    }
    return { state: missing.length ? "missing" : "cached", bytes, missing };
  }
  const m = await readJson<HubManifest>(store, manifestKey(s.repo, s.revision));
  if (m) {
    const total = m.files.reduce((a, f) => a + f.size, 0);
    return { state: "cached", bytes: total, total };
  }
  const prefix = `hub/${s.repo}@`;
  const partial = (await store.keys()).filter((k) => k.startsWith(prefix) && k.includes("#"));
  return { state: partial.length ? "partial" : "missing", bytes: 0 };
}

/** A file of a cached source as one Blob, or null when the source does not have that file. Throws when the source is not cached. */
export async function openCached(s: ModelSource, file: string, store: ByteStore): Promise<Blob | null> {
  if (s.kind === "folder") throw new Error(`${s.path}: a folder is not read from the model cache`);
  if (s.kind === "local") {
    const hex = s.sha256[file];
    if (!hex) return null;
    const b = await store.get(`sha256/${hex}`);
    if (!b)
      throw new Error(
        `model.pretrained: ${sourceLabel(s)} is not in this browser: ${file} (sha256 ${hex.slice(0, 12)}...) is missing; pick the model's files again`,
      );
    return b;
  }
  const m = await readJson<HubManifest>(store, manifestKey(s.repo, s.revision));
  if (!m)
    throw new Error(
      `model.pretrained: ${sourceLabel(s)} is not downloaded in this browser; download it from the model picker`,
    );
  const f = m.files.find((x) => x.path === file);
  if (!f) return null;
  const chunk = m.chunkBytes ?? CHUNK_BYTES;
  const parts: Blob[] = [];
  for (let i = 0; i < chunkCount(f.size, chunk); i++) {
    const b = await store.get(chunkKey(m, f.path, i));
    if (!b)
      throw new Error(
        `model.pretrained: ${sourceLabel(s)}: chunk ${i} of ${file} is missing from the cache; download it again`,
      );
    parts.push(b);
  }
  return new Blob(parts);
}

/** What the cache holds, for the page's cache list: one entry per model, with its bytes. */
export interface CacheEntry {
  /** "hf:<repo>@<rev>" or "local:<name>". */
  id: string;
  bytes: number;
  complete: boolean;
}

export async function listCache(store: ByteStore): Promise<CacheEntry[]> {
  const keys = await store.keys();
  const out = new Map<string, CacheEntry>();
  for (const k of keys) {
    const hub = /^hub\/(.+)@([^/]+)\/manifest$/.exec(k);
    if (hub) {
      const m = await readJson<HubManifest>(store, k);
      if (m && m.revision === hub[2])
        out.set(`hf:${m.repo}@${m.revision}`, {
          id: `hf:${m.repo}@${m.revision}`,
          bytes: m.files.reduce((a, f) => a + f.size, 0),
          complete: true,
        });
    }
    const local = /^local\/(.+)$/.exec(k);
    if (local) {
      const sha = (await readJson<Record<string, string>>(store, k)) ?? {};
      let bytes = 0;
      for (const hex of Object.values(sha)) bytes += (await store.get(`sha256/${hex}`))?.size ?? 0;
      out.set(`local:${local[1]}`, { id: `local:${local[1]}`, bytes, complete: true });
    }
  }
  // Chunks of a download that never finished.
  for (const k of keys) {
    const part = /^hub\/(.+)@([^/]+)\/.+#\d+$/.exec(k);
    if (!part) continue;
    const known = [...out.values()].some((e) => e.id.startsWith(`hf:${part[1]}@`));
    if (!known) {
      const id = `hf:${part[1]}@${part[2]} (partial)`;
      const e = out.get(id) ?? { id, bytes: 0, complete: false };
      e.bytes += (await store.get(k))?.size ?? 0;
      out.set(id, e);
    }
  }
  return [...out.values()];
}

/**
 * Removes one source from the store: a local source's manifest and the files no other local
 * manifest names (files are stored by hash, so two picks may share one); a Hub source's manifests
 * at `commit` (every revision that resolved to it) and its chunks, finished or not. A model the
 * lab refuses leaves nothing behind this way (workers/model-cache.ts).
 */
export async function evictSource(s: ModelSource, store: ByteStore, commit?: string): Promise<void> {
  if (s.kind === "local") {
    const mine = `local/${s.name}`;
    const stored = await readJson<Record<string, string>>(store, mine);
    const same = (a: Record<string, string>, b: Record<string, string>) =>
      Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([f, h]) => b[f] === h);
    if (stored && same(stored, s.sha256)) await store.delete(mine);
    const kept = new Set<string>();
    for (const k of await store.keys())
      if (k.startsWith("local/"))
        for (const hex of Object.values((await readJson<Record<string, string>>(store, k)) ?? {}))
          kept.add(hex);
    for (const hex of Object.values(s.sha256)) if (!kept.has(hex)) await store.delete(`sha256/${hex}`);
    return;
  }
  if (s.kind !== "hub") return;
  const at = commit ?? (await readJson<HubManifest>(store, manifestKey(s.repo, s.revision)))?.commit;
  if (!at) return;
  const prefix = `hub/${s.repo}@`;
  for (const k of await store.keys()) {
    if (!k.startsWith(prefix)) continue;
    if (k.startsWith(`${prefix}${at}/`)) await store.delete(k);
    else if (k.endsWith("/manifest") && (await readJson<HubManifest>(store, k))?.commit === at)
      await store.delete(k);
  }
}

/** Removes everything the store holds (every model). */
export async function clearCache(store: ByteStore): Promise<void> {
  for (const k of await store.keys()) await store.delete(k);
}

/** A ByteStore in memory (tests, and where Cache Storage is unavailable). */
export function memoryByteStore(): ByteStore {
  const m = new Map<string, Blob>();
  return {
    get: async (k) => m.get(k) ?? null,
    put: async (k, b) => void m.set(k, b),
    delete: async (k) => void m.delete(k),
    keys: async () => [...m.keys()],
  };
}
