// A bare page that drives the trainer worker's comlink API directly (no UI), so the e2e tests
// check the engine in Chromium: WebGPU in a dedicated worker, the QuickJS pool in nested
// workers, metrics pushed back through a comlink proxy. Used by e2e/engine.e2e.test.ts
// (startRun, trainer, collected) and e2e/runs.e2e.test.ts (resumeRun, share links, bundles,
// the store's checkpoint keys).
import * as Comlink from "comlink";
import type { ConfigEdit } from "../../config";
import { decodeLink, encodeLink } from "../../config/link";
import type {
  MetricsRow,
  RunConfig,
  RunEvent,
  RunProgress,
  SampleRecord,
  StartOptions,
  TrainerApi,
} from "../../workers/api";
import { STORE_DB_NAME } from "../../workers/store";

const trainer = Comlink.wrap<TrainerApi>(
  new Worker(new URL("../../workers/trainer.worker.ts", import.meta.url), { type: "module" }),
);

interface Collected {
  rows: MetricsRow[];
  samples: SampleRecord[];
  events: RunEvent[];
  progress: RunProgress[];
  /**
   * rows.length when the first progress push arrived. All pushes come in order over one
   * MessagePort, and a resumed run replays its stored rows before it pushes any progress,
   * so rows[0 .. rowsBeforeProgress) are the replayed ones. -1 until a progress push.
   */
  rowsBeforeProgress: number;
  /** rows.length when each event arrived (same index as events). */
  rowsAtEvent: number[];
}
const collected: Collected = {
  rows: [],
  samples: [],
  events: [],
  progress: [],
  rowsBeforeProgress: -1,
  rowsAtEvent: [],
};

function listener() {
  return Comlink.proxy({
    row: (r: MetricsRow) => collected.rows.push(r),
    samples: (s: SampleRecord[]) => collected.samples.push(...s),
    event: (e: RunEvent) => {
      collected.events.push(e);
      collected.rowsAtEvent.push(collected.rows.length);
    },
    progress: (p: RunProgress) => {
      if (collected.rowsBeforeProgress < 0) collected.rowsBeforeProgress = collected.rows.length;
      collected.progress.push(p);
    },
  });
}

/** The checkpoint keys ([phase rank, step]) the store holds for a run, read from IndexedDB directly. */
function checkpointKeys(runId: string): Promise<[number, number][]> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(STORE_DB_NAME);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const req = db
        .transaction("checkpoints", "readonly")
        .objectStore("checkpoints")
        .getAllKeys(IDBKeyRange.bound([runId], [runId, []]));
      req.onerror = () => reject(req.error);
      req.onsuccess = () => {
        db.close();
        resolve((req.result as [string, number, number][]).map(([, rank, step]) => [rank, step]));
      };
    };
  });
}

/** The last bundle exportBundleBytes made, kept in the page so tests can corrupt and import it. */
let lastBundle: Uint8Array | undefined;

const runsLab = {
  collected,
  trainer,
  checkpointKeys,
  async startRun(config: RunConfig, options: Omit<StartOptions, "config" | "resumeRunId"> = {}) {
    return trainer.start({ ...options, config }, listener());
  },
  async resumeRun(runId: string) {
    return trainer.start({ resumeRunId: runId }, listener());
  },
  encodeLink(config: RunConfig, edits: ConfigEdit[]) {
    return encodeLink({ config, edits });
  },
  decodeLink(link: string) {
    return decodeLink(link);
  },
  /** Exports a run's bundle, keeps it in the page and returns its bytes as numbers. */
  async exportBundleBytes(runId: string, weights = false): Promise<number[]> {
    lastBundle = await trainer.exportBundle(runId, weights);
    return Array.from(lastBundle);
  },
  /** Imports bytes (or the last exported bundle, corrupted by `mutate`): the stored run, or the error's message. */
  async importBytes(
    bytes: number[] | null,
    mutate?: "truncate" | "flip",
  ): Promise<{ ok: true; id: string; name: string; status: string } | { ok: false; error: string }> {
    let b = bytes ? new Uint8Array(bytes) : new Uint8Array(lastBundle ?? []);
    if (mutate === "truncate") b = b.slice(0, Math.floor(b.length / 2));
    if (mutate === "flip") {
      b = b.slice();
      for (let i = Math.floor(b.length / 3); i < b.length; i += 97) b[i] ^= 0xff;
    }
    try {
      const run = await trainer.importBundle(b);
      return { ok: true, id: run.id, name: run.name, status: run.status };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  },
};
// Top-level names for engine.e2e.test.ts; `runsLab` for runs.e2e.test.ts.
Object.assign(globalThis, runsLab, { runsLab });
document.getElementById("status")!.textContent = "ready";
