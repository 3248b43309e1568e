// Builds the e2e harness page (e2e/harness: the trainer worker behind a bare page, no app UI)
// into a temporary folder and serves it on localhost. Shared by the specs that drive the worker API.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "vite";
import { serveDir } from "./static-server";

export async function serveHarness(): Promise<{ url: string; close(): Promise<void> }> {
  const outDir = mkdtempSync(join(tmpdir(), "harness-"));
  await build({
    configFile: false,
    root: "e2e/harness",
    base: "./",
    publicDir: false,
    logLevel: "warn",
    worker: { format: "es" },
    build: { outDir, emptyOutDir: true, target: "es2022" },
  });
  return serveDir(outDir);
}
