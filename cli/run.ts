// A headless run into a folder, and the resume of one: the CLI's wiring around rl/run/run-loop.ts's
// RunLoop, which owns the schedule (edits at their {phase, step}, checkpoints, resume). The
// folder: config.json (the starting config), edits.jsonl (the run's edit log: the input's
// edits, then live ones), metrics.jsonl, samples.jsonl, events.jsonl, checkpoint.safetensors
// (the loop's latest checkpoint: weights, optimizer, KL reference, trainer state and the
// point it was saved at; written to a temporary file and renamed, the one before kept as
// checkpoint.prev.safetensors, so a kill mid-write never leaves a run that cannot resume) and
// weights.safetensors (weights only, to publish). Resuming keeps
// the rows the checkpoint covers, drops the rest, and hands the loop the checkpoint.
// Used by cli/train.ts; tested by rl/run/record.test.ts (the CLI path) and cli/link.test.ts.
import {
  appendFileSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  type ConfigEdit,
  comparePoints,
  EDIT_PHASES,
  type EditPhase,
  parseRunConfig,
  type RunConfig,
  type RunPoint,
} from "../config";
import type { PolicyModel } from "../model/api";
import { loadCheckpoint, saveCheckpoint } from "../model/checkpoint";
import type { ModelConfig } from "../model/config";
import { createTrainer } from "../rl/run/build-trainer";
import { phasedEdits, type RunEventRecord } from "../rl/run/run-bundle";
import { checkpointPoint, type RunEvents, RunLoop, type RunLoopOptions } from "../rl/run/run-loop";
import type { MetricsRow } from "../rl/run/trainer";
import type { SandboxRunner } from "../sandbox/types";

export interface FolderRunOptions {
  config: RunConfig;
  /** The recorded edits to replay (a link's or a bundle's). */
  edits: readonly ConfigEdit[];
  out: string;
  makeModel(config: ModelConfig, weights: Float32Array | undefined, seed: number): Promise<PolicyModel>;
  sandbox: SandboxRunner;
  readFile(path: string): Promise<Uint8Array>;
  clock?: () => number;
  /** Continue the run in `out` from its checkpoint (see openRunFolder). */
  resume?: RunLoopOptions["resume"];
  /** Progress, events and the loop itself (to pause or stop it), for the caller to print. */
  on?: Pick<RunEvents, "row" | "event"> & { loop?(loop: RunLoop): void };
  /**
   * Called once `out` holds the run's files. The model and task are loaded before that, so a run
   * refused for its model files, tokenizer or task leaves no folder behind.
   */
  onFolder?(): void;
}

const FILES = ["metrics.jsonl", "samples.jsonl", "events.jsonl", "edits.jsonl"] as const;

/** A JSON-lines file's records ([] when it does not exist); a half-written last line (a crash) is dropped. */
export function readJsonl<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  const out: T[] = [];
  const lines = readFileSync(path, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch (e) {
      // A crashed run can leave a half-written last line; anything else is an error.
      if (i >= lines.length - 2) break;
      throw new Error(`${path}:${i + 1}: not JSON (${(e as Error).message})`);
    }
  }
  return out;
}

const writeJsonl = (path: string, xs: readonly unknown[]) =>
  writeFileSync(path, xs.map((x) => `${JSON.stringify(x)}\n`).join(""));

/** The run folder's edit log: edits.jsonl, or (folders of older labs) the edit events. */
export function folderEdits(dir: string): ConfigEdit[] {
  const file = join(dir, "edits.jsonl");
  if (existsSync(file)) return phasedEdits(readJsonl<ConfigEdit>(file), []);
  const events = readJsonl<RunEventRecord>(join(dir, "events.jsonl"));
  const edits = events.filter((e) => e.kind === "edit" && e.edit).map((e) => e.edit as ConfigEdit);
  return phasedEdits(edits, events);
}

/** True when a record at (phase, step) comes at or after `at` (a checkpoint does not cover it). */
function after(phase: string, step: number, at: RunPoint): boolean {
  // Event phases that are not run phases (paused, done, error, storage) count as RL's.
  const p = EDIT_PHASES.includes(phase as EditPhase) ? (phase as EditPhase) : "rl";
  return comparePoints({ phase: p, step }, at) >= 0;
}

/**
 * A run folder to resume: its starting config, its edit log and its checkpoint. The rows,
 * samples and events after the checkpoint are removed from the files (the loop recomputes them).
 */
export function openRunFolder(dir: string): {
  config: RunConfig;
  edits: ConfigEdit[];
  resume?: RunLoopOptions["resume"];
} {
  const configPath = join(dir, "config.json");
  if (!existsSync(configPath)) throw new Error(`${dir}: not a run folder (no config.json)`);
  const parsed = parseRunConfig(JSON.parse(readFileSync(configPath, "utf8")));
  if (!parsed.ok)
    throw new Error(`${configPath}: ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
  const edits = folderEdits(dir);
  // The newest readable checkpoint: checkpoint.safetensors, else the one before it (a kill
  // between the two renames of writeCheckpoint leaves only that one whole).
  let resume: RunLoopOptions["resume"];
  let at: RunPoint = { phase: "sft", step: 0 };
  const problems: string[] = [];
  for (const file of [CHECKPOINT, PREVIOUS_CHECKPOINT]) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    const bytes = new Uint8Array(readFileSync(path));
    try {
      loadCheckpoint(bytes); // every tensor's offsets inside the file: a cut file throws here
      at = checkpointPoint(bytes) ?? olderCheckpointPoint(bytes, parsed.config);
    } catch (e) {
      problems.push(`${file}: ${(e as Error).message}`);
      continue;
    }
    if (problems.length) console.error(`${dir}: resuming from ${file} (${problems.join("; ")})`);
    resume = { at, checkpoint: bytes };
    break;
  }
  if (!resume && problems.length) throw new Error(`${dir}: no readable checkpoint (${problems.join("; ")})`);
  const rows = readJsonl<MetricsRow>(join(dir, "metrics.jsonl"));
  writeJsonl(
    join(dir, "metrics.jsonl"),
    rows.filter((r) => !after(r.phase, r.step, at)),
  );
  const samples = readJsonl<{ step: number }>(join(dir, "samples.jsonl"));
  writeJsonl(
    join(dir, "samples.jsonl"),
    samples.filter((s) => !after("rl", s.step, at)),
  );
  const events = readJsonl<RunEventRecord>(join(dir, "events.jsonl"));
  writeJsonl(
    join(dir, "events.jsonl"),
    events.filter((e) => !after(e.phase, e.step, at)),
  );
  if (!existsSync(join(dir, "edits.jsonl"))) writeJsonl(join(dir, "edits.jsonl"), edits);
  return { config: parsed.config, edits, resume };
}

const CHECKPOINT = "checkpoint.safetensors";
const PREVIOUS_CHECKPOINT = "checkpoint.prev.safetensors";

/** Writes a file whole or not at all: a synced temporary file renamed over `path`. */
function writeWhole(path: string, bytes: Uint8Array, keepAs?: string): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (keepAs && existsSync(path)) renameSync(path, keepAs);
  renameSync(tmp, path);
}

/**
 * A checkpoint, crash-safe: written to a temporary file, then the current one becomes
 * checkpoint.prev.safetensors and the new one takes its name. A kill at any byte leaves a
 * whole checkpoint to resume from (openRunFolder reads the previous one when it must).
 */
export function writeCheckpoint(out: string, bytes: Uint8Array): void {
  writeWhole(join(out, CHECKPOINT), bytes, join(out, PREVIOUS_CHECKPOINT));
}

/** Checkpoints of older CLIs carried sft_step and rl_step metadata instead of the loop's point. */
function olderCheckpointPoint(bytes: Uint8Array, config: RunConfig): RunPoint {
  const m = loadCheckpoint(bytes).metadata ?? {};
  const rl = Number(m.rl_step ?? 0);
  const sft = Number(m.sft_step ?? 0);
  if (rl > 0 || sft >= config.sft.steps) return { phase: "rl", step: rl };
  return { phase: "sft", step: sft };
}

/** Runs (or, with `resume`, continues) a run into `out`; resolves when the loop ends. */
export async function runToFolder(o: FolderRunOptions): Promise<RunLoop> {
  const { out } = o;
  const trainer = await createTrainer(o.config, {
    makeModel: o.makeModel,
    sandbox: o.sandbox,
    readFile: o.readFile,
    clock: o.clock,
  });
  mkdirSync(out, { recursive: true });
  if (!o.resume) {
    writeFileSync(join(out, "config.json"), `${JSON.stringify(o.config, null, 2)}\n`);
    for (const f of FILES) writeFileSync(join(out, f), "");
    writeJsonl(join(out, "edits.jsonl"), o.edits);
  }
  o.onFolder?.();
  const append = (file: string, x: unknown) => appendFileSync(join(out, file), `${JSON.stringify(x)}\n`);
  const loop = new RunLoop(
    trainer,
    {
      row(row) {
        append("metrics.jsonl", row);
        o.on?.row?.(row);
      },
      samples(samples) {
        for (const s of samples) append("samples.jsonl", s);
      },
      event(e) {
        append("events.jsonl", e);
        o.on?.event?.(e);
      },
      edit: (e) => append("edits.jsonl", e),
      async checkpoint(ck) {
        writeCheckpoint(out, ck.bytes);
        // Weights alone: what gets published (e.g. public/checkpoints/*-sft.safetensors).
        const { config, weights, adapter } = loadCheckpoint(ck.bytes);
        writeWhole(join(out, "weights.safetensors"), saveCheckpoint({ config, weights, adapter }));
      },
    },
    { edits: o.edits, resume: o.resume },
  );
  o.on?.loop?.(loop);
  await loop.run();
  return loop;
}
