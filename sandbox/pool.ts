// SandboxPool: N dedicated sandbox workers behind a FIFO queue, one call per worker at a
// time. Each call races a hard timer (its wall-clock backstop + margin, budget.ts): a worker that overruns (a long
// C built-in, promise code that swallowed the interrupt) is terminated and the call gets a
// typed HardKill result; a crashed worker gives a SandboxError result. A replaced worker's
// place is taken at once by a warm spare (started ahead, idle) while a new spare starts, so
// a queued call does not wait for a worker to start (2-3.5 s under load in Node). The bound:
// a call waits at most for the calls ahead of it, each at most its wall_backstop_s +
// hardKillMargin, then runs for at most its own wall_backstop_s + hardKillMargin; with the
// default one spare this holds for up to one worker replaced per spare start (two at once:
// the first takes the spare, the queued call runs there). run() never rejects. Environment-neutral: the worker comes from a factory
// (sandbox/pool-browser.ts: Web Worker, sandbox/pool-node.ts: worker_threads).
// Tested by sandbox/pool.test.ts and sandbox/adversarial.test.ts.
import type { HostToWorker, WorkerToHost } from "./protocol.ts";
import { resolveRequest } from "./run-code.ts";
import { type RunCodeRequest, type RunCodeResult, type SandboxRunner, sandboxError } from "./types.ts";

export interface WorkerEvents {
  message(message: WorkerToHost): void;
  /** The worker died or cannot serve; `reason` is for people. */
  crash(reason: string): void;
}

export interface WorkerHandle {
  post(message: HostToWorker): void;
  terminate(): void;
}

export type WorkerFactory = (events: WorkerEvents) => WorkerHandle;

export interface PoolOptions {
  /** Number of workers (each runs one call at a time). */
  size: number;
  /** Seconds past run_timeout before the host kills the worker. */
  hardKillMargin: number;
  /** Consecutive failed worker starts after which the pool gives up and answers SandboxError. */
  maxStartFailures: number;
  /** Idle workers kept started to take the place of a killed or crashed one at once. */
  spares: number;
}

export const POOL_DEFAULTS: PoolOptions = { size: 2, hardKillMargin: 0.5, maxStartFailures: 3, spares: 1 };

export interface PoolStats {
  size: number;
  ready: number;
  busy: number;
  queued: number;
  completed: number;
  hardKills: number;
  crashes: number;
  respawns: number;
  /** Spare workers started and ready. */
  sparesReady: number;
}

interface Job {
  id: number;
  request: RunCodeRequest;
  timeout: number;
  /** Seconds of wall clock the call may take before its own backstop stops it. */
  backstop: number;
  resolve(result: RunCodeResult): void;
  startedAt: number;
}

interface Slot {
  handle: WorkerHandle;
  generation: number;
  ready: boolean;
  job?: Job;
  timer?: ReturnType<typeof setTimeout>;
}

export class SandboxPool implements SandboxRunner {
  private readonly opts: PoolOptions;
  private readonly slots: Slot[] = [];
  private readonly spareSlots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private generation = 0;
  private startFailures = 0;
  private closed = false;
  private failure?: string;
  private counts = { completed: 0, hardKills: 0, crashes: 0, respawns: 0 };

  constructor(
    private readonly factory: WorkerFactory,
    options: Partial<PoolOptions> = {},
  ) {
    this.opts = { ...POOL_DEFAULTS, ...options };
    for (let i = 0; i < this.opts.size; i++)
      this.slots.push(this.spawn({ generation: 0, ready: false } as Slot));
    for (let i = 0; i < this.opts.spares; i++)
      this.spareSlots.push(this.spawn({ generation: 0, ready: false } as Slot));
  }

  run(request: RunCodeRequest): Promise<RunCodeResult> {
    if (this.closed) return Promise.resolve(sandboxError("the sandbox pool is closed"));
    if (this.failure) return Promise.resolve(sandboxError(this.failure));
    const limits = resolveRequest(request);
    if (typeof limits === "string") return Promise.resolve(sandboxError(limits, "InvalidRequest"));
    return new Promise((resolve) => {
      const { run_timeout: timeout, wall_backstop_s: backstop } = limits;
      this.queue.push({ id: this.nextId++, request, timeout, backstop, resolve, startedAt: 0 });
      this.pump();
    });
  }

  stats(): PoolStats {
    return {
      size: this.slots.length,
      ready: this.slots.filter((s) => s.ready).length,
      busy: this.slots.filter((s) => s.job).length,
      queued: this.queue.length,
      ...this.counts,
      sparesReady: this.spareSlots.filter((s) => s.ready).length,
    };
  }

  /** Resolves when every worker, spares included, has signalled it is ready (or the pool has given up). */
  async whenReady(timeoutMs = 30_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (this.slots.every((s) => s.ready) && this.spareSlots.every((s) => s.ready)) return true;
      if (this.failure || this.closed) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return false;
  }

  /** Terminates the workers; queued and running calls resolve with SandboxError. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const slot of this.slots) {
      this.finishJob(slot, sandboxError("the sandbox pool was closed"));
      slot.handle.terminate();
    }
    for (const slot of this.spareSlots) slot.handle.terminate();
    this.failQueue("the sandbox pool was closed");
  }

  private spawn(slot: Slot): Slot {
    const generation = ++this.generation;
    slot.generation = generation;
    slot.ready = false;
    // Events from a worker that was already replaced are ignored.
    const current = () => slot.generation === generation && !this.closed;
    slot.handle = this.factory({
      message: (m) => current() && this.onMessage(slot, m),
      crash: (reason) => current() && this.onCrash(slot, reason),
    });
    return slot;
  }

  /** Terminates a slot's worker; a ready spare takes a serving slot's place and a new spare starts. */
  private respawn(slot: Slot): void {
    slot.generation = -1;
    slot.handle.terminate();
    this.counts.respawns++;
    const at = this.slots.indexOf(slot);
    const spare = at < 0 ? -1 : this.spareSlots.findIndex((s) => s.ready);
    if (spare < 0) {
      this.spawn(slot);
      return;
    }
    this.slots[at] = this.spareSlots[spare];
    this.spareSlots[spare] = this.spawn({ generation: 0, ready: false } as Slot);
  }

  private onMessage(slot: Slot, m: WorkerToHost): void {
    if (m.type === "ready") {
      slot.ready = true;
      this.startFailures = 0;
      this.pump();
    } else if (m.type === "result") {
      if (slot.job?.id !== m.id) return;
      this.counts.completed++;
      this.finishJob(slot, m.result);
      this.pump();
    } else if (m.type === "fatal") this.onCrash(slot, m.message);
  }

  private onCrash(slot: Slot, reason: string): void {
    this.counts.crashes++;
    const elapsed = slot.job ? (performance.now() - slot.job.startedAt) / 1000 : 0;
    this.finishJob(slot, sandboxError(`the sandbox worker crashed: ${reason}`, "SandboxError", elapsed));
    if (!slot.ready && ++this.startFailures >= this.opts.maxStartFailures) {
      this.failure = `sandbox workers fail to start (${reason})`;
      for (const s of [slot, ...this.spareSlots]) {
        s.generation = -1;
        s.handle.terminate();
      }
      this.failQueue(this.failure);
      return;
    }
    this.respawn(slot);
    this.pump();
  }

  private onHardTimer(slot: Slot): void {
    const job = slot.job;
    if (!job) return;
    this.counts.hardKills++;
    const elapsed = (performance.now() - job.startedAt) / 1000;
    // The text names the limits, never a measured time, so it reads the same on any machine.
    const message = `killed: the code did not stop within the ${job.backstop} s wall-clock backstop of its ${job.timeout} s budget (a long built-in call or a swallowed interrupt)`;
    this.finishJob(slot, {
      status: "Failed",
      run_result: {
        status: "TimeLimitExceeded",
        execution_time: elapsed,
        return_code: null,
        stdout: "",
        stderr: `Uncaught TimeoutError: ${message}\n`,
      },
      error: { kind: "HardKill", name: "TimeoutError", message },
      truncated: false,
      backstop: true,
    });
    this.respawn(slot);
    this.pump();
  }

  private finishJob(slot: Slot, result: RunCodeResult): void {
    if (slot.timer !== undefined) clearTimeout(slot.timer);
    slot.timer = undefined;
    const job = slot.job;
    slot.job = undefined;
    job?.resolve(result);
  }

  private failQueue(message: string): void {
    for (const job of this.queue.splice(0)) job.resolve(sandboxError(message));
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (!slot.ready || slot.job) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      job.startedAt = performance.now();
      slot.timer = setTimeout(() => this.onHardTimer(slot), (job.backstop + this.opts.hardKillMargin) * 1000);
      slot.handle.post({ type: "run", id: job.id, request: job.request });
    }
  }
}
