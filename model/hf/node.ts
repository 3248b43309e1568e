// A ModelDir over a folder on disk, for Node (tests, the CLI): each file is opened as a lazily
// read Blob (fs.openAsBlob), so the safetensors reader reads only the ranges it asks for.
// Node-only (node:fs); the browser uses blobModelDir (model/hf/read.ts) over picked or cached files.
import { existsSync, openAsBlob, statSync } from "node:fs";
import { join } from "node:path";
import { blobSource } from "../safetensors";
import type { ModelDir } from "./read";

export function nodeModelDir(path: string): ModelDir {
  return {
    name: path,
    open: async (file) => {
      const p = join(path, file);
      if (!existsSync(p) || !statSync(p).isFile()) return null;
      return blobSource(await openAsBlob(p), p);
    },
  };
}
