// The in-browser benchmarks' page: a bench entry (bench/<group>-page.ts) bundled by Vite into
// a temp dir with an index.html, served from http://localhost (WebGPU needs a secure context)
// by e2e/static-server.ts (inBenchPage also opens it in headless Chromium). Used by
// bench/kernels.ts, bench/model.ts, bench/shapes.ts and bench/peers-tjs.ts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { build } from "vite";
import { launchChromium } from "../e2e/chromium";
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

/**
 * Bundles and serves bench/<entry>, opens it in headless Chromium, waits for every name in
 * `globals` to appear on the page, and runs `fn` there (page errors are named when it does not
 * load). `prepare` may add files to the served folder first (another bundle, a model folder) and
 * returns the index.html to serve instead of the one that loads bench.js alone.
 */
export async function inBenchPage<T>(
  entry: string,
  label: string,
  globals: string | string[],
  fn: (page: Page) => Promise<T>,
  prepare?: (dir: string) => Promise<string>,
): Promise<T> {
  const server = await serveBenchPage(entry, label);
  try {
    if (prepare) writeFileSync(join(server.dir, "index.html"), await prepare(server.dir));
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(server.url);
      const names = typeof globals === "string" ? [globals] : globals;
      await page
        .waitForFunction((gs) => gs.every((g) => g in globalThis), names, { timeout: 60_000 })
        .catch(() => {
          throw new Error(
            `the ${label} bench page did not load: ${errors.join("; ") || "no error reported"}`,
          );
        });
      return await fn(page);
    } finally {
      await browser.close();
    }
  } finally {
    await server.close();
    rmSync(server.dir, { recursive: true, force: true });
  }
}
