#!/usr/bin/env node
// Seed-level summary of the policy-loss comparison on quick-demo (docs/EXPERIMENTS.md,
// "GRPO vs GSPO vs CISPO"): for each arm, over its seeds, mean ± sample sd of val/acc at the
// last evaluation, and of each run's actor/grad_norm mean, std over steps and max, plus the
// clip fraction, the mean actor/ppo_kl and the last actor/entropy. Reads <dir>/<arm>-s<seed>.metrics.jsonl (the committed files next to this one).
//   node docs/experiments/losses/summarize.mjs [dir]
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = process.argv[2] ?? dirname(fileURLToPath(import.meta.url));
const runs = new Map();
for (const f of readdirSync(dir)
  .filter((f) => f.endsWith(".metrics.jsonl"))
  .sort()) {
  const m = /^(.*)-s(\d+)\.metrics\.jsonl$/.exec(f);
  if (!m) continue;
  const rows = readFileSync(join(dir, f), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => r.phase === "rl");
  if (!runs.has(m[1])) runs.set(m[1], []);
  runs.get(m[1]).push({ seed: Number(m[2]), rows });
}

const mean = (x) => x.reduce((a, b) => a + b, 0) / x.length;
const sd = (x) =>
  x.length < 2 ? Number.NaN : Math.sqrt(x.reduce((a, b) => a + (b - mean(x)) ** 2, 0) / (x.length - 1));
const fmt = (x, d = 2) => `${mean(x).toFixed(d)} ± ${sd(x).toFixed(d)}`;
const series = (rows, key) => rows.map((r) => r[key]).filter((v) => typeof v === "number");
const last = (rows, key) => series(rows, key).at(-1);

console.log(
  "| arm | seeds | val/acc step 0 | val/acc step 5 | val/acc last | val/acc/hard last | grad_norm mean | grad_norm std over steps | grad_norm max | pg_clipfrac mean | ppo_kl mean | entropy last |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const [arm, rs] of runs) {
  const accAt = (step) =>
    rs.map((r) => r.rows.find((x) => x.step === step)?.["val/acc"]).filter((v) => v !== undefined);
  const g = rs.map((r) => series(r.rows, "actor/grad_norm"));
  const cells = [
    arm,
    rs.map((r) => r.seed).join(", "),
    fmt(accAt(0)),
    fmt(accAt(5)),
    fmt(rs.map((r) => last(r.rows, "val/acc"))),
    fmt(rs.map((r) => last(r.rows, "val/acc/hard"))),
    fmt(g.map(mean)),
    fmt(g.map(sd)),
    fmt(g.map((x) => Math.max(...x))),
    fmt(
      rs.map((r) => mean(series(r.rows, "actor/pg_clipfrac"))),
      3,
    ),
    fmt(
      rs.map((r) => mean(series(r.rows, "actor/ppo_kl"))),
      3,
    ),
    fmt(rs.map((r) => last(r.rows, "actor/entropy"))),
  ];
  console.log(`| ${cells.join(" | ")} |`);
}
console.log("\nper run: val/acc at steps 0, 5, 10; grad_norm mean / max");
for (const [arm, rs] of runs)
  for (const r of rs) {
    const acc = r.rows.filter((x) => typeof x["val/acc"] === "number").map((x) => x["val/acc"].toFixed(2));
    const gn = series(r.rows, "actor/grad_norm");
    console.log(
      `${arm} seed ${r.seed}: val/acc ${acc.join(" -> ")}; grad_norm ${mean(gn).toFixed(2)} / ${Math.max(...gn).toFixed(2)}`,
    );
  }
