// The sandbox worker: loads the QuickJS module once and answers `run` messages with
// runCode results (sandbox/protocol.ts). In a browser it serves `self` as soon as it loads;
// in Node, sandbox/node-worker-bootstrap.mjs imports it and calls serveSandbox(parentPort).
// A call that breaks the module (a host-stack overflow inside wasm) or grows its memory
// makes it load a new one (a few ms) before the next call, so every call starts from the
// same heap and the memory limit does not depend on what ran before (sandbox/run-code.ts).
// Tested through sandbox/pool.test.ts and sandbox/adversarial.test.ts.
import type { QuickJSWASMModule } from "quickjs-emscripten-core";
import type { HostToWorker, SandboxEndpoint } from "./protocol.ts";
import { loadQuickJS, runCode, shouldReloadModule } from "./run-code.ts";

export function serveSandbox(endpoint: SandboxEndpoint): void {
  let mod: Promise<QuickJSWASMModule> = loadQuickJS();
  mod.then(
    () => endpoint.post({ type: "ready" }),
    (e: unknown) => endpoint.post({ type: "fatal", message: `QuickJS failed to load: ${String(e)}` }),
  );
  endpoint.onMessage(async (message: HostToWorker) => {
    if (message?.type !== "run") return;
    const loaded = await mod;
    endpoint.post({ type: "result", id: message.id, result: runCode(loaded, message.request) });
    if (shouldReloadModule(loaded)) mod = loadQuickJS();
  });
}

declare const WorkerGlobalScope: { new (): unknown; prototype: unknown } | undefined;

if (typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope) {
  const scope = self as unknown as DedicatedWorkerGlobalScope;
  serveSandbox({
    post: (m) => scope.postMessage(m),
    onMessage: (handler) => {
      scope.onmessage = (e: MessageEvent<HostToWorker>) => handler(e.data);
    },
  });
}
