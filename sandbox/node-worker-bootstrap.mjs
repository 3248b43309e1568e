// Node entry of a sandbox worker thread: worker_threads cannot load .ts, so this registers
// tsx's ESM loader in the thread, imports sandbox/sandbox.worker.ts (the same module the
// browser runs) and serves it over parentPort. Started by sandbox/pool-node.ts.
import { parentPort, workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
const { serveSandbox } = await import(workerData.workerModule);
serveSandbox({
  post: (message) => parentPort.postMessage(message),
  onMessage: (handler) => parentPort.on("message", handler),
});
