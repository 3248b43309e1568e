// Recipe files (public/recipes/*.json): a named, described partial RunConfig over the
// defaults, optionally over one of the algorithm recipes of presets.ts (`"base": "dapo"`) and
// over another recipe file (`"extends": "quick-demo.json"`, resolved by loadRecipeFile), so a
// claim's two arms differ only in the knobs the claim is about.
// Used by the CLI (`npm run train -- <recipe.json>`) and the UI's presets picker; a broken
// file is an error that names the file and the field.
// Tested by config/recipe-file.test.ts.
import { mergeConfig } from "./edit.ts";
import { parseRunConfig } from "./migrate.ts";
import { RECIPES } from "./presets.ts";
import { defaultRunConfig, formatConfigErrors, type RunConfig } from "./schema.ts";

export interface RecipeFile {
  name: string;
  description: string;
  /** An algorithm recipe of presets.ts applied under `config`. */
  base?: string;
  /** Another recipe file (same folder) whose config this one starts from. */
  extends?: string;
  config: Record<string, unknown>;
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
    return { ok: false, error: `${source}: not valid JSON (${(err as Error).message})` };
  }
  if (!isObject(raw)) return { ok: false, error: `${source}: a recipe must be a JSON object` };
  const known = new Set(["name", "description", "base", "extends", "config"]);
  for (const k of Object.keys(raw)) {
    if (!known.has(k))
      return {
        ok: false,
        error: `${source}: unknown field "${k}" (a recipe has name, description, base, extends, config)`,
      };
  }
  if (typeof raw.name !== "string" || !raw.name)
    return { ok: false, error: `${source}: "name" must be a non-empty string` };
  if (raw.config !== undefined && !isObject(raw.config))
    return { ok: false, error: `${source}: "config" must be an object` };
  if (raw.extends !== undefined && !parent) {
    return { ok: false, error: `${source}: "extends" needs the recipe to be loaded with loadRecipeFile` };
  }
  let base: Record<string, unknown> = (parent ?? defaultRunConfig()) as unknown as Record<string, unknown>;
  if (raw.base !== undefined) {
    if (typeof raw.base !== "string" || !RECIPES[raw.base]) {
      return {
        ok: false,
        error: `${source}: unknown base recipe ${JSON.stringify(raw.base)} (known: ${Object.keys(RECIPES).join(", ")})`,
      };
    }
    base = mergeConfig(base, RECIPES[raw.base].config);
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
    },
    config: parsed.config,
  };
}

/**
 * Loads a recipe file and the chain of files it extends; `read` returns a file's text
 * (fs in Node, fetch in the browser). Errors name the file; cycles are reported.
 */
export async function loadRecipeFile(
  file: string,
  read: (file: string) => Promise<string>,
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
  const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/") + 1) : "";
  const parentFile = parentName.startsWith("/") ? parentName : dir + parentName;
  const parent = await loadRecipeFile(parentFile, read, [...seen, file]);
  if (!parent.ok) return { ok: false, error: `${file}: extends ${parent.error}` };
  return parseRecipeFile(text, file, parent.config);
}
