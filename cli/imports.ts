// The import graph of the lab's own sources, and the rules docs/ARCHITECTURE.md states about
// it: no circles (no files that import each other, directly or in a loop), nothing in model/
// imports export/, and app/ and export/ reach model/ only through the model's face
// (MODEL_FACE), directly or through another folder. Imports are read by TypeScript's own
// pre-processor (static, `export ... from`, type-only and dynamic `import()` alike; comments
// and strings are not imports). Checked by cli/imports.test.ts; `npx tsx cli/imports.ts`
// prints the violations.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** What app/ and export/ may import from model/: pure code, no GPU, no tokenizer, no weights. */
export const MODEL_FACE = [
  "model/face.ts",
  "model/config.ts",
  "model/lora.ts",
  "model/memory-plan.ts",
  "model/half.ts",
  "model/source.ts",
  "model/hf/config.ts",
  "model/tool-list-prompt.ts",
];

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SKIP = new Set(["node_modules", "dist", "dist-harness", "runs", ".git", "golden"]);
const SOURCE = /\.(ts|tsx|mjs)$/;

/** Every source file under the repository root (relative paths, "/" separators). */
export function sourceFiles(root = ROOT): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (SKIP.has(name) || name.startsWith(".")) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (SOURCE.test(name)) out.push(relative(root, path).split("\\").join("/"));
    }
  };
  walk(root);
  return out.sort();
}

export interface Edge {
  to: string;
  /** Only types cross (`import type`, or every name marked `type`): erased, no code loads. */
  typeOnly: boolean;
}

/** file -> the lab files it imports (relative specifiers resolved; packages left out). */
export function importEdges(root = ROOT): Map<string, Edge[]> {
  const files = sourceFiles(root);
  const known = new Set(files);
  const graph = new Map<string, Edge[]>();
  for (const file of files) {
    const src = ts.createSourceFile(
      file,
      readFileSync(join(root, file), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
    const edges = new Map<string, boolean>();
    const add = (spec: string, typeOnly: boolean) => {
      if (!spec.startsWith(".")) return;
      const base = join(dirname(file), spec.split("?")[0]).split("\\").join("/");
      const found = [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`].find((c) => known.has(c));
      if (found) edges.set(found, (edges.get(found) ?? true) && typeOnly);
    };
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const clause = node.importClause;
        const named = clause?.namedBindings;
        const allTypes =
          clause !== undefined &&
          (clause.isTypeOnly ||
            (clause.name === undefined &&
              named !== undefined &&
              ts.isNamedImports(named) &&
              named.elements.length > 0 &&
              named.elements.every((e) => e.isTypeOnly)));
        add(node.moduleSpecifier.text, allTypes);
      } else if (
        ts.isExportDeclaration(node) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      ) {
        add(node.moduleSpecifier.text, node.isTypeOnly);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments.length > 0 &&
        ts.isStringLiteralLike(node.arguments[0])
      ) {
        add(node.arguments[0].text, false);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        const lit = node.argument.literal;
        if (ts.isStringLiteral(lit)) add(lit.text, true);
      }
      ts.forEachChild(node, visit);
    };
    visit(src);
    graph.set(
      file,
      [...edges].map(([to, typeOnly]) => ({ to, typeOnly })).sort((a, b) => a.to.localeCompare(b.to)),
    );
  }
  return graph;
}

/** file -> every lab file it imports, types or code. */
export function importGraph(edges = importEdges()): Map<string, string[]> {
  return new Map([...edges].map(([f, es]) => [f, es.map((e) => e.to)]));
}

/** file -> the lab files whose code it loads (type-only imports left out). */
export function codeGraph(edges = importEdges()): Map<string, string[]> {
  return new Map([...edges].map(([f, es]) => [f, es.filter((e) => !e.typeOnly).map((e) => e.to)]));
}

/** The circles: strongly connected sets of two or more files (Tarjan), each sorted. */
export function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) === index.get(v)) {
      const set: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        set.push(w);
      } while (w !== v);
      if (set.length > 1) out.push(set.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const isTest = (f: string) => /\.test\.tsx?$/.test(f);

/**
 * The files of model/ outside the face that `from` reaches through its imports, each with one
 * path that reaches it (from ... -> model file).
 */
export function reachBeyondFace(graph: Map<string, string[]>, from: string): Map<string, string[]> {
  const face = new Set(MODEL_FACE);
  const path = new Map<string, string[]>([[from, [from]]]);
  const queue = [from];
  const out = new Map<string, string[]>();
  while (queue.length > 0) {
    const f = queue.shift() as string;
    for (const g of graph.get(f) ?? []) {
      if (path.has(g)) continue;
      const p = [...(path.get(f) ?? []), g];
      path.set(g, p);
      if (g.startsWith("model/") && !face.has(g)) out.set(g, p);
      else queue.push(g);
    }
  }
  return out;
}

const inModel = (f: string) => f.startsWith("model/");
const isPageOrExport = (f: string) => (f.startsWith("app/") || f.startsWith("export/")) && !isTest(f);

/**
 * Every broken rule, one line each (empty: the structure holds). Circles count every import,
 * types too; the face is held on every direct import from app/ and export/ into model/, and on
 * the code they load through other folders (a type-only import, such as the worker API's names
 * of engine types, loads nothing).
 */
export function violations(edges = importEdges()): string[] {
  const all = importGraph(edges);
  const code = codeGraph(edges);
  const face = new Set(MODEL_FACE);
  const out: string[] = [];
  for (const c of circles(all)) out.push(`circle: ${c.join(", ")}`);
  for (const [file, targets] of all) {
    for (const t of targets) {
      if (inModel(file) && t.startsWith("export/")) out.push(`model/ imports export/: ${file} -> ${t}`);
      if (isPageOrExport(file) && inModel(t) && !face.has(t))
        out.push(`past the model's face: ${file} -> ${t}`);
    }
  }
  const reached = new Map<string, string[]>();
  for (const file of code.keys()) {
    if (!isPageOrExport(file)) continue;
    for (const [t, p] of reachBeyondFace(code, file))
      if (p.length > 2 && (reached.get(t)?.length ?? Infinity) > p.length) reached.set(t, p);
  }
  for (const [, p] of reached) out.push(`past the model's face: ${p.join(" -> ")}`);
  for (const f of MODEL_FACE) {
    if (!all.has(f)) out.push(`MODEL_FACE names a missing file: ${f}`);
    else
      for (const [, p] of reachBeyondFace(all, f))
        out.push(`the face imports past itself: ${p.join(" -> ")}`);
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const v = violations();
  for (const line of v) console.log(line);
  console.log(v.length === 0 ? "imports: the structure holds" : `imports: ${v.length} violations`);
  process.exitCode = v.length === 0 ? 0 : 1;
}
