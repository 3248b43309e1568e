// The limits that decide a sandbox call's verdict count work, not time, so the same program
// gets the same verdict and the same text on any machine at any load. QuickJS calls the
// runtime's interrupt handler as the interpreter works (every 10,000 of its ticks, counted
// per context: bytecode branches, calls, regexp backtracking steps), so the number of calls
// is a function of the program alone; host calls and promise jobs are charged on top. `run_timeout` buys INTERRUPTS_PER_SECOND calls per
// second; the wall clock is only a backstop (backstopSeconds), and a call it ended says so
// (`RunCodeResult.backstop`), so a run can record that a verdict came from the clock.
// Also the sandbox's host clock and time zone while a call runs (hostClock).
// Tested by sandbox/run-code.test.ts and sandbox/replay-load.serial.test.ts.

/**
 * Interrupt-handler calls one second of run_timeout buys. How long they take depends on
 * the machine and on the program (allocation and built-ins do more work per tick); what
 * they allow does not.
 */
export const INTERRUPTS_PER_SECOND = 250;

/** Interrupt calls the host always has, after the code ended, to read its value or error out. */
export const POST_PHASE_INTERRUPTS = 60;

/**
 * The wall-clock backstop of a call with this run_timeout, in seconds: far above the time
 * the counted budget takes on a slow, busy machine, so it decides only for code that stalls
 * the interpreter (a long C built-in) or a machine many times slower than expected. The
 * pool's hard kill fires a margin after it.
 */
export function backstopSeconds(runTimeout: number): number {
  return 5 * runTimeout + 5;
}

/**
 * Work the interpreter's ticks do not show, in interrupt calls: a call of a host function
 * (console, a tool's argument check) and a promise job each cost about this much of the
 * host's time, so a flood of them ends on the count as a loop does.
 */
export const HOST_CALL_COST = 1 / 64;
export const PROMISE_JOB_COST = 1 / 256;

/** One phase's counted budget and wall-clock backstop; `tick` is the interrupt handler's core. */
export class WorkBudget {
  /** Work done in the current phase, in interrupt calls. */
  used = 0;
  /** The budget or the backstop ended the phase. */
  interrupted = false;
  /** The wall clock ended a phase of this call (sticky across phases). */
  backstop = false;

  constructor(
    private limit: number,
    private wallDeadline: number,
  ) {}

  /** Work left in the current phase. */
  get left(): number {
    return Math.max(0, this.limit - this.used);
  }

  /** Starts a new phase with its own budget and wall deadline (performance.now() ms). */
  phase(limit: number, wallDeadline: number): void {
    this.used = 0;
    this.limit = limit;
    this.wallDeadline = wallDeadline;
    this.interrupted = false;
  }

  /** Work done outside the interpreter's ticks; true (interrupted) once the budget is spent. */
  charge(units: number): boolean {
    this.used += units;
    if (this.used > this.limit) this.interrupted = true;
    return this.interrupted;
  }

  /** One interrupt-handler call: true to interrupt the code. */
  tick(): boolean {
    return this.charge(1) || this.checkWall();
  }

  /** True (and the backstop recorded) once the wall deadline has passed. */
  checkWall(): boolean {
    if (performance.now() <= this.wallDeadline) return false;
    this.interrupted = true;
    this.backstop = true;
    return true;
  }
}

const hostDateNow = Date.now;
const timezoneOffset = Object.getOwnPropertyDescriptor(Date.prototype, "getTimezoneOffset");
const utcOffset = () => 0;

/**
 * The host's clock and time zone as the running call sees them. QuickJS reads the clock
 * through one import of its wasm, emscripten's `_emscripten_date_now`, which calls the host's
 * `Date.now()`: for Date.now(), new Date() and Date(), and once when a context is made, to
 * seed its Math.random (xorshift64* from the microseconds). Local time goes through
 * emscripten's `localtime_r`, which reads the host's `Date.prototype.getTimezoneOffset`.
 * While a call runs (synchronously) the offset is 0, so Date(), toString and the local-time
 * getters are UTC on every host; a deterministic call also sees its seed as the clock while
 * its context is made and then a virtual clock from `clockMs`, 1 ms per read.
 */
export const hostClock = {
  /** UTC from now on; with a seed, the clock stands at `seed` ms (the context's Math.random). */
  enter(seed: number | undefined): void {
    Object.defineProperty(Date.prototype, "getTimezoneOffset", { ...timezoneOffset, value: utcOffset });
    if (seed !== undefined) Date.now = () => seed;
  },
  /** The program's virtual clock, from `clockMs`, advancing 1 ms per read. */
  virtual(clockMs: number): void {
    let clock = clockMs;
    Date.now = () => clock++;
  },
  /** The host's own clock and time zone again. */
  leave(): void {
    Date.now = hostDateNow;
    if (timezoneOffset) Object.defineProperty(Date.prototype, "getTimezoneOffset", timezoneOffset);
  },
};
