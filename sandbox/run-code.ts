// runCode: one Sandbox-Fusion-style `run_code` call in a fresh QuickJS runtime + context,
// given a loaded QuickJS module. Pure and synchronous, so it runs in a worker (the pool), in
// Node tests and in a Node fallback alike. Limits per call: heap (a growth budget over a heap
// every call starts from alike, see loadQuickJS), stack (setMaxStackSize), a counted work
// budget with a wall-clock backstop (budget.ts), a cap on promise jobs, output caps and a
// nesting cap (applied inside the VM before anything is copied out, reader.ts). Strings,
// values and errors come back exactly as the program made them (NUL and lone surrogates
// included). What this cannot stop (a long C built-in, a host-stack overflow inside wasm)
// is the pool's job: it races every call against a hard timer past the backstop.
// Tested by sandbox/run-code.test.ts and sandbox/exact.test.ts.
import variant from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import {
  backstopSeconds,
  HOST_CALL_COST,
  hostClock,
  INTERRUPTS_PER_SECOND,
  POST_PHASE_INTERRUPTS,
  PROMISE_JOB_COST,
  WorkBudget,
} from "./budget.ts";
import { TOOLS_SOURCE } from "./prelude.ts";
import { VmReader } from "./reader.ts";
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
  type ToolSpec,
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
  /** Grows refused since the module was loaded. */
  refusals: number;
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
  const heap = {
    baseBytes: 0,
    limitBytes: Number.POSITIVE_INFINITY,
    refused: false,
    refusals: 0,
  } as HeapState;
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
        heap.refusals++;
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

/** Promise jobs run between two charges to the budget. */
const JOB_BATCH = 100;
/** Least wall time the host gives itself after the code ended to read its value or error out. */
const POST_PHASE_MS = 250;
/** Least headroom above the memory limit for QuickJS to reach the interrupt check (see CallMemory). */
const MEMORY_HEADROOM_MIN = 8 << 20;
/** Extra heap for reading results out after the code hit its memory limit. */
const POST_PHASE_HEAP = 1 << 20;
const MAX_STACK_TEXT = 2000;

export interface ResolvedLimits {
  run_timeout: number;
  memory_limit_MB: number;
  max_output_bytes: number;
  /** Seconds of wall clock after which the call is interrupted whatever its budget says. */
  wall_backstop_s: number;
}

/** Checks a request's fields; returns the problem (naming the field) or the limits to use. */
export function resolveRequest(request: RunCodeRequest): string | ResolvedLimits {
  if (typeof request !== "object" || request === null) return "request must be an object";
  if (typeof request.code !== "string") return "code: expected string";
  const run_timeout = request.run_timeout ?? RUN_DEFAULTS.run_timeout;
  if (!(typeof run_timeout === "number" && run_timeout > 0 && run_timeout <= 600))
    return `run_timeout: expected seconds in (0, 600], got ${run_timeout}`;
  const limits = {
    run_timeout,
    memory_limit_MB: request.memory_limit_MB ?? RUN_DEFAULTS.memory_limit_MB,
    max_output_bytes: request.max_output_bytes ?? RUN_DEFAULTS.max_output_bytes,
    wall_backstop_s: request.wall_backstop_s ?? backstopSeconds(run_timeout),
  };
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
  const w = limits.wall_backstop_s;
  if (!(typeof w === "number" && w > 0 && w <= backstopSeconds(600)))
    return `wall_backstop_s: expected seconds in (0, ${backstopSeconds(600)}], got ${w}`;
  return checkDeterminism(request) ?? checkTools(request.tools) ?? limits;
}

function checkDeterminism({ seed, clock_ms, deterministic }: RunCodeRequest): string | undefined {
  if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32))
    return `seed: expected an integer in [0, 2^32), got ${seed}`;
  if (clock_ms !== undefined && !Number.isSafeInteger(clock_ms))
    return `clock_ms: expected an integer (ms since the epoch), got ${clock_ms}`;
  if (deterministic !== undefined && typeof deterministic !== "boolean")
    return `deterministic: expected a boolean, got ${String(deterministic)}`;
}

function checkTools(tools: unknown = []): string | undefined {
  if (!Array.isArray(tools)) return "tools: expected an array";
  const names = new Set<string>();
  for (const tool of tools) {
    const problem = validateToolSpec(tool);
    if (problem) return `tools: ${problem}`;
    if (names.has(tool.name)) return `tools: duplicate tool name ${tool.name}`;
    names.add(tool.name);
  }
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

/**
 * One call's memory limit: how far it may grow the module's wasm memory, on top of the slack
 * every call starts with (see loadQuickJS). The guarded grow refuses past it; for a module
 * loaded elsewhere the interrupt handler checks the growth instead.
 *
 * QuickJS does not survive every failed malloc: a heap of small objects (push({}), Map.set)
 * that runs into the limit can crash the wasm afterwards ("table index is out of bounds")
 * while it unwinds and collects. So the first refusal is the limit (a program may catch that
 * "out of memory" and carry on, and the allocation counts stay exact), and from the next
 * interrupt check on the grow may go a headroom further, room for QuickJS to throw, unwind
 * and collect (a program that catches the error and keeps allocating meets the second
 * refusal there); a thrown error stays a MemoryLimit.
 */
class CallMemory {
  readonly heapBytes: number;
  private readonly memory: WebAssembly.Memory;
  private readonly heap?: HeapState;
  private readonly budget: Pick<HeapState, "limitBytes" | "refused">;
  private readonly capBytes: number;
  private readonly hardBytes: number;
  private shortfall = 0;
  /** Refusals when the headroom was given (0: not given); a refusal after it ends the call. */
  private rescued = 0;
  /** The main phase is running (the headroom applies only there). */
  main = true;
  /** A module without a guarded grow went past the limit. */
  exceeded = false;

  constructor(mod: QuickJSWASMModule, limitMB: number) {
    this.heapBytes = Math.floor(limitMB * 1024 * 1024);
    this.memory = mod.getWasmMemory();
    const startBytes = this.memory.buffer.byteLength;
    this.heap = heaps.get(mod);
    this.budget = this.heap ?? { limitBytes: Number.POSITIVE_INFINITY, refused: false };
    this.capBytes = this.heap
      ? Math.max(startBytes, this.heap.baseBytes + this.heapBytes - HEAP_SLACK_BYTES)
      : startBytes + this.heapBytes;
    this.hardBytes = this.capBytes + Math.max(MEMORY_HEADROOM_MIN, this.heapBytes / 2);
  }

  /** The grow refused since the call began (a later successful grow clears it). */
  get refused(): boolean {
    return this.budget.refused;
  }

  begin(): void {
    // A limit below the slack takes the difference out of it for this call.
    if (this.heap && this.heapBytes < HEAP_SLACK_BYTES) {
      this.heap.limitBytes = this.memory.buffer.byteLength;
      this.shortfall = this.heap.alloc._malloc(HEAP_SLACK_BYTES - this.heapBytes);
    }
    this.budget.limitBytes = this.capBytes;
    this.budget.refused = false;
  }

  /** At an interrupt check: true once the limit is spent (modules without a guarded grow). */
  over(): boolean {
    if (!this.heap && this.memory.buffer.byteLength > this.capBytes) this.exceeded = true;
    if (this.heap && this.main && this.budget.refused) {
      // Refused again past the headroom: the code caught its out-of-memory error and kept
      // allocating; the call ends here, as a MemoryLimit, on every machine.
      if (!this.rescued) {
        this.rescued = this.heap.refusals;
        this.budget.limitBytes = this.hardBytes;
      } else if (this.heap.refusals > this.rescued) this.exceeded = true;
    }
    return this.exceeded;
  }

  /** Host-side work inside a call (argument checks) must not fail on the call's budget. */
  unbudgeted<T>(f: () => T): T {
    const saved = this.budget.limitBytes;
    this.budget.limitBytes = Number.POSITIVE_INFINITY;
    try {
      return f();
    } finally {
      this.budget.limitBytes = saved;
    }
  }

  /** The post phase: a little heap of its own to read results out. */
  post(): void {
    this.main = false;
    this.budget.limitBytes =
      Math.max(this.budget.limitBytes, this.memory.buffer.byteLength) + POST_PHASE_HEAP;
  }

  /** After the call's runtime is disposed. */
  end(): void {
    this.budget.limitBytes = Number.POSITIVE_INFINITY;
  }

  release(): void {
    if (this.shortfall && this.heap) this.heap.alloc._free(this.shortfall);
    this.shortfall = 0;
  }
}

/** The QuickJS error of an out-of-memory call, whatever the code threw. */
const outOfMemory = (limits: ResolvedLimits): SandboxErrorInfo => ({
  kind: "MemoryLimit",
  name: "InternalError",
  message: `out of memory (memory_limit_MB = ${limits.memory_limit_MB})`,
});

/** console: host functions writing into the capped streams; nothing else of the host is reachable. */
function installConsole(
  vm: QuickJSContext,
  out: OutputCapture,
  reader: VmReader,
  work: WorkBudget,
  own: Own,
): void {
  const consoleObject = own(vm.newObject());
  for (const [name, stream] of [
    ["log", 1],
    ["info", 1],
    ["debug", 1],
    ["warn", 2],
    ["error", 2],
  ] as const) {
    const fn = vm.newFunction(name, (...args: QuickJSHandle[]) => {
      work.charge(HOST_CALL_COST);
      if (out.closed[stream]) return;
      let line = "";
      for (let i = 0; i < args.length; i++) {
        if (i > 0) line += " ";
        const room = out.room(stream) - line.length;
        if (room < 0) break;
        line += reader.show(args[i], room);
      }
      out.write(stream, `${line}\n`);
    });
    vm.setProp(consoleObject, name, fn);
    fn.dispose();
  }
  vm.setProp(vm.global, "console", consoleObject);
}

/** Defines the request's tools as globals (prelude.ts TOOLS_SOURCE); the setup's error, if any. */
function installTools(vm: QuickJSContext, tools: ToolSpec[], memory: CallMemory, work: WorkBudget, own: Own) {
  const check = own(
    vm.newFunction("check", (i, a) =>
      memory.unbudgeted(() => {
        work.charge(HOST_CALL_COST);
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
  if (compiled.error) return own(compiled.error);
  const setup = vm.callFunction(own(compiled.value), vm.undefined, check, toolsJson);
  if (setup.error) return own(setup.error);
  setup.value.dispose();
  return undefined;
}

type Own = (h: QuickJSHandle) => QuickJSHandle;

interface MainOutcome {
  result?: QuickJSHandle;
  thrown?: QuickJSHandle;
  /** The counted budget, the backstop or the job cap ended the code (and not memory). */
  timedOut: boolean;
  jobLimitHit: boolean;
  neverSettled: boolean;
  /** A grow was refused: whatever the code threw is a consequence of the memory limit. */
  memoryRefused: boolean;
}

/** Main phase: the user's code, then the promise jobs it queued (bounded), then its promise. */
function runMain(
  vm: QuickJSContext,
  rt: QuickJSRuntime,
  request: RunCodeRequest,
  memory: CallMemory,
  work: WorkBudget,
  own: Own,
): MainOutcome {
  const tools = request.tools ?? [];
  let thrown = tools.length > 0 ? installTools(vm, tools, memory, work, own) : undefined;
  let result: QuickJSHandle | undefined;
  let jobLimitHit = false;
  let neverSettled = false;
  if (!thrown) {
    const evaluated = vm.evalCode(request.code, "main.js", { type: "global" });
    if (evaluated.error) thrown = own(evaluated.error);
    else result = own(evaluated.value);
    // Jobs run in batches, each job charged to the budget, so where a chain stops is counted.
    let jobs = 0;
    while (!work.interrupted && rt.hasPendingJob()) {
      if (jobs >= RUN_DEFAULTS.max_jobs) {
        jobLimitHit = true;
        break;
      }
      const ran = rt.executePendingJobs(Math.min(JOB_BATCH, RUN_DEFAULTS.max_jobs - jobs));
      let n = 1;
      if (ran.error) ran.error.dispose();
      else n = ran.value;
      jobs += n;
      if (!work.charge(n * PROMISE_JOB_COST)) work.checkWall();
    }
    if (result && !thrown) {
      const state = vm.getPromiseState(result);
      if (state.type === "fulfilled" && !state.notAPromise) result = own(state.value);
      else if (state.type === "rejected") {
        thrown = own(state.error);
        result = undefined;
      } else if (state.type === "pending") {
        result = undefined;
        neverSettled = !work.interrupted && !jobLimitHit;
      }
    }
  }
  const timedOut = !memory.over() && (work.interrupted || jobLimitHit);
  return { result, thrown, timedOut, jobLimitHit, neverSettled, memoryRefused: memory.refused };
}

/** The error of a call whose code threw, read out whatever its error does when read. */
function thrownError(
  vm: QuickJSContext,
  thrown: QuickJSHandle,
  reader: VmReader,
  limits: ResolvedLimits,
  memory: CallMemory,
  work: WorkBudget,
  memoryRefused: boolean,
): { error: SandboxErrorInfo; cut: boolean } {
  // A description that runs out of time or memory keeps the kind (Exception, or MemoryLimit
  // after a refused grow).
  const text = reader.helper("describe", thrown, Math.max(limits.max_output_bytes, MAX_STACK_TEXT));
  let d: { name?: unknown; message?: unknown; stack?: string; cut?: boolean } | undefined;
  if (text !== undefined && !work.interrupted) {
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
      return { error: outOfMemory(limits), cut: false };
    const error = { kind, name: String(d.name ?? "Error"), message, stack, line: lineOf(stack) };
    return { error, cut: d.cut === true };
  }
  if (memoryRefused || memory.refused) return { error: outOfMemory(limits), cut: false };
  const message = work.interrupted
    ? "the code threw a value whose name or message could not be read within its budget"
    : "the code threw a value that could not be read out of the sandbox";
  return { error: { kind: "Exception", name: "Error", message }, cut: false };
}

interface Outcome {
  value?: JsonValue;
  error?: SandboxErrorInfo;
  truncated: boolean;
}

/** Post phase: the verdict of the main phase, and the value or error read out of the VM. */
function readOutcome(
  vm: QuickJSContext,
  rt: QuickJSRuntime,
  main: MainOutcome,
  reader: VmReader,
  limits: ResolvedLimits,
  memory: CallMemory,
  work: WorkBudget,
  runBackstop: number,
): Outcome {
  // Its own budget and a little heap; reading a value out may also use what is left of the
  // code's budget. It is bounded by the output cap, so only the program's own toJSON or
  // getters can make it long.
  const left = work.left;
  const wall = Math.max(runBackstop, performance.now() + POST_PHASE_MS);
  work.phase(POST_PHASE_INTERRUPTS, wall);
  rt.setMemoryLimit(memory.heapBytes + POST_PHASE_HEAP);
  memory.post();
  if (memory.exceeded) return { error: outOfMemory(limits), truncated: false };
  if (main.timedOut) {
    const message = main.jobLimitHit
      ? `more than ${RUN_DEFAULTS.max_jobs} promise jobs (runaway promise chain)`
      : `execution exceeded the time limit of ${limits.run_timeout} s`;
    return { error: { kind: "Timeout", name: "TimeoutError", message }, truncated: false };
  }
  if (main.neverSettled) {
    const message = "the returned promise never settled (the sandbox has no timers or I/O)";
    return { error: { kind: "Exception", name: "Error", message }, truncated: false };
  }
  if (main.thrown) {
    const { error, cut } = thrownError(vm, main.thrown, reader, limits, memory, work, main.memoryRefused);
    return { error, truncated: cut };
  }
  if (!main.result) return { truncated: false };
  work.phase(Math.max(left, POST_PHASE_INTERRUPTS), wall);
  const read = reader.value(main.result);
  if (work.interrupted) {
    const message = "reading the value out ran past the budget (a toJSON or getter that does not return)";
    return { error: { kind: "Timeout", name: "TimeoutError", message }, truncated: false };
  }
  if (read === undefined) {
    const kind = memory.refused ? "MemoryLimit" : "Exception";
    const message = "the value could not be read out of the sandbox (out of memory)";
    return { error: { kind, name: "InternalError", message }, truncated: false };
  }
  return read;
}

/** Runs `request.code` in a fresh runtime and context of `mod`. Never throws. */
export function runCode(mod: QuickJSWASMModule, request: RunCodeRequest): RunCodeResult {
  const t0 = performance.now();
  const limits = resolveRequest(request);
  if (typeof limits === "string") return sandboxError(limits, "InvalidRequest");
  if (brokenModules.has(mod))
    return sandboxError("the QuickJS module crashed in an earlier call; load a new one");
  const out = new OutputCapture(limits.max_output_bytes);
  const deterministic = request.deterministic !== false;
  const memory = new CallMemory(mod, limits.memory_limit_MB);
  const runBackstop = t0 + limits.wall_backstop_s * 1000;
  const work = new WorkBudget(Math.ceil(limits.run_timeout * INTERRUPTS_PER_SECOND), runBackstop);
  let rt: QuickJSRuntime | undefined;
  let reader: VmReader | undefined;
  let ctx: QuickJSContext | undefined;
  const handles: QuickJSHandle[] = [];
  const own = (h: QuickJSHandle) => {
    handles.push(h);
    return h;
  };
  let outcome: Outcome = { truncated: false };
  let crash: string | undefined;
  try {
    memory.begin();
    hostClock.enter(deterministic ? (request.seed ?? 0) : undefined);
    rt = mod.newRuntime();
    rt.setMemoryLimit(memory.heapBytes);
    rt.setMaxStackSize(RUN_DEFAULTS.max_stack_bytes);
    rt.setInterruptHandler(() => memory.over() || work.tick());
    ctx = rt.newContext();
    if (deterministic) hostClock.virtual(request.clock_ms ?? SANDBOX_CLOCK_MS);
    reader = new VmReader(rt, ctx, own, limits.max_output_bytes);
    installConsole(ctx, out, reader, work, own);
    const main = runMain(ctx, rt, request, memory, work, own);
    outcome = readOutcome(ctx, rt, main, reader, limits, memory, work, runBackstop);
  } catch (hostError) {
    // QuickJS overflowed the host's native stack (deep recursion inside a C built-in such as
    // JSON.stringify), or the wasm trapped: this module cannot be trusted any more.
    brokenModules.add(mod);
    const message = describeHostError(hostError);
    // A host-stack overflow is the code's doing (a StackOverflow); anything else is the sandbox's.
    if (message.includes("call stack"))
      outcome = {
        error: {
          kind: "StackOverflow",
          name: "InternalError",
          message: "stack overflow (inside a built-in)",
        },
        truncated: false,
      };
    else crash = `the interpreter crashed: ${message}`;
  } finally {
    hostClock.leave();
    memory.end();
    if (!brokenModules.has(mod)) {
      try {
        for (const h of handles) if (h.alive) h.dispose();
        reader?.context?.dispose();
        ctx?.dispose();
        rt?.dispose();
        memory.release();
      } catch {
        brokenModules.add(mod);
      }
    }
  }
  if (crash) return sandboxError(crash, "SandboxError", (performance.now() - t0) / 1000);
  return finish(t0, out, outcome, work.backstop);
}

/** `Name: message` of a host error, never throwing (a getter, a revoked proxy). */
function describeHostError(e: unknown): string {
  try {
    if (e instanceof Error) return `${e.name}: ${e.message}`;
    return String(e);
  } catch {
    return "an error that cannot be described";
  }
}

function finish(t0: number, out: OutputCapture, outcome: Outcome, backstop: boolean): RunCodeResult {
  const { value, error } = outcome;
  const execution_time = (performance.now() - t0) / 1000;
  const [, stdout, stderr] = out.streams;
  const truncated = out.truncated || outcome.truncated;
  let r: RunCodeResult;
  if (!error) {
    r = {
      status: "Success",
      run_result: { status: "Finished", execution_time, return_code: 0, stdout, stderr },
      truncated,
    };
    if (value !== undefined) r.value = value;
  } else {
    const timeout = error.kind === "Timeout" || error.kind === "HardKill";
    const report = headOf(`Uncaught ${error.name}: ${error.message}\n${error.stack ?? ""}`, MAX_STACK_TEXT);
    r = {
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
  if (backstop) r.backstop = true;
  return r;
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
