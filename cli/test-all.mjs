#!/usr/bin/env node
// `npm test`: every test layer in order, then one closing line "N passed, N failed".
//   1. static: TypeScript (strict) typecheck and Biome lint/format check
//   2. unit:   vitest project "unit" (Node), then "serial" (timing-sensitive sandbox tests, alone)
//   3. gpu:    vitest project "gpu" (WGSL run for real through Dawn: lavapipe or SwiftShader)
//   4. train:  vitest project "train" (headless training runs through Dawn: ci-tiny learns)
//   5. e2e:    vitest project "e2e" (the built app in system Chromium with WebGPU, via playwright-core)
// `npm test -- unit gpu` runs only the named layers.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";

const LAYERS = ["static", "unit", "serial", "gpu", "train", "e2e"];
const wanted = process.argv.slice(2).filter((a) => LAYERS.includes(a));
const layers = wanted.length ? wanted : LAYERS;
const bin = (name) => `node_modules/.bin/${name}`;
const results = [];

function run(cmd, args) {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: "inherit", env: process.env });
  return { code: r.status ?? 1, seconds: (Date.now() - t0) / 1000 };
}

for (const layer of layers) {
  console.log(`\n=== ${layer} ===`);
  if (layer === "static") {
    const tsc = run(bin("tsc"), ["--noEmit", "-p", "tsconfig.json"]);
    results.push({
      layer: "static/typecheck",
      passed: tsc.code === 0 ? 1 : 0,
      failed: tsc.code === 0 ? 0 : 1,
      seconds: tsc.seconds,
    });
    const lint = run(bin("biome"), ["check", "."]);
    results.push({
      layer: "static/lint",
      passed: lint.code === 0 ? 1 : 0,
      failed: lint.code === 0 ? 0 : 1,
      seconds: lint.seconds,
    });
    continue;
  }
  mkdirSync(".vitest-results", { recursive: true });
  const out = `.vitest-results/${layer}.json`;
  rmSync(out, { force: true });
  const r = run(bin("vitest"), [
    "run",
    "--project",
    layer,
    "--passWithNoTests",
    "--reporter=default",
    "--reporter=json",
    `--outputFile=${out}`,
  ]);
  if (!existsSync(out)) {
    results.push({
      layer,
      passed: 0,
      failed: 1,
      seconds: r.seconds,
      note: `vitest exited ${r.code} without results`,
    });
    continue;
  }
  const json = JSON.parse(readFileSync(out, "utf8"));
  // A file that fails to load has no test results but counts as a failure.
  const brokenFiles = (json.testResults ?? []).filter(
    (f) => f.status === "failed" && f.assertionResults.length === 0,
  ).length;
  const failed =
    json.numFailedTests + brokenFiles + (r.code !== 0 && json.numFailedTests + brokenFiles === 0 ? 1 : 0);
  results.push({ layer, passed: json.numPassedTests, failed, seconds: r.seconds });
}

console.log("\n=== summary ===");
for (const r of results) {
  console.log(
    `${r.layer.padEnd(18)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(4)} failed  ${r.seconds.toFixed(0)} s${r.note ? `  (${r.note})` : ""}`,
  );
}
const passed = results.reduce((s, r) => s + r.passed, 0);
const failed = results.reduce((s, r) => s + r.failed, 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
