// The default demo's tables in docs/EXPERIMENTS.md ("The default demo learns on every seed"),
// from the committed runs next to this file (<arm>/seed-<S>/metrics.jsonl and config.json,
// copied from `npm run train -- <recipe> --seed S --out DIR`). Per arm and seed: the metric at
// each evaluation, the gain (last evaluation - step 0), the drop from the run's own peak
// (peak - last) and whether the run passes the robustness bar (gain >= 0.3, drop <= 0.1); then mean
// ± sample sd over seeds per evaluation. Tuning arms (tuning/<arm>) are read on dev/acc, the
// check (check/<arm>) on val/acc:
//   npx tsx docs/experiments/demo/summarize.ts
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Row, stat, valuesByStep } from "../../../config/aggregate.ts";

const DIR = dirname(fileURLToPath(import.meta.url));
const f2 = (x: number) => x.toFixed(2);

function table(part: string, key: string) {
  if (!existsSync(join(DIR, part))) return;
  for (const arm of readdirSync(join(DIR, part)).sort()) {
    const seeds = readdirSync(join(DIR, part, arm))
      .map((s) => Number(s.replace("seed-", "")))
      .sort((a, b) => a - b);
    const runs = seeds.map((seed) => {
      const text = readFileSync(join(DIR, part, arm, `seed-${seed}`, "metrics.jsonl"), "utf8");
      const rows = text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Row);
      return { seed, at: valuesByStep(rows, key) };
    });
    const steps = [...new Set(runs.flatMap((r) => [...r.at.keys()]))].sort((a, b) => a - b);
    console.log(`\n${part}/${arm}: ${key}\n`);
    console.log(`| seed | ${steps.map((s) => `step ${s}`).join(" | ")} | gain | below peak | bar |`);
    console.log(`| ---: | ${steps.map(() => "---:").join(" | ")} | ---: | ---: | --- |`);
    for (const r of runs) {
      const v = steps.map((s) => r.at.get(s) ?? Number.NaN);
      const last = v[v.length - 1];
      const gain = last - v[0];
      const drop = Math.max(...v) - last;
      const ok = gain >= 0.3 - 1e-9 && drop <= 0.1 + 1e-9;
      console.log(
        `| ${r.seed} | ${v.map(f2).join(" | ")} | ${f2(gain)} | ${f2(drop)} | ${ok ? "pass" : "FAIL"} |`,
      );
    }
    const m = steps.map((s) => stat(runs.map((r) => r.at.get(s) ?? Number.NaN)));
    console.log(`| mean ± sd | ${m.map((x) => `${f2(x.mean)} ± ${f2(x.sd)}`).join(" | ")} | | | |`);
  }
}

table("tuning", "dev/acc");
table("check", "val/acc");
