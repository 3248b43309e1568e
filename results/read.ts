// Reading an engine's files as untrusted input: a size limit checked before a byte is read,
// JSON lines with the line number in every message, and Python's JSON (json.dumps writes
// NaN, Infinity and -Infinity, which JSON.parse refuses) read with those values as null.
// Pure: no DOM, no Node; a ResultFile is a Blob in the page and a file on disk in the CLI.
// Tests: results/results.test.ts.

/** One file of an engine's output: its path relative to what was picked, its size, its content on demand. */
export interface ResultFile {
  path: string;
  size: number;
  text(): Promise<string>;
  bytes(): Promise<ArrayBuffer>;
}

export interface ReadLimits {
  /** Largest file read (bytes): a metrics log, a trainer_state.json, one dump or parquet file. */
  maxFileBytes: number;
}

export const DEFAULT_LIMITS: ReadLimits = { maxFileBytes: 128 * 1024 * 1024 };

/** A file refused: the message names the file and, where there is one, the line. */
export class ResultsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ResultsError";
  }
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/** Throws when the file is over the limit (before reading it). */
export function checkSize(f: ResultFile, limits: ReadLimits): void {
  if (f.size > limits.maxFileBytes) {
    throw new ResultsError(
      `${f.path}: ${mib(f.size)} is over the ${mib(limits.maxFileBytes)} limit for one results file`,
    );
  }
}

export async function readText(f: ResultFile, limits: ReadLimits): Promise<string> {
  checkSize(f, limits);
  return f.text();
}

/**
 * Python's json text to a value: bare NaN, Infinity and -Infinity (outside strings) become null.
 * Throws SyntaxError like JSON.parse for anything else that is not JSON.
 */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
  }
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === "\\") out += text[++i] ?? "";
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    const word = text.startsWith("-Infinity", i)
      ? "-Infinity"
      : text.startsWith("Infinity", i)
        ? "Infinity"
        : text.startsWith("NaN", i)
          ? "NaN"
          : null;
    if (word) {
      out += "null";
      i += word.length - 1;
    } else out += c;
  }
  return JSON.parse(out);
}

export interface JsonLine {
  line: number;
  value: unknown;
}

/**
 * The JSON values of a JSON-lines text, one per non-empty line. A last line that does not parse
 * and has no newline after it is a write cut short (a run killed mid-line): it is left out and
 * `truncated` names it. Any other line that does not parse refuses the file.
 */
export function jsonLines(text: string, path: string): { lines: JsonLine[]; truncated?: string } {
  const parts = text.split("\n");
  const lines: JsonLine[] = [];
  let truncated: string | undefined;
  parts.forEach((raw, i) => {
    const s = raw.trim();
    if (s === "") return;
    try {
      lines.push({ line: i + 1, value: parsePythonJson(s) });
    } catch {
      if (i === parts.length - 1) {
        truncated = `${path}:${i + 1}: skipped a truncated last line (${s.length} characters, no newline after it)`;
        return;
      }
      throw new ResultsError(`${path}:${i + 1}: not a JSON line: ${JSON.stringify(s.slice(0, 60))}`);
    }
  });
  return { lines, truncated };
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A file's name without its folders. */
export const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1);
/** A file's folder ("" at the top). */
export const dirName = (path: string) => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");
