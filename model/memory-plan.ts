// The memory plan of a run, before anything is loaded: every GPU buffer the model and the trainer
// will allocate, grouped in terms (base weights by dtype, the LoRA adapter, gradients, optimizer
// state, saved activations of one micro-batch with or without per-layer recomputation, the
// backward's scratch, the head's logits chunk, KV cache, decode logits, the KL reference), each
// buffer checked against the adapter's limits and the total against a budget (WebGPU does not
// report device memory, so the budget is the person's: model.memory_budget_gb, default 4 GB). A
// plan that does not fit is refused with its numbers and what to change, instead of an
// out-of-memory crash halfway through loading. The one plan: the page's (app/ModelPicker.tsx),
// the Hub's fit check and rl/run/build-trainer.ts's refusal, the bench rows (bench/model.ts) and the tests.
//
// A pure function of (model config, run shape, adapter limits): no GPU, no DOM, so the config
// panel computes it as the person edits. The sizes are the models' own layout code: the
// parameter layout (model/config.ts), the adapter's (model/lora.ts), and the arenas model/gpu-buffers.ts
// allocates for training, whose sizes are the functions below (layerActSizes, trainIoSizes,
// trainGradSizes, loraScratchSizes); model/recompute.gpu.test.ts checks the activation and
// scratch terms against the bytes GpuModel allocates, recomputation on and off.
//
// Inputs beyond the shape (PlanRun): micro-batches (activations for that many rows),
// recomputation (one layer's arena plus each layer's output), `halfStorage` and `keptF32` for an
// f16 base (whether the adapter stores f16, and the tensors kept in f32 beyond f16's range, as
// the model's baseStorage() reports them after loading), and the head's chunk size. LoRA and the
// base dtype come with the model config (c.lora, c.baseDtype: model/half.ts's tensors in f16).
// Tested by model/memory-plan.test.ts (SmolLM2-135M and Qwen2.5-0.5B shapes by hand, LoRA, f16,
// micro-batches, recomputation, the 4 GB goal) and model/recompute.gpu.test.ts (measured).
import type { RunConfig } from "../config";
import {
  ALIGN_FLOATS,
  attnDims,
  loraConfigOf,
  type ModelConfig,
  mlpHidden,
  modelConfig,
  paramLayout,
} from "./config";
import { halfBase, halfTensors, type KeptF32 } from "./half";
import { type LoraLayout, loraLayout } from "./lora";

const F32 = 4;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const align = (n: number) => Math.ceil(Math.max(1, n) / ALIGN_FLOATS) * ALIGN_FLOATS;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Floats of each saved activation of one layer for N = B*T rows (model/gpu-buffers.ts's layer arena). */
export function layerActSizes(c: ModelConfig, N: number) {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { NH, KVH, Q, QKV } = attnDims(c);
  return {
    ln1: N * C,
    ln1Mean: N,
    ln1Rstd: N,
    qkvRaw: c.qkNorm ? N * QKV : 1, // the projection before the q/k norms
    qkRstd: c.qkNorm ? N * (NH + KVH) : 1,
    qkv: N * QKV, // q and k after the q/k norms and rope
    atty: N * Q,
    lse: NH * N, // (B,NH,T)
    res2: N * C,
    ln2: N * C,
    ln2Mean: N,
    ln2Rstd: N,
    fch: N * (c.mlp === "swiglu" ? 2 * H : H),
    fchAct: N * H,
    res3: N * C,
  };
}

/** Floats of model/gpu-buffers.ts's train-io arena for N rows (`normLog`: the step norms' ring it reads back with the forward). */
export function trainIoSizes(c: ModelConfig, N: number, normLog = NORM_LOG) {
  const C = c.dModel;
  return {
    tokens: N,
    targets: N,
    pos: N,
    wlp: N,
    went: N,
    dvalue: N,
    encoded: N * C,
    tmp: N * C,
    lnf: N * C,
    lnfMean: N,
    lnfRstd: N,
    values: N,
    out: 3 * align(N) + normLog, // logp, entropy, values and the norms, one readback
    wteKeys: N, // the embedding backward's grouping of rows by token
    wteStarts: N + 1,
    wteOrder: N,
    wpeKeys: N,
    wpeStarts: N + 1,
    wpeOrder: N,
  };
}

/** Floats of model/gpu-buffers.ts's train-grad arena (the backward's scratch) for N rows. */
export function trainGradSizes(c: ModelConfig, N: number) {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { NH, Q, QKV, hs } = attnDims(c);
  return {
    dres: N * C,
    dln: N * C,
    datty: N * Q,
    dqkv: N * QKV,
    dqkvRaw: c.qkNorm ? N * QKV : 1,
    qkScratch: c.qkNorm ? 2 * hs * Math.ceil((N * NH) / 256) : 1, // kernels/qknorm.ts qkNormScratchSize
    dfch: N * (c.mlp === "swiglu" ? 2 * H : H),
    dfchAct: N * H,
    attScratch: NH * N,
  };
}

/** LoRA scratch for n rows: u (n,r), delta (n, largest target), du (n,r); sinks for the frozen q/k norms' weight gradients (hs). */
export function loraScratchSizes(lora: LoraLayout | null, n: number, hs = 1) {
  const r = lora?.rank ?? 0;
  const rows = Math.max(0, ...(lora?.layers.flat().map((s) => s.rows) ?? []));
  return { loraU: n * r, loraDelta: n * rows, loraDu: n * r, loraSinkQ: hs, loraSinkK: hs };
}

/** step() results a GpuModel holds before one readback brings their norms (model/gpu.ts). */
export const NORM_LOG = 64;

/** Token rows model/gpu-buffers.ts sizes its training buffers for: the next 1024 rows or power of two, whichever is smaller. */
export function trainCapacity(n: number): number {
  return Math.min(Math.ceil(n / 1024) * 1024, 2 ** Math.ceil(Math.log2(Math.max(1, n))));
}

/** The run's shape as far as memory goes. */
export interface PlanRun {
  /** Sequences in one forward/backward (an SFT batch, an RL minibatch or micro-batch). */
  trainRows: number;
  /** Tokens per training sequence at most (the context). */
  seqLen: number;
  /** Sequences decoded at once (a rollout group set, or an evaluation). */
  decodeRows: number;
  /** A frozen reference policy is held (KL in the loss or the reward). */
  reference: boolean;
  /** Sequences per micro-batch (activations are held for this many); default trainRows. */
  microBatchRows?: number;
  /** Sequences the reference policy scores at once (its own training buffers); default the micro-batch. */
  referenceRows?: number;
  /** Per-layer recomputation (model.gradient_checkpointing): one layer's arena + each layer's output. */
  recompute?: boolean;
  /** With an f16 base (ModelConfig.baseDtype): the adapter has shader-f16, so f16 tensors are stored f16; default true. */
  halfStorage?: boolean;
  /** With an f16 base: tensors kept in f32, beyond f16's range (the model's baseStorage().keptF32, after loading). */
  keptF32?: KeptF32[];
  /** Bytes one logits chunk holds at most (model/head.ts); default HEAD_CHUNK_BYTES. */
  headChunkBytes?: number;
}

/** The adapter limits the plan checks (GPUSupportedLimits' two buffer limits). */
export interface PlanLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
}

/** WebGPU's defaults: what an adapter guarantees (256 MiB buffers, 128 MiB bindings). */
export const DEFAULT_LIMITS: PlanLimits = {
  maxBufferSize: 256 * 1024 * 1024,
  maxStorageBufferBindingSize: 128 * 1024 * 1024,
};

export interface PlanBuffer {
  name: string;
  bytes: number;
  /** The largest range of it one shader binds (a buffer of tensors binds one tensor at a time). */
  binding: number;
  /**
   * A parameter store (a FlatBuffer of model/gpu-buffers.ts): bound in windows, and cut into several
   * GPUBuffers at tensor starts when over maxBufferSize, so only its largest tensor (`binding`)
   * must fit one buffer.
   */
  windowed?: boolean;
}

export interface PlanTerm {
  /** weights | adapter | gradients | optimizer | activations | scratch | head-logits | kv-cache | decode | reference */
  key: string;
  label: string;
  bytes: number;
  /** How the figure is made, in words and shapes. */
  why: string;
  buffers: PlanBuffer[];
}

export interface MemoryPlan {
  terms: PlanTerm[];
  total: number;
  budget: number;
  /** Each buffer over a limit, and the total over the budget, in words with the numbers. */
  problems: string[];
  /** What to change, when there are problems. */
  advice: string[];
  fits: boolean;
  /** What the plan assumed beyond the shape (an f16 base's f32 tensors, options that do not apply). */
  notes: string[];
}

/** model/head.ts's HEAD_CHUNK_BYTES (not imported: the page computes plans without the kernels). */
export const HEAD_CHUNK_BYTES = 64 * 1024 * 1024;

export const GB = 1e9;
export const DEFAULT_BUDGET_BYTES = 4 * GB;

/** Bytes in a person's units: 1.23 GB, 45.6 MB, 789 KB. */
export function formatBytes(b: number): string {
  if (b >= GB) return `${(b / GB).toFixed(2)} GB`;
  if (b >= 1e6) return `${(b / 1e6).toFixed(1)} MB`;
  if (b >= 1e3) return `${(b / 1e3).toFixed(0)} KB`;
  return `${b} B`;
}

/** One GPUBuffer of `floats` (kernels/runtime.ts Runtime.buffer: 256-byte aligned, 16 bytes at least). */
const buf = (name: string, floats: number, bindingFloats = floats, windowed = false): PlanBuffer => ({
  name,
  bytes: Math.max(16, align(floats) * F32),
  binding: bindingFloats * F32,
  windowed,
});

/** Bytes of an arena of named tensors (256-byte aligned views) and its largest view. */
function arena(name: string, sizes: Record<string, number>): PlanBuffer {
  const vals = Object.values(sizes);
  return buf(name, sum(vals.map(align)), Math.max(...vals));
}

/** The training buffers of one model for N token rows (model/gpu-buffers.ts TrainBuffers, the head's excepted). */
function trainBuffers(c: ModelConfig, N: number, lora: LoraLayout | null, recompute: boolean) {
  const layer = arena("train-layer", layerActSizes(c, N));
  const layers = recompute
    ? [layer, ...Array.from({ length: c.layers }, (_, l) => buf(`train-res-${l}`, N * c.dModel))]
    : Array.from({ length: c.layers }, (_, l) => ({ ...layer, name: `train-layer-${l}` }));
  const activations = [arena("train-io", trainIoSizes(c, N)), ...layers];
  const scratch = [arena("train-grad", trainGradSizes(c, N))];
  if (lora) scratch.push(arena("train-lora", loraScratchSizes(lora, N, attnDims(c).hs)));
  return { activations, scratch };
}

type Layout = ReturnType<typeof paramLayout>;

/**
 * The base weights' term: the f32 layout, or an f16 base (model/half.ts, LoRA only) as
 * model/gpu-base.ts stores it on a device with shader-f16: each layer's linear weights packed two
 * to a word, the rest packed f32, and an f32 buffer for each f16 tensor kept f32 (beyond f16's range).
 */
function weightsTerm(
  c: ModelConfig,
  layout: Layout,
  run: PlanRun,
  lora: LoraLayout | null,
  notes: string[],
): PlanTerm {
  const half = halfBase(c);
  const halfNames = new Set(half ? halfTensors(layout).map((t) => t.name) : []);
  const kept = new Map((run.keptF32 ?? []).map((k) => [k.name, k]));
  for (const k of kept.keys())
    if (!halfNames.has(k))
      throw new Error(
        `memory plan: keptF32 names ${k}, which is not an f16 tensor of the layout (model/half.ts)`,
      );
  const f16 = half && (run.halfStorage ?? true);
  if (half && !f16)
    notes.push("no shader-f16 on this adapter: the f16-rounded base is stored in f32 (model/gpu-base.ts)");
  const weights: PlanBuffer[] = [];
  let halves = 0;
  if (f16) {
    const t32 = layout.tensors.filter((t) => !halfNames.has(t.name));
    const t16 = layout.tensors.filter((t) => halfNames.has(t.name));
    halves = t16.reduce((a, t) => a + t.size, 0);
    const f32Floats = sum(t32.map((t) => align(t.size)));
    const f16Floats = sum(t16.map((t) => align(Math.ceil(t.size / 2))));
    weights.push(
      {
        name: "params",
        bytes: f32Floats * F32,
        binding: Math.max(...t32.map((t) => t.size)) * F32,
        windowed: true,
      },
      {
        name: "params-f16",
        bytes: f16Floats * F32,
        binding: Math.max(...t16.map((t) => Math.ceil(t.size / 2))) * F32,
        windowed: true,
      },
    );
    for (const k of kept.values()) {
      const t = layout.byName.get(k.name)!;
      weights.push(buf(`params-f32-${k.name}`, t.size, t.size, true));
      notes.push(
        `${k.name} kept in f32 in the f16 base: a value of ${k.maxAbs} is beyond f16's range (65504)`,
      );
    }
  } else {
    const largestF32 = Math.max(...layout.tensors.map((t) => t.size));
    weights.push({ name: "params", bytes: layout.total * F32, binding: largestF32 * F32, windowed: true });
  }
  return {
    key: "weights",
    label: lora ? "Base weights (frozen)" : "Weights",
    bytes: sum(weights.map((w) => w.bytes)),
    why: f16
      ? `${halves.toLocaleString("en")} linear weights x 2 bytes (f16) + ${(layout.count - halves).toLocaleString("en")} embedding, norm and bias weights x 4 (f32)${kept.size ? `, ${kept.size} tensor(s) kept f32` : ""}`
      : `${layout.count.toLocaleString("en")} parameters x 4 bytes (f32)${half ? ", f16-rounded values" : ""}`,
    buffers: weights,
  };
}

/** The trained parameters' terms: the LoRA adapter (when there is one), their gradients and AdamW's moments. */
function trainedTerms(c: ModelConfig, layout: Layout, lora: LoraLayout | null): PlanTerm[] {
  const trainedLayout = lora ?? layout;
  const trainable = trainedLayout.total;
  const largestTrained = Math.max(...trainedLayout.tensors.map((t) => t.size));
  const terms: PlanTerm[] = [];
  if (lora)
    terms.push({
      key: "adapter",
      label: "LoRA adapter",
      bytes: trainable * F32,
      why: `rank ${lora.rank} on ${c.lora.targets.join(", ")}: ${lora.count.toLocaleString("en")} parameters x 4 bytes (f32)`,
      buffers: [buf("lora", trainable, largestTrained, true)],
    });
  const tname = lora ? "adapter" : "trainable";
  terms.push({
    key: "gradients",
    label: "Gradients",
    bytes: trainable * F32,
    why: `one f32 per ${tname} parameter (${trainedLayout.count.toLocaleString("en")})${lora ? "; the frozen base has none" : ""}`,
    buffers: [buf("grads", trainable, largestTrained, true)],
  });
  terms.push({
    key: "optimizer",
    label: "Optimizer state",
    bytes: 2 * trainable * F32,
    why: `AdamW's two moments, f32, per ${tname} parameter`,
    buffers: [buf("adam-m", trainable, largestTrained, true), buf("adam-v", trainable, largestTrained, true)],
  });
  return terms;
}

/** The shape of one training micro-batch: `rows` sequences of T tokens, n token rows, buffers for N. */
type MicroBatch = { rows: number; T: number; n: number; N: number; recompute: boolean };

/** Saved activations and the backward's scratch of one micro-batch: model/gpu-buffers.ts's TrainBuffers for N rows. */
function activationTerms(c: ModelConfig, mb: MicroBatch, lora: LoraLayout | null): PlanTerm[] {
  const { rows, T, n, N, recompute } = mb;
  const train = trainBuffers(c, N, lora, recompute);
  return [
    {
      key: "activations",
      label: "Saved activations (per micro-batch)",
      bytes: sum(train.activations.map((b) => b.bytes)),
      why: `${rows} sequences x ${T} tokens = ${n.toLocaleString("en")} rows (buffers for ${N.toLocaleString("en")}) through ${c.layers} layers${recompute ? ", recomputed: one layer's arena + each layer's output (model.gradient_checkpointing)" : ", every layer's arena"}`,
      buffers: train.activations,
    },
    {
      key: "scratch",
      label: "Backward scratch",
      bytes: sum(train.scratch.map((b) => b.bytes)),
      why: `the backward's gradients of one layer's activations for ${N.toLocaleString("en")} rows${lora ? ", and the adapter's (u, delta, du)" : ""}`,
      buffers: train.scratch,
    },
  ];
}

/**
 * The head's chunking (model/head.ts): logits and their gradient for a chunk of whole rows at a
 * time, at most headChunkBytes and one binding each. Returns the rows of a chunk for r rows.
 */
function headChunkRows(c: ModelConfig, run: PlanRun, limits: PlanLimits): (r: number) => number {
  const V = c.vocab;
  const F = Math.min(
    Math.floor((run.headChunkBytes ?? HEAD_CHUNK_BYTES) / F32),
    Math.floor(limits.maxStorageBufferBindingSize / F32),
  );
  const maxRows = Math.floor(F / V);
  if (maxRows === 0)
    throw new Error(`memory plan: one row of ${V} logits is over the head's chunk of ${F * F32} bytes`);
  const unit = ALIGN_FLOATS / gcd(c.dModel, ALIGN_FLOATS); // rows per 256-byte-aligned chunk view
  return (r: number) => (r <= maxRows ? r : Math.floor(maxRows / unit) * unit);
}

/** The head's logits chunk for the training rows. */
function headTerm(c: ModelConfig, N: number, chunkRowsOf: (r: number) => number): PlanTerm {
  const V = c.vocab;
  const trainChunk = chunkRowsOf(N);
  return {
    key: "head-logits",
    label: "Head logits chunk",
    bytes: 2 * trainChunk * V * F32,
    why:
      trainChunk === N
        ? `logits and their gradient, ${N.toLocaleString("en")} rows x ${V.toLocaleString("en")} ids each (the batch is one chunk)`
        : `logits and their gradient, chunks of ${trainChunk} rows x ${V.toLocaleString("en")} ids (of ${N.toLocaleString("en")} rows)`,
    buffers: [buf("head-logits", trainChunk * V), buf("head-dlogits", trainChunk * V)],
  };
}

/** Decoding's terms: a key and a value cache per layer for every sequence at the full context, and the sampler's logits. */
function decodeTerms(c: ModelConfig, B: number, chunkRowsOf: (r: number) => number): PlanTerm[] {
  const { KV } = attnDims(c);
  const V = c.vocab;
  const cache = B * c.context * KV;
  const kv = Array.from({ length: c.layers }, (_, l) => [
    buf(`kcache-${l}`, cache),
    buf(`vcache-${l}`, cache),
  ]).flat();
  const sampleRows = chunkRowsOf(B);
  const decode = [buf("sample-logits", sampleRows * V), buf("decode-hidden", B * c.dModel)];
  return [
    {
      key: "kv-cache",
      label: "KV cache",
      bytes: sum(kv.map((b) => b.bytes)),
      why: `2 x ${c.layers} layers x ${B} sequences x ${c.context} positions x ${KV} (key/value heads x head size) f32`,
      buffers: kv,
    },
    {
      key: "decode",
      label: "Decode logits",
      bytes: sum(decode.map((b) => b.bytes)),
      why: `the sampler's logits, ${sampleRows} of ${B} sequences at a time x ${V.toLocaleString("en")} ids, and their hidden states`,
      buffers: decode,
    },
  ];
}

/**
 * The reference policy (KL). Full fine-tuning: frozenCopy(), the weights (f32) without gradients
 * or moments (they come on first use). LoRA: the base with the adapter off, sharing the base
 * buffer (no weights). Either is a model of its own, whose scoring allocates its own training
 * buffers and head.
 */
function referenceTerm(
  c: ModelConfig,
  layout: Layout,
  run: PlanRun,
  mb: MicroBatch,
  lora: LoraLayout | null,
  chunkRowsOf: (r: number) => number,
): PlanTerm {
  const V = c.vocab;
  const largestF32 = Math.max(...layout.tensors.map((t) => t.size));
  const refN = trainCapacity(Math.min(run.referenceRows || mb.rows, run.trainRows) * mb.T);
  const ref = trainBuffers(c, refN, lora, true); // frozen copies keep the recomputation layout (model/gpu-buffers.ts)
  const refHead = chunkRowsOf(refN);
  const buffers = [
    ...(lora
      ? []
      : [{ name: "ref-params", bytes: layout.total * F32, binding: largestF32 * F32, windowed: true }]),
    ...ref.activations.map((b) => ({ ...b, name: `ref-${b.name}` })),
    ...ref.scratch.map((b) => ({ ...b, name: `ref-${b.name}` })),
    buf("ref-head-logits", refHead * V),
    buf("ref-head-dlogits", refHead * V),
  ];
  return {
    key: "reference",
    label: "Reference policy (KL)",
    bytes: sum(buffers.map((b) => b.bytes)),
    why: `${lora ? "the base with the adapter off (shares the base weights)" : "a frozen copy of the weights (f32)"}, and its own scoring buffers for ${refN.toLocaleString("en")} rows (one layer's arena: it only scores)`,
    buffers,
  };
}

/** Each buffer over an adapter limit and the total over the budget, with what to change for each. */
function planProblems(terms: PlanTerm[], total: number, limits: PlanLimits, budget: number) {
  const problems: string[] = [];
  const advice = new Set<string>();
  for (const t of terms)
    for (const b of t.buffers) {
      if (b.windowed) {
        if (b.binding <= limits.maxBufferSize) continue;
        problems.push(
          `${t.label}: ${b.name}'s largest tensor is ${formatBytes(b.binding)}, over the adapter's maxBufferSize of ${formatBytes(limits.maxBufferSize)} (a tensor is never cut between buffers)`,
        );
      } else if (b.bytes > limits.maxBufferSize)
        problems.push(
          `${t.label}: buffer ${b.name} is ${formatBytes(b.bytes)}, over the adapter's maxBufferSize of ${formatBytes(limits.maxBufferSize)}`,
        );
      else if (!b.windowed && b.binding > limits.maxStorageBufferBindingSize)
        problems.push(
          `${t.label}: buffer ${b.name} binds ${formatBytes(b.binding)}, over the adapter's maxStorageBufferBindingSize of ${formatBytes(limits.maxStorageBufferBindingSize)}`,
        );
      else continue;
      advice.add(ADVICE[t.key]);
    }
  if (total > budget) {
    problems.push(`the plan needs ${formatBytes(total)}, over the budget of ${formatBytes(budget)}`);
    const biggest = [...terms].sort((a, b) => b.bytes - a.bytes).slice(0, 2);
    for (const t of biggest) advice.add(ADVICE[t.key]);
    advice.add("or raise model.memory_budget_gb if this GPU has the memory");
  }
  return { problems, advice: [...advice] };
}

/** The plan of model `c` (LoRA from c.lora) trained with run shape `run` on an adapter with `limits`, against `budget` bytes. */
export function memoryPlan(
  c: ModelConfig,
  run: PlanRun,
  limits: PlanLimits = DEFAULT_LIMITS,
  budget = DEFAULT_BUDGET_BYTES,
): MemoryPlan {
  const layout = paramLayout(c);
  const lora = c.lora.rank > 0 ? loraLayout(c, c.lora) : null;
  const notes: string[] = [];
  const T = run.seqLen;
  const rows = Math.min(run.microBatchRows || run.trainRows, run.trainRows);
  const n = rows * T;
  const mb: MicroBatch = { rows, T, n, N: trainCapacity(n), recompute: run.recompute ?? false };
  const terms: PlanTerm[] = [weightsTerm(c, layout, run, lora, notes), ...trainedTerms(c, layout, lora)];
  terms.push(...activationTerms(c, mb, lora));
  const chunkRowsOf = headChunkRows(c, run, limits);
  terms.push(headTerm(c, mb.N, chunkRowsOf));
  terms.push(...decodeTerms(c, run.decodeRows, chunkRowsOf));
  if (run.reference) terms.push(referenceTerm(c, layout, run, mb, lora, chunkRowsOf));
  const total = sum(terms.map((t) => t.bytes));
  const { problems, advice } = planProblems(terms, total, limits, budget);
  return { terms, total, budget, problems, advice, fits: problems.length === 0, notes };
}

const ADVICE: Record<string, string> = {
  weights: "a smaller model (model.pretrained), or LoRA (model.lora.rank) with an f16 base",
  adapter: "a smaller LoRA rank or fewer targets (model.lora.rank, model.lora.targets)",
  gradients: "a smaller model, or LoRA (model.lora.rank: gradients over the adapter only)",
  optimizer: "a smaller model, or LoRA (model.lora.rank: Adam moments over the adapter only)",
  activations:
    "per-layer recomputation (model.gradient_checkpointing), micro-batches (rl.micro_batch_size), fewer sequences per minibatch (sft.batch; rl.minibatches up, rl.prompts_per_step or rl.group_size down) or a shorter model.context",
  scratch: "micro-batches (rl.micro_batch_size), fewer sequences per minibatch or a shorter model.context",
  "head-logits": "fewer rows per minibatch (sft.batch, rl.minibatches) or a shorter model.context",
  "kv-cache":
    "fewer sequences decoded at once (rl.prompts_per_step x rl.group_size, task.eval_size, task.dev_size) or a shorter model.context",
  decode: "fewer sequences decoded at once (rl.prompts_per_step x rl.group_size, task.eval_size)",
  reference: "no KL (rl.kl.coef 0): the reference is then not made; with LoRA it shares the base weights",
};

/**
 * The run shape of a RunConfig: the largest batch any phase runs forward/backward (an SFT batch,
 * or an RL minibatch's micro-batch: rl/update/rl-step.ts scores and trains in micro-batches when
 * rl.micro_batch_size is set), the largest decode batch, the reference's rows, recomputation.
 * The base dtype comes with the model config (planOfConfig: model.dtype).
 */
export function planRunOf(config: RunConfig): PlanRun {
  const rl = config.rl;
  const mini = Math.ceil((rl.prompts_per_step * rl.group_size) / rl.minibatches);
  const rlRows = rl.micro_batch_size > 0 ? Math.min(rl.micro_batch_size, mini) : mini;
  const sftRows = config.sft.steps > 0 ? config.sft.batch : 0;
  return {
    trainRows: Math.max(rlRows, sftRows),
    seqLen: config.model.context,
    decodeRows: Math.max(rl.prompts_per_step * rl.group_size, config.task.eval_size, config.task.dev_size),
    reference: rl.kl.coef > 0,
    referenceRows: rlRows,
    recompute: config.model.gradient_checkpointing,
  };
}

/** The plan of a RunConfig's model `mc` (modelConfigOf or the pretrained config.json's), with the run's LoRA. */
export function planOfConfig(
  config: RunConfig,
  mc: ModelConfig,
  limits: PlanLimits = DEFAULT_LIMITS,
): MemoryPlan {
  const withLora = modelConfig({ ...mc, lora: loraConfigOf(config, mc.mlp), baseDtype: config.model.dtype });
  return memoryPlan(withLora, planRunOf(config), limits, config.model.memory_budget_gb * GB);
}

/** The error a refused plan throws: its terms, total, problems and advice. */
export function planRefusal(plan: MemoryPlan, what: string): string {
  const lines = [
    `${what}: the memory plan does not fit (${plan.problems.join("; ")})`,
    ...plan.terms.map((t) => `  ${t.label}: ${formatBytes(t.bytes)} (${t.why})`),
    ...plan.notes.map((n) => `  note: ${n}`),
    `  total: ${formatBytes(plan.total)} of a ${formatBytes(plan.budget)} budget`,
    `change: ${plan.advice.join("; ")}`,
  ];
  return lines.join("\n");
}
