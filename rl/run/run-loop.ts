// The loop around the Trainer that the web worker and the CLI share, and the one owner of the
// run record's schedule: the SFT phase, VAPO value pretraining before the first RL step when
// rl.value_pretrain.steps > 0 (rows with phase "value_pretrain", until its stop rule), RL
// steps with held-out evaluation at RL step 0 and every task.eval_every steps, until
// stop.max_steps or stop.target; pause / resume / single step / stop; the non-finite guard (a
// skipped update is an event on the charts; three in a row pause the run).
//
// The run record is config + seed + edits. An edit is {phase, step, path, value} and applies at
// the start of step `step` of `phase`. The loop applies them itself: the recorded log it is
// given (a link's, a bundle's, a stored run's) at their points, and live edits (edit()) at the
// start of the next step, stamped with that step's phase and index and reported through
// on.edit as new entries of the log. Checkpoints are the loop's too: it decides when one is
// due (the end of SFT; value-pretraining steps and RL steps every checkpoint_every, the end of
// value pretraining and the end of the run; and, when RunLoopOptions.checkpointSeconds is set,
// after any SFT, value-pretraining or RL step that ends that long after the last checkpoint,
// so a reload loses at most that much training whatever checkpoint_every says) and makes the bytes (weights, optimizer, KL
// reference, trainer state: Trainer.runState). A resume (a reload, a crash, a device loss, the
// CLI's --resume) hands the loop such a checkpoint and its point; the loop restores it,
// re-applies the logged edits made before that point and replays the rest at their steps,
// so a resumed run and a replayed link produce the rows the original run produced.
// workers/trainer.worker.ts and cli/train.ts only persist, print and report progress.
// Tested by rl/run/record.test.ts (promise, regressions, property test) and rl/run/trainer.test.ts.
import { type ConfigEdit, comparePoints, type EditPhase, type RunPoint } from "../../config";
import { loadCheckpoint, saveCheckpoint } from "../../model/checkpoint";
import { describeStorage } from "../../model/half";
import type { ChatTemplateFacts } from "../../model/tool-list-prompt";
import type { MetricsRow, SampleRecord, Trainer, TrainerRunState } from "./trainer";

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
    /** The model's chat template, as loaded (the export reads it: export/index.ts chatFactsOf). */
    chat?: ChatTemplateFacts;
  }): void;
  phase?(phase: RunPhase): void;
  /** A live edit was applied: a new entry of the run's edit log (replayed edits are not reported here). */
  edit?(edit: ConfigEdit): void;
  /** A checkpoint is due: `bytes` resume the run at {phase, step} (RunLoopOptions.resume). */
  checkpoint?(ck: RunPoint & { bytes: Uint8Array }): Promise<void> | void;
}

export interface RunLoopOptions {
  /** The run's recorded edits, each applied at the start of its {phase, step}. */
  edits?: readonly ConfigEdit[];
  /** Continue from a checkpoint saved at `at` (a RunEvents.checkpoint's bytes, or an older lab's). */
  resume?: { at: RunPoint; checkpoint: Uint8Array };
  /**
   * Also checkpoint after a step that ends this many seconds (wall time) after the last
   * checkpoint (or the loop's start). The web worker sets it; rows do not depend on it.
   */
  checkpointSeconds?: number;
  /** Wall-clock seconds for checkpointSeconds (default: Date.now()); tests inject one. */
  now?: () => number;
}

export const MAX_SKIPS_IN_A_ROW = 3;

/** Checkpoint metadata keys the loop writes (safetensors __metadata__ values are strings). */
const META_PHASE = "run_phase";
const META_STEP = "run_step";
const META_STATE = "run_state";

/** The point a checkpoint made by RunLoop was saved at, or undefined for other checkpoints. */
export function checkpointPoint(bytes: Uint8Array): RunPoint | undefined {
  const m = loadCheckpoint(bytes).metadata ?? {};
  const phase = m[META_PHASE] as EditPhase | undefined;
  const step = Number(m[META_STEP]);
  if (!phase || !Number.isInteger(step)) return undefined;
  return { phase, step };
}

export class RunLoop {
  private queued: { path: string; value: unknown }[] = [];
  /** Recorded edits not applied yet, in run order. */
  private pending: ConfigEdit[];
  /** Every edit applied in this run, replayed or live, in run order: the run's edit log so far. */
  readonly appliedEdits: ConfigEdit[] = [];
  private paused = false;
  private stopped = false;
  private stepBudget = Number.POSITIVE_INFINITY;
  private wake?: () => void;
  private skipsInARow = 0;
  /** When the last checkpoint was made (or the loop started), in opts.now() seconds. */
  private lastSaveTime = 0;
  phase: RunPhase = "idle";

  constructor(
    readonly trainer: Trainer,
    private readonly on: RunEvents = {},
    private readonly opts: RunLoopOptions = {},
  ) {
    // A stable sort: edits at the same point keep their recorded order.
    this.pending = [...(opts.edits ?? [])].sort(comparePoints);
  }

  /** Queues a live config edit; it applies at the start of the next step. */
  edit(path: string, value: unknown): void {
    this.queued.push({ path, value });
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

  private apply(edit: ConfigEdit, live: boolean, report = true): void {
    const r = this.trainer.applyEdit(edit);
    const at = { step: edit.step, phase: edit.phase, edit };
    if (r.ok) {
      this.appliedEdits.push(edit);
      if (live) this.on.edit?.(edit);
      if (report)
        this.on.event?.({ ...at, kind: "edit", message: `${edit.path} = ${JSON.stringify(edit.value)}` });
    } else {
      this.on.event?.({ ...at, kind: "edit-refused", message: r.error });
    }
  }

  /** Before step `step` of `phase`: the recorded edits due by then, then the live ones. */
  private applyAt(phase: EditPhase, step: number): void {
    const here = { phase, step };
    while (this.pending.length && comparePoints(this.pending[0], here) <= 0)
      this.apply(this.pending.shift()!, false);
    for (const q of this.queued.splice(0)) this.apply({ phase, step, ...q }, true);
  }

  /** Resume: the checkpoint's weights, optimizer and trainer state, and the edits made before it. */
  private async restore(): Promise<void> {
    const r = this.opts.resume;
    if (!r) return;
    const tr = this.trainer;
    const ck = loadCheckpoint(r.checkpoint);
    await tr.policy.setWeights(ck.weights);
    if (ck.adapter) await tr.policy.setAdapter(ck.adapter);
    if (ck.optimizer) await tr.policy.setOptimizerState(ck.optimizer);
    const saved = ck.metadata?.[META_STATE];
    const sftDone = r.at.phase === "sft" ? r.at.step : tr.config.sft.steps;
    // A checkpoint of an older lab has no trainer state: the point says where the run was.
    const state: TrainerRunState = saved
      ? (JSON.parse(saved) as TrainerRunState)
      : {
          sftStep: sftDone,
          valuePretrainStep: r.at.phase === "value_pretrain" ? r.at.step : 0,
          valuePretrainFinished: r.at.phase === "rl",
          rlStep: r.at.phase === "rl" ? r.at.step : 0,
          advState: {},
        };
    state.reference = ck.reference;
    await tr.restoreRunState(state);
    while (this.pending.length && comparePoints(this.pending[0], r.at) < 0)
      this.apply(this.pending.shift()!, false, false);
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : Date.now() / 1000;
  }

  /** checkpointSeconds passed since the last checkpoint. */
  private timeDue(): boolean {
    const s = this.opts.checkpointSeconds;
    return s !== undefined && s > 0 && this.now() - this.lastSaveTime >= s;
  }

  private async save(at: RunPoint): Promise<void> {
    if (!this.on.checkpoint) return;
    this.lastSaveTime = this.now();
    const p = this.trainer.policy;
    const { reference, ...state } = await this.trainer.runState();
    const bytes = saveCheckpoint({
      config: p.config,
      weights: await p.getWeights(),
      adapter: (await p.getAdapter()) ?? undefined,
      optimizer: await p.getOptimizerState(),
      reference,
      metadata: {
        [META_PHASE]: at.phase,
        [META_STEP]: String(at.step),
        [META_STATE]: JSON.stringify(state),
        seed: String(this.trainer.config.seed),
      },
    });
    await this.on.checkpoint({ ...at, bytes });
  }

  private every(n: number): boolean {
    const every = this.trainer.config.checkpoint_every;
    return every > 0 && n % every === 0;
  }

  private guard(skipped: string | undefined, step: number, phase: EditPhase): void {
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

  /** The model's facts a run records before its first step: an f16 base's storage, whether its chat template renders the tools. */
  private announceModel(): void {
    const tr = this.trainer;
    const sft = tr.sftStepIndex < tr.config.sft.steps;
    const at = {
      step: sft ? tr.sftStepIndex : tr.rlStepIndex,
      phase: sft ? ("sft" as const) : ("rl" as const),
    };
    // An f16 base (model.dtype): how the loaded base is stored, and any tensor kept f32.
    const storage = tr.policy.baseStorage?.();
    if (storage?.requested === "f16")
      this.on.event?.({ ...at, kind: "info", message: describeStorage(storage) });
    // A model's own chat template: whether it renders the tools is part of the run's record.
    const rendersTools = tr.chat.rendersTools;
    if (rendersTools !== undefined)
      this.on.event?.({
        ...at,
        kind: "info",
        message: rendersTools
          ? "the model's chat template renders the tools itself"
          : "the model's chat template ignores tools: the tool list goes into the system message",
        chat: { renders_tools: rendersTools },
      });
  }

  /** The SFT steps left, then a checkpoint; false when the run was stopped. */
  private async sftPhase(): Promise<boolean> {
    const tr = this.trainer;
    if (tr.sftStepIndex >= tr.config.sft.steps) return true;
    this.setPhase("sft");
    while (tr.sftStepIndex < tr.config.sft.steps) {
      if (!(await this.gate())) return false;
      if (this.phase !== "sft") this.setPhase("sft");
      this.applyAt("sft", tr.sftStepIndex);
      const out = await tr.sftStep();
      this.on.row?.(out.row);
      this.guard(out.skipped, out.row.step, "sft");
      if (tr.sftStepIndex < tr.config.sft.steps && this.timeDue())
        await this.save({ phase: "sft", step: tr.sftStepIndex });
    }
    await this.save({ phase: "sft", step: tr.sftStepIndex });
    return true;
  }

  /** The value-pretraining steps left (GAE with rl.value_pretrain); false when the run was stopped. */
  private async valuePretrainPhase(): Promise<boolean> {
    const tr = this.trainer;
    while (tr.needsValuePretrain) {
      if (!(await this.gate())) return false;
      if (this.phase !== "rl") this.setPhase("rl");
      this.applyAt("value_pretrain", tr.valuePretrainStepIndex);
      const out = await tr.valuePretrainStep();
      this.on.row?.(out.row);
      this.guard(out.skipped, out.row.step, "value_pretrain");
      const n = tr.valuePretrainStepIndex;
      if (tr.valuePretrainFinished)
        this.on.event?.({
          step: n - 1,
          phase: "value_pretrain",
          kind: "info",
          message: `value pretraining done after ${n} steps`,
        });
      if (tr.valuePretrainFinished || this.every(n) || this.timeDue())
        await this.save({ phase: "value_pretrain", step: n });
    }
    return true;
  }

  /** The RL steps left (with their evaluations) until max_steps or the target, then a checkpoint; false when stopped. */
  private async rlPhase(): Promise<boolean> {
    const tr = this.trainer;
    let savedAt = -1;
    while (tr.rlStepIndex < tr.config.stop.max_steps) {
      if (!(await this.gate())) return false;
      if (this.phase !== "rl") this.setPhase("rl");
      const step = tr.rlStepIndex;
      this.applyAt("rl", step);
      const every = tr.config.task.eval_every;
      const val = step === 0 || (every > 0 && step % every === 0) ? await tr.evaluate() : {};
      const out = await tr.rlStep();
      Object.assign(out.row, val);
      this.on.row?.(out.row);
      this.on.samples?.(out.samples);
      this.guard(out.skipped, step, "rl");
      if (this.every(tr.rlStepIndex) || this.timeDue()) {
        await this.save({ phase: "rl", step: tr.rlStepIndex });
        savedAt = tr.rlStepIndex;
      }
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
    if (savedAt !== tr.rlStepIndex) await this.save({ phase: "rl", step: tr.rlStepIndex });
    return true;
  }

  /** Runs to the end (or until stop()); resolves when done. */
  async run(): Promise<void> {
    const tr = this.trainer;
    try {
      await this.restore();
      this.lastSaveTime = this.now();
      this.announceModel();
      if (!(await this.sftPhase())) return this.finish("stopped");
      this.setPhase("rl");
      if (!(await this.valuePretrainPhase())) return this.finish("stopped");
      if (!(await this.rlPhase())) return this.finish("stopped");
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
