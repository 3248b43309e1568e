// The types shared by the UI and the engine's workers: the only engine-facing import the app
// has besides config/. The trainer worker implements TrainerApi over comlink; the UI calls it
// through app/engine.ts and receives pushes through the callbacks it subscribes with.
import type { ConfigEdit, RunConfig } from "../config";
import type { AdapterSummary } from "../kernels/device";
import type { CacheEntry, DownloadProgress } from "../model/hub";
import type { ModelSource } from "../model/source";
import type { ChatTemplateFacts } from "../model/tool-list-prompt";
import type { MetricsRow, SampleRecord } from "../rl/run/trainer";
import type { SmokeReport } from "../sandbox/smoke";
import type { ModelInfo, ModelOptions } from "./model-cache";
import type { CheckpointInfo, LoadedRun, RunGroupRef, RunMeta, StorageUsage } from "./store";

/**
 * A stored run as listRuns() gives it: its record, where its newest checkpoint is (null: none),
 * and the multi-seed group it is a seed of.
 */
export type StoredRun = RunMeta & { checkpoint?: CheckpointInfo | null; group?: RunGroupRef };

/** A run that was running when its page went away, now marked "interrupted", and where Resume continues. */
export interface InterruptedRun {
  run: StoredRun;
  /** The newest checkpoint; null: Resume restarts the run from step 0. */
  checkpoint: CheckpointInfo | null;
}

export type {
  AdapterSummary,
  CacheEntry,
  CheckpointInfo,
  ConfigEdit,
  DownloadProgress,
  LoadedRun,
  MetricsRow,
  ModelInfo,
  ModelOptions,
  ModelSource,
  RunConfig,
  RunGroupRef,
  SampleRecord,
  SmokeReport,
  StorageUsage,
};

/** What the trainer worker reports about WebGPU: the adapter, or why there is none. */
export type GpuStatus =
  | { ok: true; adapter: AdapterSummary }
  | { ok: false; reason: string; message: string };

/**
 * Where a run is. "paused" after pause() or a single step; "done" at a stop rule; "stopped"
 * when stop() ended it; "error" with a message.
 */
export type RunPhase = "idle" | "loading" | "sft" | "rl" | "paused" | "done" | "stopped" | "error";

/** A run event: an applied or refused edit (chart markers), a skipped update, a pause, an error. */
export interface RunEvent {
  step: number;
  phase: string;
  kind: "edit" | "edit-refused" | "skipped" | "paused" | "stopped" | "error" | "info";
  message: string;
  edit?: ConfigEdit;
  /** The model's chat template as loaded (rl/run/run-loop.ts): whether it renders the tools. */
  chat?: ChatTemplateFacts;
}

/** Progress for the progress bar: where the run is and how fast it goes. */
export interface RunProgress {
  runId: string;
  phase: RunPhase;
  /** The current step within the phase and the phase's total. */
  step: number;
  total: number;
  /** Seconds since the run started and the estimated seconds left (NaN until a step is timed). */
  elapsed: number;
  eta: number;
  /** NaN until the first step reports it. */
  tokensPerS: number;
  /** What the step is doing now. */
  activity: "sft" | "rollout" | "tools" | "reward" | "update" | "eval" | "idle";
  /** While the phase is "loading": what it is doing, in words ("fetching models/x/model.safetensors"). */
  loading?: string;
  /** Seconds from Start until the trainer was built (files fetched, weights loaded): the plan counts it. */
  loadS?: number;
}

/** Everything the worker pushes to the UI. `fast` mode batches rows and skips samples. */
export interface RunListener {
  row(row: MetricsRow): void;
  samples(samples: SampleRecord[]): void;
  event(e: RunEvent): void;
  progress(p: RunProgress): void;
}

export interface StartOptions {
  /** A new run from this config, or an existing run id to resume from its last checkpoint. */
  config?: RunConfig;
  resumeRunId?: string;
  /** What the run is ("ci-tiny", "shared link"); the worker names it "#N <name>" (unique across page loads). */
  name?: string;
  /** Where the config came from. */
  source?: "local" | "link" | "bundle";
  /** Edits to replay at their steps (a share link's replay). */
  edits?: ConfigEdit[];
  /** The multi-seed run this run is a seed of (stored with it, so a reload lists the group). */
  group?: RunGroupRef;
  /** Train without pushing samples (fast mode); rows still arrive. */
  fast?: boolean;
  /** Start paused (the UI's "single step" from idle). */
  paused?: boolean;
}

/** A generation from the "try the model" panel: the transcript with tool calls and results. */
export interface TryResult {
  /** The rendered prompt (the chat template's text, tool list included). */
  prompt: string;
  /** Each prompt token's readable piece. */
  promptPieces: string[];
  text: string;
  tokens: number[];
  /** Each token's readable piece (byte-level pieces decoded): the page loads no tokenizer. */
  pieces: string[];
  /** Per token: 1 sampled by the model, 0 inserted (tool response). */
  mask: number[];
  toolCalls: { raw: string; response: string; ok: boolean; status: string }[];
  answer: string | null;
}

/** A JS environment's dry run: what it declares, three episodes and their inspector samples, or its error and line. */
import type { EnvDryRunResult } from "../rl/rollout/env-dry-run";

export type { EnvDryRunResult };

/** The result of testing a reward function on a trajectory. */
export type RewardTestResult = { ok: true; value: number } | { ok: false; error: string };

/** The trainer worker's comlink surface. */
export interface TrainerApi {
  gpuStatus(): Promise<GpuStatus>;
  /** Starts (or resumes) a run; resolves with its id and name once it is running. */
  start(options: StartOptions, listener: RunListener): Promise<{ runId: string; name: string }>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** One more step, then pause. */
  step(): Promise<void>;
  stop(): Promise<void>;
  /** A live edit: applies at the next step (refused edits come back as events). */
  edit(path: string, value: unknown): Promise<void>;
  setFast(fast: boolean): Promise<void>;
  /** Generates from the current weights (or a run's saved checkpoint) with the run's tools. */
  tryModel(
    prompt: string,
    options?: { runId?: string; temperature?: number; seed?: number },
  ): Promise<TryResult>;
  /** A held-out prompt of the config's task (default: the current run's), for "try the model". */
  examplePrompt(config?: RunConfig): Promise<string | null>;
  /**
   * Compiles a JS environment (docs/ENVIRONMENTS.md) and plays three episodes with its scripted
   * policy (or a random one) under `config`'s limits; errors come back with their line.
   */
  envDryRun(source: string, config?: RunConfig): Promise<EnvDryRunResult>;
  /** Runs a JS reward function in the sandbox on one sampled trajectory. */
  testReward(source: string, sample: SampleRecord): Promise<RewardTestResult>;
  /** Stored runs (IndexedDB), newest first where the store orders them so. */
  listRuns(): Promise<StoredRun[]>;
  /**
   * Stored runs left "running" or "paused" by a page that went away (no page holds their Web
   * Lock): marks them "interrupted" and returns them with their newest checkpoint.
   */
  interruptedRuns(): Promise<InterruptedRun[]>;
  /** A stored run's config, edits, rows, samples and events. */
  loadRun(runId: string): Promise<LoadedRun>;
  deleteRun(runId: string): Promise<void>;
  /** Deletes a multi-seed group and all its stored seeds. */
  deleteGroup(groupId: string): Promise<void>;
  /** A stored run as one file (gzip JSON; weights as safetensors inside when asked). */
  exportBundle(runId: string, weights?: boolean): Promise<Uint8Array>;
  /** Stores a bundle file as a run (read-only); a bad file is an error naming what is wrong. */
  importBundle(bytes: Uint8Array): Promise<StoredRun>;
  /**
   * Stores a verl or TRL run's results (files of a picked folder, or loose files; results/import.ts)
   * as a run named by its engine; a bad file is an error naming the file and line, nothing stored.
   */
  importResults(files: { path: string; blob: Blob }[]): Promise<StoredRun>;
  storageUsage(): Promise<StorageUsage | null>;
  /** Destroys the GPU device (testing device loss: the run resumes from its last checkpoint). */
  loseDevice(): Promise<void>;
  /** A model source's files and sizes (one Hub request the first time, none once cached) and its cache state. */
  modelInfo(source: ModelSource, options?: ModelOptions): Promise<ModelInfo>;
  /** Downloads a Hub model into the cache (resuming what an earlier download left), with progress. */
  downloadModel(
    source: ModelSource,
    onProgress: (p: DownloadProgress) => void,
    options?: ModelOptions,
  ): Promise<ModelInfo>;
  /** Stores picked files (hashed in the worker) and returns the local source that names them. */
  addLocalModel(name: string, files: { path: string; blob: Blob }[]): Promise<ModelSource>;
  listModelCache(): Promise<CacheEntry[]>;
  /**
   * A stored run's last checkpoint as one zip in Hugging Face formats, built here in the worker
   * (workers/weights-export.ts): "peft" the LoRA adapter, "hf" the merged model with the source
   * model's tokenizer files (from the model cache). An error names why there is none.
   */
  exportWeights(runId: string, kind: "peft" | "hf"): Promise<Blob>;
  clearModelCache(): Promise<void>;
  /** Checks the worker's sandbox pool (tools, limits, hard kill) and measures calls/s. */
  sandboxSmoke(calls?: number): Promise<SmokeReport>;
}
