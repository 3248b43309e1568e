// The browser side of SandboxPool: each worker is a module Web Worker running
// sandbox/sandbox.worker.ts (Vite bundles it from the `new Worker(new URL(...))` form).
// Smoke-tested in Chromium by the e2e harness.
import { type PoolOptions, SandboxPool, type WorkerFactory } from "./pool.ts";
import type { WorkerToHost } from "./protocol.ts";

export const browserWorkerFactory: WorkerFactory = (events) => {
  const worker = new Worker(new URL("./sandbox.worker.ts", import.meta.url), { type: "module" });
  worker.onmessage = (e: MessageEvent<WorkerToHost>) => events.message(e.data);
  worker.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    events.crash(e.message || "the worker failed");
  };
  worker.onmessageerror = () => events.crash("a message from the worker could not be read");
  return { post: (m) => worker.postMessage(m), terminate: () => worker.terminate() };
};

export function createBrowserSandboxPool(options: Partial<PoolOptions> = {}): SandboxPool {
  return new SandboxPool(browserWorkerFactory, options);
}
