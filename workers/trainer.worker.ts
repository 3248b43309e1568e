// The trainer's web worker: owns the GPUDevice, the sandbox pool and the running Trainer,
// and serves the TrainerApi of workers/api.ts over comlink. Wiring only: the engine is rl/,
// model/, kernels/ and sandbox/. Files named by a config (init checkpoints) are fetched from
// the app's public folder.
import * as Comlink from "comlink";
import type { RunConfig } from "../config";
import { browserGpu, createGpu, type Gpu, WebGPUUnavailableError } from "../kernels/device";
import type { PolicyModel } from "../model/api";
import { GpuModel } from "../model/gpu";
import { promptTokens } from "../model/template";
import { decode } from "../model/tokenizer";
import { parseAnswer } from "../rl/parse";
import { rewardInput, runCustomReward } from "../rl/rewards";
import { rollout } from "../rl/rollout";
import { RunLoop } from "../rl/runner";
import { createTrainer } from "../rl/session";
import { taskOf } from "../rl/setup";
import { makeToolProtocol } from "../rl/tools";
import type { SampleRecord, Trainer } from "../rl/trainer";
import type { SandboxPool } from "../sandbox/pool";
import { createBrowserSandboxPool } from "../sandbox/pool-browser";
import { sandboxSmoke } from "../sandbox/smoke";
import type {
  GpuStatus,
  RewardTestResult,
  RunListener,
  RunProgress,
  StartOptions,
  TrainerApi,
  TryResult,
} from "./api";

let gpu: Promise<Gpu> | undefined;
let sandbox: SandboxPool | undefined;

interface ActiveRun {
  id: string;
  config: RunConfig;
  trainer: Trainer;
  loop: RunLoop;
  listener: RunListener;
  startedAt: number;
  progress: RunProgress;
  fast: boolean;
}
let run: ActiveRun | undefined;

function getGpu(): Promise<Gpu> {
  gpu ??= createGpu(browserGpu()).catch((err) => {
    gpu = undefined;
    throw err;
  });
  return gpu;
}

function getSandbox(): SandboxPool {
  sandbox ??= createBrowserSandboxPool({ size: 2 });
  return sandbox;
}

async function fetchFile(path: string): Promise<Uint8Array> {
  const url = new URL(path.replace(/^\/+/, ""), new URL("../", self.location.href));
  const res = await fetch(url);
  if (!res.ok) throw new Error(`HTTP ${res.status} for ${url.pathname}`);
  return new Uint8Array(await res.arrayBuffer());
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

const api: TrainerApi = {
  async gpuStatus(): Promise<GpuStatus> {
    try {
      const { adapter } = await getGpu();
      return { ok: true, adapter };
    } catch (err) {
      const reason = err instanceof WebGPUUnavailableError ? err.reason : "error";
      return { ok: false, reason, message: (err as Error).message };
    }
  },

  async start(options: StartOptions, listener: RunListener) {
    if (run && run.loop.phase !== "done" && run.loop.phase !== "error") run.loop.stop();
    const config = options.config;
    if (!config) throw new Error("start() needs a config (resuming a stored run is not available yet)");
    const { device } = await getGpu();
    const id = newRunId();
    const startedAt = performance.now();
    let current: ActiveRun | undefined;
    const trainer = await createTrainer(config, {
      makeModel: (mc, w, seed) => GpuModel.create(device, mc, w, seed),
      sandbox: getSandbox(),
      readFile: fetchFile,
      onActivity: (activity) => {
        if (current) pushProgress(current, { activity });
      },
    });
    const sftTotal = Math.max(0, config.sft.steps - trainer.sftStepIndex);
    let stepTimes: number[] = [];
    let lastStepAt = performance.now();
    const loop = new RunLoop(trainer, {
      row(row) {
        listener.row(row);
        if (row.phase === "rl")
          for (const e of replay.filter((x) => x.step === row.step + 1)) loop.edit(e.path, e.value);
        const now = performance.now();
        stepTimes = [...stepTimes.slice(-9), (now - lastStepAt) / 1000];
        lastStepAt = now;
        if (!current) return;
        const done = row.phase === "sft" ? row.step + 1 : sftTotal + row.step + 1;
        const total = sftTotal + config.stop.max_steps;
        const per = stepTimes.reduce((a, b) => a + b, 0) / stepTimes.length;
        pushProgress(current, {
          step: row.phase === "sft" ? row.step + 1 : row.step + 1,
          total: row.phase === "sft" ? sftTotal : config.stop.max_steps,
          eta: Math.max(0, (total - done) * per),
          tokensPerS:
            typeof row["perf/tokens_per_s"] === "number"
              ? row["perf/tokens_per_s"]
              : current.progress.tokensPerS,
        });
      },
      samples(samples) {
        if (!current?.fast) listener.samples(samples);
      },
      event(e) {
        listener.event(e);
      },
      phase(phase) {
        if (current)
          pushProgress(current, {
            phase,
            activity: phase === "sft" || phase === "rl" ? current.progress.activity : "idle",
          });
      },
    });
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
        step: 0,
        total: sftTotal || config.stop.max_steps,
        elapsed: 0,
        eta: 0,
        tokensPerS: 0,
        activity: "idle",
      },
    };
    run = current;
    // Replayed edits apply at the start of the RL step they were made at (as when recorded).
    const replay = options.edits ?? [];
    for (const e of replay.filter((x) => x.step === 0)) trainer.applyEdit(e);
    if (options.paused) loop.pause();
    loop.run().catch((err: Error) => {
      listener.event({ step: trainer.rlStepIndex, phase: "error", kind: "error", message: err.message });
    });
    return { runId: id };
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
      const ids = promptTokens([{ role: "user", content: prompt }], c.task.template);
      const [t] = await rollout(model, [ids], {
        template: c.task.template,
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
        tools: makeToolProtocol(taskOf(c).tools, getSandbox(), {
          timeoutS: c.limits.tool_timeout_s,
          memoryMB: c.limits.memory_mb,
        }),
      });
      const ans = parseAnswer(t.text, { mode: "lenient" });
      return {
        text: t.text,
        tokens: t.tokens,
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

  async testReward(source: string, sample: SampleRecord): Promise<RewardTestResult> {
    const c = run?.config;
    const text = decode(sample.tokens);
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

  sandboxSmoke(calls?: number) {
    return sandboxSmoke(getSandbox(), calls);
  },
};

Comlink.expose(api);
