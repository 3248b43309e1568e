// RunStore: every run kept in IndexedDB (through `idb`), so a reload, a worker crash or a lost
// GPU device loses at most the steps since the last checkpoint. Object stores:
//   runs         {id, name, config, createdAt, status, source, summary}        key id
//   edits        {runId, edit}                      auto key, index byRun (insertion order)
//   events       {runId, event}                     auto key, index byRun (insertion order)
//   metrics      {runId, rank, step, row}           key [runId, rank, step]
//   samples      {runId, rank, step, index, sample} key [runId, rank, step, index]
//   checkpoints  {runId, phase, rank, step, bytes, createdAt}   key [runId, rank, step]
//   groups       {id, name, firstSeed, size, members: [{runId, seed}], createdAt}   key id (version 2)
// A group is a multi-seed run (config.seeds > 1): its seeds are runs of their own, started one
// after another; the group record names them, so a reload lists them as one group. Deleting a
// member takes it out of its group, deleting the last one deletes the group; a store made
// before groups (version 1) opens with its runs unchanged and no groups.
// `rank` orders phases as a run goes through them (sft 0, value_pretrain 1, rl 2), so key order
// is run order. Checkpoints are safetensors bytes (weights + optimizer); the engine derives all
// randomness from (seed, phase, step), so no RNG state is stored. A checkpoint {phase, step: n}
// is the state after n completed steps of that phase: it covers the rows 0..n-1 of the phase
// and every row of earlier phases. Bounds: the last `keepSampleSteps` steps of samples per run,
// the last `keepCheckpoints` (2) checkpoints per run; when the browser's quota is hit, the
// oldest samples (across runs) are pruned once and the write retried, then StorageFullError.
// Used by the trainer worker (and the page, for usage/persistence and the runs list).
// Tests: the pure policy in Node (`npx vitest run workers/store`), the real IndexedDB path in
// Chromium (e2e/persist.e2e.test.ts).
import { type DBSchema, type IDBPDatabase, type IDBPTransaction, openDB, type StoreNames } from "idb";
import type { ConfigEdit, RunConfig } from "../config";
import type { EngineInfo } from "../results/import";
import { phasedEdits, type RunEventRecord } from "../rl/run/run-bundle";
import type { MetricsRow, SampleRecord } from "../rl/run/trainer";

export const STORE_DB_NAME = "agentic-rl-lab";
export const STORE_DB_VERSION = 2;
export const DEFAULT_KEEP_SAMPLE_STEPS = 50;
export const DEFAULT_KEEP_CHECKPOINTS = 2;

export type Phase = MetricsRow["phase"];
export const PHASE_RANK: Record<Phase, number> = { sft: 0, value_pretrain: 1, rl: 2 };
/** Rank of a phase name; event phases the runner reports besides sft/rl (paused, done, error) count as rl. */
export function phaseRank(phase: string): number {
  return phase in PHASE_RANK ? PHASE_RANK[phase as Phase] : PHASE_RANK.rl;
}

/**
 * "interrupted": it was running or paused when its page went away (a reload, a closed tab, a
 * crash); the next page marks it so (workers/trainer.worker.ts interruptedRuns) and offers Resume.
 */
export type RunStatus = "running" | "paused" | "done" | "stopped" | "error" | "imported" | "interrupted";

export interface RunMeta {
  id: string;
  name: string;
  /** The run's starting config; live edits are in the edits store. */
  config: RunConfig;
  /** ms since the epoch. */
  createdAt: number;
  updatedAt: number;
  status: RunStatus;
  /**
   * Where the run came from: trained here, imported from a bundle, opened from a link, or a
   * verl or TRL run's results brought back (results/; never replayed: no seed or edit log).
   */
  source: "local" | "bundle" | "link" | "verl" | "trl";
  /** A verl or TRL run: the files read, what was left out, the export's config beside them. */
  engine?: EngineInfo;
  /** The last value of every metric (timing/* and perf/* left out), and where the run is. */
  summary: RunSummary;
}

export interface RunSummary {
  phase?: Phase;
  step?: number;
  rows: number;
  metrics: Record<string, number>;
}

export interface CheckpointInfo {
  phase: Phase;
  /** Completed steps of `phase` (the runner's checkpoint info). */
  step: number;
}

export interface CheckpointRecord extends CheckpointInfo {
  runId: string;
  rank: number;
  /** A safetensors checkpoint (model/checkpoint.ts saveCheckpoint). */
  bytes: Uint8Array;
  createdAt: number;
}

/** One seed's place in a multi-seed run: this run is seed `seed` of `size` seeds from `firstSeed`. */
export interface RunGroupRef {
  id: string;
  name: string;
  seed: number;
  firstSeed: number;
  size: number;
}

/** A multi-seed run as stored: its member runs in the order they started, each with its seed. */
export interface RunGroupRecord {
  id: string;
  name: string;
  firstSeed: number;
  /** Seeds planned (a group stopped early has fewer members). */
  size: number;
  members: { runId: string; seed: number }[];
  createdAt: number;
}

export interface LoadedRun {
  run: RunMeta;
  /** The multi-seed run it is a seed of. */
  group?: RunGroupRef;
  edits: ConfigEdit[];
  rows: MetricsRow[];
  samples: SampleRecord[];
  events: RunEventRecord[];
}

/** A run as a bundle carries it (rl/run/run-bundle.ts RunBundle has this shape). */
export interface RunData {
  name: string;
  createdAt: string;
  config: RunConfig;
  edits: ConfigEdit[];
  metrics: MetricsRow[];
  samples: SampleRecord[];
  events: RunEventRecord[];
  weights?: Uint8Array;
  /** A verl or TRL run's results (results/import.ts), stored as source "verl" / "trl". */
  engine?: EngineInfo;
}

interface LabDB extends DBSchema {
  runs: { key: string; value: RunMeta };
  edits: { key: number; value: { runId: string; edit: ConfigEdit }; indexes: { byRun: string } };
  events: { key: number; value: { runId: string; event: RunEventRecord }; indexes: { byRun: string } };
  metrics: {
    key: [string, number, number];
    value: { runId: string; rank: number; step: number; row: MetricsRow };
  };
  samples: {
    key: [string, number, number, number];
    value: { runId: string; rank: number; step: number; index: number; sample: SampleRecord };
  };
  checkpoints: { key: [string, number, number]; value: CheckpointRecord };
  groups: { key: string; value: RunGroupRecord };
}
type Store = StoreNames<LabDB>;
const ALL_STORES: Store[] = ["runs", "edits", "events", "metrics", "samples", "checkpoints", "groups"];

// ---------------------------------------------------------------------------------------------
// pure policy (unit-tested in Node)

/** Summary after one more row: last value of every numeric metric except time, timing/*, perf/*. */
export function updateSummary(prev: RunSummary, row: MetricsRow): RunSummary {
  const metrics = { ...prev.metrics };
  for (const [k, v] of Object.entries(row)) {
    if (k === "step" || k === "time" || k.startsWith("timing/") || k.startsWith("perf/")) continue;
    if (typeof v === "number" && Number.isFinite(v)) metrics[k] = v;
  }
  const later =
    prev.phase === undefined ||
    PHASE_RANK[row.phase] > PHASE_RANK[prev.phase] ||
    (row.phase === prev.phase && row.step >= (prev.step ?? 0));
  return {
    phase: later ? row.phase : prev.phase,
    step: later ? row.step : prev.step,
    rows: prev.rows + 1,
    metrics,
  };
}

export function emptySummary(): RunSummary {
  return { rows: 0, metrics: {} };
}

/** The group after `runId` joined it as seed `ref.seed` (a new group when there is none yet). */
export function addGroupMember(
  group: RunGroupRecord | undefined,
  ref: RunGroupRef,
  runId: string,
  now = Date.now(),
): RunGroupRecord {
  if (group && group.id !== ref.id) throw new Error(`run ${runId} joins group ${ref.id}, not ${group.id}`);
  const g = group ?? {
    id: ref.id,
    name: ref.name,
    firstSeed: ref.firstSeed,
    size: ref.size,
    members: [],
    createdAt: now,
  };
  return { ...g, members: [...g.members.filter((m) => m.runId !== runId), { runId, seed: ref.seed }] };
}

/** The group without `runId`; undefined when no member is left (the group goes too). */
export function removeGroupMember(group: RunGroupRecord, runId: string): RunGroupRecord | undefined {
  const members = group.members.filter((m) => m.runId !== runId);
  return members.length === 0 ? undefined : { ...group, members };
}

/** Each member run's place in its group, by run id. */
export function groupRefs(groups: readonly RunGroupRecord[]): Map<string, RunGroupRef> {
  const out = new Map<string, RunGroupRef>();
  for (const g of groups) {
    for (const m of g.members) {
      out.set(m.runId, { id: g.id, name: g.name, seed: m.seed, firstSeed: g.firstSeed, size: g.size });
    }
  }
  return out;
}

/** What createRun takes: the record's fields, defaults for the rest. */
export interface NewRun {
  /** Made here (a random UUID) unless given. */
  id?: string;
  name: string;
  config: RunConfig;
  createdAt?: number;
  status?: RunStatus;
  source?: RunMeta["source"];
  /** The multi-seed run this run is a seed of: the run joins its group record. */
  group?: RunGroupRef;
  engine?: EngineInfo;
}

/** A new run's record: status "running" and source "local" unless given, an empty summary. */
export function newRunMeta(meta: NewRun, now = Date.now()): RunMeta {
  return {
    id: meta.id ?? crypto.randomUUID(),
    name: meta.name,
    config: meta.config,
    createdAt: meta.createdAt ?? now,
    updatedAt: now,
    status: meta.status ?? "running",
    source: meta.source ?? "local",
    summary: emptySummary(),
    ...(meta.engine ? { engine: meta.engine } : {}),
  };
}

/** A (rank, step) pair of stored samples or checkpoints. */
export type StepKey = [rank: number, step: number];
const cmpStep = (a: StepKey, b: StepKey) => a[0] - b[0] || a[1] - b[1];

/** The sample steps of one run to delete so that only the newest `keep` steps remain. */
export function sampleStepsToPrune(steps: readonly StepKey[], keep: number): StepKey[] {
  const distinct = uniqueSteps(steps);
  return distinct.slice(0, Math.max(0, distinct.length - Math.max(0, keep)));
}

/** The checkpoints of one run to delete so that the newest `keep` remain. */
export function checkpointsToDrop(keys: readonly StepKey[], keep = DEFAULT_KEEP_CHECKPOINTS): StepKey[] {
  return sampleStepsToPrune(keys, keep);
}

function uniqueSteps(steps: readonly StepKey[]): StepKey[] {
  const seen = new Set<string>();
  const out: StepKey[] = [];
  for (const s of [...steps].sort(cmpStep)) {
    const k = `${s[0]}:${s[1]}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(s);
    }
  }
  return out;
}

/**
 * When the quota is hit: the oldest sample steps across all runs (runs by creation time, then
 * step order), `fraction` of them and at least one, to free space before one retry.
 */
export function quotaPrunePlan(
  steps: readonly { runId: string; createdAt: number; rank: number; step: number }[],
  fraction = 0.5,
): { runId: string; rank: number; step: number }[] {
  const seen = new Set<string>();
  const distinct = steps.filter((s) => {
    const k = `${s.runId}:${s.rank}:${s.step}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  distinct.sort(
    (a, b) =>
      a.createdAt - b.createdAt || a.runId.localeCompare(b.runId) || a.rank - b.rank || a.step - b.step,
  );
  if (distinct.length === 0) return [];
  const n = Math.max(1, Math.ceil(distinct.length * fraction));
  return distinct.slice(0, n).map(({ runId, rank, step }) => ({ runId, rank, step }));
}

/** True when (phase, step) comes at or after a checkpoint {phase, step}: not covered by it. */
export function isAfterCheckpoint(phase: string, step: number, ck: CheckpointInfo): boolean {
  return cmpStep([phaseRank(phase), step], [PHASE_RANK[ck.phase], ck.step]) >= 0;
}

/** Is this error the browser saying the storage quota is used up (directly or as the abort cause)? */
export function isQuotaError(err: unknown, tx?: { error: DOMException | null }): boolean {
  const name = (x: unknown) =>
    typeof x === "object" && x !== null ? (x as { name?: unknown }).name : undefined;
  return name(err) === "QuotaExceededError" || name(tx?.error) === "QuotaExceededError";
}

export interface StorageUsage {
  /** Bytes this origin uses and may use, as the browser estimates them (undefined if unknown). */
  usage?: number;
  quota?: number;
  /** Whether storage is persistent (not evicted under pressure). */
  persisted: boolean;
}

const mb = (b?: number) => (b === undefined ? "?" : (b / 1e6).toFixed(1));

export class StorageFullError extends Error {
  constructor(readonly usage: StorageUsage) {
    super(
      `Browser storage is full: this lab uses ${mb(usage.usage)} MB of its ${mb(usage.quota)} MB quota, even ` +
        "after pruning the oldest sampled trajectories. Delete old runs or export them as bundles " +
        "(Runs list), then resume: the run continues from its last checkpoint.",
    );
    this.name = "StorageFullError";
  }
}

// ---------------------------------------------------------------------------------------------
// the store

export interface RunStoreOptions {
  /** Steps of sampled trajectories kept per run (default 50). */
  keepSampleSteps?: number;
  /** Checkpoints kept per run (default 2). */
  keepCheckpoints?: number;
}

const runRange = (runId: string) => IDBKeyRange.bound([runId], [runId, []]);
/** Keys of a run from (rank, step) on. */
const fromRange = (runId: string, rank: number, step: number) =>
  IDBKeyRange.bound([runId, rank, step], [runId, []]);

export class RunStore {
  readonly keepSampleSteps: number;
  readonly keepCheckpoints: number;

  constructor(
    readonly db: IDBPDatabase<LabDB>,
    opts: RunStoreOptions = {},
  ) {
    this.keepSampleSteps = opts.keepSampleSteps ?? DEFAULT_KEEP_SAMPLE_STEPS;
    this.keepCheckpoints = opts.keepCheckpoints ?? DEFAULT_KEEP_CHECKPOINTS;
  }

  close(): void {
    this.db.close();
  }

  /**
   * Runs one read-write transaction; on a quota error prunes the oldest samples once and
   * retries, then throws StorageFullError.
   */
  private async write<S extends Store[]>(
    stores: S,
    fn: (tx: IDBPTransaction<LabDB, S, "readwrite">) => Promise<void>,
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const tx = this.db.transaction(stores, "readwrite");
      try {
        await Promise.all([fn(tx), tx.done]);
        return;
      } catch (err) {
        try {
          tx.abort();
        } catch {}
        await tx.done.catch(() => {});
        if (!isQuotaError(err, tx)) throw err;
        if (attempt > 0) throw new StorageFullError(await this.usage());
        await this.pruneForQuota();
      }
    }
  }

  /** Deletes the oldest half of all stored sample steps (oldest runs first). Returns how many steps. */
  async pruneForQuota(fraction = 0.5): Promise<number> {
    const runs = new Map((await this.db.getAll("runs")).map((r) => [r.id, r.createdAt]));
    const keys = await this.db.getAllKeys("samples");
    const plan = quotaPrunePlan(
      keys.map(([runId, rank, step]) => ({ runId, createdAt: runs.get(runId) ?? 0, rank, step })),
      fraction,
    );
    const tx = this.db.transaction("samples", "readwrite");
    for (const p of plan) {
      tx.store
        .delete(IDBKeyRange.bound([p.runId, p.rank, p.step], [p.runId, p.rank, p.step, []]))
        .catch(() => {});
    }
    await tx.done;
    return plan.length;
  }

  /** A new run; returns its record (id made here unless given). */
  async createRun(meta: NewRun): Promise<RunMeta> {
    const now = Date.now();
    const run = newRunMeta(meta, now);
    const group = meta.group;
    await this.write(["runs", "groups"], async (tx) => {
      if (await tx.objectStore("runs").get(run.id)) throw new Error(`run ${run.id} already exists`);
      await tx.objectStore("runs").put(run);
      if (group) {
        const groups = tx.objectStore("groups");
        await groups.put(addGroupMember(await groups.get(group.id), group, run.id, now));
      }
    });
    return run;
  }

  async getRun(runId: string): Promise<RunMeta | undefined> {
    return this.db.get("runs", runId);
  }

  /** Changes a run's name or status. */
  async updateRun(runId: string, patch: Partial<Pick<RunMeta, "name" | "status">>): Promise<void> {
    await this.write(["runs"], async (tx) => {
      const run = await tx.objectStore("runs").get(runId);
      if (!run) throw new Error(`no run ${runId}`);
      await tx.objectStore("runs").put({ ...run, ...patch, updatedAt: Date.now() });
    });
  }

  /** Stores one metrics row (a row at the same phase and step replaces the old one) and updates the summary. */
  async appendRow(runId: string, row: MetricsRow): Promise<void> {
    await this.write(["runs", "metrics"], async (tx) => {
      const runs = tx.objectStore("runs");
      const run = await runs.get(runId);
      if (!run) throw new Error(`no run ${runId}`);
      const rank = PHASE_RANK[row.phase];
      if (rank === undefined)
        throw new Error(`row phase ${JSON.stringify(row.phase)} is not sft, value_pretrain or rl`);
      await tx.objectStore("metrics").put({ runId, rank, step: row.step, row });
      await runs.put({ ...run, summary: updateSummary(run.summary, row), updatedAt: Date.now() });
    });
  }

  /** Stores one step's samples (RL unless `phase` says otherwise), then keeps only the newest steps. */
  async appendSamples(runId: string, samples: readonly SampleRecord[], phase: Phase = "rl"): Promise<void> {
    if (samples.length === 0) return;
    const rank = PHASE_RANK[phase];
    await this.write(["samples"], async (tx) => {
      const store = tx.objectStore("samples");
      const counters = new Map<number, number>();
      for (const sample of samples) {
        // Index within the step: continue after samples already stored for it.
        let index = counters.get(sample.step);
        if (index === undefined) {
          index = await store.count(
            IDBKeyRange.bound([runId, rank, sample.step], [runId, rank, sample.step, []]),
          );
        }
        counters.set(sample.step, index + 1);
        await store.put({ runId, rank, step: sample.step, index, sample });
      }
      const keys = await store.getAllKeys(runRange(runId));
      for (const [r, s] of sampleStepsToPrune(
        keys.map(([, r, s]) => [r, s] as StepKey),
        this.keepSampleSteps,
      )) {
        await store.delete(IDBKeyRange.bound([runId, r, s], [runId, r, s, []]));
      }
    });
  }

  async appendEvent(runId: string, event: RunEventRecord): Promise<void> {
    await this.write(["events"], async (tx) => {
      await tx.objectStore("events").add({ runId, event });
    });
  }

  /** Records a live edit (the run's input: kept by truncateAfter, re-applied at its step on resume). */
  async appendEdit(runId: string, edit: ConfigEdit): Promise<void> {
    await this.write(["edits"], async (tx) => {
      await tx.objectStore("edits").add({ runId, edit });
    });
  }

  /** Saves a checkpoint and keeps only the newest `keepCheckpoints` of the run. */
  async saveCheckpoint(runId: string, ck: CheckpointInfo & { bytes: Uint8Array }): Promise<void> {
    const rank = PHASE_RANK[ck.phase];
    const rec: CheckpointRecord = {
      runId,
      phase: ck.phase,
      rank,
      step: ck.step,
      bytes: ck.bytes,
      createdAt: Date.now(),
    };
    await this.write(["checkpoints"], async (tx) => {
      const store = tx.objectStore("checkpoints");
      await store.put(rec);
      const keys = await store.getAllKeys(runRange(runId));
      for (const [r, s] of checkpointsToDrop(
        keys.map(([, r, s]) => [r, s] as StepKey),
        this.keepCheckpoints,
      )) {
        await store.delete([runId, r, s]);
      }
    });
  }

  /** The newest checkpoint of a run (latest phase, then highest step), or undefined. */
  async latestCheckpoint(runId: string): Promise<CheckpointRecord | undefined> {
    const cursor = await this.db.transaction("checkpoints").store.openCursor(runRange(runId), "prev");
    return cursor?.value;
  }

  /** Where the newest checkpoint of a run was saved (keys only: no bytes are read). */
  async latestCheckpointPoint(runId: string): Promise<CheckpointInfo | undefined> {
    const cursor = await this.db.transaction("checkpoints").store.openKeyCursor(runRange(runId), "prev");
    if (!cursor) return undefined;
    const [, rank, step] = cursor.key as [string, number, number];
    const phase = (Object.keys(PHASE_RANK) as Phase[]).find((p) => PHASE_RANK[p] === rank) ?? "rl";
    return { phase, step };
  }

  async listRuns(): Promise<RunMeta[]> {
    return (await this.db.getAll("runs")).sort((a, b) => b.createdAt - a.createdAt);
  }

  /** The multi-seed groups, oldest first. */
  async listGroups(): Promise<RunGroupRecord[]> {
    return (await this.db.getAll("groups")).sort((a, b) => a.createdAt - b.createdAt);
  }

  /** Everything of a run in run order, or undefined when there is no such run. */
  async loadRun(runId: string): Promise<LoadedRun | undefined> {
    const tx = this.db.transaction(["runs", "edits", "events", "metrics", "samples", "groups"]);
    const [run, edits, events, rows, samples, groups] = await Promise.all([
      tx.objectStore("runs").get(runId),
      tx.objectStore("edits").index("byRun").getAll(runId),
      tx.objectStore("events").index("byRun").getAll(runId),
      tx.objectStore("metrics").getAll(runRange(runId)),
      tx.objectStore("samples").getAll(runRange(runId)),
      tx.objectStore("groups").getAll(),
    ]);
    if (!run) return undefined;
    const group = groupRefs(groups).get(runId);
    return {
      run,
      ...(group ? { group } : {}),
      // Runs stored by older labs have edits without a phase (rl/run/run-bundle.ts phasedEdits).
      edits: phasedEdits(
        edits.map((e) => e.edit),
        events.map((e) => e.event),
      ),
      events: events.map((e) => e.event),
      rows: rows.map((r) => r.row),
      samples: samples.map((s) => s.sample),
    };
  }

  /**
   * Resume: keeps what the checkpoint {phase, step} covers (rows of earlier phases and rows
   * 0..step-1 of its phase, and the same for samples and events) and deletes the later rows,
   * samples, events and checkpoints, which the resumed run recomputes. Edits are kept.
   */
  async truncateAfter(runId: string, phase: Phase, step: number): Promise<void> {
    const rank = PHASE_RANK[phase];
    const ck = { phase, step };
    await this.write(["runs", "metrics", "samples", "events", "checkpoints"], async (tx) => {
      await tx.objectStore("metrics").delete(fromRange(runId, rank, step));
      await tx.objectStore("samples").delete(fromRange(runId, rank, step));
      await tx.objectStore("checkpoints").delete(fromRange(runId, rank, step + 1));
      let cursor = await tx.objectStore("events").index("byRun").openCursor(runId);
      while (cursor) {
        if (isAfterCheckpoint(cursor.value.event.phase, cursor.value.event.step, ck)) await cursor.delete();
        cursor = await cursor.continue();
      }
      // The summary is rebuilt from the rows that remain.
      const runs = tx.objectStore("runs");
      const run = await runs.get(runId);
      if (!run) throw new Error(`no run ${runId}`);
      const rows = await tx.objectStore("metrics").getAll(runRange(runId));
      const summary = rows.reduce((s, r) => updateSummary(s, r.row), emptySummary());
      await runs.put({ ...run, summary, updatedAt: Date.now() });
    });
  }

  /** Deletes a run and everything stored for it, and takes it out of its group. */
  async deleteRun(runId: string): Promise<void> {
    const tx = this.db.transaction(ALL_STORES, "readwrite");
    const byRun = async (name: "edits" | "events") => {
      let cursor = await tx.objectStore(name).index("byRun").openCursor(runId);
      while (cursor) {
        await cursor.delete();
        cursor = await cursor.continue();
      }
    };
    const leaveGroup = async () => {
      const groups = tx.objectStore("groups");
      for (const g of await groups.getAll()) {
        if (!g.members.some((m) => m.runId === runId)) continue;
        const left = removeGroupMember(g, runId);
        await (left ? groups.put(left) : groups.delete(g.id));
      }
    };
    await Promise.all([
      leaveGroup(),
      tx.objectStore("runs").delete(runId),
      tx.objectStore("metrics").delete(runRange(runId)),
      tx.objectStore("samples").delete(runRange(runId)),
      tx.objectStore("checkpoints").delete(runRange(runId)),
      byRun("edits"),
      byRun("events"),
      tx.done,
    ]);
  }

  /** Deletes a multi-seed group and every member run. */
  async deleteGroup(groupId: string): Promise<void> {
    const group = await this.db.get("groups", groupId);
    if (!group) throw new Error(`no group ${groupId}`);
    for (const m of group.members) await this.deleteRun(m.runId);
    await this.db.delete("groups", groupId);
  }

  /**
   * Stores a run brought from elsewhere (an imported bundle, or a link's results), status
   * "imported"; its weights become a checkpoint at its last row. Returns the new run.
   */
  async importRun(data: RunData, source: RunMeta["source"] = "bundle"): Promise<RunMeta> {
    const created = Date.parse(data.createdAt);
    const run = await this.createRun({
      name: data.name,
      config: data.config,
      createdAt: Number.isNaN(created) ? Date.now() : created,
      status: "imported",
      source,
      engine: data.engine,
    });
    await this.write(["runs", "edits", "events", "metrics", "samples"], async (tx) => {
      let summary = emptySummary();
      for (const row of data.metrics) {
        await tx
          .objectStore("metrics")
          .put({ runId: run.id, rank: PHASE_RANK[row.phase], step: row.step, row });
        summary = updateSummary(summary, row);
      }
      const counters = new Map<number, number>();
      for (const sample of data.samples) {
        const index = counters.get(sample.step) ?? 0;
        counters.set(sample.step, index + 1);
        await tx
          .objectStore("samples")
          .put({ runId: run.id, rank: PHASE_RANK.rl, step: sample.step, index, sample });
      }
      for (const edit of data.edits) await tx.objectStore("edits").add({ runId: run.id, edit });
      for (const event of data.events) await tx.objectStore("events").add({ runId: run.id, event });
      await tx.objectStore("runs").put({ ...run, summary });
      run.summary = summary;
    });
    const last = data.metrics.at(-1);
    if (data.weights && last) {
      await this.saveCheckpoint(run.id, { phase: last.phase, step: last.step + 1, bytes: data.weights });
    }
    return run;
  }

  /** A run in bundle shape (for rl/run/run-bundle.ts encodeBundle), with its latest checkpoint as weights if asked. */
  async exportRun(runId: string, opts: { weights?: boolean } = {}): Promise<RunData | undefined> {
    const loaded = await this.loadRun(runId);
    if (!loaded) return undefined;
    const out: RunData = {
      name: loaded.run.name,
      createdAt: new Date(loaded.run.createdAt).toISOString(),
      config: loaded.run.config,
      edits: loaded.edits,
      metrics: loaded.rows,
      samples: loaded.samples,
      events: loaded.events,
    };
    if (opts.weights) {
      const ck = await this.latestCheckpoint(runId);
      if (ck) out.weights = ck.bytes;
    }
    return out;
  }

  /** The browser's estimate of this origin's storage use and quota. */
  async usage(): Promise<StorageUsage> {
    const storage = typeof navigator === "undefined" ? undefined : navigator.storage;
    const est = storage?.estimate ? await storage.estimate().catch(() => ({}) as StorageEstimate) : {};
    const persisted = storage?.persisted ? await storage.persisted().catch(() => false) : false;
    return { usage: est.usage, quota: est.quota, persisted };
  }
}

/**
 * Asks the browser to keep this origin's storage under pressure (call it from the page: the
 * Storage API's persist() is not available in workers). Resolves to whether storage is persistent.
 */
export async function requestPersistence(): Promise<boolean> {
  const storage = typeof navigator === "undefined" ? undefined : navigator.storage;
  if (!storage?.persist) return false;
  try {
    if (storage.persisted && (await storage.persisted())) return true;
    return await storage.persist();
  } catch {
    return false;
  }
}

/** Opens (creating or upgrading) the lab's database. */
export async function openRunStore(name = STORE_DB_NAME, opts: RunStoreOptions = {}): Promise<RunStore> {
  if (typeof indexedDB === "undefined") {
    throw new Error(
      "IndexedDB is not available here, so runs cannot be saved (private window or an old browser?)",
    );
  }
  const db = await openDB<LabDB>(name, STORE_DB_VERSION, {
    upgrade(db, oldVersion) {
      if (oldVersion < 1) {
        db.createObjectStore("runs", { keyPath: "id" });
        db.createObjectStore("edits", { autoIncrement: true }).createIndex("byRun", "runId");
        db.createObjectStore("events", { autoIncrement: true }).createIndex("byRun", "runId");
        db.createObjectStore("metrics", { keyPath: ["runId", "rank", "step"] });
        db.createObjectStore("samples", { keyPath: ["runId", "rank", "step", "index"] });
        db.createObjectStore("checkpoints", { keyPath: ["runId", "rank", "step"] });
      }
      if (oldVersion < 2) db.createObjectStore("groups", { keyPath: "id" });
    },
  });
  return new RunStore(db, opts);
}
