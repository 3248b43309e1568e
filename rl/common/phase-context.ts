// What every training phase (rl/update/sft-step.ts, rl/update/rl-step.ts, rl/update/value-pretrain.ts, rl/rollout/evaluate.ts)
// reads: the run config as of this step, the policy, the task seam, the sandbox's tools, the
// clock and the progress callback. The Trainer (rl/run/trainer.ts) builds one per call. Also the
// TaskDriver seam it holds (rl/rollout/task-driver.ts makes one per task kind).
import type { RunConfig } from "../../config";
import type { PolicyModel, SamplingOptions } from "../../model/api";
import type { ChatFormat } from "../../model/chat";
import type { SandboxRunner } from "../../sandbox/types";
import type { Rng } from "../../tasks/rng";
import type { AnyTask, Demo, Problem, TaskTool } from "../../tasks/types";
import type { ToolProtocol } from "../rollout/agent-loop";
import type { RewardItem } from "../rollout/batch-rewards";

/** What a step is doing now (the UI's progress bar). */
export type Activity = "sft" | "rollout" | "tools" | "reward" | "update" | "eval";

export interface TrainerContext {
  readonly config: RunConfig;
  readonly policy: PolicyModel;
  readonly task: AnyTask;
  /** Single-turn task or multi-turn environment: the one place the two differ. */
  readonly driver: TaskDriver;
  /** The tokenizer and template prompts, demonstrations and rollouts use (the driver's choice). */
  readonly chat: ChatFormat;
  readonly sandbox: SandboxRunner;
  readonly tools: ToolProtocol;
  /** Seconds since the run started. */
  clock(): number;
  activity(a: Activity): void;
  /** The frozen reference policy for KL (made from the policy on first need). */
  reference(): Promise<PolicyModel>;
}

/** The seam between single-turn tasks and multi-turn environments (rl/rollout/task-driver.ts). */
export interface TaskDriver {
  /** Tools the model may call (none for environments: they act through their turns). */
  readonly tools: TaskTool[];
  /** The chat format prompts and demonstrations render with, given the run's. */
  chat(run: ChatFormat): ChatFormat;
  /** n training prompts (for an environment: its seeds as prompts). */
  sample(rng: Rng, n: number): Problem[];
  /** The held-out prompts. */
  evalSet(n: number): Problem[];
  /** The dev prompts (split version 2), or undefined when the task has no dev side. */
  devSet?(n: number): Problem[];
  sftDemos(rng: Rng, n: number, knobs: Record<string, unknown>): Demo[];
  /** Rolls out one trajectory per owner and judges it; toolSeconds is time in tools or the env. */
  rollout(
    ctx: TrainerContext,
    owners: Problem[],
    sampling: SamplingOptions,
  ): Promise<{ items: RewardItem[]; toolSeconds: number }>;
  /** val/* metrics beyond accuracy and tool-call rate for one eval mode ("val" or "dev" prefix). */
  evalMetrics(items: RewardItem[], suffix: string, prefix?: string): Record<string, number>;
}
