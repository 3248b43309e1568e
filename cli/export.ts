// `npm run export -- verl <recipe.json | bundle> --out DIR [--strict]`
// `npm run export -- verl --link '<share url>' --out DIR`
// `npm run export -- trl  <recipe.json | bundle | --link URL> --out DIR`
// `npm run export -- --table`   (the mapping table, as docs/SCALE-OUT.md shows it)
// `npm run export -- peft <run folder | bundle | checkpoint.safetensors> --out DIR`
// `npm run export -- hf   <run folder | bundle | checkpoint.safetensors> --out DIR`
//   the trained weights in Hugging Face formats (export/hf.ts): peft = the LoRA adapter as
//   adapter_config.json + adapter_model.safetensors, hf = the model with the adapter merged
//   (config.json + model.safetensors). The tiny layernorm/gelu/learned model is GPT-2, the
//   rmsnorm/swiglu/rope models the Llama family (llama, qwen2, qwen3 by their options); other
//   mixes are refused with the field named.
// Writes a run's export (export/index.ts: config.yaml, tool_config.yaml, reward.py,
// train/val.parquet, run.sh, README.md for verl; train_trl.py and the same data and reward for
// TRL) to DIR, and prints every part of the run that does not map as a warning. --strict
// refuses such a run (exit 3) with the list. Tested by export/export.test.ts.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadRecipeFile } from "../config/recipe-file";
import type { RunConfig } from "../config/schema";
import { hfFiles, peftFiles } from "../export/hf";
import { exportRun, StrictExportError, type Target } from "../export/index";
import { mappingTableMarkdown } from "../export/mapping";
import { type Checkpoint, loadCheckpoint } from "../model/checkpoint";
import { parseCliArgs, usageExit } from "./args";
import { configFromLink, readRunInput } from "./link";

interface Args {
  target?: Target;
  input?: string;
  link?: string;
  out?: string;
  strict: boolean;
}

const usage: (msg?: string) => never = usageExit(
  "usage: npm run export -- verl|trl <recipe.json | bundle> --out DIR [--strict]\n" +
    "       npm run export -- peft|hf <run folder | bundle | checkpoint> --out DIR\n" +
    "       npm run export -- verl|trl --link '<share url>' --out DIR [--strict]\n" +
    "       npm run export -- --table",
);

function parseArgs(argv: string[]): Args {
  const p = parseCliArgs(argv, { flags: ["--strict"], values: ["--out", "--link"] }, usage);
  const [target, ...inputs] = p.positionals;
  if (target !== undefined && target !== "verl" && target !== "trl")
    usage(`the target is verl or trl, not ${target}`);
  if (inputs.length > 1) usage(`one run at a time (got ${inputs[0]} and ${inputs[1]})`);
  const a: Args = {
    target,
    input: inputs[0],
    link: p.values.get("--link"),
    out: p.values.get("--out"),
    strict: p.flags.has("--strict"),
  };
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

/** The trained weights of a run folder (its checkpoint), a bundle with weights, or a checkpoint file. */
async function loadWeights(path: string): Promise<Checkpoint> {
  if (!existsSync(path)) throw new Error(`${path} does not exist`);
  if (statSync(path).isDirectory()) {
    for (const f of ["checkpoint.safetensors", "weights.safetensors"]) {
      if (existsSync(join(path, f))) return loadCheckpoint(new Uint8Array(readFileSync(join(path, f))));
    }
    throw new Error(`${path} has no checkpoint.safetensors (a run folder of npm run train)`);
  }
  const input = await readRunInput(path);
  if (input?.bundle) {
    if (!input.bundle.weights) throw new Error(`the bundle ${path} was saved without weights`);
    return loadCheckpoint(input.bundle.weights);
  }
  return loadCheckpoint(new Uint8Array(readFileSync(path)));
}

async function weightsExport(kind: "peft" | "hf", argv: string[]) {
  const p = parseCliArgs(argv.slice(1), { flags: [], values: ["--out"] }, usage);
  const out = p.values.get("--out");
  const input = p.positionals[0];
  if (!input) usage(`${kind} needs a run folder, a bundle or a checkpoint`);
  if (!out) usage("--out DIR is needed");
  let files: Record<string, Uint8Array>;
  try {
    const ck = await loadWeights(input);
    if (kind === "peft") {
      if (!ck.adapter)
        throw new Error(`${input} has no LoRA adapter (model.lora.rank is 0): export hf instead`);
      files = peftFiles(ck.config, ck.adapter);
    } else files = hfFiles(ck.config, ck.weights, ck.adapter ?? null);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  mkdirSync(out, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(out, name), bytes);
  console.log(
    `exported ${input} as ${kind === "peft" ? "PEFT adapter" : "a Hugging Face model"}: ${Object.keys(files).join(", ")} in ${out}`,
  );
}

async function main() {
  if (process.argv.includes("--table")) {
    console.log(mappingTableMarkdown());
    return;
  }
  const kind = process.argv[2];
  if (kind === "peft" || kind === "hf") return weightsExport(kind, process.argv.slice(2));
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
