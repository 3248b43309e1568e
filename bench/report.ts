// The benchmark report's one shape (bench/results/latest.json) and how rows are merged:
// a group run replaces only its own rows and keeps the others. Every row is a side-by-side
// comparison measured in the same run; `ratio` is always "how many times better ours is".
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export interface BenchRow {
  id: string;
  /** The group that owns this row (kernels, model, sandbox, rl). */
  group: string;
  ours: number;
  baseline: number;
  unit: string;
  /** "higher" for rates (ratio = ours / baseline), "lower" for times (ratio = baseline / ours). */
  better: "higher" | "lower";
  ratio: number;
  reps: number;
  /** Relative spread of the repetitions: (max - min) / median of ours. */
  spread: number;
  note?: string;
}

export interface BenchAdapter {
  vendor: string;
  architecture: string;
  description: string;
  /** The matmul tile the run used and where it came from (kernels/autotune.ts), e.g. "8x8 (measured)". */
  matmulTile?: string;
  /** Whether the row reductions ran with subgroups (kernels/reduce.ts). */
  subgroups?: boolean;
}

export interface BenchReport {
  date: string;
  adapter: BenchAdapter;
  rows: BenchRow[];
}

export const RESULTS_DIR = join(dirname(new URL(import.meta.url).pathname), "results");

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Builds a row from repeated measurements of ours and the baseline. */
export function makeRow(
  r: Omit<BenchRow, "ours" | "baseline" | "ratio" | "reps" | "spread"> & {
    ours: number[];
    baseline: number[];
  },
): BenchRow {
  const ours = median(r.ours);
  const baseline = median(r.baseline);
  const ratio = r.better === "higher" ? ours / baseline : baseline / ours;
  const spread = ours === 0 ? 0 : (Math.max(...r.ours) - Math.min(...r.ours)) / Math.abs(ours);
  return { ...r, ours, baseline, ratio, reps: r.ours.length, spread };
}

export function readLatest(path = join(RESULTS_DIR, "latest.json")): BenchReport | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as BenchReport;
}

/** Merges the rows of the groups that ran into latest.json, and writes the dated JSON and markdown. */
export function writeReport(rows: BenchRow[], adapter: BenchAdapter, groupsRun: string[]): BenchReport {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const prev = readLatest();
  const kept = (prev?.rows ?? []).filter((r) => !groupsRun.includes(r.group));
  const byId = new Map<string, BenchRow>();
  for (const r of [...kept, ...rows]) byId.set(r.id, r);
  const date = new Date().toISOString();
  const report: BenchReport = { date, adapter, rows: [...byId.values()] };
  const json = `${JSON.stringify(report, null, 2)}\n`;
  writeFileSync(join(RESULTS_DIR, "latest.json"), json);
  writeFileSync(join(RESULTS_DIR, `${date.slice(0, 10)}.json`), json);
  writeFileSync(join(RESULTS_DIR, "latest.md"), toMarkdown(report));
  return report;
}

/** A benchmark figure as the tables print it: 3 significant digits or so. */
export function fmtBench(x: number): string {
  return Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toPrecision(3);
}

export function toMarkdown(report: BenchReport): string {
  const a = report.adapter;
  const lines = [
    `Benchmarks of ${report.date} on ${a.vendor} ${a.architecture} (${a.description})`,
    "",
    "| id | ours | baseline | unit | ratio (x better) | reps | spread | note |",
    "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |",
  ];
  const f = fmtBench;
  for (const r of report.rows) {
    lines.push(
      `| ${r.id} | ${f(r.ours)} | ${f(r.baseline)} | ${r.unit} | ${f(r.ratio)} | ${r.reps} | ${(r.spread * 100).toFixed(0)}% | ${r.note ?? ""} |`,
    );
  }
  return `${lines.join("\n")}\n`;
}
