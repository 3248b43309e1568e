// The QuickJS engine environment calls run on: runCode (sandbox/run-code.ts, the same call a
// tool gets: seeded Math.random, the virtual clock, memory, stack and time limits) on modules
// loaded in this thread, because the rollout asks an environment for its next observation
// synchronously, inside the decode loop. A call that grew a module's memory retires it (the
// next call must start from the same heap, as in the pool) and a spare takes its place at
// once while a new spare loads. `prepareEnvEngine()` must have resolved before the first call
// (rl/session.ts and the page's dry run await it). Tested by tasks/env-api/env-api.test.ts.
import type { QuickJSWASMModule } from "quickjs-emscripten-core";
import { loadQuickJS, runCode, shouldReloadModule } from "../../sandbox/run-code.ts";
import type { RunCodeRequest, RunCodeResult } from "../../sandbox/types.ts";

export interface EnvEngine {
  run(request: RunCodeRequest): RunCodeResult;
}

class ModuleEngine implements EnvEngine {
  private spares: QuickJSWASMModule[] = [];
  private loading = 0;

  constructor(private mod: QuickJSWASMModule) {
    this.refill();
  }

  private refill(): void {
    while (this.spares.length + this.loading < 1) {
      this.loading++;
      loadQuickJS()
        .then((m) => this.spares.push(m))
        .catch(() => {})
        .finally(() => this.loading--);
    }
  }

  run(request: RunCodeRequest): RunCodeResult {
    const result = runCode(this.mod, request);
    if (shouldReloadModule(this.mod)) {
      const next = this.spares.shift();
      // Without a spare yet the grown module serves on: the call's limit then sits above a
      // larger free heap, so a memory verdict may come later, never a wrong value.
      if (next) this.mod = next;
      this.refill();
    }
    return result;
  }
}

let engine: ModuleEngine | null = null;
let pending: Promise<EnvEngine> | null = null;

/** Loads the engine (once per thread). */
export function prepareEnvEngine(): Promise<EnvEngine> {
  if (engine) return Promise.resolve(engine);
  if (!pending)
    pending = loadQuickJS().then((m) => {
      engine = new ModuleEngine(m);
      return engine;
    });
  return pending;
}

/** The loaded engine; throws a message saying what to await when it is not loaded yet. */
export function envEngine(): EnvEngine {
  if (!engine)
    throw new Error(
      "the environment engine is not loaded: await prepareEnvEngine() before running a JS environment",
    );
  return engine;
}
