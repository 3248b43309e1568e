// `npm run bench:doc [-- --check]`: regenerates the benchmark tables of docs/PERFORMANCE.md
// from the committed result files, so the document says what the data says. Each table sits
// between a marker naming its file and an end marker:
//   <!-- bench-table: bench/results/latest.json -->            (every row, grouped)
//   <!-- bench-table: bench/results/a.json before=bench/results/b.json -->  (+ b's ratio per id)
//   ...generated...
//   <!-- /bench-table -->
// and the counted-work tables (bench/counts-model.ts) between `<!-- counts-table: FILE -->` and
// `<!-- /counts-table -->`.
// Any row of any group is printed; a row with one repetition says "1 run", one with more "median
// of N". `npm run bench` runs this after writing latest.json; --check exits 1 when the
// document is out of date. Tested by bench/doc-tables.test.ts (which also checks the committed
// document against the committed files).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { updateCountsDoc } from "./counts-model";
import { type BenchReport, type BenchRow, fmtBench } from "./report";

export const DOC = "docs/PERFORMANCE.md";
/** The repository root: the doc and the files its markers name are relative to it. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const GROUP_ORDER = ["kernels", "model", "sandbox", "rl", "shapes"];

/** "median of N" or "1 run": what a row's figures are. */
export function statisticOf(r: BenchRow): string {
  return r.reps > 1 ? `median of ${r.reps}` : `${r.reps} run`;
}

/** Rows ordered by group (the bench's groups first, then any others by name), in file order within a group. */
export function groupedRows(rows: BenchRow[]): BenchRow[] {
  const rank = (g: string) => {
    const i = GROUP_ORDER.indexOf(g);
    return i >= 0 ? i : GROUP_ORDER.length;
  };
  return rows
    .map((r, i) => ({ r, i }))
    .sort((a, b) => rank(a.r.group) - rank(b.r.group) || a.r.group.localeCompare(b.r.group) || a.i - b.i)
    .map((x) => x.r);
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The markdown table of a report's rows, with a line saying where they come from. */
export function renderTable(
  file: string,
  report: BenchReport,
  before?: { file: string; report: BenchReport },
): string {
  const a = report.adapter;
  const rows = groupedRows(report.rows);
  const reps = rows.map((r) => r.reps);
  const lines = [
    `Generated from \`${file}\`${before ? ` (before: \`${before.file}\`)` : ""} by \`npm run bench:doc\`; do not edit by hand. ` +
      `Written ${report.date}; browser adapter ${[a.vendor, a.architecture, a.description].filter(Boolean).join(" ")} ` +
      `(rows run elsewhere name their adapter in the note). ${rows.length} rows, ${reps.filter((n) => n === 1).length} of them from a single run.`,
    "",
    `| group | id | ours | baseline | unit | ratio (x better) | reps | figure | spread |${before ? " ratio before |" : ""} note |`,
    `| --- | --- | ---: | ---: | --- | ---: | ---: | --- | ---: |${before ? " ---: |" : ""} --- |`,
  ];
  for (const r of rows) {
    const prev = before?.report.rows.find((p) => p.id === r.id);
    const prevCell = before
      ? ` ${prev ? `${fmtBench(prev.ratio)} (${fmtBench(prev.ours)} vs ${fmtBench(prev.baseline)})` : "–"} |`
      : "";
    lines.push(
      `| ${cell(r.group)} | ${cell(r.id)} | ${fmtBench(r.ours)} | ${fmtBench(r.baseline)} | ${cell(r.unit)} | ${fmtBench(r.ratio)} | ${r.reps} | ${statisticOf(r)} | ${(r.spread * 100).toFixed(0)}% |${prevCell} ${cell(r.note ?? "")} |`,
    );
  }
  return lines.join("\n");
}

const BEGIN = /^<!-- bench-table: (\S+)(?: before=(\S+))? -->$/;
const END = "<!-- /bench-table -->";

/** `text` with every marked table regenerated from the file its marker names (read by `read`). */
export function updateDoc(text: string, read: (path: string) => string, docName = DOC): string {
  const lines = text.split("\n");
  const out: string[] = [];
  const load = (path: string, at: number): BenchReport => {
    let raw: string;
    try {
      raw = read(path);
    } catch (err) {
      throw new Error(`${docName}:${at}: cannot read ${path} (${(err as Error).message})`);
    }
    const rep = JSON.parse(raw) as BenchReport;
    if (!Array.isArray(rep.rows)) throw new Error(`${docName}:${at}: ${path} has no "rows" array`);
    return rep;
  };
  for (let i = 0; i < lines.length; i++) {
    const m = BEGIN.exec(lines[i]);
    if (lines[i].startsWith("<!-- bench-table") && !m && lines[i] !== END)
      throw new Error(
        `${docName}:${i + 1}: malformed marker "${lines[i]}" (want <!-- bench-table: <file> [before=<file>] -->)`,
      );
    if (lines[i] === END) throw new Error(`${docName}:${i + 1}: ${END} without a table marker before it`);
    out.push(lines[i]);
    if (!m) continue;
    const end = lines.indexOf(END, i + 1);
    const next = lines.findIndex((l, k) => k > i && BEGIN.test(l));
    if (end < 0 || (next >= 0 && next < end))
      throw new Error(`${docName}:${i + 1}: the table for ${m[1]} has no ${END} after it`);
    const report = load(m[1], i + 1);
    const before = m[2] ? { file: m[2], report: load(m[2], i + 1) } : undefined;
    out.push(renderTable(m[1], report, before), END);
    i = end;
  }
  return out.join("\n");
}

/** Regenerates `doc` in place; returns whether it changed. With check, writes nothing. */
export function regenerate(doc = DOC, check = false): boolean {
  const text = readFileSync(join(ROOT, doc), "utf8");
  const read = (p: string) => readFileSync(join(ROOT, p), "utf8");
  const next = updateCountsDoc(updateDoc(text, read, doc), read, doc);
  if (next !== text && !check) writeFileSync(join(ROOT, doc), next);
  return next !== text;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes("--check");
  try {
    const changed = regenerate(DOC, check);
    console.log(
      `${DOC}: ${changed ? (check ? "OUT OF DATE (run npm run bench:doc)" : "tables regenerated") : "up to date"}`,
    );
    process.exit(check && changed ? 1 : 0);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
}
