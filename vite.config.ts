// Vite builds the lab (app/ is the root, workers are bundled as ES modules) and hosts the
// test projects: unit (Node), gpu (WGSL run for real through Dawn in Node), train (headless
// training runs through Dawn), engines (the exports run in verl, TRL, transformers and PEFT)
// and e2e (Playwright against the built app in system Chromium).
// `npm test` runs them all via cli/test-all.mjs.
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: "app",
  publicDir: "../public",
  base: "./",
  // A file that does not exist is a 404, not the app's index.html with status 200 (the "spa"
  // fallback): `npm start` answers as a plain static host does. The lab also runs on hosts that
  // do serve the app for every path (workers/served-file.ts tells a web page from a data file).
  appType: "mpa",
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
          exclude: [
            "**/*.gpu.test.ts",
            "**/*.train.test.ts",
            "**/*.serial.test.ts",
            "**/*.engines.test.ts",
            "**/node_modules/**",
          ],
          testTimeout: 120_000,
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
          testTimeout: 240_000,
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
        // The discrete-GPU plan forced on this machine's adapter (lavapipe: its real subgroup size):
        // each op variant that plan uses against its reference, a whole-model train step and KV
        // decode (model/gpu), one RL step and its replay. Part of npm test's gpu layer.
        extends: true,
        test: {
          name: "gpu-discrete",
          root: ".",
          include: [
            "kernels/plan.gpu.test.ts",
            "kernels/matmul.gpu.test.ts",
            "kernels/attention.gpu.test.ts",
            "kernels/decode.gpu.test.ts",
            "kernels/ops.gpu.test.ts",
            "kernels/reduce.gpu.test.ts",
            "kernels/head.gpu.test.ts",
            "kernels/rope.gpu.test.ts",
            "model/gpu.gpu.test.ts",
            "rl/run/replay.gpu.test.ts",
          ],
          env: { LAB_KERNEL_PLAN: "discrete", LAB_MATMUL_TILE: "8x8" },
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
        // The exports run in verl, TRL, transformers and PEFT (the venv of npm run engines:setup,
        // export/engines/venv.ts); CPU-heavy: one file at a time.
        extends: true,
        test: {
          name: "engines",
          root: ".",
          include: ["**/*.engines.test.ts"],
          exclude: ["**/node_modules/**"],
          fileParallelism: false,
          testTimeout: 900_000,
          hookTimeout: 900_000,
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
