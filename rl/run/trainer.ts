// The training engine: SFT cold start and RL steps over any PolicyModel (WebGPU or CPU), a
// task, and a sandbox. The Trainer holds the run's state (config, step counters, estimator
// state, the frozen reference) and hands each phase a TrainerContext (rl/common/phase-context.ts):
//   rl/update/sft-step.ts             the SFT step
//   rl/rollout/collect-groups.ts         RL steps 1-4: sample, roll out, reward, filter, refill (ReMax baseline)
//   rl/update/rl-step.ts         the RL step: advantages, the update, the metrics row
//   rl/update/minibatch-loss.ts            the minibatch loss and its per-token gradients
//   rl/update/minibatch-loop.ts       the one minibatch loop (SFT, RL update, value pretraining)
//   rl/update/value-pretrain.ts  VAPO's value pretraining (phase "value_pretrain")
//   rl/rollout/evaluate.ts        held-out evaluation (val/*)
//   rl/rollout/task-driver.ts          the seam between single-turn tasks and multi-turn environments
//   rl/common/config-options.ts         config knobs -> algorithm options, in one place
//   rl/common/step-records.ts         metrics rows and sample records
// Every random choice derives from (config.seed, phase, step), so a run replays exactly and a
// resumed run needs no saved RNG state. Config edits apply at the start of the next step.
// The loop that drives it (pause, resume, stop rules) is rl/run/run-loop.ts.
// Tested by rl/run/trainer.test.ts, rl/run/trainer-env.test.ts, rl/update/vapo.test.ts,
// rl/update/baselines.test.ts, rl/run/registry-run.test.ts (CPU model) and the headless runs (cli/, e2e/).
import { applyEdit, type ConfigEdit, type RunConfig } from "../../config";
import type { PolicyModel } from "../../model/api";
import { builtinChat, type ChatFormat } from "../../model/chat";
import { CHAR_TOKENIZER, type Tokenizer } from "../../model/tokenizer";
import type { SandboxRunner } from "../../sandbox/types";
import type { AnyTask, Problem } from "../../tasks/types";
import type { AdvantageState } from "../algos/advantage";
import type { Activity, TaskDriver, TrainerContext } from "../common/phase-context";
import type { StepOutput } from "../common/step-records";
import type { ToolProtocol } from "../rollout/agent-loop";
import { evaluate } from "../rollout/evaluate";
import { taskDriver } from "../rollout/task-driver";
import { makeToolProtocol } from "../rollout/tool-protocol";
import { rlStep } from "../update/rl-step";
import { sftStep } from "../update/sft-step";
import { valuePretrainStep } from "../update/value-pretrain";

export type { MetricsRow, SampleRecord, StepOutput } from "../common/step-records";
export type { MinibatchInput } from "../update/minibatch-loss";
export { minibatchLoss } from "../update/minibatch-loss";

export interface TrainerDeps {
  policy: PolicyModel;
  /** A single-turn task, or a multi-turn environment (rl/rollout/env-episodes.ts plays its episodes). */
  task: AnyTask;
  sandbox: SandboxRunner;
  /**
   * The tokenizer and transcript template (model/chat.ts, built by rl/run/run-parts.ts chatFormatOf);
   * default: task.template with the character tokenizer. Environments speak chatml-turns.
   */
  chat?: ChatFormat;
  /** Frozen reference policy for KL; made from the policy on first need when absent. */
  reference?: PolicyModel;
  /** Seconds since the run started (injected so replays can ignore wall time). */
  clock?: () => number;
  /** Told what a step is doing now (the UI's progress bar). */
  onActivity?: (activity: Activity) => void;
}

/** Trainer.runState(): what a checkpoint carries besides weights and optimizer. */
export interface TrainerRunState {
  sftStep: number;
  valuePretrainStep: number;
  valuePretrainFinished: boolean;
  rlStep: number;
  advState: AdvantageState;
  reference?: Float32Array;
}

export class Trainer {
  config: RunConfig;
  rlStepIndex = 0;
  sftStepIndex = 0;
  /** VAPO value pretraining (rl.value_pretrain): steps done, and whether its stop rule fired. */
  valuePretrainStepIndex = 0;
  valuePretrainFinished = false;
  private reference?: PolicyModel;
  private readonly driver: TaskDriver;
  private tools: ToolProtocol;
  private defaultChat?: ChatFormat;
  private advState: AdvantageState = {};
  private evalProblems?: Problem[];
  private devProblems?: Problem[];
  /** Seconds since the run started. */
  readonly clock: () => number;

  constructor(
    config: RunConfig,
    private readonly deps: TrainerDeps,
  ) {
    this.config = config;
    this.reference = deps.reference;
    this.driver = taskDriver(deps.task);
    const t0 = Date.now();
    this.clock = deps.clock ?? (() => (Date.now() - t0) / 1000);
    this.tools = this.makeTools();
  }

  private makeTools(): ToolProtocol {
    return makeToolProtocol(
      this.driver.tools,
      this.deps.sandbox,
      { timeoutS: this.config.limits.tool_timeout_s, memoryMB: this.config.limits.memory_mb },
      this.chat.callSyntax,
    );
  }

  /** The chat format rollouts and demonstrations use (an environment's is always chatml-turns). */
  get chat(): ChatFormat {
    return this.driver.chat(this.runChat());
  }

  get tokenizer(): Tokenizer {
    return this.chat.tokenizer;
  }

  // The one given, else task.template with the character tokenizer.
  private runChat(): ChatFormat {
    if (this.deps.chat) return this.deps.chat;
    const t = this.config.task.template;
    if (t === "model")
      throw new Error(
        'task.template: "model" needs the chat format built from model.tokenizer (rl/run/run-parts.ts chatFormatOf)',
      );
    if (this.defaultChat?.name !== t) this.defaultChat = builtinChat(t, CHAR_TOKENIZER);
    return this.defaultChat;
  }

  get policy(): PolicyModel {
    return this.deps.policy;
  }

  /** Applies a live edit (validated by config/); restart-only fields are refused with a message. */
  applyEdit(edit: ConfigEdit): { ok: true } | { ok: false; error: string } {
    const r = applyEdit(this.config, edit);
    if (!r.ok) return r;
    this.config = r.config;
    this.tools = this.makeTools();
    return { ok: true };
  }

  /**
   * Everything a resume needs besides the policy's weights and optimizer state: step counters,
   * the estimator state carried between steps (reinforce-history) and the KL reference's
   * weights once it exists (the policy as it was when KL was first needed). rl/run/run-loop.ts puts
   * it in each checkpoint and restores it; the rest derives from (seed, phase, step).
   */
  async runState(): Promise<TrainerRunState> {
    return {
      sftStep: this.sftStepIndex,
      valuePretrainStep: this.valuePretrainStepIndex,
      valuePretrainFinished: this.valuePretrainFinished,
      rlStep: this.rlStepIndex,
      advState: structuredClone(this.advState),
      // With LoRA the reference is the frozen base itself (policy.referencePolicy): nothing to save.
      reference:
        this.reference && (await this.deps.policy.getAdapter()) === null
          ? await this.reference.getWeights()
          : undefined,
    };
  }

  async restoreRunState(s: TrainerRunState): Promise<void> {
    this.sftStepIndex = s.sftStep;
    this.valuePretrainStepIndex = s.valuePretrainStep;
    this.valuePretrainFinished = s.valuePretrainFinished;
    this.rlStepIndex = s.rlStep;
    this.advState = structuredClone(s.advState);
    if (this.reference !== this.deps.reference) this.reference?.dispose();
    this.reference = undefined;
    if (s.reference) {
      const ref = await this.deps.policy.frozenCopy();
      await ref.setWeights(s.reference);
      this.reference = ref;
    }
  }

  /** What the phases see of the trainer at this step. */
  private context(): TrainerContext {
    const { policy, task, sandbox, onActivity } = this.deps;
    return {
      config: this.config,
      policy,
      task,
      driver: this.driver,
      chat: this.chat,
      sandbox,
      tools: this.tools,
      clock: this.clock,
      activity: (a) => onActivity?.(a),
      reference: async () => {
        this.reference ??= await policy.referencePolicy();
        return this.reference;
      },
    };
  }

  /** One supervised step on demonstrations: cross-entropy over assistant tokens only. */
  async sftStep(): Promise<StepOutput> {
    const out = await sftStep(this.context(), this.sftStepIndex);
    this.sftStepIndex++;
    return out;
  }

  /** One RL step. Returns the metrics row and a sample of trajectories for the inspector. */
  async rlStep(): Promise<StepOutput> {
    const { advState, ...out } = await rlStep(this.context(), this.rlStepIndex, this.advState);
    this.advState = advState;
    this.rlStepIndex++;
    return out;
  }

  /**
   * Whether VAPO value pretraining (ALGORITHMS §12) still has to run before the first RL
   * step: rl.value_pretrain.steps > 0, a model with a value head, and its stop rule not met.
   */
  get needsValuePretrain(): boolean {
    const vp = this.config.rl.value_pretrain;
    return (
      vp.steps > 0 &&
      this.deps.policy.config.valueHead &&
      !this.valuePretrainFinished &&
      this.rlStepIndex === 0
    );
  }

  /** One value-pretraining step (rl/update/value-pretrain.ts); the stop rule is checked after it. */
  async valuePretrainStep(): Promise<StepOutput> {
    const { finished, ...out } = await valuePretrainStep(this.context(), this.valuePretrainStepIndex);
    this.valuePretrainStepIndex++;
    this.valuePretrainFinished = finished;
    return out;
  }

  /**
   * Held-out evaluation: greedy and sampled rollouts of the task's eval set (val/* metrics),
   * then of its dev set (dev/*) when task.dev_size > 0.
   */
  async evaluate(): Promise<Record<string, number>> {
    const c = this.config;
    this.evalProblems ??= this.driver.evalSet(c.task.eval_size);
    const out = await evaluate(this.context(), this.evalProblems, this.rlStepIndex);
    if (c.task.dev_size > 0) {
      if (!this.driver.devSet || c.task.split_version < 2)
        throw new Error(
          `task.dev_size: task "${c.task.name}" has no dev set${c.task.split_version < 2 ? " under split version 1" : ""}`,
        );
      this.devProblems ??= this.driver.devSet(c.task.dev_size);
      Object.assign(out, await evaluate(this.context(), this.devProblems, this.rlStepIndex, "dev"));
    }
    return out;
  }
}
