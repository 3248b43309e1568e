// Builds a ready Trainer from a RunConfig, wherever it runs: the caller says how to make a
// model (WebGPU or CPU), which sandbox to use and how to read a file (fetch in the browser,
// fs in Node). A run that names sft.init_checkpoint starts from those weights and skips SFT.
// A run that names model.pretrained (a Hugging Face folder: config.json + safetensors) takes
// its architecture and weights from there (model/hf/read.ts); the lab's architecture fields are then
// unused, and model.context sets the sequence length.
// Used by workers/trainer.worker.ts and cli/train.ts.
import type { RunConfig } from "../../config";
import type { PolicyModel } from "../../model/api";
import { loadCheckpoint } from "../../model/checkpoint";
import { initParams, loraConfigOf, type ModelConfig, modelConfig, paramLayout } from "../../model/config";
import { loadHfWeights, type ModelDir, readHfConfig } from "../../model/hf/read";
import { type PlanLimits, planOfConfig, planRefusal } from "../../model/memory-plan";
import { blobSource } from "../../model/safetensors";
import type { SandboxRunner } from "../../sandbox/types";
import { prepareEnvEngine } from "../../tasks/env-api/engine";
import { chatFormatOf, modelConfigOf, runTaskOf } from "./run-parts";
import { Trainer, type TrainerDeps } from "./trainer";

export interface SessionDeps {
  makeModel(config: ModelConfig, weights: Float32Array | undefined, seed: number): Promise<PolicyModel>;
  sandbox: SandboxRunner;
  readFile(path: string): Promise<Uint8Array>;
  /** A file as a Blob read lazily (the page's model cache), or null where it does not exist; readFile otherwise. */
  openFile?(path: string): Promise<Blob | null>;
  /** The adapter's buffer limits the memory plan checks (none: only the budget is checked). */
  limits?: PlanLimits;
  clock?: () => number;
  onActivity?: TrainerDeps["onActivity"];
}

export async function createTrainer(config: RunConfig, deps: SessionDeps): Promise<Trainer> {
  const chat = await chatFormatOf(config, deps.readFile);
  // A JS environment's calls run synchronously in this thread's QuickJS engine.
  if (config.task.name === "env") await prepareEnvEngine();
  const task = runTaskOf(config);
  let mc = modelConfigOf(config, chat.tokenizer.vocabSize);
  let weights: Float32Array | undefined;
  const pretrained = config.model.pretrained;
  if (pretrained) {
    const dir = readFileModelDir(pretrained, deps);
    const hf = await readHfConfig(dir, {
      context: config.model.context,
      valueHead: config.rl.advantage === "gae",
    });
    mc = modelConfig({ ...hf, lora: loraConfigOf(config, hf.mlp), baseDtype: config.model.dtype });
    if (mc.vocab < chat.tokenizer.vocabSize)
      throw new Error(
        `model.pretrained: ${pretrained}/config.json has vocab_size ${mc.vocab}, fewer rows than the tokenizer's ${chat.tokenizer.vocabSize} ids`,
      );
    checkPlan(config, mc, deps.limits);
    const w = new Float32Array(paramLayout(mc).total);
    await loadHfWeights(dir, mc, (offset, data) => w.set(data, offset));
    weights = w;
  } else checkPlan(config, mc, deps.limits);
  const init = config.sft.init_checkpoint;
  if (init) {
    let bytes: Uint8Array;
    try {
      bytes = await deps.readFile(init);
    } catch (err) {
      throw new Error(`sft.init_checkpoint: cannot read ${init}: ${(err as Error).message}`);
    }
    let ck: ReturnType<typeof loadCheckpoint>;
    try {
      ck = loadCheckpoint(bytes);
    } catch (err) {
      throw new Error(`sft.init_checkpoint: ${init} is not a checkpoint: ${(err as Error).message}`);
    }
    for (const k of [
      "layers",
      "dModel",
      "heads",
      "context",
      "vocab",
      "norm",
      "mlp",
      "positional",
      "tiedEmbeddings",
    ] as const) {
      if (ck.config[k] !== mc[k]) {
        throw new Error(
          `sft.init_checkpoint: ${init} has ${k} = ${ck.config[k]} but the run's model has ${mc[k]}`,
        );
      }
    }
    if (ck.config.valueHead === mc.valueHead) weights = ck.weights;
    else weights = adaptValueHead(mc, ck.weights, ck.config, config.seed);
  }
  const policy = await deps.makeModel(mc, weights, config.seed);
  if (config.model.gradient_checkpointing) policy.recompute = true;
  const trainer = new Trainer(config, {
    policy,
    task,
    chat,
    sandbox: deps.sandbox,
    clock: deps.clock,
    onActivity: deps.onActivity,
  });
  if (init) trainer.sftStepIndex = config.sft.steps;
  return trainer;
}

// A checkpoint without a value head (SFT) starting a PPO run (or the reverse): copy the
// shared tensors into a newly initialised model's layout.
function adaptValueHead(
  mc: ModelConfig,
  weights: Float32Array,
  from: ModelConfig,
  seed: number,
): Float32Array {
  const dst = paramLayout(mc);
  const out = initParams(mc, dst, seed);
  for (const t of paramLayout(from).tensors) {
    const d = dst.byName.get(t.name);
    if (d && d.size === t.size) out.set(weights.subarray(t.offset, t.offset + t.size), d.offset);
  }
  return out;
}

// The memory plan (model/memory-plan.ts) before any weight is loaded: a run that does not fit
// is refused with its terms and what to change.
function checkPlan(config: RunConfig, mc: ModelConfig, limits?: PlanLimits): void {
  const none = {
    maxBufferSize: Number.POSITIVE_INFINITY,
    maxStorageBufferBindingSize: Number.POSITIVE_INFINITY,
  };
  const plan = planOfConfig(config, mc, limits ?? none);
  if (!plan.fits)
    throw new Error(
      planRefusal(plan, config.model.pretrained ? `model.pretrained: ${config.model.pretrained}` : "model"),
    );
}

// A model folder read through the session's openFile (the page's model cache) or readFile
// (fetch in the browser, fs in Node).
function readFileModelDir(path: string, deps: Pick<SessionDeps, "readFile" | "openFile">): ModelDir {
  const base = path.replace(/\/+$/, "");
  const readFile = deps.readFile;
  return {
    name: base,
    open: async (file) => {
      if (deps.openFile) {
        const blob = await deps.openFile(`${base}/${file}`);
        return blob ? blobSource(blob, `${base}/${file}`) : null;
      }
      let bytes: Uint8Array;
      try {
        bytes = await readFile(`${base}/${file}`);
      } catch {
        return null;
      }
      return blobSource(new Blob([bytes as Uint8Array<ArrayBuffer>]), `${base}/${file}`);
    },
  };
}
