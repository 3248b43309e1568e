// Presets for the config panel: the recipes in public/recipes/ (index.json lists them) and
// the algorithm recipes of config/. A preset is a partial config layered over the root
// defaults; a missing or broken recipe file is a notice, never a blank page.
import { defaultRunConfig, mergeConfig, parseRunConfig, RECIPES, type RunConfig } from "../config";
import { loadRecipeFile, type RecipeContrast } from "../config/recipe-file";

export interface PresetEntry {
  id: string;
  name: string;
  description: string;
  source: "recipes" | "algorithm";
  file?: string;
}

export async function loadPresetIndex(): Promise<{ presets: PresetEntry[]; notice: string | null }> {
  const algorithm: PresetEntry[] = Object.entries(RECIPES).map(([id, r]) => ({
    id,
    name: id,
    description: r.help,
    source: "algorithm",
  }));
  try {
    const res = await fetch("recipes/index.json");
    if (!res.ok) throw new Error(`recipes/index.json: HTTP ${res.status}`);
    const list = (await res.json()) as { file: string; name?: string; description?: string }[];
    const files: PresetEntry[] = list.map((e) => ({
      id: e.file.replace(/\.json$/, ""),
      name: e.name ?? e.file,
      description: e.description ?? "",
      source: "recipes",
      file: e.file,
    }));
    return { presets: [...files, ...algorithm], notice: null };
  } catch (err) {
    return {
      presets: algorithm,
      notice: `Recipe files unavailable (${(err as Error).message}); showing built-in recipes.`,
    };
  }
}

/** The full config of a preset: its partial config merged over the defaults and validated. */
export async function presetConfig(p: PresetEntry): Promise<RunConfig> {
  return (await presetRecipe(p)).config;
}

/** A preset's config and, for a claim arm, its declared contrast with the baseline arm. */
export async function presetRecipe(
  p: PresetEntry,
): Promise<{ config: RunConfig; contrast?: RecipeContrast }> {
  let partial: unknown = {};
  if (p.source === "algorithm") partial = RECIPES[p.id]?.config ?? {};
  else {
    const parsed = await loadRecipeFile(`recipes/${p.file}`, async (file) => {
      const res = await fetch(file);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return res.text();
    });
    if (!parsed.ok) throw new Error(parsed.error);
    return { config: parsed.config, ...(parsed.recipe.contrast ? { contrast: parsed.recipe.contrast } : {}) };
  }
  const r = parseRunConfig(mergeConfig(defaultRunConfig(), partial));
  if (!r.ok) throw new Error(`${p.name}: ${r.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
  return { config: r.config };
}

/**
 * What a claim preset's description says, in parts: the claim with its source ("DAPO, arXiv
 * 2503.14476") and what to watch ("compare ... with quick-demo"). Null for other presets.
 */
export function claimParts(
  description: string,
): { source: string; claim: string; watch: string | null } | null {
  const m = /^Claim \(([^)]*)\):\s*(.*)$/s.exec(description);
  if (!m) return null;
  const [, source, rest] = m;
  const claim = /^(.*?\.)(\s|$)/s.exec(rest)?.[1] ?? rest;
  const watch = /\b[Cc]ompare ([^.]*)/.exec(rest)?.[1] ?? null;
  return { source, claim, watch };
}
