// Headless inputs besides recipe files: a share link (`npm run train -- --link '<url>'`) and a
// run bundle (`npm run train -- run.lab-run.json.gz`), both giving the same config, seed and
// edits the browser would run; and `bundleFromRunFolder(dir)`, which packs a CLI run folder
// (config.json, metrics.jsonl, samples.jsonl, events.jsonl, checkpoint.safetensors) into a
// bundle the app imports. Errors are thrown as Error with a message naming the file/line or
// the link's problem, for the CLI to print. Tested by cli/link.test.ts.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { type ConfigEdit, parseRunConfig, type RunConfig } from "../config";
import { decodeLink } from "../config/link";
import { decodeBundle, looksLikeBundle, type RunBundle, type RunEventRecord } from "../rl/run/run-bundle";
import type { MetricsRow, SampleRecord } from "../rl/run/trainer";
import { folderEdits, readJsonl } from "./run";

/** What a link or a bundle gives the CLI to run. */
export interface RunInput {
  config: RunConfig;
  /** The run's recorded edits, each {phase, step, path, value}; rl/run/run-loop.ts replays them. */
  edits: ConfigEdit[];
  name: string;
  source: "link" | "bundle";
  /** The whole bundle, when the input was one (its weights can seed a resume). */
  bundle?: RunBundle;
}

/** The config, edits and name of a share link; throws Error("link: <what is wrong>"). */
export async function configFromLink(url: string): Promise<RunInput> {
  const r = await decodeLink(url);
  if (!r.ok) throw new Error(`link: ${r.error}`);
  return { config: r.config, edits: r.edits, name: r.name ?? "link", source: "link" };
}

/** A bundle file's run; throws Error("bundle <source>: <what is wrong>"). */
export async function readBundle(bytes: Uint8Array, source = "file"): Promise<RunBundle> {
  const r = await decodeBundle(bytes);
  if (!r.ok) throw new Error(`bundle ${source}: ${r.error}`);
  return r.run;
}

/**
 * Reads the CLI's positional argument when it is not a recipe: a share link (text with
 * "#run=" or an http(s) URL) or a bundle file (gzip, or JSON with the bundle format).
 * Returns null for anything else (a recipe file, read as before). Throws with a clear message
 * when it is a link or a bundle but a bad one.
 */
export async function readRunInput(arg: string): Promise<RunInput | null> {
  if (/^https?:\/\//.test(arg) || arg.includes("#run=") || arg.startsWith("run=")) return configFromLink(arg);
  if (!existsSync(arg)) return null;
  const bytes = new Uint8Array(readFileSync(arg));
  if (!looksLikeBundle(bytes)) return null;
  const bundle = await readBundle(bytes, arg);
  return { config: bundle.config, edits: bundle.edits, name: bundle.name, source: "bundle", bundle };
}

/**
 * A bundle of a CLI run folder. `weights: false` leaves the checkpoint out; the name defaults
 * to the folder's name and createdAt to config.json's modification time.
 */
export function bundleFromRunFolder(dir: string, opts: { weights?: boolean; name?: string } = {}): RunBundle {
  const configPath = join(dir, "config.json");
  if (!existsSync(configPath)) throw new Error(`${dir}: not a run folder (no config.json)`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(configPath, "utf8"));
  } catch (e) {
    throw new Error(`${configPath}: not JSON (${(e as Error).message})`);
  }
  const parsed = parseRunConfig(raw);
  if (!parsed.ok) {
    throw new Error(
      `${configPath}: invalid config\n${parsed.errors.map((e) => `${e.path}: ${e.message}`).join("\n")}`,
    );
  }
  const events = readJsonl<RunEventRecord>(join(dir, "events.jsonl"));
  const run: RunBundle = {
    name: opts.name ?? basename(dir),
    createdAt: statSync(configPath).mtime.toISOString(),
    config: parsed.config,
    edits: folderEdits(dir),
    metrics: readJsonl<MetricsRow>(join(dir, "metrics.jsonl")),
    samples: readJsonl<SampleRecord>(join(dir, "samples.jsonl")),
    events,
  };
  const ck = join(dir, "checkpoint.safetensors");
  if (opts.weights !== false && existsSync(ck)) run.weights = new Uint8Array(readFileSync(ck));
  return run;
}
