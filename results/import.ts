// A verl or TRL run brought back into the lab: from the files a person picks (a folder or loose
// files) to metrics rows under the lab's names, text-level samples and what was read. Where the
// export's runs write (docs/SCALE-OUT.md "Bring the results back"):
// - verl: the file logger's JSON lines (`VERL_FILE_LOGGER_PATH`, else
//   `VERL_FILE_LOGGER_ROOT/<project_name>/<experiment_name>.jsonl`): any `.jsonl` whose first
//   line is `{"step", "data"}`; generation dumps `<trainer.rollout_data_dir>/<step>.jsonl`; the
//   export's `config.yaml` when it is among the files.
// - TRL: `trainer_state.json` in output_dir (`trainer.save_state()`), else the newest
//   `checkpoint-<step>/trainer_state.json`; `completions/completions_<step>.parquet`.
// Only those files are read (a folder's weights and checkpoints are not), each within the size
// limit. Pure: used by the trainer worker (the page's import) and `npm run compare`.
// Tests: results/results.test.ts, e2e/results.e2e.test.ts.
import { parse as parseYaml } from "yaml";
import type { MetricsRow, SampleRecord } from "../rl/common/step-records.ts";
import type { Engine } from "./names.ts";
import {
  baseName,
  checkSize,
  DEFAULT_LIMITS,
  dirName,
  isObject,
  type ReadLimits,
  type ResultFile,
  ResultsError,
  readText,
} from "./read.ts";
import { newestSteps, sampleRecords, type TextSample } from "./rows.ts";
import { readCompletions, readTrainerState, trlRows } from "./trl.ts";
import { readVerlDump, readVerlLog, type VerlDumpLine, verlRows, verlSamples } from "./verl.ts";

/** What the lab keeps of where an imported run came from (stored with the run). */
export interface EngineInfo {
  engine: Engine;
  /** The files read, as picked. */
  files: string[];
  /** What was left out and why (a truncated last line, a summary entry, non-numeric values). */
  notes: string[];
  /**
   * The export's config beside the run, when it is among the files: verl's config.yaml, parsed;
   * TRL's GRPOConfig arguments from train_trl.py's LAB line. null when there is none.
   */
  config: Record<string, unknown> | null;
  /** The run's seed from that config (verl `data.seed`, TRL `seed`): `npm run compare` pairs on it. */
  seed?: number;
}

export interface EngineRun {
  /** "verl <experiment_name>" or "trl <folder>". */
  name: string;
  info: EngineInfo;
  rows: MetricsRow[];
  samples: SampleRecord[];
}

export interface ImportOptions {
  limits?: ReadLimits;
  /** Steps of samples kept (the newest), as the store keeps a run's (default 50). */
  keepSampleSteps?: number;
}

const depth = (p: string) => p.split("/").length;
/** The file of this name nearest the top of what was picked. */
const shallowest = (files: readonly ResultFile[], name: string) =>
  files.filter((x) => baseName(x.path) === name).sort((a, b) => depth(a.path) - depth(b.path))[0];
const DUMP = /^(\d+)\.jsonl$/;
const COMPLETIONS = /^completions_(\d+)\.parquet$/;
const CHECKPOINT = /(?:^|\/)checkpoint-(\d+)$/;
const stepOf = (f: ResultFile) => Number(COMPLETIONS.exec(baseName(f.path))?.[1]);

/** Imports one run from its files; throws ResultsError naming the file (and line) that is wrong. */
export async function importResults(
  files: readonly ResultFile[],
  opts: ImportOptions = {},
): Promise<EngineRun> {
  const limits = opts.limits ?? DEFAULT_LIMITS;
  const keep = opts.keepSampleSteps ?? 50;
  if (files.length === 0) throw new ResultsError("no files picked");
  const states = files.filter((f) => baseName(f.path) === "trainer_state.json");
  const logs: { file: ResultFile; text: string }[] = [];
  const ignored: string[] = [];
  for (const f of files) {
    const name = baseName(f.path);
    if (!name.endsWith(".jsonl") || DUMP.test(name)) continue;
    const text = await readText(f, limits);
    const end = text.indexOf("\n");
    const first = (end < 0 ? text : text.slice(0, end)).trim();
    if (/^\{\s*"step"\s*:/.test(first) && /"data"\s*:/.test(first)) logs.push({ file: f, text });
    else ignored.push(f.path);
  }
  if (states.length > 0 && logs.length > 0) {
    throw new ResultsError(
      `both a TRL trainer_state.json (${states[0].path}) and a verl log (${logs[0].file.path}): import one run at a time`,
    );
  }
  const run =
    states.length > 0
      ? await importTrl(files, states, limits)
      : logs.length > 0
        ? await importVerl(files, logs, limits)
        : null;
  if (!run) {
    throw new ResultsError(
      `no verl log (a .jsonl of {"step", "data"} lines) and no TRL trainer_state.json among the ${files.length} files`,
    );
  }
  if (run.rows.length === 0) throw new ResultsError(`${run.info.files[0]}: no metrics in it`);
  if (ignored.length > 0) run.info.notes.push(`not read (not a verl log): ${ignored.join(", ")}`);
  const all = run.samples;
  run.samples = newestSteps(all, keep);
  if (run.samples.length < all.length) {
    run.info.notes.push(`samples of the newest ${keep} steps kept (as for a lab run), older steps left out`);
  }
  return run;
}

async function importVerl(
  files: readonly ResultFile[],
  logs: { file: ResultFile; text: string }[],
  limits: ReadLimits,
): Promise<EngineRun> {
  if (logs.length > 1) {
    throw new ResultsError(
      `${logs.length} verl logs (${logs.map((l) => l.file.path).join(", ")}): import one run at a time`,
    );
  }
  const [log] = logs;
  const { lines, notes } = readVerlLog(log.text, log.file.path);
  const read = [log.file.path];
  // Dumps: numbered .jsonl files of one folder (rollout_data_dir; a validation_data_dir has the same names).
  const dumpDirs = new Map<string, ResultFile[]>();
  for (const f of files) {
    if (DUMP.test(baseName(f.path)))
      dumpDirs.set(dirName(f.path), [...(dumpDirs.get(dirName(f.path)) ?? []), f]);
  }
  const dirs = [...dumpDirs.keys()].sort();
  const dir = dirs.find((d) => baseName(d).includes("rollout")) ?? dirs[0];
  if (dirs.length > 1)
    notes.push(
      `generation dumps read from ${dir || "."}; not from ${dirs.filter((d) => d !== dir).join(", ")}`,
    );
  const dumps: VerlDumpLine[] = [];
  const dumpFiles = (dumpDirs.get(dir) ?? []).sort(
    (a, b) => Number(DUMP.exec(baseName(a.path))?.[1]) - Number(DUMP.exec(baseName(b.path))?.[1]),
  );
  for (const f of dumpFiles) {
    const r = readVerlDump(await readText(f, limits), f.path, Number(DUMP.exec(baseName(f.path))?.[1]));
    dumps.push(...r.samples);
    notes.push(...r.notes);
    read.push(f.path);
  }
  const config = await readConfigYaml(files, limits, notes);
  if (config.path) read.push(config.path);
  const trainer = config.value?.trainer;
  const experiment =
    typeof trainer === "object" &&
    trainer !== null &&
    typeof (trainer as Record<string, unknown>).experiment_name === "string"
      ? ((trainer as Record<string, unknown>).experiment_name as string)
      : baseName(log.file.path).replace(/\.jsonl$/, "");
  const data = config.value?.data as Record<string, unknown> | undefined;
  return {
    name: `verl ${experiment}`,
    info: { engine: "verl", files: read, notes, config: config.value, seed: numberOr(data?.seed) },
    rows: verlRows(lines, dumps).rows(),
    samples: samplesByStep(verlSamples(dumps)),
  };
}

async function readConfigYaml(
  files: readonly ResultFile[],
  limits: ReadLimits,
  notes: string[],
): Promise<{ value: Record<string, unknown> | null; path?: string }> {
  const f = shallowest(files, "config.yaml");
  if (!f) return { value: null };
  try {
    const v = parseYaml(await readText(f, limits));
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return { value: v, path: f.path };
    notes.push(`${f.path}: not a YAML mapping: config left out`);
  } catch (err) {
    if (err instanceof ResultsError) throw err;
    notes.push(`${f.path}: not YAML (${(err as Error).message.split("\n")[0]}): config left out`);
  }
  return { value: null };
}

async function importTrl(
  files: readonly ResultFile[],
  states: ResultFile[],
  limits: ReadLimits,
): Promise<EngineRun> {
  // output_dir's own trainer_state.json (save_state) before any checkpoint's; else the newest checkpoint's.
  const checkpointStep = (f: ResultFile) => Number(CHECKPOINT.exec(dirName(f.path))?.[1] ?? Number.NaN);
  const top = states
    .filter((f) => Number.isNaN(checkpointStep(f)))
    .sort((a, b) => depth(a.path) - depth(b.path));
  const state = top[0] ?? [...states].sort((a, b) => checkpointStep(b) - checkpointStep(a))[0];
  const { entries, notes } = readTrainerState(await readText(state, limits), state.path);
  const read = [state.path];
  const samples: TextSample[] = [];
  const completions = files
    .filter((f) => COMPLETIONS.test(baseName(f.path)))
    .sort((a, b) => stepOf(a) - stepOf(b));
  const config = await readTrlScript(files, limits, notes);
  if (config.path) read.push(config.path);
  // Optimizer steps per lab step: lab_export.json (train_trl.py writes it beside its results), else the script's LAB.
  const exported = await readLabExport(files, limits, notes);
  if (exported.path) read.push(exported.path);
  const perLab = exported.perLab ?? config.perLab;
  if (perLab === undefined)
    notes.push(
      "no lab_export.json nor train_trl.py among the files: each TRL optimizer step is taken as one lab step",
    );
  let evalRows = 0;
  // TRL logs a window of the last generation's size at every optimizer step: the file right after
  // a generation (optimizer step k perLab + 1) holds that generation whole; the others overlap it
  // (or hold evaluation completions), so they are left out.
  const k = perLab ?? 1;
  const overlapping = completions.filter((f) => stepOf(f) > 0 && (stepOf(f) - 1) % k !== 0);
  if (overlapping.length > 0)
    notes.push(
      `completions of optimizer steps without a generation (they repeat its window): ${overlapping.map((f) => f.path).join(", ")}: left out`,
    );
  for (const f of completions) {
    const step = stepOf(f);
    if (overlapping.includes(f)) continue;
    checkSize(f, limits);
    const got = await readCompletions(await f.bytes(), f.path, step, perLab ?? 1);
    samples.push(...got.samples);
    evalRows += got.evalRows;
    read.push(f.path);
  }
  if (evalRows > 0)
    notes.push(
      `${evalRows} completions of the evaluation before any update (step 0): no training rollout, left out`,
    );
  // Named by the export folder (train_trl.py's) when it was picked, else by the output folder.
  const root = config.path !== undefined ? dirName(config.path) : dirName(state.path).replace(CHECKPOINT, "");
  return {
    name: `trl ${baseName(root) || "run"}`,
    info: { engine: "trl", files: read, notes, config: config.value, seed: numberOr(config.value?.seed) },
    rows: trlRows(entries, perLab ?? 1).rows(),
    samples: samplesByStep(samples),
  };
}

const numberOr = (v: unknown) => (typeof v === "number" ? v : undefined);

/** The GRPOConfig arguments of the export's train_trl.py (its `LAB = json.loads("...")` line). */
async function readTrlScript(
  files: readonly ResultFile[],
  limits: ReadLimits,
  notes: string[],
): Promise<{ value: Record<string, unknown> | null; path?: string; perLab?: number }> {
  const f = shallowest(files, "train_trl.py");
  if (!f) return { value: null };
  const line = /^LAB = json\.loads\((".*")\)$/m.exec(await readText(f, limits))?.[1];
  try {
    const lab = line ? JSON.parse(JSON.parse(line)) : null;
    if (isObject(lab) && isObject(lab.grpo_config))
      return { value: lab.grpo_config, path: f.path, perLab: perLabOf(lab) };
  } catch {}
  notes.push(`${f.path}: no LAB line of the lab's export: config left out`);
  return { value: null };
}

const perLabOf = (lab: Record<string, unknown>) => {
  const k = lab.optimizer_steps_per_lab_step;
  return typeof k === "number" && Number.isInteger(k) && k >= 1 ? k : undefined;
};

/** train_trl.py's lab_export.json (its LAB object as run): the optimizer steps per lab step. */
async function readLabExport(
  files: readonly ResultFile[],
  limits: ReadLimits,
  notes: string[],
): Promise<{ path?: string; perLab?: number }> {
  const f = shallowest(files, "lab_export.json");
  if (!f) return {};
  try {
    const lab = JSON.parse(await readText(f, limits));
    const perLab = isObject(lab) ? perLabOf(lab) : undefined;
    if (perLab !== undefined) return { path: f.path, perLab };
  } catch (err) {
    if (err instanceof ResultsError) throw err;
  }
  notes.push(`${f.path}: no optimizer_steps_per_lab_step (not train_trl.py's lab_export.json): left out`);
  return {};
}

/** Text samples to sample records, step by step (groups formed within a step). */
function samplesByStep(samples: readonly TextSample[]): SampleRecord[] {
  const byStep = new Map<number, TextSample[]>();
  for (const s of samples) byStep.set(s.step, [...(byStep.get(s.step) ?? []), s]);
  return [...byStep.keys()].sort((a, b) => a - b).flatMap((step) => sampleRecords(byStep.get(step) ?? []));
}
