#!/usr/bin/env node
// `npm test`: every test layer in order, then one closing line "N passed, N failed".
//   1. static: TypeScript (strict) typecheck and Biome lint/format check
//   2. unit:   vitest project "unit" (Node), then "serial" (timing-sensitive sandbox tests, alone)
//   3. gpu:    vitest projects "gpu" (WGSL run for real through Dawn: lavapipe or SwiftShader) and
//              "gpu-discrete" (the same with the discrete-GPU kernel plan forced)
//   4. train:  vitest project "train" (headless training runs through Dawn: ci-tiny learns)
//   5. engines: vitest project "engines" (the exports run in verl, TRL, transformers and PEFT, in the
//              venv of `npm run engines:setup`; without that venv the layer is reported skipped)
//   6. e2e:    vitest project "e2e" (the built app in system Chromium with WebGPU, via playwright-core)
// `npm test -- unit gpu` runs only the named layers.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const LAYERS = ["static", "unit", "serial", "gpu", "train", "engines", "e2e"];
// A layer's vitest projects where they are more than the one of its name: the gpu layer also runs
// the discrete-GPU kernel plan forced on this machine's adapter (vite.config.ts gpu-discrete).
const PROJECTS = { gpu: ["gpu", "gpu-discrete"] };
const wanted = process.argv.slice(2).filter((a) => LAYERS.includes(a));
const layers = wanted.length ? wanted : LAYERS;
const bin = (name) => `node_modules/.bin/${name}`;
const results = [];

/** Why the engines venv cannot be used, or null (the same checks as export/engines/venv.ts). */
function enginesVenvProblem() {
  const venv =
    process.env.LAB_ENGINES_VENV ||
    join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "agentic-rl-lab", "engines-venv");
  const stamp = join(venv, ".lab-engines-stamp");
  if (!existsSync(join(venv, "bin", "python")) || !existsSync(stamp)) return `no venv at ${venv}`;
  const pins = createHash("sha256");
  for (const f of ["requirements.txt", "constraints.txt"])
    pins.update(readFileSync(join("export/engines", f)));
  if (readFileSync(stamp, "utf8").trim() !== pins.digest("hex"))
    return `the venv at ${venv} is from other pins`;
  return null;
}

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
  if (layer === "engines") {
    const problem = enginesVenvProblem();
    if (problem) {
      console.log(`skipped: ${problem}; make it with \`npm run engines:setup\``);
      results.push({
        layer,
        passed: 0,
        failed: 0,
        skipped: 1,
        seconds: 0,
        note: `skipped: ${problem}; npm run engines:setup`,
      });
      continue;
    }
  }
  mkdirSync(".vitest-results", { recursive: true });
  const out = `.vitest-results/${layer}.json`;
  rmSync(out, { force: true });
  const r = run(bin("vitest"), [
    "run",
    ...(PROJECTS[layer] ?? [layer]).flatMap((p) => ["--project", p]),
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
  results.push({
    layer,
    passed: json.numPassedTests,
    failed,
    skipped: json.numPendingTests ?? 0,
    seconds: r.seconds,
  });
}

console.log("\n=== summary ===");
for (const r of results) {
  console.log(
    `${r.layer.padEnd(18)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(4)} failed  ${r.seconds.toFixed(0)} s${r.note ? `  (${r.note})` : ""}`,
  );
}
const passed = results.reduce((s, r) => s + r.passed, 0);
const failed = results.reduce((s, r) => s + r.failed, 0);
const skipped = results.reduce((s, r) => s + (r.skipped ?? 0), 0);
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 ? 1 : 0);
