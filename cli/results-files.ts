// A folder (or one file) on disk as results/'s ResultFile list: every file under it, read only
// when results/import.ts asks (a run folder's checkpoints are listed, never read), each path
// beginning with the folder's name as a browser's folder pick gives it (webkitRelativePath).
// Used by `npm run compare` and results/results.test.ts.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative } from "node:path";
import type { ResultFile } from "../results/read.ts";

const SKIP = new Set([".git", "node_modules"]);

export function resultFilesOf(root: string): ResultFile[] {
  const out: ResultFile[] = [];
  const add = (path: string, rel: string) =>
    out.push({
      path: rel,
      size: statSync(path).size,
      text: async () => readFileSync(path, "utf8"),
      bytes: async () => {
        const b = readFileSync(path);
        return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
      },
    });
  if (statSync(root).isFile()) {
    add(root, basename(root));
    return out;
  }
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (SKIP.has(e.name)) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) add(p, [basename(root), ...relative(root, p).split(/[\\/]/)].join("/"));
    }
  };
  walk(root);
  return out;
}
