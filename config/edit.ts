// Config edits: deep merge of partial recipes over defaults, dotted-path get/set, and
// `applyEdit`, the one way a running config changes (a ConfigEdit at step k is an event
// in the run record). Restart-only fields are refused and every result is revalidated.
// Tested by config/config.test.ts.
import { fieldMeta } from "./meta.ts";
import { issuesToErrors, type RunConfig, RunConfigSchema } from "./schema.ts";

/**
 * The phases a run goes through, in order; an edit belongs to the step it applies before.
 * (value_pretrain is VAPO's critic warm-up between SFT and RL, rl.value_pretrain.)
 */
export const EDIT_PHASES = ["sft", "value_pretrain", "rl"] as const;
export type EditPhase = (typeof EDIT_PHASES)[number];

/**
 * A live edit in the run record: `path = value`, applied at the start of step `step` of
 * `phase` (before that step runs, after the one before it). rl/run/run-loop.ts applies them.
 */
export type ConfigEdit = { phase: EditPhase; step: number; path: string; value: unknown };

/** A point in a run: before step `step` of `phase` (= after `step` completed steps of it). */
export type RunPoint = { phase: EditPhase; step: number };

/** Run order of two points: negative when a comes first, 0 when equal. */
export function comparePoints(a: RunPoint, b: RunPoint): number {
  const r = EDIT_PHASES.indexOf(a.phase) - EDIT_PHASES.indexOf(b.phase);
  return r !== 0 ? r : a.step - b.step;
}

/**
 * The phase of an edit recorded without one (links and bundles of format 1, runs stored by
 * older labs): an edit of an `sft.*` field is SFT's, any other edit is RL's. Those formats
 * keyed SFT edits by SFT step and every other edit by RL step, so the step carries over.
 */
export function legacyEditPhase(path: string): EditPhase {
  return path === "sft" || path.startsWith("sft.") ? "sft" : "rl";
}

/** An edit of an older record with its phase: the one given, else legacyEditPhase. */
export function withEditPhase(e: {
  step: number;
  path: string;
  value: unknown;
  phase?: unknown;
}): ConfigEdit {
  const phase = EDIT_PHASES.includes(e.phase as EditPhase) ? (e.phase as EditPhase) : legacyEditPhase(e.path);
  return { phase, step: e.step, path: e.path, value: e.value };
}
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
  if (!EDIT_PHASES.includes(edit.phase)) {
    return { ok: false, error: `${edit.path}: edit phase must be one of ${EDIT_PHASES.join(", ")}` };
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
