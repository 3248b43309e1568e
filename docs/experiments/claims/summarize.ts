// Seed-level tables of the claims in docs/EXPERIMENTS.md ("Claims, 3 seeds under split
// version 2"), from the committed runs next to this file (<arm>/seed-<S>/metrics.jsonl and
// config.json, copied from `npm run train -- public/recipes/<arm>.json --seeds 3 --out DIR`).
// For each claim whose arm and baseline are both here: held-out greedy val/acc per evaluation
// (mean ± sample sd over seeds, each seed's value, the binomial SE of one run at the arm's
// mean on the eval size), the paired difference arm - baseline over the shared seeds (mean ±
// sd, each seed's, and the paired t = mean / (sd / sqrt n)), and training metrics (each run's
// mean over its steps, then mean ± sd over seeds; for actor/grad_norm also each run's std over
// steps and its max), with the paired difference of each per-run figure.
//   npx tsx docs/experiments/claims/summarize.ts [claim...]
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  binomialSE,
  pairedDifference,
  type Row,
  type SeedRun,
  stat,
  valuesByStep,
} from "../../../config/aggregate.ts";

const DIR = dirname(fileURLToPath(import.meta.url));

/**
 * Each claim: its arm, the baseline its preset declares (`contrast.baseline`), the training
 * metrics its text is about, the held-out metrics (val/acc and val/acc/hard unless it says)
 * and the keys whose trend matters (they also get "change" columns).
 */
const CLAIMS: Record<
  string,
  { arm: string; baseline: string; train: string[]; held?: string[]; trend?: string[] }
> = {
  "no-tool": {
    arm: "claim-no-tool",
    baseline: "quick-demo",
    train: ["tool/call_rate", "actor/entropy", "reward/mean"],
  },
  "mask-off": {
    arm: "claim-mask-off",
    baseline: "quick-demo",
    train: ["actor/grad_norm", "actor/pg_clipfrac", "actor/ppo_kl", "tool/call_rate"],
  },
  otc: { arm: "claim-otc", baseline: "quick-demo", train: ["tool/calls_mean", "reward/mean", "acc/mean"] },
  tao: {
    arm: "claim-tao",
    baseline: "quick-demo",
    train: ["actor/grad_norm", "actor/entropy_post_tool", "filter/kept_frac", "groups/zero_std_frac"],
  },
  dapo: {
    arm: "claim-dapo",
    baseline: "quick-demo",
    train: ["groups/zero_std_frac", "filter/kept_frac", "acc/mean"],
  },
  gspo: {
    arm: "claim-gspo",
    baseline: "quick-demo",
    train: ["actor/grad_norm", "actor/pg_clipfrac", "actor/ppo_kl"],
  },
  cispo: {
    arm: "claim-cispo",
    baseline: "quick-demo",
    train: ["actor/grad_norm", "actor/pg_clipfrac", "actor/ppo_kl"],
  },
  // FrozenLake (multi-turn): the echo trap is a trend, so its keys also get "change" columns.
  starpo: {
    arm: "claim-starpo",
    baseline: "claim-grpo-frozenlake",
    train: ["reward/std", "actor/entropy", "actor/grad_norm"],
    trend: [
      "groups/zero_std_frac",
      "groups/zero_std_frac_all_correct",
      "groups/zero_std_frac_all_wrong",
      "actor/entropy",
      "reward/std",
    ],
  },
  gigpo: {
    arm: "claim-gigpo",
    baseline: "claim-grpo-frozenlake",
    train: ["acc/mean", "actor/grad_norm", "actor/entropy"],
    trend: ["groups/zero_std_frac", "groups/zero_std_frac_all_correct", "groups/zero_std_frac_all_wrong"],
  },
  toolrl: {
    arm: "claim-toolrl",
    baseline: "claim-toolrl-exact",
    train: ["tool/success_rate", "acc/mean", "groups/zero_std_frac", "actor/entropy"],
    held: ["val/acc", "val/acc_sampled", "val/tool_call_rate"],
  },
  // ToolRL on the lab-made Llama-family model, whose calls parse: ToolRL's two parts, logged in both arms.
  "toolrl-llama": {
    arm: "claim-toolrl-llama",
    baseline: "claim-toolrl-llama-exact",
    train: [
      "toolrl/format_mean",
      "toolrl/call_mean",
      "tool/valid_call_rate",
      "acc/mean",
      "groups/zero_std_frac",
      "actor/entropy",
    ],
    held: [
      "val/acc",
      "val/acc_sampled",
      "val/valid_call_rate",
      "val/valid_call_rate_sampled",
      "val/toolrl_format",
      "val/toolrl_call",
      "val/toolrl_call_sampled",
    ],
  },
  // OTC on the lab-made Llama with the one-operation calculator (problems need 0-3 calls): calls
  // per solved problem and calls above each problem's minimum, train and held out.
  "otc-llama": {
    arm: "claim-otc-llama",
    baseline: "claim-otc-llama-exact",
    train: [
      "tool/calls_per_solved",
      "tool/excess_calls_per_solved",
      "tool/calls_mean",
      "acc/mean",
      "reward/mean",
      "groups/zero_std_frac",
    ],
    held: [
      "val/acc",
      "val/acc_sampled",
      "val/calls_per_solved",
      "val/excess_calls_per_solved",
      "val/calls_per_solved_sampled",
      "val/excess_calls_per_solved_sampled",
      "val/acc/calls0",
      "val/acc/calls1",
      "val/acc/calls2",
      "val/acc/calls3",
    ],
  },
};

/** Steps averaged at each end of a run for the trend columns. */
const TREND_SPAN = 10;

function readArm(arm: string): SeedRun[] | undefined {
  const dir = join(DIR, arm);
  if (!existsSync(dir)) return undefined;
  return readdirSync(dir)
    .filter((d) => /^seed-\d+$/.test(d) && existsSync(join(dir, d, "metrics.jsonl")))
    .map((d) => {
      const rows = readFileSync(join(dir, d, "metrics.jsonl"), "utf8")
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Row)
        .filter((r) => r.phase === "rl");
      const c = JSON.parse(readFileSync(join(dir, d, "config.json"), "utf8"));
      return { seed: c.seed as number, rows, evalSize: c.task?.eval_size as number };
    })
    .sort((a, b) => a.seed - b.seed);
}

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const sgn = (x: number, d = 2) => (x >= 0 ? `+${f(x, d)}` : f(x, d));
const pm = (xs: number[], d = 2) => {
  const s = stat(xs);
  return `${f(s.mean, d)} ± ${f(s.sd, d)}`;
};

function heldOut(name: string, base: SeedRun[], arm: SeedRun[], key: string): string[] {
  const steps = [...valuesByStep(base[0].rows, key).keys()].sort((a, b) => a - b);
  const lines = [
    `| ${key} | ${steps.map((s) => `step ${s}`).join(" | ")} |`,
    `| --- |${" ---: |".repeat(steps.length)}`,
  ];
  for (const [label, runs] of [
    [`${CLAIMS[name].baseline}`, base],
    [`${CLAIMS[name].arm}`, arm],
  ] as const) {
    const cells = steps.map((s) => {
      const xs = runs
        .map((r) => valuesByStep(r.rows, key).get(s))
        .filter((v): v is number => v !== undefined);
      if (xs.length === 0) return "-";
      const se =
        key.startsWith("val/acc") && !key.startsWith("val/acc/") && runs[0].evalSize
          ? ` (SE ${f(binomialSE(stat(xs).mean, runs[0].evalSize))})`
          : "";
      return `${pm(xs)}${se}; ${xs.map((x) => f(x)).join(", ")}`;
    });
    lines.push(`| ${label} | ${cells.join(" | ")} |`);
  }
  const diffs = pairedDifference(base, arm, key);
  lines.push(
    `| paired diff | ${steps
      .map((s) => {
        const d = diffs.find((x) => x.step === s);
        if (!d) return "-";
        const per = d.seeds.map((seed) => {
          const a = valuesByStep(base.find((r) => r.seed === seed)!.rows, key).get(s)!;
          const b = valuesByStep(arm.find((r) => r.seed === seed)!.rows, key).get(s)!;
          return sgn(b - a);
        });
        const t = d.diff.sd > 0 ? ` (t ${f(d.diff.mean / (d.diff.sd / Math.sqrt(d.diff.n)), 1)})` : "";
        return `${sgn(d.diff.mean)} ± ${f(d.diff.sd)}${t}; ${per.join(", ")}`;
      })
      .join(" | ")} |`,
  );
  return lines;
}

function training(name: string, base: SeedRun[], arm: SeedRun[]): string[] {
  const keys = CLAIMS[name].train;
  const cols: { label: string; of: (xs: number[]) => number; key: string }[] = [];
  for (const k of keys) {
    cols.push({ label: `${k} mean`, of: (xs) => stat(xs).mean, key: k });
    if (k === "actor/grad_norm") {
      cols.push({ label: `${k} std over steps`, of: (xs) => stat(xs).sd, key: k });
      cols.push({ label: `${k} max`, of: (xs) => Math.max(...xs), key: k });
    }
  }
  const lines = [
    `| arm | seeds | ${cols.map((c) => c.label).join(" | ")} |`,
    `| --- | ---: |${" ---: |".repeat(cols.length)}`,
  ];
  for (const [label, runs] of [
    [CLAIMS[name].baseline, base],
    [CLAIMS[name].arm, arm],
  ] as const) {
    const cells = cols.map((c) => {
      const per = runs.map((r) => [...valuesByStep(r.rows, c.key).values()]).filter((xs) => xs.length > 0);
      if (per.length === 0) return "-";
      const vals = per.map(c.of);
      const d = Math.abs(stat(vals).mean) < 0.1 ? 3 : 2;
      return `${pm(vals, d)} (${vals.map((v) => f(v, d)).join(", ")})`;
    });
    lines.push(`| ${label} | ${runs.length} | ${cells.join(" | ")} |`);
  }
  // Paired by seed: the arm's per-run figure minus the baseline's.
  const shared = base.filter((r) => arm.some((a) => a.seed === r.seed));
  const cells = cols.map((c) => {
    const one = (r: SeedRun) => {
      const xs = [...valuesByStep(r.rows, c.key).values()];
      return xs.length ? c.of(xs) : Number.NaN;
    };
    const diffs = shared.map((r) => one(arm.find((a) => a.seed === r.seed)!) - one(r));
    if (diffs.some((d) => !Number.isFinite(d))) return "-";
    const d = Math.abs(stat(diffs).mean) < 0.1 ? 3 : 2;
    return `${sgn(stat(diffs).mean, d)} ± ${f(stat(diffs).sd, d)} (${diffs.map((x) => sgn(x, d)).join(", ")})`;
  });
  lines.push(`| paired diff | ${shared.length} | ${cells.join(" | ")} |`);
  return lines;
}

/**
 * The trend table: per key, each arm's mean over its first TREND_SPAN steps, its change to
 * the last TREND_SPAN (mean ± sd over seeds, each seed's), and the paired difference of the
 * changes (arm - baseline).
 */
function trends(name: string, base: SeedRun[], arm: SeedRun[]): string[] {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const ends = (r: SeedRun, key: string) => {
    const xs = [...valuesByStep(r.rows, key).values()];
    return {
      first: mean(xs.slice(0, TREND_SPAN)),
      change: mean(xs.slice(-TREND_SPAN)) - mean(xs.slice(0, TREND_SPAN)),
    };
  };
  const c = CLAIMS[name];
  const lines = [
    `| key (first ${TREND_SPAN} steps; change to the last ${TREND_SPAN}) | ${c.baseline} first | ${c.baseline} change | ${c.arm} first | ${c.arm} change | change, paired diff |`,
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  const shared = base.filter((r) => arm.some((a) => a.seed === r.seed));
  for (const key of c.trend ?? []) {
    const cell = (vals: number[]) => {
      const d = Math.abs(stat(vals).mean) < 0.1 ? 3 : 2;
      return `${pm(vals, d)} (${vals.map((v) => sgn(v, d)).join(", ")})`;
    };
    const b = base.map((r) => ends(r, key));
    const a = arm.map((r) => ends(r, key));
    const diffs = shared.map(
      (r) => ends(arm.find((x) => x.seed === r.seed)!, key).change - ends(r, key).change,
    );
    lines.push(
      `| ${key} | ${pm(
        b.map((x) => x.first),
        3,
      )} | ${cell(b.map((x) => x.change))} | ${pm(
        a.map((x) => x.first),
        3,
      )} | ${cell(a.map((x) => x.change))} | ${cell(diffs)} |`,
    );
  }
  return lines;
}

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(CLAIMS)) {
  const c = CLAIMS[name];
  if (!c) throw new Error(`unknown claim "${name}" (known: ${Object.keys(CLAIMS).join(", ")})`);
  const base = readArm(c.baseline);
  const arm = readArm(c.arm);
  if (!base?.length || !arm?.length) {
    console.log(`## ${name}: ${c.arm} or ${c.baseline} not committed here\n`);
    continue;
  }
  console.log(
    `## ${name}: ${c.arm} (seeds ${arm.map((r) => r.seed).join(", ")}) vs ${c.baseline} (seeds ${base.map((r) => r.seed).join(", ")})\n`,
  );
  for (const key of c.held ?? ["val/acc", "val/acc/hard"])
    if (valuesByStep(base[0].rows, key).size > 0)
      console.log(`${heldOut(name, base, arm, key).join("\n")}\n`);
  console.log(`${training(name, base, arm).join("\n")}\n`);
  if (c.trend) console.log(`${trends(name, base, arm).join("\n")}\n`);
}
