// The runs the export tests export: a checked RunConfig from a partial one, and the recipe
// files of public/recipes (index.json order). Shared by export/export.test.ts and
// export/engines.test.ts.
import { readFileSync } from "node:fs";
import { loadRecipeFile } from "../config/recipe-file.ts";
import { type RunConfig, validateRunConfig } from "../config/schema.ts";

export function config(input: unknown): RunConfig {
  const r = validateRunConfig(input);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.config;
}

/** Every recipe file: its file name, the recipe's name and its config. */
export async function recipeFiles(): Promise<{ file: string; name: string; config: RunConfig }[]> {
  const index = JSON.parse(readFileSync("public/recipes/index.json", "utf8")) as { file: string }[];
  const out: { file: string; name: string; config: RunConfig }[] = [];
  for (const { file } of index) {
    const r = await loadRecipeFile(`public/recipes/${file}`, async (p) => readFileSync(p, "utf8"));
    if (!r.ok) throw new Error(r.error);
    out.push({ file, name: r.recipe.name, config: r.config });
  }
  return out;
}
