#!/usr/bin/env node
// Compares headless runs side by side (docs/EXPERIMENTS.md is made with it):
//   node cli/compare-runs.mjs runs/a runs/b [--keys val/acc,tool/call_rate,...] [--upto N]
// (--upto N: only rows up to RL step N, so a longer run compares with a shorter one)
// For each metric: the value at the first and last row that has it, and the mean, max and
// standard deviation over the RL steps, one markdown row per run.
import { existsSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
const ki = args.indexOf("--keys");
const ui = args.indexOf("--upto");
const upto = ui >= 0 ? Number(args[ui + 1]) : Number.POSITIVE_INFINITY;
const keys =
  ki >= 0
    ? args[ki + 1].split(",")
    : [
        "val/acc",
        "val/acc/hard",
        "val/tool_call_rate_sampled",
        "reward/mean",
        "tool/call_rate",
        "tool/calls_mean",
        "actor/grad_norm",
        "actor/entropy_post_tool",
      ];
const dirs = args.filter((a, i) => !a.startsWith("--") && i !== ki + 1 && (ui < 0 || i !== ui + 1));
if (dirs.length === 0) {
  console.error("usage: node cli/compare-runs.mjs <run dir>... [--keys k1,k2]");
  process.exit(2);
}

function rows(dir) {
  const p = `${dir}/metrics.jsonl`;
  if (!existsSync(p)) throw new Error(`${p} does not exist`);
  return readFileSync(p, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => r.phase === "rl" && r.step <= upto);
}

const f = (x) =>
  x === undefined || Number.isNaN(x) ? "-" : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(3);
console.log(`| run | metric | first | last | mean | max | std |`);
console.log(`| --- | --- | ---: | ---: | ---: | ---: | ---: |`);
for (const dir of dirs) {
  const rs = rows(dir);
  for (const k of keys) {
    const xs = rs.map((r) => r[k]).filter((v) => typeof v === "number");
    if (xs.length === 0) continue;
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const std = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
    console.log(
      `| ${dir.split("/").pop()} | ${k} | ${f(xs[0])} | ${f(xs[xs.length - 1])} | ${f(mean)} | ${f(Math.max(...xs))} | ${f(std)} |`,
    );
  }
}
