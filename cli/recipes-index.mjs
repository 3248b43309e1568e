#!/usr/bin/env node
// Rewrites public/recipes/index.json (the UI's presets list) from the recipe files:
// `node cli/recipes-index.mjs`. config/recipe-file.test.ts checks that it is up to date.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

const dir = "public/recipes";
const index = readdirSync(dir)
  .filter((f) => f.endsWith(".json") && f !== "index.json")
  .map((file) => {
    const r = JSON.parse(readFileSync(`${dir}/${file}`, "utf8"));
    // pretrained: the recipe runs a Hugging Face model (model.pretrained), so the model picker can offer it.
    const pretrained = typeof r.config?.model?.pretrained === "string";
    return { file, name: r.name, description: r.description ?? "", ...(pretrained ? { pretrained } : {}) };
  })
  .sort((a, b) =>
    a.name === "quick-demo" ? -1 : b.name === "quick-demo" ? 1 : a.name.localeCompare(b.name),
  );
writeFileSync(`${dir}/index.json`, `${JSON.stringify(index, null, 2)}\n`);
console.log(`wrote ${dir}/index.json (${index.length} recipes)`);
