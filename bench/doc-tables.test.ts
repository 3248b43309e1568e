// docs/PERFORMANCE.md's tables are generated from the committed result files
// (bench/doc-tables.ts): the committed document must be what the generator makes of the
// committed files, any row of any group is printed, single runs are not called medians, and
// bad markers name the line. Run: npx vitest run --project unit bench/doc-tables.test.ts
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DOC, groupedRows, renderTable, statisticOf, updateDoc } from "./doc-tables";
import { type BenchReport, type BenchRow, makeRow } from "./report";

const row = (id: string, group: string, ours: number[], note?: string): BenchRow =>
  makeRow({ id, group, ours, baseline: [2], unit: "s", better: "lower", note });

const report = (rows: BenchRow[]): BenchReport => ({
  date: "2026-12-01T10:00:00.000Z",
  adapter: { vendor: "v", architecture: "a", description: "" },
  rows,
});

describe("the committed PERFORMANCE.md", () => {
  it("agrees with the committed result files it names (run npm run bench:doc if not)", () => {
    const text = readFileSync(DOC, "utf8");
    expect(text).toContain("<!-- bench-table: bench/results/latest.json -->");
    expect(updateDoc(text, (p) => readFileSync(p, "utf8"))).toBe(text);
  });
});

describe("renderTable", () => {
  it("prints every row, the bench's groups first, then others by name, and says median or single run", () => {
    const rows = [
      row("z", "zeta", [1]),
      row("g", "gpu", [1, 2, 3]),
      row("r", "rl", [4]),
      row("k", "kernels", [1, 1]),
    ];
    expect(groupedRows(rows).map((r) => r.id)).toEqual(["k", "r", "g", "z"]);
    const md = renderTable("x.json", report(rows));
    expect(md).toContain("| gpu | g | 2.00 | 2.00 | s | 1.00 | 3 | median of 3 | 100% |  |");
    expect(md).toContain("| rl | r | 4.00 | 2.00 | s | 0.500 | 1 | 1 run | 0% |  |");
    expect(md).toMatch(/4 rows, 2 of them from a single run/);
    expect(statisticOf(row("a", "b", [1, 2]))).toBe("median of 2");
  });
  it("escapes pipes in notes and adds the before file's ratio by id", () => {
    const now = report([row("a", "model", [1], "max |x| 0"), row("b", "model", [1])]);
    const before = report([row("a", "model", [4])]);
    const md = renderTable("n.json", now, { file: "b.json", report: before });
    expect(md).toContain(
      "| model | a | 1.00 | 2.00 | s | 2.00 | 1 | 1 run | 0% | 0.500 (4.00 vs 2.00) | max \\|x\\| 0 |",
    );
    expect(md).toContain("| model | b | 1.00 | 2.00 | s | 2.00 | 1 | 1 run | 0% | – |");
  });
});

describe("updateDoc", () => {
  const files: Record<string, string> = { "r.json": JSON.stringify(report([row("a", "sandbox", [1, 2])])) };
  const read = (p: string) => {
    if (!(p in files)) throw new Error("ENOENT");
    return files[p];
  };
  it("replaces what is between the markers and keeps the rest", () => {
    const doc = "# T\n\n<!-- bench-table: r.json -->\nold table\n<!-- /bench-table -->\ntext after\n";
    const out = updateDoc(doc, read);
    expect(out).not.toContain("old table");
    expect(out).toContain("| sandbox | a | 1.50 |");
    expect(out.startsWith("# T\n\n<!-- bench-table: r.json -->\nGenerated from `r.json`")).toBe(true);
    expect(out.endsWith("<!-- /bench-table -->\ntext after\n")).toBe(true);
    expect(updateDoc(out, read)).toBe(out);
  });
  it("names the line of a missing file, an unclosed table, a stray end or a malformed marker", () => {
    expect(() =>
      updateDoc("a\n<!-- bench-table: nope.json -->\n<!-- /bench-table -->", read, "D.md"),
    ).toThrow(/D\.md:2: cannot read nope\.json/);
    expect(() => updateDoc("<!-- bench-table: r.json -->\nx", read, "D.md")).toThrow(
      /D\.md:1: .*no <!-- \/bench-table -->/,
    );
    expect(() => updateDoc("x\n<!-- /bench-table -->", read, "D.md")).toThrow(
      /D\.md:2: .*without a table marker/,
    );
    expect(() => updateDoc("<!-- bench-table r.json -->", read, "D.md")).toThrow(/D\.md:1: malformed marker/);
  });
});
