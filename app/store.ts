// The UI's one zustand store, in slices: runs (every run of the session with its rows,
// samples, markers), run (the active run's phase and progress), form (the config panel),
// view (charts, theme, tabs, inspector selection). Reducers are plain functions of the
// state so app/store.test.ts can test them without a DOM. Only app/bridge.ts talks to the
// worker; components read this store and call the bridge's actions.
import { create } from "zustand";
import { defaultRunConfig, getPath, type RunConfig, setPath, validateRunConfig } from "../config";
import type {
  GpuStatus,
  LoadedRun,
  MetricsRow,
  RunEvent,
  RunGroupRef,
  RunPhase,
  RunProgress,
  SampleRecord,
  StoredRun,
} from "../workers/api";
import { type BandMode, editLabel, type Marker, type XAxis } from "./chartData";
import { type ConfigChange, configDiff, type FormState } from "./configModel";
import { pretrainedConflict } from "./presets";
import type { Overlay, SampleFilter } from "./tokenModel";

export const RUN_COLORS = [
  "#2563eb",
  "#dc2626",
  "#16a34a",
  "#9333ea",
  "#ea580c",
  "#0891b2",
  "#ca8a04",
  "#db2777",
];
/** Steps of samples kept per run (older ones are dropped to bound memory). */
export const MAX_SAMPLE_STEPS = 60;
/** Runs drawn at once ("Showing the last N runs"). */
export const MAX_OVERLAY = 6;

export interface RunRecord {
  id: string;
  /** The id the worker gave the run (for tryModel on a stored run); null until start resolves. */
  workerId: string | null;
  /** Order in the session (1, 2, ...): the colour, and the name until the worker gives one. */
  n: number;
  /** The run's name as the worker stored it ("#7 ci-tiny"); null until start() resolves. */
  label: string | null;
  color: string;
  config: RunConfig;
  /** The live config: the start config plus applied edits. */
  liveConfig: RunConfig;
  rows: MetricsRow[];
  markers: Marker[];
  events: RunEvent[];
  /** Samples by step: key `${phase}:${step}`. */
  samples: Map<string, SampleRecord[]>;
  phase: RunPhase;
  progress: RunProgress | null;
  /** Date.now() when `progress` arrived: the bar's elapsed clock ticks on from it. */
  progressAt: number;
  visible: boolean;
  diff: ConfigChange[];
  error: string | null;
  /** One seed of a multi-seed run (config.seeds > 1): the seeds run one after another as a group. */
  group?: RunGroup;
  /** A verl or TRL run brought back (results/): `config` is only the defaults, never replayed. */
  engine?: StoredRun["engine"];
}

/** A multi-seed run: `size` seeds from `firstSeed`, this record being seed `seed` (stored with the run). */
export type RunGroup = RunGroupRef;

export interface RunsSlice {
  runs: RunRecord[];
  /** Runs kept in the browser's storage (IndexedDB), as the worker lists them. */
  stored: StoredRun[];
  /** The run the controls drive (the last started), and the run the inspector shows. */
  activeId: string | null;
  openId: string | null;
}

export interface FormSlice {
  form: FormState;
  preset: string | null;
  presetConfig: RunConfig;
  /** Restart-only changes made while a run goes: shown as "New changes → restart". */
  pendingRestart: string[];
  /** Live edits the running config refused (by path). */
  liveErrors: Record<string, string>;
  notices: string[];
}

export interface ViewSlice {
  smoothing: number;
  /** x axis of every chart: RL/SFT step, or wall time since the run's first row. */
  xAxis: XAxis;
  /** A multi-seed group's band: mean ± sd, or min..max over its seeds. */
  band: BandMode;
  /** Charts added from the picker, by `phase:key`; pinned charts (any id) go first. */
  addedCharts: string[];
  pinnedCharts: string[];
  /** The config drawer on narrow screens. */
  drawer: boolean;
  logScale: Record<string, boolean>;
  outlierClip: Record<string, boolean>;
  fast: boolean;
  theme: "auto" | "light" | "dark";
  tab: "charts" | "inspector" | "try" | "reward" | "environment" | "runs";
  /** The Environment tab's source as being edited: kept while other tabs are open; null: none yet. */
  envDraft: string | null;
  inspector: {
    pinnedStep: string | null;
    overlay: Overlay;
    filter: SampleFilter;
    selected: { key: string; index: number } | null;
    /** The groups the person picked to show; null: the default pick (groups with signal first). */
    groups: string[] | null;
  };
  errors: string[];
  /** What the worker found of WebGPU; undefined while it looks. Without it, training is disabled. */
  gpu: GpuStatus | undefined;
}

/** Pretrained models the picker has seen: config.json by model.pretrained, and the adapter's buffer limits (the memory plan). */
export interface ModelSlice {
  modelConfigs: Record<string, unknown>;
  adapterLimits: { maxBufferSize: number; maxStorageBufferBindingSize: number } | null;
}

export type LabState = RunsSlice & FormSlice & ViewSlice & ModelSlice;

export function initialState(): LabState {
  const config = defaultRunConfig();
  return {
    runs: [],
    stored: [],
    activeId: null,
    openId: null,
    form: { config, pending: {} },
    modelConfigs: {},
    adapterLimits: null,
    preset: null,
    presetConfig: config,
    pendingRestart: [],
    liveErrors: {},
    notices: [],
    smoothing: 0.6,
    xAxis: "step",
    band: "sd",
    addedCharts: [],
    pinnedCharts: [],
    drawer: false,
    logScale: {},
    outlierClip: {},
    fast: false,
    theme: "auto",
    tab: "charts",
    envDraft: null,
    inspector: { pinnedStep: null, overlay: "none", filter: "all", selected: null, groups: null },
    errors: [],
    gpu: undefined,
  };
}

/** A run's one name, the same in the charts, the runs table and the inspector. */
export function runName(r: Pick<RunRecord, "label" | "n">): string {
  return r.label ?? `#${r.n}`;
}

/**
 * A download's file name from the run's name as the page shows it ("#3 quick-demo-verl.zip"):
 * only the characters file systems refuse are replaced.
 */
export function downloadName(name: string, suffix: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused in file names
  const stem = name.replace(/[\\/:*?"<>|\u0000-\u001f]+/g, "_").trim() || "run";
  return `${stem}${suffix}`;
}

/** Training needs WebGPU; false while the worker still looks, or when it found none. */
export function canTrain(s: Pick<LabState, "gpu">): boolean {
  return s.gpu?.ok === true;
}

export const useLab = create<LabState>(() => initialState());

// ---- reducers (pure: state in, partial state out) ----

export function addRun(s: LabState, id: string, config: RunConfig, group?: RunGroup): Partial<LabState> {
  const prev = s.runs[s.runs.length - 1];
  const n = (prev?.n ?? 0) + 1;
  const run: RunRecord = {
    id,
    workerId: null,
    label: null,
    n,
    color: RUN_COLORS[(n - 1) % RUN_COLORS.length],
    config,
    liveConfig: config,
    rows: [],
    markers: [],
    events: [],
    samples: new Map(),
    phase: "loading",
    progress: null,
    progressAt: 0,
    visible: true,
    diff: prev ? configDiff(prev.config, config) : [],
    error: null,
    ...(group ? { group } : {}),
  };
  // The seeds of a group share the first seed's colour.
  const first = group ? s.runs.find((r) => r.group?.id === group.id) : undefined;
  if (first) run.color = first.color;
  const runs = [...s.runs, run];
  // Overlay cap: only the newest MAX_OVERLAY runs stay visible.
  const visibleIds = new Set(runs.slice(-MAX_OVERLAY).map((r) => r.id));
  return {
    runs: runs.map((r) => (r.visible && !visibleIds.has(r.id) ? { ...r, visible: false } : r)),
    activeId: id,
    openId: id,
    pendingRestart: [],
  };
}

function updateRun(s: LabState, id: string, f: (r: RunRecord) => RunRecord): Partial<LabState> {
  return { runs: s.runs.map((r) => (r.id === id ? f(r) : r)) };
}

/** What the worker pushed since the last frame, applied in one update. */
export interface Incoming {
  rows: MetricsRow[];
  samples: SampleRecord[][];
  events: RunEvent[];
  progress: RunProgress | null;
}

export function applyIncoming(s: LabState, id: string, inc: Incoming): Partial<LabState> {
  return updateRun(s, id, (r) => {
    let liveConfig = r.liveConfig;
    const markers = [...r.markers];
    for (const e of inc.events) {
      if (e.kind === "edit" && e.edit) {
        const from = getPath(liveConfig, e.edit.path);
        liveConfig = setPath(liveConfig, e.edit.path, e.edit.value);
        markers.push({
          runId: id,
          step: e.step,
          phase: e.phase,
          kind: "edit",
          label: editLabel(e.edit.path, from, e.edit.value),
          detail: e.message,
        });
      } else if (e.kind === "skipped") {
        markers.push({
          runId: id,
          step: e.step,
          phase: e.phase,
          kind: "skipped",
          label: "skipped",
          detail: e.message,
        });
      }
    }
    // A row may also carry `event` (a skipped update) without a separate event push.
    for (const row of inc.rows) {
      const ev = row.event;
      if (
        typeof ev === "string" &&
        !markers.some((m) => m.kind === "skipped" && m.step === row.step && m.phase === row.phase)
      )
        markers.push({
          runId: id,
          step: row.step,
          phase: row.phase,
          kind: "skipped",
          label: "skipped",
          detail: ev,
        });
    }
    let samples = r.samples;
    if (inc.samples.length > 0) {
      samples = new Map(r.samples);
      for (const batch of inc.samples) {
        if (batch.length === 0) continue;
        samples.set(`rl:${batch[0].step}`, batch);
      }
      while (samples.size > MAX_SAMPLE_STEPS) samples.delete(samples.keys().next().value as string);
    }
    const progress = inc.progress ?? r.progress;
    // A storage error pauses the run (it is not dead); other errors end it.
    const errorEvent = inc.events.find((e) => e.kind === "error");
    const fatal = inc.events.some((e) => e.kind === "error" && e.phase !== "storage");
    return {
      ...r,
      rows: inc.rows.length ? [...r.rows, ...inc.rows] : r.rows,
      events: inc.events.length ? [...r.events, ...inc.events] : r.events,
      markers,
      liveConfig,
      samples,
      progress,
      progressAt: inc.progress ? Date.now() : r.progressAt,
      // A stopped run stays stopped while the step in flight reports in.
      phase: fatal ? "error" : r.phase === "stopped" ? r.phase : (inc.progress?.phase ?? r.phase),
      error: errorEvent ? errorEvent.message : r.error,
    };
  });
}

export function setRunPhase(s: LabState, id: string, phase: RunPhase, error?: string): Partial<LabState> {
  return updateRun(s, id, (r) => ({ ...r, phase, error: error ?? r.error }));
}

/** A stored run opened into the session: its rows, samples and markers, not the active run. */
export function addLoadedRun(s: LabState, loaded: LoadedRun): Partial<LabState> {
  const id = `stored:${loaded.run.id}`;
  const without = { ...s, runs: s.runs.filter((r) => r.id !== id) };
  const activeId = s.activeId;
  let next: LabState = { ...without, ...addRun(without, id, loaded.run.config, loaded.group) };
  const byStep = new Map<number, SampleRecord[]>();
  for (const x of loaded.samples) byStep.set(x.step, [...(byStep.get(x.step) ?? []), x]);
  next = {
    ...next,
    ...applyIncoming(next, id, {
      rows: loaded.rows,
      samples: [...byStep.values()],
      events: loaded.events,
      progress: null,
    }),
  };
  const status = loaded.run.status;
  const phase: RunPhase =
    status === "error" ? "error" : status === "done" || status === "imported" ? "done" : "stopped";
  return {
    runs: next.runs.map((r) =>
      r.id === id
        ? {
            ...r,
            workerId: loaded.run.id,
            phase,
            label: loaded.run.name,
            ...(loaded.run.engine ? { engine: loaded.run.engine, diff: [] } : {}),
          }
        : r,
    ),
    activeId,
    openId: id,
  };
}

/** The worker's id and name for a run the UI started. */
export function setWorkerId(s: LabState, id: string, workerId: string, label?: string): Partial<LabState> {
  return updateRun(s, id, (r) => ({ ...r, workerId, label: label ?? r.label }));
}

export function deleteRun(s: LabState, id: string): Partial<LabState> {
  const runs = s.runs.filter((r) => r.id !== id);
  return {
    runs,
    activeId: s.activeId === id ? null : s.activeId,
    openId: s.openId === id ? (runs[runs.length - 1]?.id ?? null) : s.openId,
  };
}

/**
 * A runs table's order: each run once, a group's members together at its first member's place,
 * the first of them carrying the group's head (the group and all its members in the list).
 */
export function withGroups<T extends { id: string; group?: RunGroup }>(
  runs: readonly T[],
): { run: T; head?: { group: RunGroup; members: T[] } }[] {
  const members = new Map<string, T[]>();
  for (const r of runs) if (r.group) members.set(r.group.id, [...(members.get(r.group.id) ?? []), r]);
  const out: { run: T; head?: { group: RunGroup; members: T[] } }[] = [];
  for (const r of runs) {
    const group = r.group;
    const all = group && members.get(group.id);
    if (!group) out.push({ run: r });
    else if (all) {
      // The whole group here; its later members are already placed.
      members.delete(group.id);
      all.forEach((m, i) => {
        out.push(i === 0 ? { run: m, head: { group, members: all } } : { run: m });
      });
    }
  }
  return out;
}

export function toggleVisible(s: LabState, id: string): Partial<LabState> {
  return updateRun(s, id, (r) => ({ ...r, visible: !r.visible }));
}

/** The last value of every metric key of a run (its "final metrics"). */
export function lastValues(rows: readonly MetricsRow[], phase = "rl"): Record<string, number> {
  const out: Record<string, number> = {};
  for (const row of rows) {
    if (row.phase !== phase) continue;
    for (const [k, v] of Object.entries(row)) if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
  }
  return out;
}

export function isRunning(r: RunRecord | undefined): boolean {
  return !!r && (r.phase === "loading" || r.phase === "sft" || r.phase === "rl" || r.phase === "paused");
}

export function activeRun(s: LabState): RunRecord | undefined {
  return s.runs.find((r) => r.id === s.activeId);
}

export function openRun(s: LabState): RunRecord | undefined {
  return s.runs.find((r) => r.id === s.openId) ?? s.runs[s.runs.length - 1];
}

/** Steps with samples (newest last) and the one the inspector shows: pinned, else latest. */
export function inspectorStep(
  s: Pick<LabState, "inspector">,
  run: RunRecord | undefined,
): { steps: string[]; current: string | null } {
  const steps = run ? [...run.samples.keys()] : [];
  const pinned = s.inspector.pinnedStep;
  const current = pinned && steps.includes(pinned) ? pinned : (steps[steps.length - 1] ?? null);
  return { steps, current };
}

/**
 * Banners whose cause the page can check again, and the check that says it is fixed: Start's
 * refusals of the form's config. The store drops them as soon as the form no longer has the
 * cause (the person fixed the field), so they do not stay until dismissed.
 */
const FIXABLE: { match: RegExp; fixed: (s: LabState) => boolean }[] = [
  { match: /^Config is invalid: /, fixed: (s) => validateRunConfig(s.form.config).ok },
  {
    match: / starts from the lab's own checkpoint .* which cannot load into /,
    fixed: (s) => pretrainedConflict(s.form.config as RunConfig, s.preset) === null,
  },
];

/** The error banners still standing: those whose cause is fixed are dropped (null: none). */
export function dropFixedErrors(s: LabState): Partial<LabState> | null {
  const keep = s.errors.filter((e) => !FIXABLE.some((f) => f.match.test(e) && f.fixed(s)));
  return keep.length === s.errors.length ? null : { errors: keep };
}

useLab.subscribe((s, prev) => {
  if (s.errors.length === 0 || (s.form === prev.form && s.preset === prev.preset)) return;
  const next = dropFixedErrors(s);
  if (next) useLab.setState(next);
});

/** Adds an error banner; a message already shown is not shown twice. */
export function pushError(s: LabState, message: string): Partial<LabState> {
  if (s.errors.includes(message)) return {};
  return { errors: [...s.errors.slice(-4), message] };
}
