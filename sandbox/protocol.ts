// The message protocol between SandboxPool (host) and sandbox/sandbox.worker.ts: plain
// structured-clone objects with ids, the same in a browser Worker and in Node worker_threads.
// One job per worker at a time, so no multiplexing beyond the id check.
import type { RunCodeRequest, RunCodeResult } from "./types.ts";

export type HostToWorker = { type: "run"; id: number; request: RunCodeRequest };

export type WorkerToHost =
  | { type: "ready" }
  | { type: "result"; id: number; result: RunCodeResult }
  /** The worker cannot serve (the QuickJS module failed to load). */
  | { type: "fatal"; message: string };

/** The worker side of a channel: `self` in a browser worker, `parentPort` in Node. */
export interface SandboxEndpoint {
  post(message: WorkerToHost): void;
  onMessage(handler: (message: HostToWorker) => void): void;
}
