// Presets for the config panel: the recipes in public/recipes/ (index.json lists them) and
// the algorithm recipes of config/. A preset is a partial config layered over the root
// defaults; a missing or broken recipe file is a notice, never a blank page.
import { defaultRunConfig, mergeConfig, own, parseRunConfig, RECIPES, type RunConfig } from "../config";
import { loadRecipeFile, type RecipeContrast } from "../config/recipe-file";
import { fetchServedText } from "../workers/served-file";

export interface PresetEntry {
  id: string;
  name: string;
  description: string;
  source: "recipes" | "algorithm";
  file?: string;
  /** A recipe for a Hugging Face model (its config names model.pretrained). */
  pretrained?: boolean;
}

export async function loadPresetIndex(): Promise<{ presets: PresetEntry[]; notice: string | null }> {
  const algorithm: PresetEntry[] = Object.entries(RECIPES).map(([id, r]) => ({
    id,
    name: id,
    description: r.help,
    source: "algorithm",
  }));
  try {
    const list = JSON.parse(await fetchServedText("recipes/index.json", document.baseURI)) as {
      file: string;
      name?: string;
      description?: string;
      pretrained?: boolean;
    }[];
    const files: PresetEntry[] = list.map((e) => ({
      id: e.file.replace(/\.json$/, ""),
      name: e.name ?? e.file,
      description: e.description ?? "",
      source: "recipes",
      file: e.file,
      ...(e.pretrained ? { pretrained: true } : {}),
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
  if (p.source === "algorithm") partial = own(RECIPES, p.id)?.config ?? {};
  else {
    const parsed = await loadRecipeFile(
      `recipes/${p.file}`,
      (file) => fetchServedText(file, document.baseURI),
      {
        presets: "recipes",
      },
    );
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

/**
 * Why the form's config cannot run the pretrained model it names, or null: a preset that starts
 * from the lab's own SFT checkpoint (sft.init_checkpoint, a tiny character model) has nothing
 * to load into a Hugging Face model's shape. The model picker says so and offers the recipes
 * made for pretrained models; Start is refused with the same words.
 */
export function pretrainedConflict(config: RunConfig, preset: string | null): string | null {
  const m = config.model;
  if (!m?.pretrained || !config.sft?.init_checkpoint) return null;
  const name = m.pretrained.replace(/^(hf|local):/, "");
  return `${preset ?? "This preset"} starts from the lab's own checkpoint ${config.sft.init_checkpoint.split("/").pop()} (a ${m.layers}-layer character model), which cannot load into ${name}: pick a recipe made for pretrained models, or clear sft.init_checkpoint`;
}
