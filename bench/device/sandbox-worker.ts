// The sandbox worker thread of the device-check bundle (bench/device/build.mjs bundles it as
// sandbox-worker.mjs beside QuickJS's wasm): the same module the browser and tsx run
// (sandbox/sandbox.worker.ts), served over parentPort without tsx.
import { parentPort } from "node:worker_threads";
import { serveSandbox } from "../../sandbox/sandbox.worker";

serveSandbox({
  post: (message) => parentPort!.postMessage(message),
  onMessage: (handler) => parentPort!.on("message", handler),
});
