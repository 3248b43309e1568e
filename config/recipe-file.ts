// Recipe files (public/recipes/*.json): a named, described partial RunConfig over the
// defaults, optionally over one of the algorithm recipes of presets.ts (`"base": "dapo"`).
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
  config: Record<string, unknown>;
}

export type RecipeParse = { ok: true; recipe: RecipeFile; config: RunConfig } | { ok: false; error: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses a recipe file's text; `source` (a file name or URL) is named in every error. */
export function parseRecipeFile(text: string, source: string): RecipeParse {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `${source}: not valid JSON (${(err as Error).message})` };
  }
  if (!isObject(raw)) return { ok: false, error: `${source}: a recipe must be a JSON object` };
  const known = new Set(["name", "description", "base", "config"]);
  for (const k of Object.keys(raw)) {
    if (!known.has(k))
      return {
        ok: false,
        error: `${source}: unknown field "${k}" (a recipe has name, description, base, config)`,
      };
  }
  if (typeof raw.name !== "string" || !raw.name)
    return { ok: false, error: `${source}: "name" must be a non-empty string` };
  if (raw.config !== undefined && !isObject(raw.config))
    return { ok: false, error: `${source}: "config" must be an object` };
  let base: Record<string, unknown> = defaultRunConfig() as unknown as Record<string, unknown>;
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
      config: (raw.config as Record<string, unknown>) ?? {},
    },
    config: parsed.config,
  };
}
