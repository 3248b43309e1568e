// Every function in the lab's sources fits in 100 lines (first line to last line of a
// function-like node with a body, as TypeScript's parser reads it): a longer one hides shared
// state in its closures and is split into named helpers. Tests, e2e/ and the kernel source
// generators (kernels/*-gen.ts, which spell out WGSL) are left out.
// Run: npx vitest run --project unit cli/function-length.test.ts
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const MAX_LINES = 100;

/** Every function over `max` lines in `text`, as "file:line name (N lines)". */
function longFunctions(file: string, text: string, max = MAX_LINES): string[] {
  const kind = file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = src.getLineAndCharacterOfPosition(node.getStart(src)).line;
      const last = src.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      const name = node.name ? node.name.getText(src) : "(anonymous)";
      if (lines > max) out.push(`${file}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

/** The tracked sources the rule covers. */
function sources(): string[] {
  return execSync("git ls-files -- '*.ts' '*.tsx'", { encoding: "utf8" })
    .split("\n")
    .filter((f) => f && !f.endsWith(".test.ts") && !f.endsWith(".test.tsx"))
    .filter((f) => !f.startsWith("e2e/") && !/^kernels\/[^/]*-gen\.ts$/.test(f));
}

describe("function length", () => {
  it("finds a long function, an arrow function and a method, and passes a short one", () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const text = [
      `function long() {\n${body(99)}\n}`,
      `const arrow = () => {\n${body(101)}\n};`,
      `class C {\n  method() {\n${body(100)}\n  }\n}`,
      `function fits() {\n${body(98)}\n}`,
    ].join("\n");
    expect(longFunctions("x.ts", text)).toEqual([
      "x.ts:1 long (101 lines)",
      "x.ts:102 (anonymous) (103 lines)",
      "x.ts:206 method (102 lines)",
    ]);
  });

  it(`holds: no function over ${MAX_LINES} lines`, () => {
    const long = sources().flatMap((f) => longFunctions(f, readFileSync(f, "utf8")));
    expect(long).toEqual([]);
  });
});
