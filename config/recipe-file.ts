// Recipe files (public/recipes/*.json): a named, described partial RunConfig over the
// defaults, optionally over one of the algorithm recipes of presets.ts (`"base": "dapo"`) and
// over another recipe file (`"extends": "quick-demo.json"`, resolved by loadRecipeFile), so a
// claim's two arms differ only in the knobs the claim is about.
// Used by the CLI (`npm run train -- <recipe.json>`) and the UI's presets picker; a broken
// file is an error that names the file and the field.
// Tested by config/recipe-file.test.ts.
import { mergeConfig } from "./edit.ts";
import { parseRunConfig } from "./migrate.ts";
import { own } from "./own.ts";
import { RECIPES } from "./presets.ts";
import { defaultRunConfig, formatConfigErrors, type RunConfig } from "./schema.ts";

export interface RecipeFile {
  name: string;
  description: string;
  /** An algorithm recipe of presets.ts applied under `config`. */
  base?: string;
  /** Another recipe file whose config this one starts from: a bare name in the same folder, or a preset. */
  extends?: string;
  config: Record<string, unknown>;
  /** What a claim arm changes against its baseline arm (checked by config/contrast.test.ts). */
  contrast?: RecipeContrast;
}

/**
 * A claim arm's declared contrast: the recipe file it is compared with, the config paths it
 * changes (a path covers its subtree, e.g. "rewards.terms"), and why, when it changes more
 * than the one knob the claim is about.
 */
export interface RecipeContrast {
  baseline: string;
  changes: string[];
  why?: string;
}

function parseContrast(v: unknown, source: string): RecipeContrast | string {
  if (!isObject(v)) return `${source}: "contrast" must be an object {baseline, changes, why?}`;
  for (const k of Object.keys(v)) {
    if (!["baseline", "changes", "why"].includes(k))
      return `${source}: contrast: unknown field "${k}" (a contrast has baseline, changes, why)`;
  }
  if (typeof v.baseline !== "string" || !v.baseline)
    return `${source}: contrast.baseline must name a recipe file`;
  if (
    !Array.isArray(v.changes) ||
    v.changes.length === 0 ||
    v.changes.some((c) => typeof c !== "string" || !c)
  )
    return `${source}: contrast.changes must be a non-empty list of config paths`;
  if (v.why !== undefined && typeof v.why !== "string") return `${source}: contrast.why must be a string`;
  if (v.changes.length > 1 && !v.why)
    return `${source}: contrast changes ${v.changes.length} knobs; say why in contrast.why`;
  return { baseline: v.baseline, changes: v.changes as string[], why: v.why as string | undefined };
}

export type RecipeParse = { ok: true; recipe: RecipeFile; config: RunConfig } | { ok: false; error: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses a recipe file's text; `source` (a file name or URL) is named in every error. */
export function parseRecipeFile(text: string, source: string, parent?: RunConfig): RecipeParse {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // where it broke, not the engine's message, which quotes the file's bytes
    const at = /position \d+(?: \(line \d+ column \d+\))?/.exec((err as Error).message);
    return { ok: false, error: `${source}: not valid JSON${at ? ` (at ${at[0]})` : ""}` };
  }
  if (!isObject(raw)) return { ok: false, error: `${source}: a recipe must be a JSON object` };
  const known = new Set(["name", "description", "base", "extends", "config", "contrast"]);
  for (const k of Object.keys(raw)) {
    if (!known.has(k))
      return {
        ok: false,
        error: `${source}: unknown field "${k}" (a recipe has name, description, base, extends, config, contrast)`,
      };
  }
  if (typeof raw.name !== "string" || !raw.name)
    return { ok: false, error: `${source}: "name" must be a non-empty string` };
  if (raw.config !== undefined && !isObject(raw.config))
    return { ok: false, error: `${source}: "config" must be an object` };
  const contrast = raw.contrast === undefined ? undefined : parseContrast(raw.contrast, source);
  if (typeof contrast === "string") return { ok: false, error: contrast };
  if (raw.extends !== undefined && !parent) {
    return { ok: false, error: `${source}: "extends" needs the recipe to be loaded with loadRecipeFile` };
  }
  let base: Record<string, unknown> = (parent ?? defaultRunConfig()) as unknown as Record<string, unknown>;
  if (raw.base !== undefined) {
    const recipe = typeof raw.base === "string" ? own(RECIPES, raw.base) : undefined;
    if (!recipe) {
      return {
        ok: false,
        error: `${source}: unknown base recipe ${JSON.stringify(raw.base)} (known: ${Object.keys(RECIPES).join(", ")})`,
      };
    }
    base = mergeConfig(base, recipe.config);
  }
  const parsed = parseRunConfig(mergeConfig(base, raw.config ?? {}));
  if (!parsed.ok)
    return { ok: false, error: `${source}: invalid config\n${formatConfigErrors(parsed.errors)}` };
  return {
    ok: true,
    recipe: {
      name: raw.name,
      description: typeof raw.description === "string" ? raw.description : "",
      base: raw.base as string | undefined,
      extends: raw.extends as string | undefined,
      config: (raw.config as Record<string, unknown>) ?? {},
      ...(contrast ? { contrast } : {}),
    },
    config: parsed.config,
  };
}

/** Where `extends` may look beside the starting recipe's own folder. */
export interface RecipeLoadOptions {
  /**
   * The folder of the lab's presets (public/recipes in Node, recipes/ on the page): a bare name
   * not found in the recipe's own folder is read from here.
   */
  presets?: string;
}

const folderOf = (file: string) => (file.includes("/") ? file.slice(0, file.lastIndexOf("/") + 1) : "");

/** Why an `extends` value is not a bare file name, or null. */
function extendsProblem(name: string): string | null {
  if (!name) return `"extends" must name a recipe file`;
  if (/[/\\]/.test(name) || name === "." || name === "..")
    return `"extends" must be a recipe file's bare name (in this recipe's folder, or a preset), not a path: ${JSON.stringify(name)}`;
  return null;
}

/**
 * Loads a recipe file and the chain of files it extends; `read` returns a file's text
 * (fs in Node, fetch in the browser). `extends` is a bare file name, read from the starting
 * recipe's folder or else from `options.presets`, so a recipe can reach no other file. Errors
 * name the file and never quote another file's bytes; cycles are reported.
 */
export async function loadRecipeFile(
  file: string,
  read: (file: string) => Promise<string>,
  options: RecipeLoadOptions = {},
  seen: string[] = [],
): Promise<RecipeParse> {
  if (seen.includes(file))
    return { ok: false, error: `${file}: "extends" cycle (${[...seen, file].join(" -> ")})` };
  let text: string;
  try {
    text = await read(file);
  } catch (err) {
    return { ok: false, error: `${file}: cannot read (${(err as Error).message})` };
  }
  let parentName: unknown;
  try {
    parentName = (JSON.parse(text) as { extends?: unknown }).extends;
  } catch {
    return parseRecipeFile(text, file);
  }
  if (parentName === undefined) return parseRecipeFile(text, file);
  if (typeof parentName !== "string") return { ok: false, error: `${file}: "extends" must be a file name` };
  const problem = extendsProblem(parentName);
  if (problem) return { ok: false, error: `${file}: ${problem}` };
  // the folder of this file: the starting recipe's or the presets' (a chain never leaves them)
  const home = folderOf(file);
  const candidates = [home + parentName];
  if (options.presets !== undefined) {
    const presets =
      options.presets.endsWith("/") || !options.presets ? options.presets : `${options.presets}/`;
    if (presets !== home) candidates.push(presets + parentName);
  }
  let parent: RecipeParse | undefined;
  for (const candidate of candidates) {
    try {
      await read(candidate);
    } catch {
      continue;
    }
    parent = await loadRecipeFile(candidate, read, options, [...seen, file]);
    break;
  }
  if (!parent)
    return {
      ok: false,
      error: `${file}: extends ${JSON.stringify(parentName)}: no such recipe in ${candidates
        .map(folderOf)
        .map((d) => d || "./")
        .join(" or ")}`,
    };
  if (!parent.ok) return { ok: false, error: `${file}: extends ${parent.error}` };
  return parseRecipeFile(text, file, parent.config);
}

function leafValues(o: unknown, path: string, out: Map<string, string>): Map<string, string> {
  if (isObject(o)) for (const [k, v] of Object.entries(o)) leafValues(v, path ? `${path}.${k}` : k, out);
  else out.set(path, JSON.stringify(o));
  return out;
}

/**
 * What breaks a declared contrast between two resolved configs: every leaf that differs must
 * lie under a declared path (arrays are leaves), and every declared path must differ somewhere.
 * Empty when the arm changes exactly what it declares.
 */
export function contrastViolations(arm: unknown, baseline: unknown, changes: string[]): string[] {
  const a = leafValues(arm, "", new Map());
  const b = leafValues(baseline, "", new Map());
  const under = (leaf: string, path: string) => leaf === path || leaf.startsWith(`${path}.`);
  const differing = [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k));
  const out: string[] = [];
  for (const k of differing) {
    if (!changes.some((c) => under(k, c)))
      out.push(
        `${k} differs from the baseline (${b.get(k)} -> ${a.get(k)}) but is not declared in contrast.changes`,
      );
  }
  for (const c of changes) {
    if (!differing.some((k) => under(k, c)))
      out.push(`${c} is declared in contrast.changes but equals the baseline`);
  }
  return out;
}
