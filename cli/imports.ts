// The import graph of the lab's own sources, and the rules docs/ARCHITECTURE.md states about
// it: no circles (no files that import each other, directly or in a loop), nothing in model/
// imports export/, and app/ and export/ reach model/ only through the model's face
// (MODEL_FACE), directly or through another folder; the engine's folders (ENGINE) never import
// workers/. Imports are read by TypeScript's parser (static, `export ... from`, type-only,
// dynamic `import()` and a worker's `new URL("...", import.meta.url)` alike; comments and other
// strings are not imports). Checked by cli/imports.test.ts; `npx tsx cli/imports.ts`
// prints the violations.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** The one file of model/ that app/ and export/ import: pure names, re-exported. */
export const MODEL_FACE = "model/face.ts";

/**
 * The files behind the face: all of model/ that it reaches, pure (no GPU, no tokenizer, no
 * weights). A new import in one of them that reaches further fails cli/imports.test.ts.
 */
export const FACE_PARTS = [
  "model/config.ts",
  "model/half.ts",
  "model/hf/config.ts",
  "model/lora.ts",
  "model/memory-plan.ts",
  "model/source.ts",
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
  /** Only as a worker's script (`new URL("...", import.meta.url)`): its code loads in another thread. */
  worker?: boolean;
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
    const edges = new Map<string, { typeOnly: boolean; worker: boolean }>();
    const add = (spec: string, typeOnly: boolean, worker = false) => {
      if (!spec.startsWith(".")) return;
      const base = join(dirname(file), spec.split("?")[0]).split("\\").join("/");
      const found = [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`].find((c) => known.has(c));
      if (!found) return;
      const had = edges.get(found) ?? { typeOnly: true, worker: true };
      edges.set(found, { typeOnly: had.typeOnly && typeOnly, worker: had.worker && worker });
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
      } else if (
        ts.isNewExpression(node) &&
        ts.isIdentifier(node.expression) &&
        node.expression.text === "URL" &&
        node.arguments?.length === 2 &&
        ts.isStringLiteralLike(node.arguments[0]) &&
        node.arguments[1].getText(src) === "import.meta.url"
      ) {
        // A worker's script (`new Worker(new URL("./w.ts", import.meta.url))`, or a URL handed
        // to worker_threads): the bundler and Node load it as code, so it is an import.
        add(node.arguments[0].text, false, true);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        const lit = node.argument.literal;
        if (ts.isStringLiteral(lit)) add(lit.text, true);
      }
      ts.forEachChild(node, visit);
    };
    visit(src);
    graph.set(
      file,
      [...edges]
        .map(([to, e]) => ({ to, typeOnly: e.typeOnly, ...(e.worker ? { worker: true } : {}) }))
        .sort((a, b) => a.to.localeCompare(b.to)),
    );
  }
  return graph;
}

/** file -> every lab file it imports, types or code. */
export function importGraph(edges = importEdges()): Map<string, string[]> {
  return new Map([...edges].map(([f, es]) => [f, es.map((e) => e.to)]));
}

/** file -> the lab files whose code it loads into its own thread (type-only imports and worker scripts left out). */
export function codeGraph(edges = importEdges()): Map<string, string[]> {
  return new Map(
    [...edges].map(([f, es]) => [f, es.filter((e) => !e.typeOnly && !e.worker).map((e) => e.to)]),
  );
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

/** The engine's folders: pure of the browser's wiring, so none of them imports workers/. */
export const ENGINE = ["kernels/", "model/", "rl/", "sandbox/", "tasks/"];

const isTest = (f: string) => /\.test\.tsx?$/.test(f);
const inModel = (f: string) => f.startsWith("model/");
const isPageOrExport = (f: string) => (f.startsWith("app/") || f.startsWith("export/")) && !isTest(f);

/**
 * The files of model/ outside `allowed` that `from` reaches through its imports (not walking
 * past an allowed file), each with one path that reaches it (from ... -> model file).
 */
export function reachBeyond(
  graph: Map<string, string[]>,
  from: string,
  allowed: Set<string>,
): Map<string, string[]> {
  const path = new Map<string, string[]>([[from, [from]]]);
  const queue = [from];
  const out = new Map<string, string[]>();
  while (queue.length > 0) {
    const f = queue.shift() as string;
    for (const g of graph.get(f) ?? []) {
      if (path.has(g)) continue;
      const p = [...(path.get(f) ?? []), g];
      path.set(g, p);
      if (g.startsWith("model/") && !allowed.has(g)) out.set(g, p);
      else if (!allowed.has(g)) queue.push(g);
    }
  }
  return out;
}

/**
 * Every broken rule, one line each (empty: the structure holds). Circles count every import,
 * types too. app/ and export/ import nothing of model/ but the face, and the code they load
 * through other folders reaches no more of model/ (a type-only import, such as the worker API's
 * names of engine types, loads nothing; a worker's script runs in its own thread); the face
 * reaches only its parts, types included. The engine's folders import nothing of workers/, a
 * worker's script included.
 */
export function violations(edges = importEdges()): string[] {
  const all = importGraph(edges);
  const code = codeGraph(edges);
  const out: string[] = [];
  for (const c of circles(all)) out.push(`circle: ${c.join(", ")}`);
  for (const [file, targets] of all) {
    for (const t of targets) {
      if (inModel(file) && t.startsWith("export/")) out.push(`model/ imports export/: ${file} -> ${t}`);
      if (isPageOrExport(file) && inModel(t) && t !== MODEL_FACE)
        out.push(`past the model's face: ${file} -> ${t}`);
      if (t.startsWith("workers/") && !isTest(file) && ENGINE.some((d) => file.startsWith(d)))
        out.push(`the engine imports workers/: ${file} -> ${t}`);
    }
  }
  const face = new Set([MODEL_FACE, ...FACE_PARTS]);
  const reached = new Map<string, string[]>();
  for (const file of code.keys()) {
    if (!isPageOrExport(file)) continue;
    for (const [t, p] of reachBeyond(code, file, face))
      if (p.length > 2 && (reached.get(t)?.length ?? Infinity) > p.length) reached.set(t, p);
  }
  for (const [, p] of reached) out.push(`past the model's face: ${p.join(" -> ")}`);
  if (!all.has(MODEL_FACE)) out.push(`the face is missing: ${MODEL_FACE}`);
  const parts = new Set(FACE_PARTS);
  for (const [, p] of reachBeyond(all, MODEL_FACE, parts))
    out.push(`the face reaches past its parts: ${p.join(" -> ")}`);
  for (const f of FACE_PARTS) {
    if (!all.has(f)) out.push(`FACE_PARTS names a missing file: ${f}`);
    else
      for (const [, p] of reachBeyond(all, f, parts))
        out.push(`the face reaches past its parts: ${p.join(" -> ")}`);
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const v = violations();
  for (const line of v) console.log(line);
  console.log(v.length === 0 ? "imports: the structure holds" : `imports: ${v.length} violations`);
  process.exitCode = v.length === 0 ? 0 : 1;
}
