// `npm run export -- verl <recipe.json | bundle> --out DIR [--strict]`
// `npm run export -- verl --link '<share url>' --out DIR`
// `npm run export -- trl  <recipe.json | bundle | --link URL> --out DIR`
// `npm run export -- --table`   (the mapping table, as docs/SCALE-OUT.md shows it)
// Writes a run's export (export/index.ts: config.yaml, tool_config.yaml, reward.py,
// train/val.parquet, run.sh, README.md for verl; train_trl.py and the same data and reward for
// TRL) to DIR, and prints every part of the run that does not map as a warning. --strict
// refuses such a run (exit 3) with the list. Tested by export/export.test.ts.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadRecipeFile } from "../config/recipe-file";
import type { RunConfig } from "../config/schema";
import { exportRun, StrictExportError, type Target } from "../export/index";
import { mappingTableMarkdown } from "../export/mapping";
import { configFromLink, readRunInput } from "./link";

interface Args {
  target?: Target;
  input?: string;
  link?: string;
  out?: string;
  strict: boolean;
}

function usage(msg?: string): never {
  if (msg) console.error(`error: ${msg}\n`);
  console.error(
    "usage: npm run export -- verl|trl <recipe.json | bundle> --out DIR [--strict]\n" +
      "       npm run export -- verl|trl --link '<share url>' --out DIR [--strict]\n" +
      "       npm run export -- --table",
  );
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const a: Args = { strict: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${x} needs a value`);
      return v;
    };
    if (x === "--strict") a.strict = true;
    else if (x === "--out") a.out = next();
    else if (x === "--link") a.link = next();
    else if (x.startsWith("--")) usage(`unknown option ${x}`);
    else if (!a.target) {
      if (x !== "verl" && x !== "trl") usage(`the target is verl or trl, not ${x}`);
      a.target = x;
    } else if (a.input) usage(`one run at a time (got ${a.input} and ${x})`);
    else a.input = x;
  }
  if (!a.target) usage("a target (verl or trl) is needed");
  if (!a.input && !a.link) usage("a recipe file, a bundle or --link is needed");
  if (!a.out) usage("--out DIR is needed");
  return a;
}

async function loadRun(a: Args): Promise<{ config: RunConfig; name: string; source: string }> {
  if (a.link) {
    const r = await configFromLink(a.link);
    return { config: r.config, name: r.name, source: "a share link" };
  }
  const path = a.input as string;
  const input = await readRunInput(path);
  if (input) return { config: input.config, name: input.name, source: `the ${input.source} ${path}` };
  const r = await loadRecipeFile(path, async (p) => readFileSync(p, "utf8"));
  if (!r.ok) throw new Error(r.error);
  return { config: r.config, name: r.recipe.name, source: path };
}

async function main() {
  if (process.argv.includes("--table")) {
    console.log(mappingTableMarkdown());
    return;
  }
  const a = parseArgs(process.argv.slice(2));
  let run: Awaited<ReturnType<typeof loadRun>>;
  try {
    run = await loadRun(a);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  let result: ReturnType<typeof exportRun>;
  try {
    result = exportRun(run.config, {
      target: a.target as Target,
      name: run.name,
      strict: a.strict,
      source: run.source,
    });
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(err instanceof StrictExportError ? 3 : 2);
  }
  const out = a.out as string;
  mkdirSync(out, { recursive: true });
  for (const [path, bytes] of Object.entries(result.files))
    writeFileSync(join(out, path), bytes, { mode: path.endsWith(".sh") ? 0o755 : 0o644 });
  for (const w of result.warnings) console.warn(`warning: ${w.part}: ${w.why}`);
  console.log(
    `exported ${run.name} to ${a.target}: ${Object.keys(result.files).length} files in ${out}` +
      ` (reward terms: ${result.rewardTerms.join(", ") || "none"}; ${result.warnings.length} warning(s), listed in README.md)`,
  );
}

main();
