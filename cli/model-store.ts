// The CLI's model cache: model/hub.ts's ByteStore over a folder (default
// ~/.cache/agentic-rl-lab/models, or LAB_MODEL_CACHE), and the file reader a run uses for an
// "hf:" model.pretrained: the model is downloaded once (resuming an interrupted download), then
// read from the folder. Used by cli/train.ts (`--model hf:owner/name`, needs the network once).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative } from "node:path";
import type { RunConfig } from "../config";
import { type ByteStore, downloadHub, hubModelInfo, openCached } from "../model/hub";
import { modelSourceOf, sourceLabel } from "../model/source";

export function fsByteStore(
  root = process.env.LAB_MODEL_CACHE ?? join(homedir(), ".cache", "agentic-rl-lab", "models"),
): ByteStore {
  // Keys come partly from untrusted names (a revision, a file name): no segment may leave the root.
  const path = (k: string) => {
    const parts = k.split("/");
    if (parts.some((p) => p === "" || p === "." || p === ".."))
      throw new Error(`model cache: key ${JSON.stringify(k)} has an empty, "." or ".." segment`);
    return join(root, ...parts.map((p) => encodeURIComponent(p)));
  };
  const walk = (d: string): string[] =>
    existsSync(d)
      ? readdirSync(d, { withFileTypes: true }).flatMap((e) =>
          e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)],
        )
      : [];
  return {
    get: async (k) => (existsSync(path(k)) ? new Blob([readFileSync(path(k))]) : null),
    put: async (k, b) => {
      mkdirSync(dirname(path(k)), { recursive: true });
      writeFileSync(path(k), new Uint8Array(await b.arrayBuffer()));
    },
    delete: async (k) => rmSync(path(k), { force: true }),
    keys: async () =>
      walk(root).map((f) => relative(root, f).split(/[\\/]/).map(decodeURIComponent).join("/")),
  };
}

/** For an "hf:" run: downloads what the cache lacks (with progress on stderr) and returns a reader over the cache, else null. */
export async function hubReader(
  config: RunConfig,
  log: (line: string) => void,
): Promise<((path: string) => Promise<Uint8Array | null>) | null> {
  const s = modelSourceOf(config);
  if (s?.kind !== "hub") return null;
  const store = fsByteStore();
  const m = await hubModelInfo(s.repo, s.revision, store);
  const total = m.files.reduce((a, f) => a + f.size, 0);
  log(
    `model ${sourceLabel(s)} (commit ${m.commit.slice(0, 10)}): ${m.files.length} files, ${(total / 1e6).toFixed(1)} MB`,
  );
  let last = 0;
  await downloadHub(m, store, {
    onProgress: (p) => {
      if (p.done - last > total / 20 || p.done === total)
        log(`  downloaded ${(p.done / 1e6).toFixed(1)} / ${(total / 1e6).toFixed(1)} MB`);
      last = p.done;
    },
  });
  const root = config.model.pretrained as string;
  return async (path) => {
    if (!path.startsWith(`${root}/`)) return null;
    const b = await openCached(s, path.slice(root.length + 1), store);
    if (!b) throw new Error(`${path}: the model has no such file`);
    return new Uint8Array(await b.arrayBuffer());
  };
}
