// Vite builds the lab (app/ is the root, workers are bundled as ES modules) and hosts the
// test projects: unit (Node), gpu (WGSL run for real through Dawn in Node), train (headless
// training runs through Dawn) and e2e (Playwright against the built app in system Chromium).
// `npm test` runs them all via cli/test-all.mjs.
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: "app",
  publicDir: "../public",
  base: "./",
  build: { outDir: "../dist", emptyOutDir: true, target: "es2022" },
  worker: { format: "es" },
  server: { port: 5173, fs: { allow: [".."] } },
  preview: { port: 4173 },
  test: {
    root: ".",
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          root: ".",
          include: [
            "{config,kernels,model,rl,sandbox,tasks,testing,cli,workers,app,bench,export,results}/**/*.test.{ts,tsx}",
          ],
          exclude: ["**/*.gpu.test.ts", "**/*.train.test.ts", "**/*.serial.test.ts", "**/node_modules/**"],
          testTimeout: 30_000,
        },
      },
      {
        // Timing-sensitive sandbox assertions (deadline + 1 s): alone, one file at a time.
        extends: true,
        test: {
          name: "serial",
          root: ".",
          include: ["**/*.serial.test.ts"],
          exclude: ["**/node_modules/**"],
          fileParallelism: false,
          testTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "gpu",
          root: ".",
          include: ["**/*.gpu.test.ts"],
          exclude: ["**/node_modules/**"],
          // a fixed matmul tile (kernels/autotune.ts): no test file spends a second measuring;
          // the autotune's own tests and rl/run/round-trips measure anyway
          env: { LAB_MATMUL_TILE: "8x8" },
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
      {
        extends: true,
        test: {
          name: "train",
          root: ".",
          include: ["**/*.train.test.ts"],
          exclude: ["**/node_modules/**"],
          env: { LAB_MATMUL_TILE: "8x8" },
          fileParallelism: false,
          testTimeout: 900_000,
          hookTimeout: 300_000,
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          root: ".",
          include: ["e2e/**/*.e2e.test.ts"],
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 120_000,
          globalSetup: ["e2e/global-setup.ts"],
        },
      },
    ],
  },
});
