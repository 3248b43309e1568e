// The trainer's web worker: owns the GPUDevice, the sandbox pool and the running Trainer,
// and serves the TrainerApi of workers/api.ts over comlink. Wiring only: the engine is rl/,
// model/, kernels/ and sandbox/. Files named by a config (init checkpoints, model folders) are
// fetched from the app's public folder; hf: and local: models come from the model cache
// (workers/model-cache.ts), which this worker also fills (downloads, picked files).
import * as Comlink from "comlink";
import { type ConfigEdit, defaultRunConfig, type RunConfig } from "../config";
import { browserGpu, createGpu, type Gpu, WebGPUUnavailableError } from "../kernels/device";
import { describePlan, devicePlan } from "../kernels/plan";
import type { PolicyModel } from "../model/api";
import { GpuModel } from "../model/gpu";
import { CHAR_TOKENIZER } from "../model/tokenizer";
import { importResults } from "../results/import";
import { withPieces } from "../rl/common/step-records";
import { rollout } from "../rl/rollout/agent-loop";
import { rewardInput, runCustomReward } from "../rl/rollout/batch-rewards";
import { envDryRun } from "../rl/rollout/env-dry-run";
import { parseAnswer } from "../rl/rollout/parse";
import { taskDriver } from "../rl/rollout/task-driver";
import { makeToolProtocol } from "../rl/rollout/tool-protocol";
import { createTrainer } from "../rl/run/build-trainer";
import { decodeBundle, encodeBundle } from "../rl/run/run-bundle";
import { type RunEvents, RunLoop, type RunLoopOptions } from "../rl/run/run-loop";
import { runTaskOf } from "../rl/run/run-parts";
import type { SampleRecord, Trainer } from "../rl/run/trainer";
import type { SandboxPool } from "../sandbox/pool";
import { createBrowserSandboxPool } from "../sandbox/pool-browser";
import { sandboxSmoke } from "../sandbox/smoke";
import { isEnvTask } from "../tasks/types";
import type {
  EnvDryRunResult,
  GpuStatus,
  InterruptedRun,
  RewardTestResult,
  RunListener,
  RunProgress,
  StartOptions,
  StoredRun,
  TrainerApi,
  TryResult,
} from "./api";
import {
  addLocalModel,
  cachedFiles,
  clearModelCache,
  downloadModel,
  listModelCache,
  modelInfo,
} from "./model-cache";
import { MemoryRunStore, openStoredRun, type RecordStore, recordingEvents } from "./run-record";
import { fetchServedFile } from "./served-file";
import { groupRefs, openRunStore, type RunStore, StorageFullError } from "./store";
import { weightsZip } from "./weights-export";

let gpu: Promise<Gpu> | undefined;
let sandbox: SandboxPool | undefined;

interface ActiveRun {
  id: string;
  /** Set while the run is being stopped on purpose or rebuilt after a device loss. */
  retiring?: boolean;
  /** stop() was called: the run ends as "stopped", not "done". */
  stopRequested?: boolean;
  /** performance.now() when the loop ended in an error (a device loss may follow and claim it). */
  failedAt?: number;
  config: RunConfig;
  trainer: Trainer;
  loop: RunLoop;
  listener: RunListener;
  startedAt: number;
  progress: RunProgress;
  fast: boolean;
}
let run: ActiveRun | undefined;
let storePromise: Promise<RunStore | undefined> | undefined;
/** Where runs are recorded when IndexedDB is unavailable. */
const memoryStore = new MemoryRunStore();

/** The IndexedDB run store; undefined (runs are not persisted) where IndexedDB is unavailable. */
function getStore(): Promise<RunStore | undefined> {
  if (!storePromise) storePromise = openRunStore().catch(() => undefined);
  return storePromise;
}

function getGpu(): Promise<Gpu> {
  if (!gpu) {
    const made = createGpu(browserGpu());
    gpu = made;
    made.then(
      (g) => {
        g.device.lost.then((info) => {
          if (gpu === made) gpu = undefined;
          void recoverFromDeviceLoss(info.message || info.reason);
        });
      },
      () => {
        if (gpu === made) gpu = undefined;
      },
    );
  }
  return gpu;
}

// device.lost: the run pauses, a new device is made, the last checkpoint is loaded and the
// run continues. Rows after that checkpoint are recomputed.
async function recoverFromDeviceLoss(reason: string): Promise<void> {
  const r = run;
  if (!r || r.retiring || r.loop.phase === "done") return;
  // A lost device fails the step in flight (e.g. a mapAsync rejected by destroy()) before
  // device.lost resolves: a run that errored just now is resumed; one that failed earlier is not.
  if (r.loop.phase === "error" && performance.now() - (r.failedAt ?? 0) > LOSS_GRACE_MS) return;
  r.retiring = true;
  r.loop.stop();
  r.listener.event({
    step: r.trainer.rlStepIndex,
    phase: r.loop.phase,
    kind: "info",
    message: `GPU device lost (${reason}); resuming from the last checkpoint`,
  });
  try {
    await startRun({ resumeRunId: r.id, fast: r.fast }, r.listener);
  } catch (err) {
    r.listener.event({
      step: 0,
      phase: "error",
      kind: "error",
      message: `could not resume after device loss: ${(err as Error).message}`,
    });
  }
}

/**
 * A checkpoint at least this often (wall time) whatever checkpoint_every says: a reload, a
 * crash or a device loss then costs at most this much training.
 */
const CHECKPOINT_SECONDS = 20;

/** How long after a run's error a device loss may still claim it (and the error is not shown). */
const LOSS_GRACE_MS = 2000;

/** True when the device is lost within LOSS_GRACE_MS: an error from then is the loss's, not the run's. */
function lostSoon(device: GPUDevice): Promise<boolean> {
  return Promise.race([
    device.lost.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), LOSS_GRACE_MS)),
  ]);
}

// Runs stored before samples carried their token pieces: a character-tokenizer run gets them
// here (a model's own tokenizer is megabytes; its old samples show ids).
function storedSamples(samples: SampleRecord[], config: RunConfig): SampleRecord[] {
  const char = (config.model.tokenizer ?? null) === null && (config.model.pretrained ?? null) === null;
  if (!char || samples.every((s) => s.pieces)) return samples;
  return samples.map((s) => (s.pieces ? s : withPieces([s], CHAR_TOKENIZER)[0]));
}

function getSandbox(): SandboxPool {
  sandbox ??= createBrowserSandboxPool({ size: 2 });
  return sandbox;
}

// Paths are relative to the folder the app is served from (the worker's script is one folder
// down, in assets/), so the lab works from a host's sub-path too.
const fetchFile = (path: string): Promise<Uint8Array> =>
  fetchServedFile(path, new URL("../", self.location.href));

function toolsOf(c: RunConfig) {
  const t = runTaskOf(c);
  return isEnvTask(t) ? [] : t.tools;
}

/** The Web Lock a run holds while its loop runs: a page that finds it free knows the run's page is gone. */
const runLock = (id: string) => `lab-run:${id}`;

/**
 * Whether a page still holds `name`: a run of another tab. The page a reload replaced may take
 * a moment to let go, so this waits up to LOCK_WAIT_MS for the lock before saying it is held.
 */
async function lockHeld(name: string): Promise<boolean> {
  if (!navigator.locks) return false;
  try {
    await navigator.locks.request(name, { signal: AbortSignal.timeout(LOCK_WAIT_MS) }, () => undefined);
    return false;
  } catch {
    return true;
  }
}
const LOCK_WAIT_MS = 3000;

let lastRunNumber = 0;

/**
 * A run's name, "#N what": N is one more than any "#N" among the stored runs and this
 * worker's runs, so names never collide across page loads (and a bundle imported twice gets
 * two names). The UI shows this name everywhere (charts, runs table).
 */
async function nextRunName(what: string): Promise<string> {
  const stored = (await (await getStore())?.listRuns().catch(() => [])) ?? [];
  for (const r of stored) {
    const m = /^#(\d+)\b/.exec(r.name);
    if (m) lastRunNumber = Math.max(lastRunNumber, Number(m[1]));
  }
  lastRunNumber++;
  return `#${lastRunNumber} ${what.replace(/^#\d+\s*/, "").trim() || "run"}`;
}

function newRunId(): string {
  return `run-${new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, "")
    .slice(0, 14)}-${Math.floor(Math.random() * 1e4)}`;
}

function pushProgress(r: ActiveRun, patch: Partial<RunProgress>): void {
  r.progress = { ...r.progress, ...patch, elapsed: (performance.now() - r.startedAt) / 1000 };
  r.listener.progress(r.progress);
}

/** Stops the run in progress for a new one (its record marked stopped, unless it is the run being resumed). */
function retireActiveRun(resumeRunId: string | undefined): void {
  if (run && run.loop.phase !== "done" && run.loop.phase !== "error") {
    run.retiring = true;
    run.loop.stop();
    const old = run.id;
    if (resumeRunId !== old)
      void getStore().then((st) => st?.updateRun(old, { status: "stopped" }).catch(() => {}));
  }
}

/**
 * The run's record: a stored run opened to resume (its kept rows, samples and events go back to
 * the UI before training continues), or a new one created from options.config. `ranBefore`: a
 * resumed run's clock goes on from its kept rows' time (seconds since it first started).
 */
async function openOrCreateRun(store: RecordStore, options: StartOptions, listener: RunListener) {
  let config: RunConfig;
  let id: string;
  let edits: ConfigEdit[];
  let resume: RunLoopOptions["resume"];
  let name: string;
  let ranBefore = 0;
  if (options.resumeRunId) {
    const opened = await openStoredRun(store, options.resumeRunId);
    id = options.resumeRunId;
    name = opened.kept.run.name;
    ({ config, edits, resume } = opened);
    for (const row of opened.kept.rows) {
      listener.row(row);
      if (Number.isFinite(row.time)) ranBefore = Math.max(ranBefore, row.time);
    }
    if (opened.kept.samples.length) listener.samples(storedSamples(opened.kept.samples, config));
    for (const e of opened.kept.events) listener.event(e);
    await store.updateRun(id, { status: "running" });
  } else {
    if (!options.config) throw new Error("start() needs a config or a run to resume");
    config = options.config;
    id = newRunId();
    // A link's edits are the new run's record from the start; the loop replays them.
    edits = options.edits ?? [];
    name = await nextRunName(options.name ?? "run");
    await store.createRun({ id, name, config, source: options.source ?? "local", group: options.group });
    for (const e of edits) await store.appendEdit(id, e);
  }
  return { config, id, edits, resume, name, ranBefore };
}

/** The progress bar's words while the model loads (until the loop runs). */
function loadingProgress(listener: RunListener, id: string, total: number, startedAt: number) {
  return (loading: string) =>
    listener.progress({
      runId: id,
      phase: "loading",
      step: 0,
      total,
      elapsed: (performance.now() - startedAt) / 1000,
      eta: Number.NaN,
      tokensPerS: Number.NaN,
      activity: "idle",
      loading,
    });
}

/** What the run loop's events read and write: the page, the record, the run's status and the run itself once it exists. */
interface LoopEventArgs {
  listener: RunListener;
  record: ReturnType<typeof recordingEvents>;
  trainer: Trainer;
  config: RunConfig;
  device: GPUDevice;
  persist: (what: Promise<void> | undefined) => Promise<void> | undefined;
  status: (st: { status: StoredRun["status"] }) => Promise<void>;
  current: () => ActiveRun | undefined;
}

/** The run loop's events: rows, samples and events to the page and the record; the progress bar; the stored status. */
function loopEvents(x: LoopEventArgs): RunEvents {
  const { listener, record, trainer, config, device, persist } = x;
  let stepTimes: number[] = [];
  let lastStepAt = performance.now();
  return {
    row(row) {
      listener.row(row);
      record.row(row);
      const now = performance.now();
      stepTimes = [...stepTimes.slice(-9), (now - lastStepAt) / 1000];
      lastStepAt = now;
      const current = x.current();
      if (!current) return;
      // Steps done come from the trainer's counters, not the row: the final held-out
      // evaluation is a row at step max_steps that is no step of its own.
      const at = progressAt(trainer, row.phase);
      const left =
        Math.max(0, config.sft.steps - trainer.sftStepIndex) +
        Math.max(0, config.stop.max_steps - trainer.rlStepIndex);
      const per = stepTimes.reduce((a, b) => a + b, 0) / stepTimes.length;
      pushProgress(current, {
        ...at,
        eta: left === 0 ? 0 : left * per,
        tokensPerS:
          typeof row["perf/tokens_per_s"] === "number"
            ? row["perf/tokens_per_s"]
            : current.progress.tokensPerS,
      });
    },
    samples(samples) {
      record.samples(samples);
      if (!x.current()?.fast) listener.samples(samples);
    },
    event(e) {
      if (x.current()?.retiring && (e.kind === "error" || e.kind === "stopped")) return;
      if (e.kind === "error") {
        // Held back until it is clear the device was not lost (then the run resumes instead).
        void lostSoon(device).then((lost) => {
          if (lost || x.current()?.retiring) return;
          listener.event(e);
          record.event(e);
        });
        return;
      }
      listener.event(e);
      record.event(e);
    },
    edit: record.edit,
    phase(phase) {
      const current = x.current();
      if (!current || current.retiring) return;
      if (phase === "error") current.failedAt = performance.now();
      pushProgress(current, {
        phase: phase === "done" && current.stopRequested ? "stopped" : phase,
        activity: phase === "sft" || phase === "rl" ? current.progress.activity : "idle",
      });
      const ended = current.stopRequested ? "stopped" : "done";
      const status =
        phase === "paused" ? "paused" : phase === "done" ? ended : phase === "error" ? "error" : "running";
      void persist(x.status({ status }));
    },
    checkpoint: (ck) => persist(record.checkpoint(ck)),
  };
}

/** The run's trainer on the GPU, its files read through the model cache, each fetch said on the progress bar. */
async function buildTrainer(
  config: RunConfig,
  device: GPUDevice,
  say: (loading: string) => void,
  onActivity: (activity: RunProgress["activity"]) => void,
): Promise<Trainer> {
  const files = cachedFiles(config, async (path) => {
    say(`fetching ${path}`);
    const bytes = await fetchFile(path);
    say(`read ${path} (${(bytes.length / 1e6).toFixed(bytes.length < 1e5 ? 2 : 1)} MB); building the model`);
    return bytes;
  });
  return createTrainer(config, {
    makeModel: (mc, w, seed) => GpuModel.create(device, mc, w, seed),
    sandbox: getSandbox(),
    readFile: files.readFile,
    openFile: files.openFile,
    limits: device.limits,
    onActivity,
  });
}

/** A new run from options.config, or a stored run resumed from its last checkpoint. */
async function startRun(
  options: StartOptions,
  listener: RunListener,
): Promise<{ runId: string; name: string }> {
  retireActiveRun(options.resumeRunId);
  // The device first: without WebGPU, start() fails with its message before a run record is
  // created (or a stored run truncated and marked running) that would never train.
  const { device } = await getGpu();
  // Without IndexedDB the record lives in memory: a device loss still resumes, a reload does not.
  const store: RecordStore = (await getStore()) ?? memoryStore;
  const { config, id, edits, resume, name, ranBefore } = await openOrCreateRun(store, options, listener);
  const startedAt = performance.now() - ranBefore * 1000;
  let current: ActiveRun | undefined;
  const persist = (what: Promise<void> | undefined) =>
    what?.catch((err: Error) => {
      if (err instanceof StorageFullError) current?.loop.pause();
      listener.event({
        step: current?.trainer.rlStepIndex ?? 0,
        phase: "storage",
        kind: "error",
        message: err.message,
      });
    });
  const record = recordingEvents(store, id, (w) => void persist(w));
  // Until the loop runs, the progress bar says what loading is doing.
  const loadingTotal = config.stop.max_steps;
  const say = loadingProgress(listener, id, loadingTotal, startedAt);
  say(config.model.pretrained ? `opening the model ${config.model.pretrained}` : "building the model");
  const trainer = await buildTrainer(config, device, say, (activity) => {
    if (current) pushProgress(current, { activity });
  });
  const loadS = Math.max(0, (performance.now() - startedAt) / 1000 - ranBefore - trainer.clock());
  const sftDone = resume
    ? resume.at.phase === "sft"
      ? resume.at.step
      : config.sft.steps
    : trainer.sftStepIndex;
  const sftLeft = config.sft.steps - sftDone > 0;
  const rlDone = resume?.at.phase === "rl" ? resume.at.step : 0;
  const loop = new RunLoop(
    trainer,
    loopEvents({
      listener,
      record,
      trainer,
      config,
      device,
      persist,
      status: (st) => store.updateRun(id, st),
      current: () => current,
    }),
    { edits, resume, checkpointSeconds: CHECKPOINT_SECONDS },
  );
  current = {
    id,
    config,
    trainer,
    loop,
    listener,
    startedAt,
    fast: options.fast ?? false,
    progress: {
      runId: id,
      phase: "loading",
      step: sftLeft ? sftDone : rlDone,
      total: sftLeft ? config.sft.steps : config.stop.max_steps,
      elapsed: ranBefore,
      // Unknown until a step has been timed (the bar says "ETA –", not "0s").
      eta: Number.NaN,
      tokensPerS: Number.NaN,
      activity: "idle",
      loading: "compiling the GPU kernels for the first step",
      loadS,
    },
  };
  run = current;
  pushProgress(current, {});
  if (options.paused) loop.pause();
  const mine = current;
  const ran = loop.run().catch((err: Error) => {
    mine.failedAt = performance.now();
    void lostSoon(device).then((lost) => {
      if (!lost && !mine.retiring)
        listener.event({ step: trainer.rlStepIndex, phase: "error", kind: "error", message: err.message });
    });
  });
  // Held while the loop runs; the page going away releases it (interruptedRuns reads that).
  void navigator.locks?.request(runLock(id), () => ran);
  return { runId: id, name };
}

/** Where a row leaves the progress bar: steps done of its phase and the phase's total. */
function progressAt(trainer: Trainer, phase: string): { step: number; total: number } {
  const c = trainer.config;
  if (phase === "sft") return { step: trainer.sftStepIndex, total: c.sft.steps };
  if (phase === "value_pretrain")
    return { step: trainer.valuePretrainStepIndex, total: c.rl.value_pretrain.steps };
  return { step: trainer.rlStepIndex, total: c.stop.max_steps };
}

const api: TrainerApi = {
  async gpuStatus(): Promise<GpuStatus> {
    try {
      const { adapter, device } = await getGpu();
      return { ok: true, adapter: { ...adapter, plan: describePlan(devicePlan(device)) } };
    } catch (err) {
      const reason = err instanceof WebGPUUnavailableError ? err.reason : "error";
      return { ok: false, reason, message: (err as Error).message };
    }
  },

  start(options: StartOptions, listener: RunListener) {
    return startRun(options, listener);
  },

  async pause() {
    run?.loop.pause();
  },
  async resume() {
    run?.loop.resume();
  },
  async step() {
    run?.loop.stepOnce();
  },
  async stop() {
    if (run) run.stopRequested = true;
    run?.loop.stop();
  },
  async edit(path: string, value: unknown) {
    if (!run) throw new Error("no run to edit: start one first");
    run.loop.edit(path, value);
  },
  async setFast(fast: boolean) {
    if (run) run.fast = fast;
  },

  async tryModel(prompt, options = {}): Promise<TryResult> {
    if (!run) throw new Error("no model yet: start a run (its SFT checkpoint or current weights are used)");
    const trainer = run.trainer;
    const c = trainer.config;
    // A copy of the current weights, so generation never interleaves with a training step.
    const model: PolicyModel = await trainer.policy.frozenCopy();
    try {
      const chat = trainer.chat;
      const messages = [{ role: "user" as const, content: prompt }];
      const ids = chat.promptTokens(messages);
      const [t] = await rollout(model, [ids], {
        chat,
        sampling: {
          temperature: options.temperature ?? 0,
          topK: c.sampling.top_k,
          topP: c.sampling.top_p,
          seed: options.seed ?? 1,
        },
        limits: {
          maxToolCalls: c.limits.max_tool_calls,
          maxNewTokens: c.sampling.max_new_tokens,
          maxToolResponseChars: c.limits.max_tool_response_chars,
          overLimitNotice: "",
        },
        tools: makeToolProtocol(
          toolsOf(c),
          getSandbox(),
          { timeoutS: c.limits.tool_timeout_s, memoryMB: c.limits.memory_mb },
          chat.callSyntax,
        ),
      });
      const ans = parseAnswer(t.text, { mode: "lenient" });
      const tok = chat.tokenizer;
      return {
        prompt: chat.promptText(messages),
        promptPieces: ids.map((id) => tok.piece(id)),
        text: t.text,
        tokens: t.tokens,
        pieces: t.tokens.map((id) => tok.piece(id)),
        mask: t.mask,
        toolCalls: t.toolCalls.map((x) => ({
          raw: x.call.raw,
          response: x.outcome.text,
          ok: x.outcome.ok,
          status: x.outcome.status,
        })),
        answer: ans.ok ? ans.answer : null,
      };
    } finally {
      model.dispose();
    }
  },

  async examplePrompt(config?: RunConfig): Promise<string | null> {
    const c = config ?? run?.trainer.config;
    if (!c) return null;
    // A held-out prompt of the run's own task: what the run trains on, never a training prompt.
    const [p] = taskDriver(runTaskOf(c)).evalSet(1);
    const user = p?.messages.filter((m) => m.role === "user").at(-1);
    return user ? user.content : null;
  },

  async envDryRun(source: string, config?: RunConfig): Promise<EnvDryRunResult> {
    const c = config ?? defaultRunConfig();
    return envDryRun(source, {
      timeoutS: c.limits.tool_timeout_s,
      memoryMB: c.limits.memory_mb,
      maxToolCalls: c.limits.max_tool_calls,
    });
  },

  async testReward(source: string, sample: SampleRecord): Promise<RewardTestResult> {
    const c = run?.config;
    const text = (run?.trainer.tokenizer ?? CHAR_TOKENIZER).decode(sample.tokens);
    const input = rewardInput(
      {
        index: 0,
        promptTokens: sample.promptTokens,
        tokens: sample.tokens,
        mask: sample.mask,
        logprobs: sample.logprobs,
        postTool: sample.postTool,
        toolCalls: sample.toolCalls.map((x) => ({
          call: { name: "", raw: x.raw },
          outcome: { ok: x.ok, text: x.response, status: x.status },
          responseStart: x.responseStart,
          responseEnd: x.responseEnd,
          executed: x.executed,
        })),
        finish: sample.finish as "stop",
        text,
      },
      { id: sample.problemId, messages: [], answer: sample.answer, bucket: sample.bucket, meta: {} },
      sample.correct,
      { step: sample.step, totalSteps: c?.stop.max_steps ?? 0, maxLength: c?.sampling.max_new_tokens ?? 64 },
    );
    return runCustomReward(getSandbox(), source, input, {
      timeoutS: c?.limits.tool_timeout_s ?? 1,
      memoryMB: c?.limits.memory_mb ?? 16,
    });
  },

  async listRuns(): Promise<StoredRun[]> {
    const store = await getStore();
    if (!store) return [];
    const [runs, groups] = await Promise.all([store.listRuns(), store.listGroups()]);
    const refs = groupRefs(groups);
    return Promise.all(
      runs.map(async (r) => {
        const group = refs.get(r.id);
        return {
          ...r,
          checkpoint: (await store.latestCheckpointPoint(r.id)) ?? null,
          ...(group ? { group } : {}),
        };
      }),
    );
  },

  async interruptedRuns(): Promise<InterruptedRun[]> {
    const store = await getStore();
    if (!store) return [];
    const out: InterruptedRun[] = [];
    const refs = groupRefs(await store.listGroups());
    for (const r of await store.listRuns()) {
      if (r.status !== "running" && r.status !== "paused") continue;
      if (run?.id === r.id || (await lockHeld(runLock(r.id)))) continue;
      await store.updateRun(r.id, { status: "interrupted" });
      const group = refs.get(r.id);
      out.push({
        // A seed of a group resumes in its group.
        run: { ...r, status: "interrupted", ...(group ? { group } : {}) },
        checkpoint: (await store.latestCheckpointPoint(r.id)) ?? null,
      });
    }
    return out;
  },
  async loadRun(runId: string) {
    const store = await getStore();
    const r = await store?.loadRun(runId);
    if (!r) throw new Error(`no stored run ${runId}`);
    return { ...r, samples: storedSamples(r.samples, r.run.config) };
  },
  async deleteRun(runId: string) {
    if (run?.id === runId) throw new Error("stop the run before deleting it");
    await (await getStore())?.deleteRun(runId);
  },
  async deleteGroup(groupId: string) {
    const store = await getStore();
    if (!store) return;
    const group = (await store.listGroups()).find((g) => g.id === groupId);
    const live = run && !["done", "stopped", "error"].includes(run.loop.phase) ? run.id : undefined;
    if (group?.members.some((m) => m.runId === live))
      throw new Error("stop the run before deleting its group");
    await store.deleteGroup(groupId);
  },
  async exportBundle(runId: string, weights = true) {
    const store = await getStore();
    const data = await store?.exportRun(runId, { weights });
    if (!data) throw new Error(`no stored run ${runId}`);
    return encodeBundle(data);
  },
  async importBundle(bytes: Uint8Array) {
    const r = await decodeBundle(bytes);
    if (!r.ok) throw new Error(`not a run bundle: ${r.error}`);
    const store = await getStore();
    if (!store) throw new Error("this browser gives the lab no IndexedDB storage to import into");
    // A name of its own: "#N <original> (imported)", never the original's "#M".
    const name = await nextRunName(`${r.run.name.replace(/^#\d+\s*/, "")} (imported)`);
    return store.importRun({ ...r.run, name }, "bundle");
  },
  async importResults(files) {
    // Parsed whole before anything is stored: a refused file leaves the store untouched.
    const store = await getStore();
    if (!store) throw new Error("this browser gives the lab no IndexedDB storage to import into");
    const run = await importResults(
      files.map(({ path, blob }) => ({
        path,
        size: blob.size,
        text: () => blob.text(),
        bytes: () => blob.arrayBuffer(),
      })),
      { keepSampleSteps: store.keepSampleSteps },
    );
    return store.importRun(
      {
        name: await nextRunName(run.name),
        createdAt: new Date().toISOString(),
        // No lab config made this run: the defaults stand in (never replayed); run.info.config is the engine's.
        config: defaultRunConfig(),
        edits: [],
        metrics: run.rows,
        samples: run.samples,
        events: [],
        engine: run.info,
      },
      run.info.engine,
    );
  },
  async storageUsage() {
    return (await (await getStore())?.usage()) ?? null;
  },
  async loseDevice() {
    const g = await gpu;
    g?.device.destroy();
  },

  modelInfo: (source, options) => modelInfo(source, options),
  downloadModel: (source, onProgress, options) => downloadModel(source, onProgress, options),
  addLocalModel: (name, files) => addLocalModel(name, files),
  listModelCache: () => listModelCache(),
  async exportWeights(runId, kind) {
    const store = await getStore();
    const data = await store?.exportRun(runId, { weights: true });
    if (!data) throw new Error(`no stored run ${runId}`);
    const files = cachedFiles(data.config, fetchFile);
    return weightsZip(data.config, data.weights, kind, async (root, name) => {
      const b = await files.openFile(`${root}/${name}`);
      return b ? new Uint8Array(await b.arrayBuffer()) : null;
    });
  },
  clearModelCache: () => clearModelCache(),

  sandboxSmoke(calls?: number) {
    return sandboxSmoke(getSandbox(), calls);
  },
};

Comlink.expose(api);
