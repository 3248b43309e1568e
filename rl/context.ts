// What every training phase (rl/sft.ts, rl/rl-step.ts, rl/value-pretrain.ts, rl/evaluate.ts)
// reads: the run config as of this step, the policy, the task seam, the sandbox's tools, the
// clock and the progress callback. The Trainer (rl/trainer.ts) builds one per call.
import type { RunConfig } from "../config";
import type { PolicyModel } from "../model/api";
import type { ChatFormat } from "../model/chat";
import type { SandboxRunner } from "../sandbox/types";
import type { AnyTask } from "../tasks/types";
import type { TaskDriver } from "./driver";
import type { ToolProtocol } from "./rollout";

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
