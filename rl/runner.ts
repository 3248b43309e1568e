// The loop around the Trainer that the web worker and the CLI share: the SFT phase (unless
// the run starts from a checkpoint), held-out evaluation at RL step 0 and every
// task.eval_every steps, VAPO value pretraining before the first RL step when
// rl.value_pretrain.steps > 0 (rows with phase "value_pretrain", until its stop rule), RL
// steps until stop.max_steps or stop.target, live edits applied
// at the start of the next step, pause / resume / single step / stop, and the non-finite
// guard (a skipped update is an event on the charts; three in a row pause the run).
// Tested by rl/runner.test.ts (CPU model, real sandbox).
import type { ConfigEdit } from "../config";
import type { MetricsRow, SampleRecord, Trainer } from "./trainer";

export type RunPhase = "idle" | "sft" | "rl" | "paused" | "done" | "error";

export interface RunEvents {
  row?(row: MetricsRow): void;
  samples?(samples: SampleRecord[]): void;
  /** An applied or refused edit, a skipped update, a pause, an error: for the UI's markers and log. */
  event?(e: {
    step: number;
    phase: string;
    kind: "edit" | "edit-refused" | "skipped" | "paused" | "stopped" | "error" | "info";
    message: string;
    edit?: ConfigEdit;
  }): void;
  phase?(phase: RunPhase): void;
  /** After each RL step (and at the end of SFT): where a caller saves checkpoints. */
  checkpoint?(info: { phase: "sft" | "rl"; step: number }): Promise<void> | void;
}

export const MAX_SKIPS_IN_A_ROW = 3;

export class RunLoop {
  private edits: ConfigEdit[] = [];
  readonly appliedEdits: ConfigEdit[] = [];
  private paused = false;
  private stopped = false;
  private stepBudget = Number.POSITIVE_INFINITY;
  private wake?: () => void;
  private skipsInARow = 0;
  phase: RunPhase = "idle";

  constructor(
    readonly trainer: Trainer,
    private readonly on: RunEvents = {},
    /** SFT steps already done (resume) and whether to run SFT at all. */
    private readonly opts: { runSft?: boolean } = {},
  ) {}

  /** Queues a config edit; it applies at the start of the next step. */
  edit(path: string, value: unknown): void {
    this.edits.push({ step: this.trainer.rlStepIndex, path, value });
    this.wake?.();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.stepBudget = Number.POSITIVE_INFINITY;
    this.wake?.();
  }

  /** Runs exactly one more step, then pauses. */
  stepOnce(): void {
    this.stepBudget = 1;
    this.paused = false;
    this.wake?.();
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  private setPhase(p: RunPhase) {
    this.phase = p;
    this.on.phase?.(p);
  }

  private async gate(): Promise<boolean> {
    while ((this.paused || this.stepBudget <= 0) && !this.stopped) {
      if (this.phase !== "paused") this.setPhase("paused");
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = undefined;
    }
    if (this.stopped) return false;
    this.stepBudget--;
    if (this.stepBudget <= 0) this.paused = true;
    return true;
  }

  private applyPending(phase: "sft" | "rl"): void {
    const step = phase === "rl" ? this.trainer.rlStepIndex : this.trainer.sftStepIndex;
    for (const e of this.edits.splice(0)) {
      const edit = { ...e, step };
      const r = this.trainer.applyEdit(edit);
      if (r.ok) {
        this.appliedEdits.push(edit);
        this.on.event?.({
          step,
          phase,
          kind: "edit",
          message: `${edit.path} = ${JSON.stringify(edit.value)}`,
          edit,
        });
      } else {
        this.on.event?.({ step, phase, kind: "edit-refused", message: r.error, edit });
      }
    }
  }

  private guard(skipped: string | undefined, step: number, phase: "sft" | "rl"): void {
    if (!skipped) {
      this.skipsInARow = 0;
      return;
    }
    this.skipsInARow++;
    this.on.event?.({ step, phase, kind: "skipped", message: skipped });
    if (this.skipsInARow >= MAX_SKIPS_IN_A_ROW) {
      this.paused = true;
      this.on.event?.({
        step,
        phase,
        kind: "paused",
        message: `${this.skipsInARow} updates in a row were skipped (non-finite loss or gradient); the run is paused. Lower the learning rate or check the reward, then resume.`,
      });
    }
  }

  private targetReached(row: MetricsRow): boolean {
    const t = this.trainer.config.stop.target;
    if (!t) return false;
    const v = row[t.key];
    return typeof v === "number" && v >= t.value;
  }

  /** Runs to the end (or until stop()); resolves when done. */
  async run(): Promise<void> {
    const tr = this.trainer;
    try {
      if (this.opts.runSft !== false && tr.sftStepIndex < tr.config.sft.steps) {
        this.setPhase("sft");
        while (tr.sftStepIndex < tr.config.sft.steps) {
          if (!(await this.gate())) return this.finish("stopped");
          if (this.phase !== "sft") this.setPhase("sft");
          this.applyPending("sft");
          const out = await tr.sftStep();
          this.on.row?.(out.row);
          this.guard(out.skipped, out.row.step, "sft");
        }
        await this.on.checkpoint?.({ phase: "sft", step: tr.sftStepIndex });
      }
      this.setPhase("rl");
      while (tr.needsValuePretrain) {
        if (!(await this.gate())) return this.finish("stopped");
        if (this.phase !== "rl") this.setPhase("rl");
        this.applyPending("rl");
        const out = await tr.valuePretrainStep();
        this.on.row?.(out.row);
        this.guard(out.skipped, out.row.step, "rl");
        if (tr.valuePretrainFinished)
          this.on.event?.({
            step: 0,
            phase: "rl",
            kind: "info",
            message: `value pretraining done after ${tr.valuePretrainStepIndex} steps`,
          });
      }
      while (tr.rlStepIndex < tr.config.stop.max_steps) {
        if (!(await this.gate())) return this.finish("stopped");
        if (this.phase !== "rl") this.setPhase("rl");
        this.applyPending("rl");
        const step = tr.rlStepIndex;
        const every = tr.config.task.eval_every;
        const val = step === 0 || (every > 0 && step % every === 0) ? await tr.evaluate() : {};
        const out = await tr.rlStep();
        Object.assign(out.row, val);
        this.on.row?.(out.row);
        this.on.samples?.(out.samples);
        this.guard(out.skipped, step, "rl");
        await this.on.checkpoint?.({ phase: "rl", step: tr.rlStepIndex });
        if (this.targetReached(out.row)) {
          this.on.event?.({
            step,
            phase: "rl",
            kind: "info",
            message: `target ${tr.config.stop.target!.key} reached`,
          });
          break;
        }
      }
      // A last held-out evaluation of the final policy, as its own row.
      const val = await tr.evaluate();
      if (Object.keys(val).length > 0)
        this.on.row?.({ step: tr.rlStepIndex, phase: "rl", time: tr.clock(), ...val });
      this.finish("done");
    } catch (err) {
      this.setPhase("error");
      this.on.event?.({
        step: tr.rlStepIndex,
        phase: this.phase,
        kind: "error",
        message: (err as Error).message,
      });
      throw err;
    }
  }

  private finish(how: "done" | "stopped"): void {
    if (how === "stopped")
      this.on.event?.({
        step: this.trainer.rlStepIndex,
        phase: this.phase,
        kind: "stopped",
        message: "stopped",
      });
    this.setPhase("done");
  }
}
