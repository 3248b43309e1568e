// Version migrations for stored RunConfigs (IndexedDB runs, share links, run bundles).
// Each step upgrades version k to k+1 on the raw JSON, before schema validation, so a
// link made by an older lab still opens. Adding version k+1 means appending one entry to
// MIGRATIONS, bumping CONFIG_VERSION, and freezing version k's defaults for links
// (config/link.ts LINK_DEFAULTS). Tested by config/config.test.ts.
import { CONFIG_VERSION, type ParseResult, validateRunConfig } from "./schema.ts";

type Raw = Record<string, unknown>;

/** MIGRATIONS[k] turns a version-k object into a version-(k+1) object. */
export const MIGRATIONS: Record<number, (raw: Raw) => Raw> = {
  // 1 -> 2: task.split_version arrived (tasks/split.ts). A version-1 run was made with the
  // raw-key split, so it keeps it and replays on the same held-out set.
  1: (raw) => ({
    ...raw,
    version: 2,
    task: { ...(isPlainObject(raw.task) ? raw.task : {}), split_version: 1 },
  }),
};

export class ConfigVersionError extends Error {
  constructor(
    readonly version: unknown,
    latest = CONFIG_VERSION,
  ) {
    super(
      `version: unknown config version ${JSON.stringify(version)} (this lab reads versions 1..${latest})`,
    );
    this.name = "ConfigVersionError";
  }
}

function isPlainObject(x: unknown): x is Raw {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/**
 * Upgrade a raw config object to CONFIG_VERSION. A missing version is read as the current
 * one (recipes and hand-written partial configs omit it). Throws ConfigVersionError for a
 * version that is not an integer in 1..CONFIG_VERSION. Non-objects pass through unchanged
 * so the schema reports them.
 */
export function migrateConfig(raw: unknown): unknown {
  return migrateWith(raw, MIGRATIONS, CONFIG_VERSION);
}

/** The migration loop, with the step table and target as parameters so tests can drive it. */
export function migrateWith(raw: unknown, steps: Record<number, (raw: Raw) => Raw>, target: number): unknown {
  if (!isPlainObject(raw)) return raw;
  if (raw.version === undefined) return raw;
  const v = raw.version;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > target) {
    throw new ConfigVersionError(v, target);
  }
  let out: Raw = raw;
  for (let k = v; k < target; k++) {
    const step = steps[k];
    if (!step) throw new ConfigVersionError(k, target);
    out = step(out);
    if (out.version !== k + 1) throw new Error(`migration ${k} -> ${k + 1} did not set version ${k + 1}`);
  }
  return out;
}

/** Migrate, validate and fill defaults. Errors name fields by dotted path. */
export function parseRunConfig(input: unknown): ParseResult {
  let migrated: unknown;
  try {
    migrated = migrateConfig(input);
  } catch (e) {
    if (e instanceof ConfigVersionError) {
      return { ok: false, errors: [{ path: "version", message: e.message.replace(/^version: /, "") }] };
    }
    throw e;
  }
  return validateRunConfig(migrated);
}
