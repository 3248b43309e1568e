// The trainer's web worker: owns the GPUDevice and runs the engine off the UI thread.
// Wiring only (comlink endpoint); the engine lives in kernels/, model/, rl/.
import * as Comlink from "comlink";
import { browserGpu, createGpu, type Gpu, WebGPUUnavailableError } from "../kernels/device";
import type { GpuStatus, TrainerApi } from "./api";

let gpu: Promise<Gpu> | undefined;

function getGpu(): Promise<Gpu> {
  gpu ??= createGpu(browserGpu());
  return gpu;
}

const api: TrainerApi = {
  async gpuStatus(): Promise<GpuStatus> {
    try {
      const { adapter } = await getGpu();
      return { ok: true, adapter };
    } catch (err) {
      gpu = undefined;
      const reason = err instanceof WebGPUUnavailableError ? err.reason : "error";
      return { ok: false, reason, message: (err as Error).message };
    }
  },
};

Comlink.expose(api);
