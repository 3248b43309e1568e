// Import of user data as a task: one JSON object a line,
//   {"prompt": "...", "answer": "...", "tools"?: [tool specs], "verifier"?: {...},
//    "system"?: "...", "bucket"?: "...", "completion"?: "assistant text for SFT"}
// with verifier {type:"exact"} | {type:"numeric", tolerance?, relTolerance?} (correct when
// |ref - got| <= tolerance + relTolerance*|ref|) | {type:"regex", pattern, flags?}
// | {type:"js", source}. JS verifiers are only represented here (the sandbox runs them).
// Every bad row is reported with its 1-based line number and skipped; import never throws.
// Tested by tasks/jsonl.test.ts against public/data/sample.jsonl.

import type { JsonObjectSchema } from "../sandbox/types.ts";
import { hashUnit, type Rng } from "./rng.ts";
import { DEFAULT_EVAL_FRACTION } from "./split.ts";
import type { Demo, Problem, Task, TemplateName, UserToolSpec, VerifyResult } from "./types.ts";
import { verifyExact, verifyNumeric } from "./verify.ts";

export type Verifier =
  | { type: "exact" }
  | { type: "numeric"; tolerance: number; relTolerance: number }
  | { type: "regex"; pattern: string; flags: string }
  | { type: "js"; source: string };

export interface JsonlRow {
  line: number;
  prompt: string;
  answer: string;
  verifier: Verifier;
  tools: UserToolSpec[];
  system?: string;
  bucket: string;
  completion?: string;
}

export interface ImportReport {
  ok: number;
  /** Non-blank lines read. */
  total: number;
  errors: { line: number; message: string }[];
}

export const DEFAULT_NUMERIC_TOLERANCE = 1e-6;

class RowError extends Error {}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseVerifier(v: unknown): Verifier {
  if (v === undefined) return { type: "exact" };
  if (!isObject(v)) throw new RowError('"verifier" must be an object with a "type"');
  switch (v.type) {
    case "exact":
      return { type: "exact" };
    case "numeric": {
      const tol = v.tolerance ?? DEFAULT_NUMERIC_TOLERANCE;
      const rel = v.relTolerance ?? 0;
      for (const [k, x] of [
        ["tolerance", tol],
        ["relTolerance", rel],
      ] as const) {
        if (typeof x !== "number" || !Number.isFinite(x) || x < 0) {
          throw new RowError(`numeric verifier: "${k}" must be a non-negative number`);
        }
      }
      return { type: "numeric", tolerance: tol as number, relTolerance: rel as number };
    }
    case "regex": {
      if (typeof v.pattern !== "string") throw new RowError('regex verifier: "pattern" must be a string');
      const flags = v.flags ?? "";
      if (typeof flags !== "string") throw new RowError('regex verifier: "flags" must be a string');
      try {
        new RegExp(v.pattern, flags);
      } catch (e) {
        throw new RowError(`regex verifier: bad pattern: ${(e as Error).message}`);
      }
      return { type: "regex", pattern: v.pattern, flags };
    }
    case "js":
      if (typeof v.source !== "string" || v.source.trim().length === 0) {
        throw new RowError('js verifier: "source" must be a non-empty string');
      }
      return { type: "js", source: v.source };
    default:
      throw new RowError(
        `unknown verifier type ${JSON.stringify(v.type)} (expected exact, numeric, regex or js)`,
      );
  }
}

function parseTools(v: unknown): UserToolSpec[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new RowError('"tools" must be an array');
  return v.map((t, i) => {
    if (!isObject(t)) throw new RowError(`tools[${i}] must be an object`);
    if (typeof t.name !== "string" || !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(t.name)) {
      throw new RowError(`tools[${i}]: "name" must be a JavaScript identifier`);
    }
    if (typeof t.description !== "string")
      throw new RowError(`tools[${i}] (${t.name}): "description" must be a string`);
    if (!isObject(t.parameters) || t.parameters.type !== "object")
      throw new RowError(
        `tools[${i}] (${t.name}): "parameters" must be a JSON schema object (type "object")`,
      );
    if (typeof t.body !== "string" || t.body.trim().length === 0) {
      throw new RowError(`tools[${i}] (${t.name}): "body" must be JavaScript source`);
    }
    return {
      name: t.name,
      description: t.description,
      parameters: t.parameters as unknown as JsonObjectSchema, // an object of type "object", checked above
      body: t.body,
    };
  });
}

function parseRow(value: unknown, line: number): JsonlRow {
  if (!isObject(value)) throw new RowError("row is not a JSON object");
  if (typeof value.prompt !== "string" || value.prompt.trim().length === 0) {
    throw new RowError('missing "prompt" (a non-empty string)');
  }
  if (value.answer === undefined || value.answer === null) throw new RowError('missing "answer"');
  if (typeof value.answer !== "string" && typeof value.answer !== "number") {
    throw new RowError('"answer" must be a string or a number');
  }
  for (const k of ["system", "bucket", "completion"] as const) {
    if (value[k] !== undefined && typeof value[k] !== "string") throw new RowError(`"${k}" must be a string`);
  }
  const verifier = parseVerifier(value.verifier);
  const answer = String(value.answer);
  if (verifier.type === "numeric" && !Number.isFinite(Number(answer))) {
    throw new RowError(`numeric verifier: "answer" ${JSON.stringify(answer)} is not a number`);
  }
  return {
    line,
    prompt: value.prompt,
    answer,
    verifier,
    tools: parseTools(value.tools),
    system: value.system as string | undefined,
    bucket: (value.bucket as string | undefined) ?? "all",
    completion: value.completion as string | undefined,
  };
}

/** Reads rows; blank lines are skipped, bad rows reported and skipped. */
export function parseJsonl(text: string): { rows: JsonlRow[]; report: ImportReport } {
  const rows: JsonlRow[] = [];
  const report: ImportReport = { ok: 0, total: 0, errors: [] };
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim().length === 0) return;
    report.total++;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      report.errors.push({ line, message: `invalid JSON: ${(e as Error).message}` });
      return;
    }
    try {
      rows.push(parseRow(value, line));
      report.ok++;
    } catch (e) {
      if (!(e instanceof RowError)) throw e;
      report.errors.push({ line, message: e.message });
    }
  });
  return { rows, report };
}

export function verifyRow(row: Pick<JsonlRow, "answer" | "verifier">, answer: string | null): VerifyResult {
  const v = row.verifier;
  switch (v.type) {
    case "exact":
      return verifyExact(row.answer, answer);
    case "numeric":
      return verifyNumeric(row.answer, answer, v.tolerance, v.relTolerance);
    case "regex": {
      if (answer === null) return { correct: false, score: 0, detail: { reason: "no answer" } };
      const correct = new RegExp(v.pattern, v.flags).test(answer);
      return { correct, score: correct ? 1 : 0 };
    }
    case "js":
      return {
        correct: false,
        score: 0,
        deferred: { kind: "js", source: v.source },
        detail: { reason: "needs sandbox" },
      };
  }
}

function toProblem(name: string, row: JsonlRow): Problem {
  const messages: Problem["messages"] = [];
  if (row.system !== undefined) messages.push({ role: "system", content: row.system });
  messages.push({ role: "user", content: row.prompt });
  return {
    id: `${name}:line${row.line}`,
    messages,
    answer: row.answer,
    bucket: row.bucket,
    meta: {
      line: row.line,
      verifier: row.verifier,
      tools: row.tools.map((t) => t.name),
      completion: row.completion,
    },
  };
}

export function taskFromRows(rows: JsonlRow[], opts: { name?: string; evalFraction?: number } = {}): Task {
  const name = opts.name ?? "jsonl";
  const fraction = opts.evalFraction ?? DEFAULT_EVAL_FRACTION;
  const byId = new Map(rows.map((r) => [`${name}:line${r.line}`, r]));
  // Rows with the same prompt share a side of the split, so eval prompts never appear in training.
  const h = (r: JsonlRow) => hashUnit(`${name}|${r.prompt}`);
  let evalRows = rows.filter((r) => h(r) < fraction);
  if (evalRows.length === 0 && new Set(rows.map((r) => r.prompt)).size >= 2) {
    const lowest = rows.reduce((a, b) => (h(b) < h(a) ? b : a));
    evalRows = rows.filter((r) => r.prompt === lowest.prompt);
  }
  const evalPrompts = new Set(evalRows.map((r) => r.prompt));
  const trainRows = rows.filter((r) => !evalPrompts.has(r.prompt));
  const tools = new Map<string, UserToolSpec>();
  for (const r of rows) for (const t of r.tools) if (!tools.has(t.name)) tools.set(t.name, t);
  const template: TemplateName = tools.size > 0 ? "chatml-turns" : "inline";
  const rowOf = (p: Problem): JsonlRow => {
    const r = byId.get(p.id);
    if (!r) throw new Error(`${name}: unknown problem ${p.id}`);
    return r;
  };
  const sample = (rng: Rng, n: number): Problem[] => {
    if (trainRows.length === 0) throw new Error(`${name}: no training rows`);
    return Array.from({ length: n }, () => toProblem(name, rng.pick(trainRows)));
  };
  return {
    name,
    description: `Imported JSONL data (${rows.length} rows).`,
    defaultTemplate: template,
    tools: [...tools.values()],
    buckets: [...new Set(rows.map((r) => r.bucket))],
    sample,
    evalSet: (n) => evalRows.slice(0, n).map((r) => toProblem(name, r)),
    verify: (problem, answer) => verifyRow(rowOf(problem), answer),
    sftDemos(rng: Rng, n: number): Demo[] {
      return sample(rng, n).map((p, i) => {
        const r = rowOf(p);
        const content = r.completion ?? `<answer>${r.answer}</answer>`;
        return {
          id: `${p.id}#demo${i}`,
          messages: [...p.messages, { role: "assistant", content }],
          bucket: p.bucket,
          meta: p.meta,
        };
      });
    },
  };
}

/** Parses JSONL text into a task plus a report of the rows that were skipped and why. */
export function importJsonl(
  text: string,
  opts: { name?: string; evalFraction?: number } = {},
): { task: Task; report: ImportReport } {
  const { rows, report } = parseJsonl(text);
  return { task: taskFromRows(rows, opts), report };
}
