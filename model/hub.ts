// Models from the Hugging Face Hub and from picked files, kept in a byte store (the browser's
// Cache Storage: workers/model-cache.ts) so the second open makes no request.
//   hubModelInfo   one request (GET /api/models/<repo>/revision/<rev>?blobs=true): the commit,
//                  the files the lab reads and their sizes, shown before anything downloads.
//   downloadHub    each file in chunks fetched with Range requests; every chunk is stored as it
//                  arrives, so an interrupted download resumes at the first missing chunk.
//   addLocalFiles  picked files stored by SHA-256 (the hashes the run config records).
//   openCached     a cached file as one Blob over its chunks (read lazily by the safetensors reader).
// Store layout (keys): hub/<repo>@<rev>/manifest, hub/<repo>@<commit>/<file>#<chunk>,
// local/<name> (the manifest: file -> sha256), sha256/<hex> (a local file's bytes).
// No DOM: fetch, Blob and crypto.subtle are web standards (also in Node). Tested through the
// page by e2e/model.e2e.test.ts (a fake Hub behind page.route) and by model/hub.test.ts.
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

/** The manifest of a repo at a revision: from the store when it is there (no request), else one Hub API call. */
export async function hubModelInfo(
  repo: string,
  revision: string,
  store: ByteStore,
  opts: { endpoint?: string; fetch?: typeof fetch } = {},
): Promise<HubManifest> {
  checkRepoId(repo);
  checkRevision(revision);
  const cached = await readJson<HubManifest>(store, manifestKey(repo, revision));
  if (cached) return cached;
  const doFetch = opts.fetch ?? fetch;
  const url = `${opts.endpoint ?? HUB_ENDPOINT}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`;
  let res: Response;
  try {
    res = await doFetch(url);
  } catch (err) {
    throw new Error(`hf:${repo}@${revision}: cannot reach the Hub (${(err as Error).message})`);
  }
  if (res.status === 401 || res.status === 404)
    throw new Error(
      `hf:${repo}@${revision}: no such model or revision on the Hub (HTTP ${res.status}; gated and private models are not supported)`,
    );
  if (!res.ok) throw new Error(`hf:${repo}@${revision}: the Hub answered HTTP ${res.status}`);
  const info = (await res.json()) as {
    sha?: string;
    siblings?: { rfilename: string; size?: number; lfs?: { sha256?: string; size?: number } }[];
  };
  if (!info.sha || !Array.isArray(info.siblings))
    throw new Error(`hf:${repo}@${revision}: the Hub's answer has no commit or file list`);
  // The answer is untrusted too: the commit and file names become cache keys, sizes loop bounds.
  if (typeof info.sha !== "string" || !/^[0-9a-f]{40}$/.test(info.sha))
    throw new Error(
      `hf:${repo}@${revision}: the Hub's commit ${JSON.stringify(info.sha)} is not 40 hex digits`,
    );
  const files: HubFile[] = [];
  for (const s of info.siblings) {
    if (typeof s?.rfilename !== "string" || !isModelFile(s.rfilename)) continue;
    const size = s.lfs?.size ?? s.size;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0 || size > MAX_FILE_BYTES)
      throw new Error(
        `hf:${repo}@${revision}: the Hub gives no size, or one beyond ${MAX_FILE_BYTES} bytes, for ${s.rfilename}`,
      );
    files.push({ path: s.rfilename, size, sha256: s.lfs?.sha256 });
  }
  if (!files.some((f) => f.path === "config.json"))
    throw new Error(`hf:${repo}@${revision}: the repo has no config.json (not a transformers model)`);
  if (!files.some((f) => f.path.endsWith(".safetensors")))
    throw new Error(
      `hf:${repo}@${revision}: the repo has no .safetensors weights (only safetensors are read)`,
    );
  return { repo, revision, commit: info.sha, files };
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
 * when every chunk is there. Throws (keeping what arrived) when a request fails.
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
  } = {},
): Promise<void> {
  const chunk = opts.chunkBytes ?? CHUNK_BYTES;
  const doFetch = opts.fetch ?? fetch;
  const total = m.files.reduce((a, f) => a + f.size, 0);
  const keys = new Set(await store.keys());
  let done = await cachedBytes(m, store, chunk);
  let fetched = 0;
  for (const f of m.files) {
    const url = `${opts.endpoint ?? HUB_ENDPOINT}/${m.repo}/resolve/${encodeURIComponent(m.commit)}/${f.path}`;
    for (let i = 0; i < chunkCount(f.size, chunk); i++) {
      const key = chunkKey(m, f.path, i);
      if (keys.has(key)) continue;
      const start = i * chunk;
      const end = Math.min(f.size, start + chunk) - 1; // inclusive
      const where = `hf:${m.repo}@${m.revision}: ${f.path} bytes ${start}-${end}`;
      let res: Response;
      try {
        res = await doFetch(url, { headers: { Range: `bytes=${start}-${end}` }, signal: opts.signal });
      } catch (err) {
        throw new Error(
          `${where}: download interrupted (${(err as Error).message}); downloading again resumes here`,
        );
      }
      if (!res.ok) throw new Error(`${where}: HTTP ${res.status}`);
      let body: Blob;
      try {
        body = await res.blob();
      } catch (err) {
        throw new Error(
          `${where}: download interrupted (${(err as Error).message}); downloading again resumes here`,
        );
      }
      // A server that ignores Range answers 200 with the whole file.
      if (res.status === 200 && body.size === f.size) body = body.slice(start, end + 1);
      if (body.size !== end - start + 1)
        throw new Error(`${where}: got ${body.size} bytes, expected ${end - start + 1}`);
      await store.put(key, body);
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
