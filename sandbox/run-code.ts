// runCode: one Sandbox-Fusion-style `run_code` call in a fresh QuickJS runtime + context,
// given a loaded QuickJS module. Pure and synchronous, so it runs in a worker (the pool), in
// Node tests and in a Node fallback alike. Limits per call: heap (setMemoryLimit), stack
// (setMaxStackSize), an interrupt deadline, a cap on promise jobs, output caps. What this
// cannot stop (a long C built-in, a host-stack overflow inside wasm) is the pool's job: it
// races every call against a hard timer. Tested by sandbox/run-code.test.ts.
import variant from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { HELPERS_SOURCE, TOOLS_SOURCE } from "./prelude.ts";
import { validateArgs, validateToolSpec } from "./schema.ts";
import {
  type ErrorKind,
  type JsonValue,
  RUN_DEFAULTS,
  type RunCodeRequest,
  type RunCodeResult,
  type SandboxErrorInfo,
  type SandboxRunner,
  sandboxError,
} from "./types.ts";

/**
 * Memory. QuickJS's own limit (setMemoryLimit) counts allocations, not bytes, in the
 * emscripten build (quickjs-emscripten issues #255/#271), so loadQuickJS gives each module
 * its own WebAssembly.Memory: capped at MODULE_HEAP_MAX_MB for the host's sake, and with a
 * `grow` that refuses to go past the running call's budget (start size + memory_limit_MB),
 * which makes malloc fail and QuickJS throw "out of memory" at the allocation itself.
 */
export const MODULE_HEAP_MAX_MB = 384;
/** A module whose wasm memory grew past this after a call is replaced by a fresh one. */
export const MODULE_RELOAD_MB = 96;
const WASM_PAGE = 65536;

interface GrowthBudget {
  /** Largest wasm memory size, in bytes, that the running call may grow to. */
  limitBytes: number;
  /** A grow was refused since the call started. */
  refused: boolean;
}
const budgets = new WeakMap<QuickJSWASMModule, GrowthBudget>();

/** Loads a fresh, isolated QuickJS wasm module (the sync variant). Do this once per worker. */
export async function loadQuickJS(maxHeapMB = MODULE_HEAP_MAX_MB): Promise<QuickJSWASMModule> {
  const wasmMemory = new WebAssembly.Memory({
    initial: (16 << 20) / WASM_PAGE,
    maximum: Math.floor((maxHeapMB << 20) / WASM_PAGE),
  });
  const budget: GrowthBudget = { limitBytes: Number.POSITIVE_INFINITY, refused: false };
  const grow = wasmMemory.grow.bind(wasmMemory);
  // Emscripten's heap resize calls memory.grow in a try/catch and reports failure to malloc.
  Object.defineProperty(wasmMemory, "grow", {
    value: (pages: number) => {
      if (wasmMemory.buffer.byteLength + pages * WASM_PAGE > budget.limitBytes) {
        budget.refused = true;
        throw new RangeError("the sandbox call's memory budget is spent");
      }
      return grow(pages);
    },
  });
  const mod = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmMemory }));
  budgets.set(mod, budget);
  return mod;
}

// A module whose wasm trapped or overflowed the host stack mid-call may hold corrupted
// memory; it is never used again and its owner loads a new one.
const brokenModules = new WeakSet<QuickJSWASMModule>();

export function isModuleUsable(mod: QuickJSWASMModule): boolean {
  return !brokenModules.has(mod);
}

/** True when the module broke or its memory bloated (wasm memory never shrinks): load a new one. */
export function shouldReloadModule(mod: QuickJSWASMModule): boolean {
  return brokenModules.has(mod) || mod.getWasmMemory().buffer.byteLength > MODULE_RELOAD_MB << 20;
}

/** Time the host gives itself after the deadline to read the value or error out of the VM. */
const POST_PHASE_MS = 100;
/** Extra heap for reading results out after the code hit its memory limit. */
const POST_PHASE_HEAP = 1 << 20;
const MAX_STACK_TEXT = 2000;

export interface ResolvedLimits {
  run_timeout: number;
  memory_limit_MB: number;
  max_output_bytes: number;
}

/** Checks a request's fields; returns the problem (naming the field) or the limits to use. */
export function resolveRequest(request: RunCodeRequest): string | ResolvedLimits {
  if (typeof request !== "object" || request === null) return "request must be an object";
  if (typeof request.code !== "string") return "code: expected string";
  const limits = {
    run_timeout: request.run_timeout ?? RUN_DEFAULTS.run_timeout,
    memory_limit_MB: request.memory_limit_MB ?? RUN_DEFAULTS.memory_limit_MB,
    max_output_bytes: request.max_output_bytes ?? RUN_DEFAULTS.max_output_bytes,
  };
  if (!(typeof limits.run_timeout === "number" && limits.run_timeout > 0 && limits.run_timeout <= 600))
    return `run_timeout: expected seconds in (0, 600], got ${limits.run_timeout}`;
  if (
    !(
      typeof limits.memory_limit_MB === "number" &&
      limits.memory_limit_MB >= 1 &&
      limits.memory_limit_MB <= 1024
    )
  )
    return `memory_limit_MB: expected a number in [1, 1024], got ${limits.memory_limit_MB}`;
  if (!(Number.isInteger(limits.max_output_bytes) && limits.max_output_bytes >= 0))
    return `max_output_bytes: expected a non-negative integer, got ${limits.max_output_bytes}`;
  const tools = request.tools ?? [];
  if (!Array.isArray(tools)) return "tools: expected an array";
  const names = new Set<string>();
  for (const tool of tools) {
    const problem = validateToolSpec(tool);
    if (problem) return `tools: ${problem}`;
    if (names.has(tool.name)) return `tools: duplicate tool name ${tool.name}`;
    names.add(tool.name);
  }
  return limits;
}

/** stdout/stderr with a byte cap each; past the cap the stream closes and the VM stops formatting. */
class OutputCapture {
  readonly streams = ["", "", ""];
  readonly closed = [false, false, false];
  truncated = false;
  constructor(private readonly cap: number) {}

  write(stream: number, text: string): boolean {
    const room = this.cap - this.streams[stream].length;
    if (text.length <= room) {
      this.streams[stream] += text;
      return true;
    }
    this.streams[stream] += text.slice(0, Math.max(0, room));
    this.truncated = true;
    this.closed[stream] = true;
    return false;
  }
}

function classify(message: string): ErrorKind {
  if (message.includes("out of memory")) return "MemoryLimit";
  if (message.includes("stack overflow") || message.includes("Maximum call stack")) return "StackOverflow";
  return "Exception";
}

function lineOf(stack: string | undefined): number | undefined {
  const m = stack?.match(/main\.js:(\d+)/);
  return m ? Number(m[1]) : undefined;
}

/** Runs `request.code` in a fresh runtime and context of `mod`. Never throws. */
export function runCode(mod: QuickJSWASMModule, request: RunCodeRequest): RunCodeResult {
  const t0 = performance.now();
  const limits = resolveRequest(request);
  if (typeof limits === "string") return sandboxError(limits, "InvalidRequest");
  if (brokenModules.has(mod))
    return sandboxError("the QuickJS module crashed in an earlier call; load a new one");
  const tools = request.tools ?? [];
  const heapBytes = Math.floor(limits.memory_limit_MB * 1024 * 1024);
  const out = new OutputCapture(limits.max_output_bytes);

  let phaseDeadline = t0 + limits.run_timeout * 1000;
  let interrupted = false;
  // The memory limit bounds how far this call may grow the module's wasm memory: the guarded
  // grow (loadQuickJS) refuses past it; for a module loaded elsewhere the interrupt handler
  // checks the growth instead. Free memory already in the module's heap comes on top.
  const memory = mod.getWasmMemory();
  const startBytes = memory.buffer.byteLength;
  const budget = budgets.get(mod) ?? { limitBytes: Number.POSITIVE_INFINITY, refused: false };
  // Host-side work inside a call (argument checks) must not fail on the call's budget.
  const unbudgeted = <T>(f: () => T): T => {
    const saved = budget.limitBytes;
    budget.limitBytes = Number.POSITIVE_INFINITY;
    try {
      return f();
    } finally {
      budget.limitBytes = saved;
    }
  };
  let memoryExceeded = false;
  const overMemory = () => {
    if (memory.buffer.byteLength - startBytes > heapBytes) memoryExceeded = true;
    return memoryExceeded;
  };
  let rt: QuickJSRuntime | undefined;
  let ctx: QuickJSContext | undefined;
  const handles: QuickJSHandle[] = [];
  const own = (h: QuickJSHandle) => {
    handles.push(h);
    return h;
  };

  let value: JsonValue | undefined;
  let error: SandboxErrorInfo | undefined;
  let valueTruncated = false;
  let crash: string | undefined;
  try {
    budget.limitBytes = startBytes + heapBytes;
    budget.refused = false;
    rt = mod.newRuntime();
    rt.setMemoryLimit(heapBytes);
    rt.setMaxStackSize(RUN_DEFAULTS.max_stack_bytes);
    rt.setInterruptHandler(() => {
      if (overMemory()) return true;
      if (performance.now() <= phaseDeadline) return false;
      interrupted = true;
      return true;
    });
    const vm = rt.newContext();
    ctx = vm;

    // The helpers are compiled on first use: most calls print and return primitives only.
    type HelperName = "show" | "encode" | "describe";
    let helpers: Record<HelperName, QuickJSHandle> | undefined;
    const helper = (name: HelperName, arg: QuickJSHandle): string | undefined => {
      if (!helpers) {
        const compiled = vm.evalCode(HELPERS_SOURCE, "helpers.js", { type: "global" });
        if (compiled.error) return void compiled.error.dispose();
        const made = vm.callFunction(own(compiled.value), vm.undefined);
        if (made.error) return void made.error.dispose();
        const table = own(made.value);
        helpers = {
          show: own(vm.getProp(table, "show")),
          encode: own(vm.getProp(table, "encode")),
          describe: own(vm.getProp(table, "describe")),
        };
      }
      const called = vm.callFunction(helpers[name], vm.undefined, arg);
      if (called.error) return void called.error.dispose();
      const text = vm.typeof(called.value) === "string" ? vm.getString(called.value) : undefined;
      called.value.dispose();
      return text;
    };
    const show = (h: QuickJSHandle): string => {
      const type = vm.typeof(h);
      if (type === "string") return vm.getString(h);
      if (type === "number") return String(vm.getNumber(h));
      if (type === "undefined" || type === "boolean") return String(vm.dump(h));
      return helper("show", h) ?? `[unprintable ${type}]`;
    };

    // console: host functions writing into the capped streams; nothing else of the host is reachable.
    const consoleObject = own(vm.newObject());
    for (const [name, stream] of [
      ["log", 1],
      ["info", 1],
      ["debug", 1],
      ["warn", 2],
      ["error", 2],
    ] as const) {
      const fn = vm.newFunction(name, (...args: QuickJSHandle[]) => {
        if (!out.closed[stream]) out.write(stream, `${args.map(show).join(" ")}\n`);
      });
      vm.setProp(consoleObject, name, fn);
      fn.dispose();
    }
    vm.setProp(vm.global, "console", consoleObject);

    let thrown: QuickJSHandle | undefined;
    if (tools.length > 0) {
      const check = own(
        vm.newFunction("check", (i, a) =>
          unbudgeted(() => {
            const tool = tools[vm.getNumber(i)];
            const text = vm.getString(a);
            let problem: string | undefined;
            try {
              problem = validateArgs(tool.parameters, text === "" ? undefined : JSON.parse(text));
            } catch {
              problem = "arguments: not JSON-serializable";
            }
            return vm.newString(problem ? `${tool.name}: ${problem}` : "");
          }),
        ),
      );
      const toolsJson = own(vm.newString(JSON.stringify(tools.map((t) => ({ name: t.name, body: t.body })))));
      const compiled = vm.evalCode(TOOLS_SOURCE, "tools.js", { type: "global" });
      if (compiled.error) thrown = own(compiled.error);
      else {
        const setup = vm.callFunction(own(compiled.value), vm.undefined, check, toolsJson);
        if (setup.error) thrown = own(setup.error);
        else setup.value.dispose();
      }
    }

    // Main phase: the user's code, then the promise jobs it queued (bounded), then its promise.
    let result: QuickJSHandle | undefined;
    let jobLimitHit = false;
    let neverSettled = false;
    if (!thrown) {
      const evaluated = vm.evalCode(request.code, "main.js", { type: "global" });
      if (evaluated.error) thrown = own(evaluated.error);
      else result = own(evaluated.value);
      let jobs = 0;
      while (!interrupted && rt.hasPendingJob()) {
        if (jobs >= RUN_DEFAULTS.max_jobs) {
          jobLimitHit = true;
          break;
        }
        const ran = rt.executePendingJobs(Math.min(1000, RUN_DEFAULTS.max_jobs - jobs));
        if (ran.error) {
          ran.error.dispose();
          jobs += 1;
        } else jobs += ran.value;
        if (performance.now() > phaseDeadline) interrupted = true;
      }
      if (result && !thrown) {
        const state = vm.getPromiseState(result);
        if (state.type === "fulfilled" && !state.notAPromise) result = own(state.value);
        else if (state.type === "rejected") {
          thrown = own(state.error);
          result = undefined;
        } else if (state.type === "pending") {
          result = undefined;
          neverSettled = !interrupted && !jobLimitHit;
        }
      }
    }
    const timedOut = !overMemory() && (interrupted || jobLimitHit);
    // Once malloc has failed, whatever the code throws (QuickJS may even throw null when it
    // cannot allocate the error) is a consequence of the memory limit.
    const memoryRefused = budget.refused;

    // Post phase: a short deadline and a little heap of its own, to read results out.
    phaseDeadline = performance.now() + POST_PHASE_MS;
    interrupted = false;
    rt.setMemoryLimit(heapBytes + POST_PHASE_HEAP);
    budget.limitBytes = Math.max(budget.limitBytes, memory.buffer.byteLength) + POST_PHASE_HEAP;

    if (memoryExceeded) {
      error = {
        kind: "MemoryLimit",
        name: "InternalError",
        message: `out of memory (memory_limit_MB = ${limits.memory_limit_MB})`,
      };
    } else if (timedOut) {
      error = {
        kind: "Timeout",
        name: "TimeoutError",
        message: jobLimitHit
          ? `more than ${RUN_DEFAULTS.max_jobs} promise jobs (runaway promise chain)`
          : `execution exceeded the time limit of ${limits.run_timeout} s`,
      };
    } else if (neverSettled) {
      error = {
        kind: "Exception",
        name: "Error",
        message: "the returned promise never settled (the sandbox has no timers or I/O)",
      };
    } else if (thrown) {
      const text = helper("describe", thrown);
      let d: { name?: string; message?: string; stack?: string } = {};
      if (text !== undefined) d = JSON.parse(text);
      else {
        // The VM could not describe its own error (out of memory again, or a thrown value
        // whose getters loop); fall back to the raw dump, which reads properties directly.
        let raw: unknown;
        try {
          raw = vm.dump(thrown);
        } catch {
          raw = { name: "InternalError", message: "an error that could not be read out of the sandbox" };
        }
        d =
          typeof raw === "object" && raw !== null
            ? (raw as typeof d)
            : { name: "Error", message: String(raw) };
      }
      const name = String(d.name ?? "Error");
      const message = String(d.message ?? "");
      const stack = d.stack ? d.stack.slice(0, MAX_STACK_TEXT) : undefined;
      let kind = interrupted ? "Timeout" : classify(message);
      if (kind === "Exception" && memoryRefused) kind = "MemoryLimit";
      error = {
        kind,
        name,
        message,
        stack,
        line: lineOf(stack),
      };
    } else if (result) {
      const read = readValue(vm, result, limits.max_output_bytes, helper);
      if (interrupted)
        error = { kind: "Timeout", name: "TimeoutError", message: "reading the value out timed out" };
      else {
        value = read.value;
        valueTruncated = read.truncated;
      }
    }
  } catch (hostError) {
    // QuickJS overflowed the host's native stack (deep recursion inside a C built-in such as
    // JSON.stringify), or the wasm trapped: this module cannot be trusted any more.
    brokenModules.add(mod);
    const message =
      hostError instanceof Error ? `${hostError.name}: ${hostError.message}` : String(hostError);
    // A host-stack overflow is the code's doing (a StackOverflow); anything else is the sandbox's.
    if (message.includes("call stack"))
      error = { kind: "StackOverflow", name: "InternalError", message: "stack overflow (inside a built-in)" };
    else crash = `the interpreter crashed: ${message}`;
  } finally {
    budget.limitBytes = Number.POSITIVE_INFINITY;
    if (!brokenModules.has(mod)) {
      try {
        for (const h of handles) if (h.alive) h.dispose();
        ctx?.dispose();
        rt?.dispose();
      } catch {
        brokenModules.add(mod);
      }
    }
  }
  if (crash) return sandboxError(crash, "SandboxError", (performance.now() - t0) / 1000);
  return finish(t0, out, value, error, valueTruncated);
}

/** Reads the result out: primitives directly, anything else as JSON text made inside the VM. */
function readValue(
  vm: QuickJSContext,
  h: QuickJSHandle,
  cap: number,
  helper: (name: "encode", arg: QuickJSHandle) => string | undefined,
): { value?: JsonValue; truncated: boolean } {
  const type = vm.typeof(h);
  if (type === "undefined") return { truncated: false };
  if (type === "number") {
    const n = vm.getNumber(h);
    return { value: Number.isFinite(n) ? n : String(n), truncated: false };
  }
  if (type === "boolean") return { value: vm.dump(h) as boolean, truncated: false };
  if (type === "string") {
    const s = vm.getString(h);
    return s.length > cap ? { value: headTail(s, cap), truncated: true } : { value: s, truncated: false };
  }
  const text = helper("encode", h);
  if (text === undefined) return { truncated: false };
  if (text.length <= cap) return { value: JSON.parse(text) as JsonValue, truncated: false };
  // A long string is cut as a string; anything else as its JSON text.
  const long = text.startsWith('"') ? (JSON.parse(text) as string) : text;
  return { value: headTail(long, cap), truncated: true };
}

function finish(
  t0: number,
  out: OutputCapture,
  value: JsonValue | undefined,
  error: SandboxErrorInfo | undefined,
  valueTruncated: boolean,
): RunCodeResult {
  const execution_time = (performance.now() - t0) / 1000;
  const [, stdout, stderr] = out.streams;
  const truncated = out.truncated || valueTruncated;
  if (!error) {
    const r: RunCodeResult = {
      status: "Success",
      run_result: { status: "Finished", execution_time, return_code: 0, stdout, stderr },
      truncated,
    };
    if (value !== undefined) r.value = value;
    return r;
  }
  const timeout = error.kind === "Timeout" || error.kind === "HardKill";
  const report = `Uncaught ${error.name}: ${error.message}\n${error.stack ?? ""}`.slice(0, MAX_STACK_TEXT);
  return {
    status: "Failed",
    run_result: {
      status: timeout ? "TimeLimitExceeded" : "Error",
      execution_time,
      return_code: timeout ? null : 1,
      stdout,
      stderr: stderr + report,
    },
    error,
    truncated,
  };
}

/** Keeps the head and the tail of a long text around "...", at most `max` characters. */
export function headTail(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 3) return text.slice(0, max);
  const keep = max - 3;
  const head = Math.ceil(keep / 2);
  return `${text.slice(0, head)}...${text.slice(text.length - (keep - head))}`;
}

/**
 * The in-process runner: the same runCode on a module loaded in this thread, reloaded when a
 * call breaks it. No hard timer can stop a long C built-in here, so untrusted code belongs in
 * the pool; this serves tests and a Node fallback.
 */
export class InProcessSandbox implements SandboxRunner {
  private constructor(private mod: QuickJSWASMModule) {}

  static async create(): Promise<InProcessSandbox> {
    return new InProcessSandbox(await loadQuickJS());
  }

  async run(request: RunCodeRequest): Promise<RunCodeResult> {
    const result = runCode(this.mod, request);
    if (shouldReloadModule(this.mod)) this.mod = await loadQuickJS();
    return result;
  }
}
