// `npm run export -- verl <recipe.json | bundle | run folder> --out DIR [--strict] [--gpus N]`
// `npm run export -- verl --link '<share url>' --out DIR`
// `npm run export -- trl  <recipe.json | bundle | --link URL> --out DIR`
// `npm run export -- --table [trl]`   (the verl mapping table or the TRL one, as docs/SCALE-OUT.md shows them)
// `npm run export -- peft <run folder | bundle | checkpoint.safetensors> --out DIR [--base NAME|DIR]`
// `npm run export -- hf   <run folder | bundle | checkpoint.safetensors> --out DIR [--tokenizer DIR] [--dtype f32|bf16|f16]
//   the trained weights in Hugging Face formats (model/hf/write.ts): peft = the LoRA adapter as
//   adapter_config.json + adapter_model.safetensors, hf = the model with the adapter merged
//   (config.json + model.safetensors) and the source model's tokenizer, chat template and
//   generation_config files copied through (from the run's model.tokenizer or model.pretrained:
//   a folder, or an hf: model in the CLI's model cache; --tokenizer DIR names the folder). For a
//   pretrained run (model.pretrained) the PEFT adapter's base_model_name_or_path is the source
//   (the hf: repo id with its revision, or the folder as found: public/models/lab-llama for the
//   run's models/lab-llama; --base NAME|DIR sets it, and is required for a folder picked in the
//   page, local:NAME, which has no path here), and the merged config.json is the
//   source's, its weights in the source's dtype (--dtype to choose), with a README.md naming
//   the source. The tiny layernorm/gelu/learned model is GPT-2, the
//   rmsnorm/swiglu/rope models the Llama family (llama, qwen2, qwen3 by their options); other
//   mixes are refused with the field named.
// Writes a run's export (export/index.ts: config.yaml, tool_config.yaml, reward.py,
// train/val.parquet, run.sh, README.md for verl; train_trl.py and the same data and reward for
// TRL) to DIR, and prints every part of the run that does not map as a warning. --strict
// refuses such a run (exit 3) with the list. --gpus N sizes the batches for N GPUs (verl's
// default 8; TRL's 1 process). A bundle or a run folder of `npm run train` brings the facts the
// run recorded when it loaded its model (whether its chat template renders tools).
// Tested by export/export.test.ts.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { parseRunConfig } from "../config/migrate";
import { loadRecipeFile } from "../config/recipe-file";
import type { RunConfig } from "../config/schema";
import { chatFactsOf, exportRun, StrictExportError, type Target } from "../export/index";
import { mappingTableMarkdown } from "../export/mapping";
import { trlArgsTableMarkdown } from "../export/trl";
import { type Checkpoint, loadCheckpoint } from "../model/checkpoint";
import {
  type HfDtype,
  hfFiles,
  hfSourceOf,
  peftFiles,
  tokenizerFiles,
  tokenizerSource,
} from "../model/hf/write";
import { openCached } from "../model/hub";
import { parseModelSource } from "../model/source";
import type { ChatTemplateFacts } from "../model/tool-list-prompt";
import { prepareEnvEngine } from "../tasks/env-api/engine";
import { PRESETS, parseCliArgs, usageExit } from "./args";
import { bundleFromRunFolder, configFromLink, readRunInput } from "./link";
import { fsByteStore } from "./model-store";

interface Args {
  target?: Target;
  input?: string;
  link?: string;
  out?: string;
  strict: boolean;
  gpus?: number;
}

const usage: (msg?: string) => never = usageExit(
  "usage: npm run export -- verl|trl <recipe.json | bundle | run folder> --out DIR [--strict] [--gpus N]\n" +
    "       npm run export -- peft <run folder | bundle | checkpoint> --out DIR [--base NAME|DIR]\n" +
    "       npm run export -- hf <run folder | bundle | checkpoint> --out DIR [--tokenizer DIR] [--dtype f32|bf16|f16]\n" +
    "       npm run export -- verl|trl --link '<share url>' --out DIR [--strict]\n" +
    "       npm run export -- --table [trl]",
);

function parseArgs(argv: string[]): Args {
  const p = parseCliArgs(argv, { flags: ["--strict"], values: ["--out", "--link", "--gpus"] }, usage);
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
  const gpus = p.values.get("--gpus");
  if (gpus !== undefined) {
    if (!/^[1-9]\d*$/.test(gpus)) usage(`--gpus takes a positive whole number, not ${gpus}`);
    a.gpus = Number(gpus);
  }
  if (!a.target) usage("a target (verl or trl) is needed");
  if (!a.input && !a.link) usage("a recipe file, a bundle or --link is needed");
  if (!a.out) usage("--out DIR is needed");
  return a;
}

type LoadedInput = { config: RunConfig; name: string; source: string; chat: ChatTemplateFacts | null };

async function loadRun(a: Args): Promise<LoadedInput> {
  if (a.link) {
    const r = await configFromLink(a.link);
    return { config: r.config, name: r.name, source: "a share link", chat: null };
  }
  const path = a.input as string;
  if (existsSync(path) && statSync(path).isDirectory()) {
    const b = bundleFromRunFolder(path, { weights: false });
    return { config: b.config, name: b.name, source: `the run folder ${path}`, chat: chatFactsOf(b.events) };
  }
  const input = await readRunInput(path);
  if (input)
    return {
      config: input.config,
      name: input.name,
      source: `the ${input.source} ${path}`,
      chat: input.bundle ? chatFactsOf(input.bundle.events) : null,
    };
  const r = await loadRecipeFile(path, async (p) => readFileSync(p, "utf8"), { presets: PRESETS });
  if (!r.ok) throw new Error(r.error);
  return { config: r.config, name: r.recipe.name, source: path, chat: null };
}

/** A run folder's config.json (read only: the folder is left as it is). */
function runFolderConfig(path: string): RunConfig {
  const parsed = parseRunConfig(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.ok)
    throw new Error(`${path}: ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
  return parsed.config;
}

/** The trained weights of a run folder (its checkpoint), a bundle with weights, or a checkpoint file; the run's config where it has one. */
async function loadWeights(path: string): Promise<{ ck: Checkpoint; config: RunConfig | null }> {
  if (!existsSync(path)) throw new Error(`${path} does not exist`);
  if (statSync(path).isDirectory()) {
    const config = existsSync(join(path, "config.json")) ? runFolderConfig(join(path, "config.json")) : null;
    for (const f of ["checkpoint.safetensors", "weights.safetensors"]) {
      if (existsSync(join(path, f)))
        return { ck: loadCheckpoint(new Uint8Array(readFileSync(join(path, f)))), config };
    }
    throw new Error(`${path} has no checkpoint.safetensors (a run folder of npm run train)`);
  }
  const input = await readRunInput(path);
  if (input?.bundle) {
    if (!input.bundle.weights) throw new Error(`the bundle ${path} was saved without weights`);
    return { ck: loadCheckpoint(input.bundle.weights), config: input.config };
  }
  return { ck: loadCheckpoint(new Uint8Array(readFileSync(path))), config: null };
}

/**
 * A reader of the tokenizer source's files: a folder (as the run named it: under public/ or the
 * cwd, like npm run train), or an hf: model from the CLI's model cache (no download here).
 */
function sourceReader(
  source: string,
  config: RunConfig | null,
): (name: string) => Promise<Uint8Array | null> {
  if (source.startsWith("local:"))
    throw new Error(
      `${source} is a model picked in the page, which the CLI cannot read: name its folder with --tokenizer DIR`,
    );
  if (source.startsWith("hf:")) {
    const s = parseModelSource(source, config?.model ?? { revision: "main", sha256: null });
    const store = fsByteStore();
    return async (name) => {
      const b = await openCached(s, name, store).catch(() => null);
      return b ? new Uint8Array(await b.arrayBuffer()) : null;
    };
  }
  const dir = sourceFolder(source, "the tokenizer folder");
  return async (name) => (existsSync(join(dir, name)) ? new Uint8Array(readFileSync(join(dir, name))) : null);
}

/** A folder a run names, found as npm run train finds it: under public/, else from the cwd. */
function sourceFolder(source: string, what: string): string {
  const dir = [resolve("public", source), resolve(source)].find((d) => existsSync(d));
  if (!dir)
    throw new Error(
      `${what} ${source} is not in public/ or ${process.cwd()}${what.includes("model") ? " (name it with --base NAME|DIR)" : ""}`,
    );
  return dir;
}

/**
 * The adapter's base_model_name_or_path for a folder source: the folder as found, relative to
 * the cwd (absolute when outside it), so that transformers loads it from where the export ran;
 * the run's own name ("models/lab-llama") is a path inside the lab's public/ folder.
 */
function loadableBase(source: string): string {
  if (isAbsolute(source)) return source;
  const rel = relative(process.cwd(), sourceFolder(source, "the run's model folder"));
  return rel === "" ? "." : rel.startsWith("..") || isAbsolute(rel) ? resolve(rel) : rel;
}

async function weightsExport(kind: "peft" | "hf", argv: string[]) {
  const p = parseCliArgs(
    argv.slice(1),
    { flags: [], values: ["--out", "--tokenizer", "--dtype", "--base"] },
    usage,
  );
  const out = p.values.get("--out");
  const input = p.positionals[0];
  if (!input) usage(`${kind} needs a run folder, a bundle or a checkpoint`);
  if (!out) usage("--out DIR is needed");
  const tokenizerArg = p.values.get("--tokenizer");
  const baseArg = p.values.get("--base");
  if (baseArg !== undefined && kind !== "peft") usage("--base names the adapter's base: peft only");
  const dtype = p.values.get("--dtype");
  if (dtype !== undefined && dtype !== "f32" && dtype !== "bf16" && dtype !== "f16")
    usage(`--dtype must be f32, bf16 or f16, not ${dtype}`);
  let files: Record<string, Uint8Array>;
  let note = "";
  try {
    const { ck, config } = await loadWeights(input);
    // A pretrained run's source: base_model_name_or_path, and config.json of the merged model.
    const source = config ? hfSourceOf(config) : null;
    if (kind === "peft") {
      if (!ck.adapter)
        throw new Error(`${input} has no LoRA adapter (model.lora.rank is 0): export hf instead`);
      // base_model_name_or_path must load: --base, else a Hub id as it is, else the folder as found;
      // a folder picked in the page has no path here, so --base is required.
      if (source && baseArg !== undefined) Object.assign(source, { name: baseArg, picked: false });
      else if (source?.picked)
        throw new Error(
          `the run's model is ${config?.model.pretrained}, a folder picked in the page: name where it is with --base DIR (the adapter's base_model_name_or_path)`,
        );
      else if (source && !config?.model.pretrained?.startsWith("hf:"))
        source.name = loadableBase(source.name);
      else if (!source && baseArg !== undefined)
        throw new Error(
          "--base: the run has no pretrained source (model.pretrained); its base is the run's own",
        );
      files = peftFiles(ck.config, ck.adapter, source ?? undefined);
    } else {
      if (source && config?.model.pretrained) {
        const from = tokenizerArg ?? config.model.pretrained;
        const bytes = await sourceReader(from, config)("config.json");
        if (!bytes) throw new Error(`${from}/config.json: cannot read the source model's config`);
        source.config = JSON.parse(new TextDecoder().decode(bytes));
      }
      files = hfFiles(ck.config, ck.weights, ck.adapter ?? null, {
        source: source ?? undefined,
        dtype: dtype as HfDtype | undefined,
      });
      const tokSource = tokenizerArg ?? (config ? tokenizerSource(config) : null);
      if (tokSource) {
        const tok = await tokenizerFiles(tokSource, sourceReader(tokSource, config));
        Object.assign(files, tok.files);
        if (tok.note) note = ` (${tok.note})`;
      } else
        note = config
          ? " (no tokenizer files: the run used the lab's character tokenizer)"
          : " (no tokenizer files: a bare checkpoint names no source; add --tokenizer DIR)";
    }
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  mkdirSync(out, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(out, name), bytes);
  console.log(
    `exported ${input} as ${kind === "peft" ? "PEFT adapter" : "a Hugging Face model"}: ${Object.keys(files).join(", ")} in ${out}${note}`,
  );
}

async function main() {
  if (process.argv.includes("--table")) {
    console.log(process.argv.includes("trl") ? trlArgsTableMarkdown() : mappingTableMarkdown());
    return;
  }
  const kind = process.argv[2];
  if (kind === "peft" || kind === "hf") return weightsExport(kind, process.argv.slice(2));
  const a = parseArgs(process.argv.slice(2));
  let run: LoadedInput;
  try {
    run = await loadRun(a);
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  let result: ReturnType<typeof exportRun>;
  // A JS environment's module is run (describe, reset) by the environment engine.
  if (run.config.task.name === "env") await prepareEnvEngine();
  try {
    result = exportRun(run.config, {
      target: a.target as Target,
      name: run.name,
      strict: a.strict,
      source: run.source,
      gpus: a.gpus,
      chat: run.chat,
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
