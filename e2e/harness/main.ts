// A bare page that drives the trainer worker's comlink API directly (no UI), so the e2e test
// checks the engine in Chromium: WebGPU in a dedicated worker, the QuickJS pool in nested
// workers, metrics pushed back through a comlink proxy.
import * as Comlink from "comlink";
import type {
  MetricsRow,
  RunConfig,
  RunEvent,
  RunProgress,
  SampleRecord,
  TrainerApi,
} from "../../workers/api";

const trainer = Comlink.wrap<TrainerApi>(
  new Worker(new URL("../../workers/trainer.worker.ts", import.meta.url), { type: "module" }),
);

interface Collected {
  rows: MetricsRow[];
  samples: SampleRecord[];
  events: RunEvent[];
  progress: RunProgress[];
}
const collected: Collected = { rows: [], samples: [], events: [], progress: [] };

Object.assign(globalThis, {
  collected,
  trainer,
  async startRun(config: RunConfig) {
    const listener = Comlink.proxy({
      row: (r: MetricsRow) => collected.rows.push(r),
      samples: (s: SampleRecord[]) => collected.samples.push(...s),
      event: (e: RunEvent) => collected.events.push(e),
      progress: (p: RunProgress) => collected.progress.push(p),
    });
    return trainer.start({ config }, listener);
  },
});
document.getElementById("status")!.textContent = "ready";
