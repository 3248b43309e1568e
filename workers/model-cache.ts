// The page's model cache: model/hub.ts's ByteStore over the Cache Storage API (one cache,
// "lab-models-v1"), which a dedicated worker can use and which survives reloads; and the worker's
// model calls (sizes, download with progress, picked files, list and clear), so that tokenizers
// and weights are read in the trainer worker, never on the page's main thread. A model's files
// are checked as untrusted input (model/untrusted.ts) when picked (before they are stored), when
// downloaded and when the picker asks about a cached one (ModelInfo.refused); a refused model
// leaves nothing in the cache. Tested by workers/model-cache.test.ts and e2e/model.e2e.test.ts.

import type { RunConfig } from "../config";
import type { ModelDir } from "../model/hf/read";
import {
  addLocalFiles,
  type ByteStore,
  type CacheEntry,
  type CacheState,
  CHUNK_BYTES,
  clearCache,
  type DownloadProgress,
  downloadHub,
  evictSource,
  hubModelInfo,
  listCache,
  memoryByteStore,
  openCached,
  sourceState,
} from "../model/hub";
import { blobSource } from "../model/safetensors";
import { type ModelSource, parseModelSource, sourceLabel } from "../model/source";
import { checkModelFiles, ModelFileError } from "../model/untrusted";
import { NotOnServerError } from "./served-file";

const CACHE_NAME = "lab-models-v1";
const ORIGIN = "https://lab-model-cache.invalid/";

const keyUrl = (key: string) => ORIGIN + key.split("/").map(encodeURIComponent).join("/");
const urlKey = (url: string) => new URL(url).pathname.slice(1).split("/").map(decodeURIComponent).join("/");

/** Cache Storage as a ByteStore; a memory store where the browser gives none (opaque origins). */
export function cacheStorageStore(): ByteStore {
  if (typeof caches === "undefined") return memoryByteStore();
  const open = () => caches.open(CACHE_NAME);
  return {
    get: async (k) => {
      const r = await (await open()).match(keyUrl(k));
      return r ? r.blob() : null;
    },
    put: async (k, b) =>
      (await open()).put(keyUrl(k), new Response(b, { headers: { "content-length": String(b.size) } })),
    delete: async (k) => void (await (await open()).delete(keyUrl(k))),
    keys: async () => (await (await open()).keys()).map((r) => urlKey(r.url)),
  };
}

let store: ByteStore | undefined;
export function modelStore(): ByteStore {
  store ??= cacheStorageStore();
  return store;
}

/** What the picker shows about a source before (and after) downloading it. */
export interface ModelInfo {
  label: string;
  files: { path: string; size: number }[];
  total: number;
  state: CacheState;
  /** The Hub commit the revision resolved to. */
  commit?: string;
  /** config.json, parsed, once it is available (the config panel's memory plan reads it). */
  config?: unknown;
  /** config.json's architecture in words, or why it is not supported. */
  architecture?: string;
  /** Why the lab refuses the model's files (model/untrusted.ts: the file and the check), if it does. */
  refused?: string;
}

export interface ModelOptions {
  /** The Hub's address (tests serve a fake one). */
  endpoint?: string;
  chunkBytes?: number;
  /** The person's Hub token (gated and private models): sent to the Hub only, kept nowhere here. */
  token?: string;
}

type Checked = { config?: unknown; architecture?: string; refused?: string };
// Checks of cached sources, by source and content (a local source's hashes, a Hub commit).
const checked = new Map<string, Promise<Checked>>();
const checkKey = (s: ModelSource, commit?: string) =>
  JSON.stringify([sourceLabel(s), commit ?? null, s.kind === "local" ? s.sha256 : null]);

/**
 * config.json and the untrusted-file check of a model's files (model/untrusted.ts: every file
 * read through the lab's bounded readers, the chat template rendered in its sandbox): the
 * architecture in words, or why the lab refuses the model. Errors other than a refusal throw.
 */
async function checkDir(dir: ModelDir, configBlob: Blob): Promise<Checked> {
  let config: unknown;
  try {
    config = JSON.parse(await configBlob.text());
  } catch {}
  try {
    const { config: mc } = await checkModelFiles(dir);
    return { config, architecture: `${mc.layers} layers, width ${mc.dModel}, vocabulary ${mc.vocab}` };
  } catch (err) {
    if (!(err instanceof ModelFileError)) throw err;
    return err.file === "config.json"
      ? { architecture: err.message, refused: err.message }
      : { config, refused: err.message };
  }
}

/**
 * The check of a cached source, so the picker shows a refused model before any run. A refused
 * model is removed from the cache at once (it can never run: its files do not change), so
 * nothing of it stays in this browser. Not cached yet: nothing to check.
 */
async function checkCached(s: ModelSource, commit?: string): Promise<Checked> {
  const blob = await openCached(s, "config.json", modelStore()).catch(() => null);
  if (!blob) return {};
  const key = checkKey(s, commit);
  let p = checked.get(key);
  if (!p) {
    p = (async () => {
      const name = s.kind === "local" ? `local:${s.name}` : s.kind === "hub" ? `hf:${s.repo}` : s.path;
      const dir: ModelDir = {
        name,
        open: async (path) => {
          const b = await openCached(s, path, modelStore());
          return b ? blobSource(b, `${name}/${path}`) : null;
        },
      };
      return checkDir(dir, blob);
    })();
    checked.set(key, p);
    p.catch(() => checked.delete(key));
  }
  const out = await p;
  if (out.refused) await evictSource(s, modelStore(), commit);
  return out;
}

export async function modelInfo(s: ModelSource, opts: ModelOptions = {}): Promise<ModelInfo> {
  const st = modelStore();
  const state = await sourceState(s, st);
  if (s.kind === "hub") {
    const m = await hubModelInfo(s.repo, s.revision, st, { endpoint: opts.endpoint, token: opts.token });
    const files = m.files.map((f) => ({ path: f.path, size: f.size }));
    const check = await checkCached(s, m.commit);
    return {
      label: sourceLabel(s),
      files,
      total: files.reduce((a, f) => a + f.size, 0),
      state: check.refused ? await sourceState(s, st) : state,
      commit: m.commit,
      ...check,
    };
  }
  if (s.kind === "local") {
    const files = Object.keys(s.sha256).map((path) => ({ path, size: 0 }));
    const check = await checkCached(s);
    return {
      label: sourceLabel(s),
      files,
      total: state.bytes,
      state: check.refused ? await sourceState(s, st) : state,
      ...check,
    };
  }
  throw new Error(`${s.path}: a folder model is read from the app's files, not the model cache`);
}

export async function downloadModel(
  s: ModelSource,
  onProgress: (p: DownloadProgress) => void,
  opts: ModelOptions = {},
): Promise<ModelInfo> {
  if (s.kind !== "hub") throw new Error(`${sourceLabel(s)}: only Hub models are downloaded`);
  const m = await hubModelInfo(s.repo, s.revision, modelStore(), {
    endpoint: opts.endpoint,
    token: opts.token,
  });
  await downloadHub(m, modelStore(), {
    endpoint: opts.endpoint,
    token: opts.token,
    chunkBytes: opts.chunkBytes ?? CHUNK_BYTES,
    onProgress,
  });
  const info = await modelInfo(s, opts);
  if (info.refused) throw new Error(refusedMessage(sourceLabel(s), info.refused));
  return info;
}

const refusedMessage = (label: string, why: string) =>
  `refused: ${why} (nothing of ${label} is kept in this browser)`;

/**
 * Picked files, checked before anything is stored: a refused model is an error naming the file
 * and why, and the cache stays as it was; an accepted one is stored by hash with its check.
 */
export async function addLocalModel(
  name: string,
  files: { path: string; blob: Blob }[],
): Promise<ModelSource> {
  const byName = new Map(files.map((f) => [f.path.split("/").pop() as string, f.blob]));
  const label = `local:${name}`;
  const configBlob = byName.get("config.json");
  let check: Checked | undefined;
  if (configBlob) {
    const dir: ModelDir = {
      name: label,
      open: async (path) => {
        const b = byName.get(path);
        return b ? blobSource(b, `${label}/${path}`) : null;
      },
    };
    check = await checkDir(dir, configBlob);
    if (check.refused) throw new Error(refusedMessage(label, check.refused));
  }
  const s = await addLocalFiles(name, byName, modelStore());
  if (check) checked.set(checkKey(s), Promise.resolve(check));
  return s;
}

export const listModelCache = (): Promise<CacheEntry[]> => listCache(modelStore());
export const clearModelCache = (): Promise<void> => clearCache(modelStore());

/**
 * The run's file readers: paths under an hf: or local: model.pretrained / model.tokenizer come
 * from the model cache (an error naming the model when it is not there), others from `fallback`.
 */
export function cachedFiles(
  config: RunConfig,
  fallback: (path: string) => Promise<Uint8Array>,
): { readFile(path: string): Promise<Uint8Array>; openFile(path: string): Promise<Blob | null> } {
  const roots = [config.model.pretrained, config.model.tokenizer].filter(
    (p): p is string => p !== null && (p.startsWith("hf:") || p.startsWith("local:")),
  );
  const resolve = (path: string): { s: ModelSource; file: string } | null => {
    for (const r of roots)
      if (path.startsWith(`${r}/`))
        return { s: parseModelSource(r, config.model), file: path.slice(r.length + 1) };
    return null;
  };
  const openFile = async (path: string): Promise<Blob | null> => {
    const hit = resolve(path);
    if (!hit) {
      // A file the server does not have is absent (a model's optional shard index); a file that
      // is there but broken, or a server that fails, is an error naming the file.
      try {
        return new Blob([(await fallback(path)) as Uint8Array<ArrayBuffer>]);
      } catch (err) {
        if (err instanceof NotOnServerError) return null;
        throw err;
      }
    }
    return openCached(hit.s, hit.file, modelStore());
  };
  return {
    openFile,
    readFile: async (path) => {
      if (!resolve(path)) return fallback(path);
      const b = await openFile(path);
      if (!b) throw new Error(`${path}: the model has no such file`);
      return new Uint8Array(await b.arrayBuffer());
    },
  };
}
