// Presets for the config panel: the recipes in public/recipes/ (index.json lists them) and
// the algorithm recipes of config/. A preset is a partial config layered over the root
// defaults; a missing or broken recipe file is a notice, never a blank page.
import { defaultRunConfig, mergeConfig, parseRunConfig, RECIPES, type RunConfig } from "../config";
import { loadRecipeFile } from "../config/recipe-file";

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
  let partial: unknown = {};
  if (p.source === "algorithm") partial = RECIPES[p.id]?.config ?? {};
  else {
    const parsed = await loadRecipeFile(`recipes/${p.file}`, async (file) => {
      const res = await fetch(file);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return res.text();
    });
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.config;
  }
  const r = parseRunConfig(mergeConfig(defaultRunConfig(), partial));
  if (!r.ok) throw new Error(`${p.name}: ${r.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
  return r.config;
}
