// The one place the UI's effects talk to the trainer worker: run control, live edits,
// fast mode, "try the model" and the reward test. Pushes from the worker are buffered and
// applied to the store at most once per animation frame, so charts redraw at most once a
// frame however fast rows arrive. Components call these actions; none reaches the engine.
import * as Comlink from "comlink";
import { type ConfigEdit, getPath, type RunConfig, validateRunConfig } from "../config";
import type {
  CacheEntry,
  DownloadProgress,
  EnvDryRunResult,
  InterruptedRun,
  ModelInfo,
  ModelSource,
  RewardTestResult,
  RunListener,
  SampleRecord,
  StoredRun,
  TryResult,
} from "../workers/api";
import { getTrainer } from "./engine";
import { pretrainedConflict } from "./presets";
import {
  activeRun,
  addLoadedRun,
  addRun,
  applyIncoming,
  canTrain,
  downloadName,
  type Incoming,
  isRunning,
  pushError,
  type RunGroup,
  setRunPhase,
  setWorkerId,
  useLab,
} from "./store";

const buffers = new Map<string, Incoming>();
let frame = 0;

function flush() {
  frame = 0;
  const pending = [...buffers];
  buffers.clear();
  useLab.setState((s) => {
    let state = s;
    for (const [id, inc] of pending) state = { ...state, ...applyIncoming(state, id, inc) };
    return state;
  });
}

function schedule() {
  if (frame) return;
  frame =
    typeof requestAnimationFrame === "function"
      ? requestAnimationFrame(flush)
      : (setTimeout(flush, 16) as unknown as number);
}

function buffer(id: string): Incoming {
  let b = buffers.get(id);
  if (!b) {
    b = { rows: [], samples: [], events: [], progress: null };
    buffers.set(id, b);
  }
  return b;
}

function message(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  // comlink's way of saying the worker lacks a method.
  if (/reading 'apply'/.test(m)) return `the trainer worker does not implement this yet (${m})`;
  return m;
}

function report(err: unknown) {
  useLab.setState((s) => pushError(s, message(err)));
}

let localRunSeq = 0;

/** Starts a new run from `config`. Rows and events before the worker names the run are kept. */
export async function startRun(
  config: RunConfig,
  opts: {
    paused?: boolean;
    resume?: StoredRun;
    edits?: ConfigEdit[];
    source?: "local" | "link" | "bundle";
    group?: RunGroup;
    name?: string;
  } = {},
): Promise<string | null> {
  const v = validateRunConfig(config);
  if (!v.ok) {
    report(new Error(`Config is invalid: ${v.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`));
    return null;
  }
  if (!canTrain(useLab.getState())) {
    report(new Error("Training needs WebGPU, which this browser does not offer (see the banner)."));
    return null;
  }
  const current = activeRun(useLab.getState());
  if (isRunning(current)) await stopRun();
  const localId = `run-${Date.now().toString(36)}-${++localRunSeq}`;
  useLab.setState((s) => {
    // A resumed run is the stored one: drop its opened copy, keep its name.
    const without = opts.resume ? { ...s, runs: s.runs.filter((r) => r.workerId !== opts.resume?.id) } : s;
    const added = { runs: without.runs, ...addRun(without, localId, v.config, opts.group) };
    const label = opts.resume?.name;
    return label
      ? { ...added, runs: added.runs?.map((r) => (r.id === localId ? { ...r, label } : r)) }
      : added;
  });
  const listener: RunListener = {
    row: (row) => {
      buffer(localId).rows.push(row);
      schedule();
    },
    samples: (samples) => {
      buffer(localId).samples.push(samples);
      schedule();
    },
    event: (e) => {
      buffer(localId).events.push(e);
      schedule();
    },
    progress: (p) => {
      buffer(localId).progress = p;
      schedule();
    },
  };
  try {
    const st = useLab.getState();
    const { runId, name } = await getTrainer().start(
      opts.resume
        ? { resumeRunId: opts.resume.id, fast: st.fast, paused: opts.paused }
        : {
            config: v.config,
            fast: st.fast,
            paused: opts.paused,
            edits: opts.edits,
            source: opts.source,
            group: opts.group,
            name: opts.name ?? (opts.source === "link" ? "shared link" : (st.preset ?? "custom")),
          },
      Comlink.proxy(listener),
    );
    useLab.setState((s) => setWorkerId(s, localId, runId, name));
  } catch (err) {
    useLab.setState((s) => ({
      ...setRunPhase(s, localId, "error", message(err)),
      ...pushError(s, `Could not start the run: ${message(err)}`),
    }));
  }
  return localId;
}

/** Resolves when the run ends: true when it finished, false when stopped or failed. */
function runEnded(id: string): Promise<boolean> {
  return new Promise((resolve) => {
    const check = (s: ReturnType<typeof useLab.getState>) => {
      const r = s.runs.find((x) => x.id === id);
      if (!r) return false;
      if (r.phase === "done") resolve(true);
      else if (r.phase === "error" || r.phase === "stopped") resolve(false);
      else return false;
      return true;
    };
    if (check(useLab.getState())) return;
    const unsub = useLab.subscribe((s) => {
      if (check(s)) unsub();
    });
  });
}

let groupSeq = 0;

/**
 * Start as the config says: with `seeds` N > 1 the seeds seed..seed+N-1 run one after another
 * as one group (each a run of its own with seeds 1), as `npm run train -- --seeds N` does; a
 * seed that is stopped or fails ends the group.
 */
export async function startSeeds(
  config: RunConfig,
  opts: { edits?: ConfigEdit[]; source?: "local" | "link" | "bundle"; name?: string } = {},
): Promise<void> {
  // A pretrained model on a preset that starts from the lab's own checkpoint: the reason, not a shape error.
  const conflict = opts.source ? null : pretrainedConflict(config, useLab.getState().preset);
  if (conflict) {
    report(new Error(conflict));
    return;
  }
  const n = config.seeds ?? 1;
  if (n <= 1) {
    await startRun(config, opts);
    return;
  }
  const base = opts.name ?? useLab.getState().preset ?? "custom";
  const id = `g${Date.now().toString(36)}-${++groupSeq}`;
  const name = `${base} × ${n} seeds (${config.seed}–${config.seed + n - 1})`;
  for (let i = 0; i < n; i++) {
    const seed = config.seed + i;
    const localId = await startRun(
      { ...config, seed, seeds: 1 },
      { ...opts, name: `${base} seed ${seed}`, group: { id, name, seed, firstSeed: config.seed, size: n } },
    );
    if (!localId || !(await runEnded(localId))) return;
  }
}

async function control(name: "pause" | "resume" | "step" | "stop"): Promise<void> {
  try {
    await getTrainer()[name]();
  } catch (err) {
    report(err);
  }
}

export const pauseRun = () => control("pause");
export const resumeRun = () => control("resume");

/** One step: from idle a new run that starts paused and takes one step; else one more step. */
export async function stepRun(config: RunConfig): Promise<void> {
  const run = activeRun(useLab.getState());
  if (!isRunning(run)) {
    await startRun(config, { paused: true });
  }
  await control("step");
}

export async function stopRun(): Promise<void> {
  const run = activeRun(useLab.getState());
  await control("stop");
  if (run && isRunning(run)) useLab.setState((s) => setRunPhase(s, run.id, "stopped"));
}

/** Reset: stop the run and clear the active run (its curves stay in the runs list). */
export async function resetRun(): Promise<void> {
  await stopRun();
  useLab.setState({ activeId: null });
}

/** A live edit of the running config; the worker applies it at the next step (an event comes back). */
export async function editLive(path: string, value: unknown): Promise<void> {
  try {
    await getTrainer().edit(path, value);
  } catch (err) {
    report(err);
  }
}

export async function setFastMode(fast: boolean): Promise<void> {
  useLab.setState({ fast });
  try {
    await getTrainer().setFast(fast);
  } catch (err) {
    report(err);
  }
}

export async function tryModel(prompt: string, temperature: number): Promise<TryResult> {
  const run = useLab.getState();
  const open = run.runs.find((r) => r.id === run.openId);
  const opts: { temperature: number; runId?: string } = { temperature };
  if (open && open.id !== run.activeId && open.workerId) opts.runId = open.workerId;
  return getTrainer().tryModel(prompt, opts);
}

/** A held-out prompt of the config's task (what the run trains on), or null. */
export async function examplePrompt(config?: RunConfig): Promise<string | null> {
  try {
    return await getTrainer().examplePrompt(config);
  } catch {
    return null;
  }
}

export async function testReward(source: string, sample: SampleRecord): Promise<RewardTestResult> {
  try {
    return await getTrainer().testReward(source, sample);
  } catch (err) {
    return { ok: false, error: message(err) };
  }
}

/** A JS environment's dry run in the worker; a failed call comes back as the result's error. */
export async function envDryRun(source: string, config?: RunConfig): Promise<EnvDryRunResult> {
  try {
    return await getTrainer().envDryRun(source, config);
  } catch (err) {
    return { ok: false, error: message(err) };
  }
}

/** The running config's value at a path (for "what would this edit change"). */
export function liveValue(path: string): unknown {
  const run = activeRun(useLab.getState());
  return run ? getPath(run.liveConfig, path) : undefined;
}

// ---- stored runs (IndexedDB in the worker) ----

/** Runs a page left running (a reload, a closed tab), now marked interrupted; [] on any failure. */
export async function interruptedRuns(): Promise<InterruptedRun[]> {
  try {
    return await getTrainer().interruptedRuns();
  } catch (err) {
    report(new Error(`Stored runs unavailable: ${message(err)}`));
    return [];
  }
}

export async function refreshStoredRuns(): Promise<void> {
  try {
    const stored = await getTrainer().listRuns();
    useLab.setState({ stored });
  } catch (err) {
    report(new Error(`Stored runs unavailable: ${message(err)}`));
  }
}

export async function openStoredRun(runId: string): Promise<void> {
  try {
    const loaded = await getTrainer().loadRun(runId);
    useLab.setState((s) => addLoadedRun(s, loaded));
  } catch (err) {
    report(err);
  }
}

export async function deleteStoredRun(runId: string): Promise<void> {
  try {
    await getTrainer().deleteRun(runId);
  } catch (err) {
    report(err);
  }
  await refreshStoredRuns();
}

/** Downloads a stored run as a bundle file. */
export async function exportStoredRun(runId: string, name: string): Promise<void> {
  try {
    const bytes = await getTrainer().exportBundle(runId, false);
    const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type: "application/gzip" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = downloadName(name, ".run.json.gz");
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    report(err);
  }
}

/**
 * Downloads a run's latest weights in Hugging Face formats as a zip: "peft" = the LoRA adapter
 * (adapter_config.json + adapter_model.safetensors), "hf" = the model with the adapter merged
 * with the source model's tokenizer files. The worker builds the zip (TrainerApi.exportWeights);
 * the page only saves it. Throws (for the caller to show) when the run has no checkpoint yet or
 * its model has no Hugging Face architecture.
 */
export async function downloadWeights(runId: string, kind: "peft" | "hf", name: string): Promise<string> {
  const blob = await getTrainer().exportWeights(runId, kind);
  const file = downloadName(name, `-${kind}.zip`);
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = file;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return file;
}

/** Continues a stored run from its last checkpoint (its kept rows come back first), in its group. */
export async function resumeStoredRun(run: StoredRun): Promise<void> {
  await startRun(run.config, { resume: run, group: run.group });
}

/** Opens every stored seed of a multi-seed group: the charts draw their mean with a band. */
export async function openStoredGroup(runIds: readonly string[]): Promise<void> {
  for (const id of runIds) await openStoredRun(id);
}

/** Deletes a multi-seed group and its stored seeds. */
export async function deleteStoredGroup(groupId: string): Promise<void> {
  try {
    await getTrainer().deleteGroup(groupId);
  } catch (err) {
    report(err);
  }
  await refreshStoredRuns();
}

export async function importBundleFile(file: File): Promise<void> {
  try {
    await getTrainer().importBundle(new Uint8Array(await file.arrayBuffer()));
  } catch (err) {
    report(new Error(`${file.name}: ${message(err)}`));
  }
  await refreshStoredRuns();
}

/**
 * Stores a verl or TRL run's results (a picked folder's files, or loose files) and opens it next
 * to the session's runs; a refused file is an error naming it, and nothing is stored.
 */
export async function importResultsFiles(files: readonly File[]): Promise<void> {
  try {
    const run = await getTrainer().importResults(
      files.map((f) => ({ path: f.webkitRelativePath || f.name, blob: f })),
    );
    await openStoredRun(run.id);
  } catch (err) {
    report(new Error(`results not imported: ${message(err)}`));
  }
  await refreshStoredRuns();
}

export async function storageUsage(): Promise<string | null> {
  try {
    const u = await getTrainer().storageUsage();
    if (!u) return null;
    const mb = (b?: number) => (b === undefined ? "?" : (b / 1e6).toFixed(1));
    return `${mb(u.usage)} MB of ${mb(u.quota)} MB used${u.persisted ? " (persistent)" : ""}`;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------
// Pretrained models: the worker reads, hashes, downloads and caches them (workers/model-cache.ts).

/** A model source's files, sizes and cache state; its config.json goes to the store for the memory plan. */
const HUB_TOKEN_KEY = "lab.hubToken";

/**
 * The person's Hugging Face token for gated and private models: in this browser's localStorage
 * only (never in the config, so never in a link, bundle, export or log); the worker sends it to
 * the Hub as Authorization and keeps it nowhere.
 */
export function hubToken(): string | undefined {
  try {
    return localStorage.getItem(HUB_TOKEN_KEY) || undefined;
  } catch {
    return undefined;
  }
}

export function setHubToken(token: string): void {
  try {
    if (token.trim()) localStorage.setItem(HUB_TOKEN_KEY, token.trim());
    else localStorage.removeItem(HUB_TOKEN_KEY);
  } catch {}
}

export async function modelInfoOf(source: ModelSource): Promise<ModelInfo> {
  const info = await getTrainer().modelInfo(source, { token: hubToken() });
  rememberModelConfig(source, info);
  return info;
}

function rememberModelConfig(source: ModelSource, info: ModelInfo) {
  if (info.config === undefined) return;
  const key =
    source.kind === "hub"
      ? `hf:${source.repo}`
      : source.kind === "local"
        ? `local:${source.name}`
        : source.path;
  useLab.setState((s) => ({ modelConfigs: { ...s.modelConfigs, [key]: info.config } }));
}

export async function downloadHubModel(
  source: ModelSource,
  onProgress: (p: DownloadProgress) => void,
): Promise<ModelInfo> {
  const info = await getTrainer().downloadModel(source, Comlink.proxy(onProgress), { token: hubToken() });
  rememberModelConfig(source, info);
  return info;
}

export async function addLocalModelFiles(
  name: string,
  files: { path: string; blob: Blob }[],
): Promise<ModelSource> {
  const source = await getTrainer().addLocalModel(name, files);
  await modelInfoOf(source);
  return source;
}

export const listModelCache = (): Promise<CacheEntry[]> => getTrainer().listModelCache();
export const clearModelCache = (): Promise<void> => getTrainer().clearModelCache();

/** The adapter's buffer limits, into the store (the memory plan checks each buffer against them). */
export async function loadAdapterLimits(): Promise<void> {
  const st = await getTrainer().gpuStatus();
  if (!st.ok) return;
  const l = st.adapter.limits;
  useLab.setState({
    adapterLimits: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
    },
  });
}
