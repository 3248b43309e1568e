// The in-browser benchmarks' page: a bench entry (bench/<group>-page.ts) bundled by Vite into
// a temp dir with an index.html, served from http://localhost (WebGPU needs a secure context)
// by e2e/static-server.ts. Used by bench/kernels.ts and bench/model.ts.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { serveDir } from "../e2e/static-server";

const HERE = dirname(fileURLToPath(import.meta.url));

/** Bundles `entry` (a file in bench/) and serves it; `close()` stops the server. */
export async function serveBenchPage(
  entry: string,
  label: string,
): Promise<{ url: string; dir: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), `${label}-bench-`));
  await build({
    configFile: false,
    logLevel: "warn",
    root: HERE,
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    build: {
      outDir: dir,
      emptyOutDir: false,
      target: "es2022",
      minify: false,
      lib: { entry: join(HERE, entry), formats: ["es"], fileName: () => "bench.js" },
    },
  });
  writeFileSync(
    join(dir, "index.html"),
    `<!doctype html><meta charset="utf-8"><script type="module" src="bench.js"></script>`,
  );
  const server = await serveDir(dir);
  return { url: server.url, dir, close: server.close };
}
