// The types shared by the UI and the engine's workers: the only engine-facing import the app has.
import type { AdapterSummary } from "../kernels/device";

export type { AdapterSummary };

/** What the trainer worker reports about WebGPU: the adapter, or why there is none. */
export type GpuStatus =
  | { ok: true; adapter: AdapterSummary }
  | { ok: false; reason: string; message: string };

/** The trainer worker's comlink surface (grows with the RL loop). */
export interface TrainerApi {
  gpuStatus(): Promise<GpuStatus>;
}
