// The worker's side of the run record: where a stored run resumes from, and the RunEvents that
// write a running one into the store. The schedule itself (which edit applies when, what a
// checkpoint holds and when one is due, what a resume replays) is rl/run/run-loop.ts's; this file
// only reads and writes the store, so a reload, a crash and a device loss all resume through
// RunLoop. MemoryRunStore is the store where IndexedDB is unavailable: a device loss still
// resumes from the last checkpoint, a reload does not. The same functions run in Node for
// rl/run/record.test.ts (the promise test's worker path).
import type { ConfigEdit, RunConfig } from "../config";
import type { RunEventRecord } from "../rl/run/run-bundle";
import type { RunEvents, RunLoopOptions } from "../rl/run/run-loop";
import type { MetricsRow, SampleRecord } from "../rl/run/trainer";
import {
  addGroupMember,
  type CheckpointInfo,
  type CheckpointRecord,
  DEFAULT_KEEP_CHECKPOINTS,
  DEFAULT_KEEP_SAMPLE_STEPS,
  emptySummary,
  groupRefs,
  isAfterCheckpoint,
  type LoadedRun,
  type NewRun,
  newRunMeta,
  PHASE_RANK,
  type Phase,
  type RunGroupRecord,
  type RunMeta,
  type RunStore,
  updateSummary,
} from "./store";

/** The RunStore methods a running run uses. */
export type RecordStore = Pick<
  RunStore,
  | "createRun"
  | "getRun"
  | "updateRun"
  | "latestCheckpoint"
  | "truncateAfter"
  | "loadRun"
  | "appendRow"
  | "appendSamples"
  | "appendEvent"
  | "appendEdit"
  | "saveCheckpoint"
>;

export interface StoredRunStart {
  /** The run's starting config (edits are not folded in: the loop applies them). */
  config: RunConfig;
  /** The run's whole edit log. */
  edits: ConfigEdit[];
  /** The newest checkpoint, when there is one. */
  resume?: RunLoopOptions["resume"];
  /** What the store keeps after truncating to that checkpoint (sent back to the UI). */
  kept: LoadedRun;
}

/**
 * A stored run, ready to resume: its rows, samples and events after the newest checkpoint are
 * deleted (the loop recomputes them), its edits are all kept.
 */
export async function openStoredRun(store: RecordStore, id: string): Promise<StoredRunStart> {
  const stored = await store.getRun(id);
  if (!stored) throw new Error(`no stored run ${id}`);
  const ck = await store.latestCheckpoint(id);
  await store.truncateAfter(id, ck?.phase ?? "sft", ck?.step ?? 0);
  const kept = await store.loadRun(id);
  if (!kept) throw new Error(`no stored run ${id}`);
  return {
    config: stored.config,
    edits: kept.edits,
    resume: ck ? { at: { phase: ck.phase, step: ck.step }, checkpoint: ck.bytes } : undefined,
    kept,
  };
}

/**
 * The RunEvents that persist a run: rows, samples, events, new live edits (the loop reports
 * replayed ones as events only) and the checkpoints the loop makes. `persist` receives each
 * write (the worker reports its errors and pauses on a full disk).
 */
export function recordingEvents(
  store: RecordStore,
  id: string,
  persist: (write: Promise<void>) => void,
): Required<Pick<RunEvents, "row" | "samples" | "event" | "edit">> & {
  checkpoint(ck: Parameters<NonNullable<RunEvents["checkpoint"]>>[0]): Promise<void>;
} {
  return {
    row: (row) => persist(store.appendRow(id, row)),
    samples: (samples) => persist(store.appendSamples(id, samples)),
    event: (e) => persist(store.appendEvent(id, e)),
    edit: (edit) => persist(store.appendEdit(id, edit)),
    checkpoint: (ck) => store.saveCheckpoint(id, ck),
  };
}

interface MemoryRun {
  meta: RunMeta;
  edits: ConfigEdit[];
  events: RunEventRecord[];
  rows: MetricsRow[];
  samples: SampleRecord[];
  checkpoints: CheckpointRecord[];
}

const rankOf = (x: { phase: Phase; step: number }) => PHASE_RANK[x.phase] * 1e9 + x.step;

/**
 * RunStore's record semantics in memory: rows replace by phase and step, truncateAfter as
 * RunStore's, the newest `keepSampleSteps` steps of samples and `keepCheckpoints` checkpoints.
 */
export class MemoryRunStore implements RecordStore {
  private runs = new Map<string, MemoryRun>();
  private groups = new Map<string, RunGroupRecord>();
  constructor(
    readonly keepCheckpoints = DEFAULT_KEEP_CHECKPOINTS,
    readonly keepSampleSteps = DEFAULT_KEEP_SAMPLE_STEPS,
  ) {}

  private get(id: string): MemoryRun {
    const r = this.runs.get(id);
    if (!r) throw new Error(`no run ${id}`);
    return r;
  }

  async createRun(meta: NewRun): Promise<RunMeta> {
    const now = Date.now();
    const run = newRunMeta(meta, now);
    const id = run.id;
    if (this.runs.has(id)) throw new Error(`run ${id} already exists`);
    this.runs.set(id, { meta: run, edits: [], events: [], rows: [], samples: [], checkpoints: [] });
    if (meta.group) {
      this.groups.set(meta.group.id, addGroupMember(this.groups.get(meta.group.id), meta.group, id, now));
    }
    return structuredClone(run);
  }

  async getRun(id: string): Promise<RunMeta | undefined> {
    const r = this.runs.get(id);
    return r && structuredClone(r.meta);
  }

  async updateRun(id: string, patch: Partial<Pick<RunMeta, "name" | "status">>): Promise<void> {
    const r = this.get(id);
    r.meta = { ...r.meta, ...patch, updatedAt: Date.now() };
  }

  async appendRow(id: string, row: MetricsRow): Promise<void> {
    const r = this.get(id);
    r.rows = r.rows.filter((x) => !(x.phase === row.phase && x.step === row.step));
    r.rows.push(structuredClone(row));
    r.rows.sort((a, b) => rankOf(a) - rankOf(b));
    r.meta.summary = updateSummary(r.meta.summary, row);
  }

  async appendSamples(id: string, samples: readonly SampleRecord[]): Promise<void> {
    const r = this.get(id);
    r.samples.push(...structuredClone(samples));
    const steps = [...new Set(r.samples.map((s) => s.step))].sort((a, b) => a - b);
    const keep = new Set(steps.slice(-this.keepSampleSteps));
    r.samples = r.samples.filter((s) => keep.has(s.step));
  }

  async appendEvent(id: string, event: RunEventRecord): Promise<void> {
    this.get(id).events.push(structuredClone(event));
  }

  async appendEdit(id: string, edit: ConfigEdit): Promise<void> {
    this.get(id).edits.push(structuredClone(edit));
  }

  async saveCheckpoint(id: string, ck: CheckpointInfo & { bytes: Uint8Array }): Promise<void> {
    const r = this.get(id);
    const rec: CheckpointRecord = { ...ck, runId: id, rank: PHASE_RANK[ck.phase], createdAt: Date.now() };
    r.checkpoints = r.checkpoints.filter((c) => rankOf(c) !== rankOf(ck));
    r.checkpoints.push(rec);
    r.checkpoints.sort((a, b) => rankOf(a) - rankOf(b));
    r.checkpoints = r.checkpoints.slice(-this.keepCheckpoints);
  }

  async latestCheckpoint(id: string): Promise<CheckpointRecord | undefined> {
    return this.runs.get(id)?.checkpoints.at(-1);
  }

  async truncateAfter(id: string, phase: Phase, step: number): Promise<void> {
    const r = this.get(id);
    const ck = { phase, step };
    r.rows = r.rows.filter((x) => !isAfterCheckpoint(x.phase, x.step, ck));
    r.samples = r.samples.filter((x) => !isAfterCheckpoint("rl", x.step, ck));
    r.events = r.events.filter((x) => !isAfterCheckpoint(x.phase, x.step, ck));
    r.checkpoints = r.checkpoints.filter((c) => !isAfterCheckpoint(c.phase, c.step - 1, ck));
    r.meta.summary = r.rows.reduce(updateSummary, emptySummary());
  }

  async loadRun(id: string): Promise<LoadedRun | undefined> {
    const r = this.runs.get(id);
    if (!r) return undefined;
    const group = groupRefs([...this.groups.values()]).get(id);
    return structuredClone({
      run: r.meta,
      ...(group ? { group } : {}),
      edits: r.edits,
      rows: r.rows,
      samples: r.samples,
      events: r.events,
    });
  }
}
