// Config edits: deep merge of partial recipes over defaults, dotted-path get/set, and
// `applyEdit`, the one way a running config changes (a ConfigEdit at step k is an event
// in the run record). Restart-only fields are refused and every result is revalidated.
// Tested by config/config.test.ts.
import { fieldMeta } from "./meta.ts";
import { issuesToErrors, type RunConfig, RunConfigSchema } from "./schema.ts";

export type ConfigEdit = { step: number; path: string; value: unknown };
export type EditResult = { ok: true; config: RunConfig } | { ok: false; error: string };

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function clone<T>(x: T): T {
  return structuredClone(x);
}

/**
 * Deep merge: plain objects merge key by key, arrays and scalars in `override` replace,
 * `undefined` in `override` leaves the base value. Neither input is modified. The result is
 * not validated; pass it to parseRunConfig.
 */
export function mergeConfig<T>(base: T, override: unknown): T {
  if (override === undefined) return clone(base);
  if (!isPlainObject(base) || !isPlainObject(override)) return clone(override) as T;
  const out: Record<string, unknown> = clone(base);
  for (const [k, v] of Object.entries(override)) {
    if (v === undefined) continue;
    out[k] = k in out ? mergeConfig(out[k], v) : clone(v);
  }
  return out as T;
}

function splitPath(path: string): string[] {
  if (path === "") throw new Error("empty config path");
  return path.split(".");
}

/** Value at a dotted path ("rl.kl.coef", "rewards.terms.0.weight"); undefined when absent. */
export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const key of splitPath(path)) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/**
 * A copy of `obj` with the value at `path` replaced. Missing intermediate objects are
 * created; numeric segments index arrays. Throws when the path runs through a scalar.
 */
export function setPath<T>(obj: T, path: string, value: unknown): T {
  const keys = splitPath(path);
  const root = clone(obj) as unknown;
  let cur = root;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (typeof cur !== "object" || cur === null) {
      throw new Error(`${keys.slice(0, i).join(".")}: is not an object`);
    }
    const container = cur as Record<string, unknown>;
    if (Array.isArray(cur) && !/^\d+$/.test(key))
      throw new Error(`${keys.slice(0, i + 1).join(".")}: not an index`);
    if (i === keys.length - 1) {
      container[key] = clone(value);
    } else {
      if (container[key] === undefined || container[key] === null) container[key] = {};
      cur = container[key];
    }
  }
  return root as T;
}

/** Apply one live edit. Refuses unknown and restart-only fields; the result must validate. */
export function applyEdit(config: RunConfig, edit: ConfigEdit): EditResult {
  const meta = fieldMeta(edit.path);
  if (!meta) return { ok: false, error: `${edit.path}: unknown field` };
  if (!meta.live) return { ok: false, error: `${edit.path}: needs a restart (not a live knob)` };
  if (!Number.isInteger(edit.step) || edit.step < 0) {
    return { ok: false, error: `${edit.path}: edit step must be a non-negative integer` };
  }
  let next: RunConfig;
  try {
    next = setPath(config, edit.path, edit.value);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  const r = RunConfigSchema.safeParse(next);
  if (!r.success) {
    return {
      ok: false,
      error: issuesToErrors(r.error.issues)
        .map((x) => `${x.path}: ${x.message}`)
        .join("; "),
    };
  }
  return { ok: true, config: r.data };
}

/** Replay a run's edits in order over its starting config. Stops at the first bad edit. */
export function applyEdits(config: RunConfig, edits: readonly ConfigEdit[]): EditResult {
  let cur = config;
  for (const e of edits) {
    const r = applyEdit(cur, e);
    if (!r.ok) return r;
    cur = r.config;
  }
  return { ok: true, config: cur };
}
