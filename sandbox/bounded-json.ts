// The host's one way to write a value that came out of the sandbox (a tool's or a reward's
// result) as text: JSON with nesting cut at a depth, repeated containers (cycles) named,
// output cut at a size, written without recursion and never throwing (a getter that throws,
// a BigInt, a revoked proxy). The VM already cuts what leaves it (reader.ts); this holds for
// any value a runner hands back, so no result can end a run by overflowing the host's stack.
// Tested by sandbox/tools.test.ts.
import { MAX_VALUE_DEPTH } from "./prelude.ts";

const DEEP = `"[nested deeper than ${MAX_VALUE_DEPTH} levels]"`;

type Frame =
  | { kind: "array"; items: unknown[]; i: number }
  | { kind: "object"; keys: string[]; obj: object; i: number };

function scalar(v: unknown): string | undefined {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      return Number.isFinite(v) ? String(v) : "null";
    case "boolean":
      return String(v);
    case "bigint":
      return JSON.stringify(String(v));
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    default:
      return v === null ? "null" : undefined;
  }
}

function read<T>(f: () => T, fallback: T): T {
  try {
    return f();
  } catch {
    return fallback;
  }
}

/**
 * JSON text of `value`: at most `maxChars` code units (a longer text keeps its head and
 * "..."), containers deeper than `maxDepth` written as a string saying so, a container met
 * again inside itself as "[circular]"; undefined, functions and symbols as JSON drops them.
 */
export function boundedJson(value: unknown, maxChars = 65_536, maxDepth = MAX_VALUE_DEPTH): string {
  let out = "";
  const full = () => out.length > maxChars;
  const stack: Frame[] = [];
  const open = new Set<object>();
  const put = (s: string): true => {
    out += s;
    return true;
  };
  // Writes a value or opens its container; false when it writes nothing (undefined in an object).
  const visit = (v: unknown): boolean => {
    const s = scalar(v);
    if (s !== undefined) return put(s);
    if (v === null || typeof v !== "object") return false;
    if (open.has(v)) return put('"[circular]"');
    if (stack.length >= maxDepth) return put(DEEP);
    open.add(v);
    if (read(() => Array.isArray(v), false)) {
      put("[");
      stack.push({ kind: "array", items: v as unknown[], i: 0 });
    } else {
      put("{");
      stack.push({ kind: "object", keys: read(() => Object.keys(v), []), obj: v, i: 0 });
    }
    return true;
  };
  if (!visit(value)) return "null";
  while (stack.length > 0 && !full()) {
    const top = stack[stack.length - 1];
    if (top.kind === "array") {
      const n = read(() => top.items.length, 0);
      if (top.i >= n) {
        put("]");
        open.delete(top.items);
        stack.pop();
        continue;
      }
      if (top.i > 0) put(",");
      const item = read(() => top.items[top.i], undefined);
      top.i++;
      if (!visit(item)) put("null");
    } else {
      if (top.i >= top.keys.length) {
        put("}");
        open.delete(top.obj);
        stack.pop();
        continue;
      }
      const key = top.keys[top.i];
      const item = read(() => (top.obj as Record<string, unknown>)[key], undefined);
      const first = top.i === 0 || out.endsWith("{");
      top.i++;
      if (scalar(item) === undefined && (item === null || typeof item !== "object")) continue;
      put(`${first ? "" : ","}${JSON.stringify(key)}:`);
      visit(item);
    }
  }
  return full() ? `${out.slice(0, Math.max(0, maxChars - 3))}...` : out;
}
