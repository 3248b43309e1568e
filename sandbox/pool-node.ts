// The Node side of SandboxPool: each worker is a worker_threads thread started from
// sandbox/node-worker-bootstrap.mjs, which runs sandbox/sandbox.worker.ts through tsx.
// Node-only (imports node:worker_threads); the browser uses sandbox/pool-browser.ts.
// Tested by sandbox/pool.test.ts and sandbox/adversarial.test.ts.
import { Worker } from "node:worker_threads";
import { type PoolOptions, SandboxPool, type WorkerFactory } from "./pool.ts";
import type { WorkerToHost } from "./protocol.ts";

export const NODE_BOOTSTRAP = new URL("./node-worker-bootstrap.mjs", import.meta.url);
export const SANDBOX_WORKER_MODULE = new URL("./sandbox.worker.ts", import.meta.url).href;

/** Starts worker_threads from `entry` (a script URL) with `workerData`; exported so tests can start other scripts. */
export function nodeWorkerFactory(
  entry: URL | string = NODE_BOOTSTRAP,
  workerData: unknown = { workerModule: SANDBOX_WORKER_MODULE },
): WorkerFactory {
  return (events) => {
    const worker = new Worker(entry, { workerData, eval: typeof entry === "string" });
    let terminated = false;
    worker.on("message", (m: WorkerToHost) => events.message(m));
    worker.on("error", (e) => events.crash(e instanceof Error ? e.message : String(e)));
    worker.on("exit", (code) => {
      if (!terminated) events.crash(`the worker exited with code ${code}`);
    });
    return {
      post: (m) => worker.postMessage(m),
      terminate: () => {
        terminated = true;
        void worker.terminate();
      },
    };
  };
}

export function createNodeSandboxPool(options: Partial<PoolOptions> = {}): SandboxPool {
  return new SandboxPool(nodeWorkerFactory(), options);
}
