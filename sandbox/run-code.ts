// runCode: one Sandbox-Fusion-style `run_code` call in a fresh QuickJS runtime + context,
// given a loaded QuickJS module. Pure and synchronous, so it runs in a worker (the pool), in
// Node tests and in a Node fallback alike. Limits per call: heap (a growth budget over a heap
// every call starts from alike, see loadQuickJS), stack (setMaxStackSize), an interrupt
// deadline, a cap on promise jobs, output caps (applied inside the VM before anything is
// copied out). Strings, values and errors come back exactly as the program made them (NUL
// and lone surrogates included). What this cannot stop (a long C built-in, a host-stack
// overflow inside wasm) is the pool's job: it races every call against a hard timer.
// Tested by sandbox/run-code.test.ts and sandbox/exact.serial.test.ts.
import variant from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { BOUNDED_SOURCE, HELPERS_SOURCE, TOOLS_SOURCE } from "./prelude.ts";
import { validateArgs, validateToolSpec } from "./schema.ts";
import {
  type ErrorKind,
  type JsonValue,
  RUN_DEFAULTS,
  type RunCodeRequest,
  type RunCodeResult,
  SANDBOX_CLOCK_MS,
  type SandboxErrorInfo,
  type SandboxRunner,
  sandboxError,
} from "./types.ts";

/**
 * Memory. QuickJS's own limit (setMemoryLimit) counts allocations, not bytes, in the
 * emscripten build (quickjs-emscripten bug reports #255 and #271): it stops one huge allocation and
 * nothing else. So loadQuickJS gives each module its own WebAssembly.Memory with a `grow`
 * that refuses to go past the running call's budget, which makes malloc fail and QuickJS
 * throw "out of memory" at the allocation itself. For that budget to mean the same thing on
 * every call, every call must start from the same heap: loadQuickJS fills the fresh
 * module's free heap with a ballast that is never freed, all but HEAP_SLACK_BYTES of it, so
 * a call finds HEAP_SLACK_BYTES free and may grow the memory by memory_limit_MB less that
 * (a call with a smaller limit first takes the difference out of the slack). A call that
 * grew the memory leaves free heap behind (wasm memory never shrinks), so its owner loads a
 * fresh module before the next call (shouldReloadModule). Calls that stay in the slack free
 * everything they took when their runtime is disposed and leave the heap as they found it.
 * The same program therefore gets the same verdict on a fresh and on a used worker.
 */
export const MODULE_HEAP_MAX_MB = 384;
/** Free heap every call starts with; calls that need no more never make the module reload. */
export const HEAP_SLACK_BYTES = 4 << 20;
/** Free pieces smaller than this are left out of the ballast. */
const FILL_MIN_BYTES = 64 << 10;
const WASM_PAGE = 65536;

interface Allocator {
  _malloc(bytes: number): number;
  _free(pointer: number): void;
}

interface HeapState {
  /** Wasm memory size, in bytes, right after the ballast: where every call starts. */
  baseBytes: number;
  /** Largest wasm memory size, in bytes, that the running call may grow to. */
  limitBytes: number;
  /** The last grow was refused (a later successful grow clears it). */
  refused: boolean;
  alloc: Allocator;
}
const heaps = new WeakMap<QuickJSWASMModule, HeapState>();

/** Size of the largest block malloc can give without growing the memory (4 KiB precision). */
function largestFit(alloc: Allocator, upTo: number): number {
  let lo = 0;
  let hi = upTo;
  while (hi - lo > 4096) {
    const mid = Math.floor((lo + hi) / 2);
    const p = alloc._malloc(mid);
    if (p) {
      alloc._free(p);
      lo = mid;
    } else hi = mid;
  }
  return lo;
}

/** Loads a fresh, isolated QuickJS wasm module (the sync variant) with its heap filled. */
export async function loadQuickJS(maxHeapMB = MODULE_HEAP_MAX_MB): Promise<QuickJSWASMModule> {
  const wasmMemory = new WebAssembly.Memory({
    initial: (16 << 20) / WASM_PAGE,
    maximum: Math.floor((maxHeapMB << 20) / WASM_PAGE),
  });
  const heap = { baseBytes: 0, limitBytes: Number.POSITIVE_INFINITY, refused: false } as HeapState;
  const grow = wasmMemory.grow.bind(wasmMemory);
  // Emscripten's heap resize calls memory.grow in a try/catch (trying a few sizes, largest
  // first) and reports failure to malloc. The refusal is made once: code that catches its
  // out-of-memory errors and retries fails thousands of times between two interrupt checks,
  // and a fresh error's stack trace each time would keep it past the hard timer.
  const refusal = new RangeError("the sandbox call's memory budget is spent");
  Object.defineProperty(wasmMemory, "grow", {
    value: (pages: number) => {
      if (wasmMemory.buffer.byteLength + pages * WASM_PAGE > heap.limitBytes) {
        heap.refused = true;
        throw refusal;
      }
      const old = grow(pages);
      heap.refused = false;
      return old;
    },
  });
  const mod = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmMemory }));
  // The emscripten module's allocator (quickjs-emscripten keeps it as `module`).
  const alloc = (mod as unknown as { module?: Partial<Allocator> }).module;
  if (typeof alloc?._malloc !== "function" || typeof alloc._free !== "function")
    throw new Error("loadQuickJS: the QuickJS module does not expose _malloc/_free, needed to fill its heap");
  heap.alloc = alloc as Allocator;
  heap.limitBytes = wasmMemory.buffer.byteLength;
  const reserve = heap.alloc._malloc(HEAP_SLACK_BYTES);
  if (!reserve)
    throw new Error(
      `loadQuickJS: a fresh QuickJS module has less than ${HEAP_SLACK_BYTES >> 20} MiB of free heap`,
    );
  for (;;) {
    const n = largestFit(heap.alloc, wasmMemory.buffer.byteLength);
    if (n < FILL_MIN_BYTES || !heap.alloc._malloc(n)) break;
  }
  heap.alloc._free(reserve);
  heap.limitBytes = Number.POSITIVE_INFINITY;
  heap.refused = false;
  heap.baseBytes = wasmMemory.buffer.byteLength;
  heaps.set(mod, heap);
  return mod;
}

// A module whose wasm trapped or overflowed the host stack mid-call may hold corrupted
// memory; it is never used again and its owner loads a new one.
const brokenModules = new WeakSet<QuickJSWASMModule>();

export function isModuleUsable(mod: QuickJSWASMModule): boolean {
  return !brokenModules.has(mod);
}

/**
 * True when the module broke, or its memory grew past where calls start (free heap would
 * come on top of the next call's budget): load a new one before the next call.
 */
export function shouldReloadModule(mod: QuickJSWASMModule): boolean {
  const heap = heaps.get(mod);
  return brokenModules.has(mod) || mod.getWasmMemory().buffer.byteLength > (heap?.baseBytes ?? 96 << 20);
}

/**
 * Time and randomness. QuickJS reads the clock through one import of its wasm, emscripten's
 * `_emscripten_date_now`, which calls the host's `Date.now()` each time: for Date.now(),
 * new Date() and Date(), and once when a context is made, to seed that context's Math.random
 * (xorshift64* from the microseconds). A deterministic call (the default) replaces the host's
 * Date.now while it runs, which is synchronous: the context is made at the clock `seed` ms,
 * so its Math.random is the seed's sequence, and the program's clock starts at `clock_ms`
 * and advances 1 ms per read, so a loop that waits on the clock ends, the same way every
 * time. Nothing in the sandbox costs a cycle more than with the host's clock.
 */
const hostDateNow = Date.now;

/**
 * Minimum time the host gives itself after the code ended to read its value or error out of
 * the VM. Reading a value out may use what is left of run_timeout when that is longer; it is
 * bounded by the output cap, so only the program's own toJSON or getters can make it slow.
 */
const POST_PHASE_MS = 250;
/** Least headroom above the memory limit for QuickJS to reach the interrupt check (see runCode). */
const MEMORY_HEADROOM_MIN = 8 << 20;
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
  const { seed, clock_ms, deterministic } = request;
  if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32))
    return `seed: expected an integer in [0, 2^32), got ${seed}`;
  if (clock_ms !== undefined && !Number.isSafeInteger(clock_ms))
    return `clock_ms: expected an integer (ms since the epoch), got ${clock_ms}`;
  if (deterministic !== undefined && typeof deterministic !== "boolean")
    return `deterministic: expected a boolean, got ${String(deterministic)}`;
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

/** stdout/stderr with a cap each; past the cap the stream closes and the VM stops formatting. */
class OutputCapture {
  readonly streams = ["", "", ""];
  readonly closed = [false, false, false];
  truncated = false;
  constructor(private readonly cap: number) {}

  room(stream: number): number {
    return this.cap - this.streams[stream].length;
  }

  write(stream: number, text: string): boolean {
    const room = this.room(stream);
    if (text.length <= room) {
      this.streams[stream] += text;
      return true;
    }
    this.streams[stream] += headOf(text, Math.max(0, room));
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

type HelperName = "show" | "encode" | "describe" | "quote" | "cut";

/** Runs `request.code` in a fresh runtime and context of `mod`. Never throws. */
export function runCode(mod: QuickJSWASMModule, request: RunCodeRequest): RunCodeResult {
  const t0 = performance.now();
  const limits = resolveRequest(request);
  if (typeof limits === "string") return sandboxError(limits, "InvalidRequest");
  if (brokenModules.has(mod))
    return sandboxError("the QuickJS module crashed in an earlier call; load a new one");
  const tools = request.tools ?? [];
  const heapBytes = Math.floor(limits.memory_limit_MB * 1024 * 1024);
  const cap = limits.max_output_bytes;
  const out = new OutputCapture(cap);
  const deterministic = request.deterministic !== false;

  const runDeadline = t0 + limits.run_timeout * 1000;
  let phaseDeadline = runDeadline;
  let interrupted = false;
  // The memory limit: how far this call may grow the module's wasm memory, on top of the
  // slack every call starts with (see loadQuickJS). The guarded grow refuses past it; for a
  // module loaded elsewhere the interrupt handler checks the growth instead.
  const memory = mod.getWasmMemory();
  const startBytes = memory.buffer.byteLength;
  const heap = heaps.get(mod);
  const budget = heap ?? { baseBytes: startBytes, limitBytes: Number.POSITIVE_INFINITY, refused: false };
  const capBytes = heap
    ? Math.max(startBytes, heap.baseBytes + heapBytes - HEAP_SLACK_BYTES)
    : startBytes + heapBytes;
  // QuickJS does not survive every failed malloc: a heap of small objects (push({}),
  // Map.set) that runs into the limit can crash the wasm afterwards ("table index is out of
  // bounds") while it unwinds and collects. So the first refusal is the limit, as before (a
  // program may catch that "out of memory" and carry on, and the allocation counts stay
  // exact), and from the next interrupt check on the grow may go a headroom further, room
  // for QuickJS to throw, unwind and collect (a program that catches the error and keeps
  // allocating meets the second refusal there); a thrown error stays a MemoryLimit.
  const hardBytes = capBytes + Math.max(MEMORY_HEADROOM_MIN, heapBytes / 2);
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
  let mainPhase = true;
  let rescued = false;
  const overMemory = () => {
    if (!heap && memory.buffer.byteLength > capBytes) memoryExceeded = true;
    if (heap && mainPhase && budget.refused && !rescued) {
      // The headroom after the first refusal (see hardBytes).
      rescued = true;
      budget.limitBytes = hardBytes;
    }
    return memoryExceeded;
  };
  let rt: QuickJSRuntime | undefined;
  let ctx: QuickJSContext | undefined;
  let helperCtx: QuickJSContext | undefined;
  let shortfall = 0;
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
    // A limit below the slack takes the difference out of it for this call.
    if (heap && heapBytes < HEAP_SLACK_BYTES) {
      heap.limitBytes = startBytes;
      shortfall = heap.alloc._malloc(HEAP_SLACK_BYTES - heapBytes);
    }
    budget.limitBytes = capBytes;
    budget.refused = false;
    if (deterministic) {
      const seedMs = request.seed ?? 0;
      Date.now = () => seedMs;
    }
    rt = mod.newRuntime();
    rt.setMemoryLimit(heapBytes);
    rt.setMaxStackSize(RUN_DEFAULTS.max_stack_bytes);
    rt.setInterruptHandler(() => {
      if (overMemory()) return true;
      if (performance.now() <= phaseDeadline) return false;
      interrupted = true;
      return true;
    });
    const runtime = rt;
    const vm = runtime.newContext();
    ctx = vm;
    if (deterministic) {
      let clock = request.clock_ms ?? SANDBOX_CLOCK_MS;
      Date.now = () => clock++;
    }

    // The helpers live in a second context of the same runtime that the code never sees, so
    // replaced built-ins (JSON, String...) cannot change how results are read. Compiled on
    // first use: most calls print and return primitives only.
    let helpers: Record<"show" | "encode" | "describe" | "quote" | "util", QuickJSHandle> | undefined;
    let bounded: Record<"show" | "encode" | "describe" | "cut", QuickJSHandle> | undefined;
    const compile = (
      hc: QuickJSContext,
      source: string,
      file: string,
      names: string[],
      arg?: QuickJSHandle,
    ): Record<string, QuickJSHandle> | undefined => {
      const compiled = hc.evalCode(source, file, { type: "global" });
      if (compiled.error) return void compiled.error.dispose();
      const fn = own(compiled.value);
      const made = arg ? hc.callFunction(fn, hc.undefined, arg) : hc.callFunction(fn, hc.undefined);
      if (made.error) return void made.error.dispose();
      const table = own(made.value);
      return Object.fromEntries(names.map((n) => [n, own(hc.getProp(table, n))]));
    };
    const call = (fn: QuickJSHandle, name: HelperName, arg: QuickJSHandle, n: number): string | undefined => {
      const hc = helperCtx as QuickJSContext;
      const called = hc.callFunction(fn, hc.undefined, arg, own(hc.newNumber(n)));
      if (called.error) return void called.error.dispose();
      let text: string | undefined;
      // quote and describe give JSON text, which getString copies exactly.
      if (hc.typeof(called.value) === "string")
        text =
          name === "quote" || name === "describe" ? hc.getString(called.value) : readString(called.value);
      called.value.dispose();
      return text;
    };
    /** Calls a helper (prelude.ts) with a value and a cap; undefined if it threw. */
    const helper = (name: HelperName, arg: QuickJSHandle, n = cap): string | undefined => {
      if (!helperCtx) {
        helperCtx = runtime.newContext({ intrinsics: { BaseObjects: true, Eval: true, JSON: true } });
        const names = ["show", "encode", "describe", "quote", "util"];
        helpers = compile(helperCtx, HELPERS_SOURCE, "helpers.js", names) as typeof helpers;
      }
      if (!helpers) return undefined;
      if (name !== "cut") {
        const text = call(helpers[name], name, arg, n);
        if (text !== "O" || name === "quote") return text;
      }
      // Longer than the cap: the bounded writer, compiled on first need.
      bounded ??= compile(
        helperCtx as QuickJSContext,
        BOUNDED_SOURCE,
        "bounded.js",
        ["show", "encode", "describe", "cut"],
        helpers.util,
      ) as typeof bounded;
      return bounded ? call(bounded[name as keyof typeof bounded], name, arg, n) : undefined;
    };
    // getString goes through a C string: it stops at the first NUL and mangles lone
    // surrogates into U+FFFD. Its text is exact when no U+FFFD came back and the length is
    // the string's own; otherwise the string comes out as JSON text (escapes for both).
    let lengthKey: QuickJSHandle | undefined;
    const lengthOf = (h: QuickJSHandle): number => {
      lengthKey ??= own(vm.newString("length"));
      const n = vm.getProp(h, lengthKey);
      const length = vm.getNumber(n);
      n.dispose();
      return length;
    };
    const readString = (h: QuickJSHandle, length = lengthOf(h)): string => {
      const s = vm.getString(h);
      if (s.length === length && !s.includes("\uFFFD")) return s;
      const quoted = helper("quote", h, 0);
      return quoted === undefined ? s : (JSON.parse(quoted) as string);
    };
    // One console argument as text, at most `max` code units plus one (the capture cuts at max).
    const show = (h: QuickJSHandle, max: number): string => {
      const type = vm.typeof(h);
      if (type === "string") {
        const length = lengthOf(h);
        if (length <= max) return readString(h, length);
      }
      if (type === "number") return String(vm.getNumber(h));
      if (type === "undefined" || type === "boolean") return String(vm.dump(h));
      // "=" + the text
      return helper("show", h, max)?.slice(1) ?? `[unprintable ${type}]`;
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
        if (out.closed[stream]) return;
        let line = "";
        for (let i = 0; i < args.length; i++) {
          if (i > 0) line += " ";
          const room = out.room(stream) - line.length;
          if (room < 0) break;
          line += show(args[i], room);
        }
        out.write(stream, `${line}\n`);
      });
      vm.setProp(consoleObject, name, fn);
      fn.dispose();
    }
    vm.setProp(vm.global, "console", consoleObject);
    let thrown: QuickJSHandle | undefined;
    if (!thrown && tools.length > 0) {
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
    mainPhase = false;

    // Post phase: a little heap of its own, and a deadline of its own, to read results out.
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
      // The code threw at once, whatever its error does when read: a description that runs
      // out of time or memory keeps the kind (Exception, or MemoryLimit after a refused grow).
      const text = helper("describe", thrown, Math.max(cap, MAX_STACK_TEXT));
      let d: { name?: string; message?: string; stack?: string; cut?: boolean } | undefined;
      if (text !== undefined && !interrupted) {
        try {
          d = JSON.parse(text);
        } catch {}
      }
      if (d) {
        const message = String(d.message ?? "");
        const stack = d.stack ? headOf(d.stack, MAX_STACK_TEXT) : undefined;
        let kind = classify(message);
        if (kind === "Exception" && memoryRefused) kind = "MemoryLimit";
        // QuickJS throws null when it cannot even allocate the out-of-memory error.
        if (kind === "MemoryLimit" && vm.sameValue(thrown, vm.null))
          error = {
            kind,
            name: "InternalError",
            message: `out of memory (memory_limit_MB = ${limits.memory_limit_MB})`,
          };
        else error = { kind, name: String(d.name ?? "Error"), message, stack, line: lineOf(stack) };
        if (d.cut) valueTruncated = true;
      } else if (memoryRefused || budget.refused) {
        error = {
          kind: "MemoryLimit",
          name: "InternalError",
          message: `out of memory (memory_limit_MB = ${limits.memory_limit_MB})`,
        };
      } else {
        error = {
          kind: "Exception",
          name: "Error",
          message: interrupted
            ? "the code threw a value whose name or message could not be read in time"
            : "the code threw a value that could not be read out of the sandbox",
        };
      }
    } else if (result) {
      // Reading the value out may use what is left of run_timeout, and at least POST_PHASE_MS.
      phaseDeadline = Math.max(runDeadline, phaseDeadline);
      const read = readValue(vm, result, cap, lengthOf, readString, helper);
      if (interrupted)
        error = {
          kind: "Timeout",
          name: "TimeoutError",
          message: "reading the value out ran past the time limit (a toJSON or getter that does not return)",
        };
      else if (read === undefined)
        error = {
          kind: budget.refused ? "MemoryLimit" : "Exception",
          name: "InternalError",
          message: "the value could not be read out of the sandbox (out of memory)",
        };
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
    Date.now = hostDateNow;
    budget.limitBytes = Number.POSITIVE_INFINITY;
    if (!brokenModules.has(mod)) {
      try {
        for (const h of handles) if (h.alive) h.dispose();
        helperCtx?.dispose();
        ctx?.dispose();
        rt?.dispose();
        if (shortfall && heap) heap.alloc._free(shortfall);
      } catch {
        brokenModules.add(mod);
      }
    }
  }
  if (crash) return sandboxError(crash, "SandboxError", (performance.now() - t0) / 1000);
  return finish(t0, out, value, error, valueTruncated);
}

/**
 * Reads the result out: numbers and booleans directly, a string exactly (cut to head...tail
 * inside the VM when longer than the cap), anything else as JSON text made and cut inside
 * the VM. Undefined when the VM could not make the text (out of memory).
 */
function readValue(
  vm: QuickJSContext,
  h: QuickJSHandle,
  cap: number,
  lengthOf: (h: QuickJSHandle) => number,
  readString: (h: QuickJSHandle, length?: number) => string,
  helper: (name: "encode" | "cut", arg: QuickJSHandle, n: number) => string | undefined,
): { value?: JsonValue; truncated: boolean } | undefined {
  const type = vm.typeof(h);
  if (type === "undefined") return { truncated: false };
  if (type === "number") {
    const n = vm.getNumber(h);
    return { value: Number.isFinite(n) ? n : String(n), truncated: false };
  }
  if (type === "boolean") return { value: vm.dump(h) as boolean, truncated: false };
  if (type === "string") {
    const length = lengthOf(h);
    if (length <= cap) return { value: readString(h, length), truncated: false };
    const cut = helper("cut", h, cap);
    return cut === undefined ? undefined : { value: cut, truncated: true };
  }
  // "J" + JSON text, "T" + JSON text cut to the cap, "S"/"C" + a string value (C: cut), "U": undefined.
  const text = helper("encode", h, cap);
  if (text === undefined) return undefined;
  const body = text.slice(1);
  switch (text[0]) {
    case "U":
      return { truncated: false };
    case "J":
      try {
        return { value: JSON.parse(body) as JsonValue, truncated: false };
      } catch {
        return { value: body, truncated: false };
      }
    case "S":
      return { value: body, truncated: false };
    default:
      return { value: body, truncated: true };
  }
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
  const report = headOf(`Uncaught ${error.name}: ${error.message}\n${error.stack ?? ""}`, MAX_STACK_TEXT);
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

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The first `n` code units of `text`, one fewer where the cut would split a surrogate pair. */
export function headOf(text: string, n: number): string {
  if (n >= text.length) return text;
  if (n > 0 && isHigh(text.charCodeAt(n - 1)) && isLow(text.charCodeAt(n))) n--;
  return text.slice(0, n);
}

/** The last `n` code units of `text`, one fewer where the cut would split a surrogate pair. */
export function tailOf(text: string, n: number): string {
  if (n >= text.length) return text;
  let start = text.length - n;
  if (n > 0 && isLow(text.charCodeAt(start)) && isHigh(text.charCodeAt(start - 1))) start++;
  return text.slice(start);
}

/**
 * Keeps the head and the tail of a long text around "...", at most `max` code units, never
 * splitting a surrogate pair (the helpers in prelude.ts cut the same way inside the VM).
 */
export function headTail(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 3) return headOf(text, max);
  const keep = max - 3;
  const head = Math.ceil(keep / 2);
  return `${headOf(text, head)}...${tailOf(text, keep - head)}`;
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
