// The memory plan of a run, before anything is loaded: every GPU buffer the model and the trainer
// will allocate, grouped in terms (weights, gradients, optimizer state, saved activations per
// micro-batch, KV cache, the head's logits chunk, ...), each buffer checked against the adapter's
// limits and the total against a budget (WebGPU does not report device memory, so the budget is
// the person's: model.memory_budget_gb, default 4 GB). A plan that does not fit is refused with
// its numbers and what to change, instead of an out-of-memory crash halfway through loading.
//
// A pure function of (model config, run shape, adapter limits): no GPU, no DOM, so the config
// panel computes it as the person edits, and rl/session.ts checks it before loading. The sizes
// follow what model/gpu.ts allocates (its layer arenas use layerActSizes below).
//
// Extension points, each a field of PlanRun whose default is today's engine: `adapterParams`
// (LoRA: gradients and Adam moments over the adapter only; the base frozen), `baseBytes` (f16
// base weights), `microBatchRows` (activations per micro-batch instead of per minibatch),
// `recompute` (activation recomputation: one layer's arena plus each layer's input kept),
// `headChunkBytes` (model/head.ts's logits chunk).
// Tested by model/memory-plan.test.ts (SmolLM2-135M and Qwen2.5-0.5B shapes by hand).
import type { RunConfig } from "../config";
import { ALIGN_FLOATS, attnDims, type ModelConfig, mlpHidden, paramLayout } from "./config";

const F32 = 4;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const align = (n: number) => Math.ceil(Math.max(1, n) / ALIGN_FLOATS) * ALIGN_FLOATS;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Floats of each saved activation of one layer for N = B*T rows (model/gpu.ts's layer arena). */
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
  /** Trainable adapter parameters (LoRA); undefined = every weight trains. */
  adapterParams?: number;
  /** Bytes per frozen base weight when an adapter trains (2 = f16 base); default 4. */
  baseBytes?: 2 | 4;
  /** Sequences per micro-batch (activations are held for this many); default trainRows. */
  microBatchRows?: number;
  /** Activation recomputation: only each layer's input is kept, one layer's arena is live. */
  recompute?: boolean;
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
   * A parameter store (a FlatBuffer of model/gpu.ts): bound in windows, and cut into several
   * GPUBuffers at tensor starts when over maxBufferSize, so only its largest tensor (`binding`)
   * must fit one buffer.
   */
  windowed?: boolean;
}

export interface PlanTerm {
  /** weights | gradients | optimizer | activations | kv-cache | decode | head-logits | reference */
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

const buf = (name: string, floats: number, bindingFloats = floats, windowed = false): PlanBuffer => ({
  name,
  bytes: floats * F32,
  binding: bindingFloats * F32,
  windowed,
});

/** Bytes of an arena of named tensors (256-byte aligned views) and its largest view. */
function arena(name: string, sizes: Record<string, number>): PlanBuffer {
  const vals = Object.values(sizes);
  return buf(name, sum(vals.map(align)), Math.max(...vals));
}

/** The plan of model `c` trained with run shape `run` on an adapter with `limits`, against `budget` bytes. */
export function memoryPlan(
  c: ModelConfig,
  run: PlanRun,
  limits: PlanLimits = DEFAULT_LIMITS,
  budget = DEFAULT_BUDGET_BYTES,
): MemoryPlan {
  const layout = paramLayout(c);
  const P = layout.total; // floats of the flat layout (aligned tensors)
  const largest = Math.max(...layout.tensors.map((t) => t.size)); // floats of the largest tensor
  const A = run.adapterParams; // trainable floats when an adapter trains
  const trainable = A ?? P;
  const baseBytes = A === undefined ? F32 : (run.baseBytes ?? F32);
  const C = c.dModel;
  const { NH, Q, KV, hs } = attnDims(c);
  const V = c.vocab;
  const T = run.seqLen;
  const rows = Math.min(run.microBatchRows ?? run.trainRows, run.trainRows);
  // Token rows of one forward/backward: model/gpu.ts sizes its buffers to the next 1024 rows or
  // power of two, whichever is smaller.
  const n = rows * T;
  const N = Math.min(Math.ceil(n / 1024) * 1024, 2 ** Math.ceil(Math.log2(Math.max(1, n))));
  const B = run.decodeRows;
  const H = mlpHidden(c);
  const terms: PlanTerm[] = [];

  const weights: PlanBuffer[] = [
    { name: "params", bytes: P * baseBytes, binding: largest * baseBytes, windowed: true },
  ];
  if (A !== undefined) weights.push(buf("adapter", A, A, true));
  terms.push({
    key: "weights",
    label: "Weights",
    bytes: sum(weights.map((b) => b.bytes)),
    why:
      A === undefined
        ? `${P.toLocaleString("en")} parameters x 4 bytes (f32)`
        : `${P.toLocaleString("en")} base parameters x ${baseBytes} bytes + ${A.toLocaleString("en")} adapter x 4`,
    buffers: weights,
  });
  terms.push({
    key: "gradients",
    label: "Gradients",
    bytes: trainable * F32,
    why: `one f32 per trainable parameter (${trainable.toLocaleString("en")})`,
    buffers: [buf("grads", trainable, A ?? largest, true)],
  });
  terms.push({
    key: "optimizer",
    label: "Optimizer state",
    bytes: 2 * trainable * F32,
    why: "AdamW's two moments, f32, per trainable parameter",
    buffers: [buf("adam-m", trainable, A ?? largest, true), buf("adam-v", trainable, A ?? largest, true)],
  });

  // Saved activations of one micro-batch: model/gpu.ts's TrainBuffers for N rows.
  const layer = arena("train-layer", layerActSizes(c, N));
  const layers = run.recompute
    ? [layer, ...Array.from({ length: c.layers }, (_, l) => buf(`layer-input-${l}`, N * C))]
    : Array.from({ length: c.layers }, (_, l) => ({ ...layer, name: `train-layer-${l}` }));
  const io = arena("train-io", {
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
    out: 3 * align(N),
    wteKeys: N, // the embedding backward's grouping of rows by token
    wteStarts: N + 1,
    wteOrder: N,
    wpeKeys: N,
    wpeStarts: N + 1,
    wpeOrder: N,
  });
  const grad = arena("train-grad", {
    dres: N * C,
    dln: N * C,
    datty: N * Q,
    dqkv: N * (Q + 2 * KV),
    dqkvRaw: c.qkNorm ? N * (Q + 2 * KV) : 1,
    qkScratch: c.qkNorm ? 2 * hs * Math.ceil((N * NH) / 256) : 1, // kernels/qknorm.ts qkNormScratchSize
    dfch: N * (c.mlp === "swiglu" ? 2 * H : H),
    dfchAct: N * H,
    attScratch: NH * N,
  });
  const acts = [io, ...layers, grad];
  terms.push({
    key: "activations",
    label: "Saved activations (per micro-batch)",
    bytes: sum(acts.map((b) => b.bytes)),
    why: `${rows} sequences x ${T} tokens = ${N.toLocaleString("en")} rows through ${c.layers} layers${run.recompute ? " (recomputed: one layer's arena + each layer's input)" : ""}, and the backward's scratch`,
    buffers: acts,
  });

  // The head (model/head.ts): logits and their gradient for a chunk of whole rows at a time,
  // at most headChunkBytes and one binding each.
  const F = Math.min(
    Math.floor((run.headChunkBytes ?? HEAD_CHUNK_BYTES) / F32),
    Math.floor(limits.maxStorageBufferBindingSize / F32),
  );
  const maxRows = Math.floor(F / V);
  if (maxRows === 0)
    throw new Error(`memory plan: one row of ${V} logits is over the head's chunk of ${F * F32} bytes`);
  const unit = ALIGN_FLOATS / gcd(C, ALIGN_FLOATS); // rows per 256-byte-aligned chunk view
  const chunkRowsOf = (r: number) => (r <= maxRows ? r : Math.floor(maxRows / unit) * unit);
  const trainChunk = chunkRowsOf(N);
  terms.push({
    key: "head-logits",
    label: "Head logits chunk",
    bytes: 2 * trainChunk * V * F32,
    why:
      trainChunk === N
        ? `logits and their gradient, ${N.toLocaleString("en")} rows x ${V.toLocaleString("en")} ids each (the batch is one chunk)`
        : `logits and their gradient, chunks of ${trainChunk} rows x ${V.toLocaleString("en")} ids (of ${N.toLocaleString("en")} rows)`,
    buffers: [buf("head-logits", trainChunk * V), buf("head-dlogits", trainChunk * V)],
  });

  // Decoding: a key and a value cache per layer for every sequence at the full context.
  const cache = B * c.context * KV;
  const kv = Array.from({ length: c.layers }, (_, l) => [
    buf(`kcache-${l}`, cache),
    buf(`vcache-${l}`, cache),
  ]).flat();
  terms.push({
    key: "kv-cache",
    label: "KV cache",
    bytes: sum(kv.map((b) => b.bytes)),
    why: `2 x ${c.layers} layers x ${B} sequences x ${c.context} positions x ${KV} (key/value heads x head size) f32`,
    buffers: kv,
  });
  const sampleRows = chunkRowsOf(B);
  const decode = [buf("sample-logits", sampleRows * V), buf("decode-hidden", B * C)];
  terms.push({
    key: "decode",
    label: "Decode logits",
    bytes: sum(decode.map((b) => b.bytes)),
    why: `the sampler's logits, ${sampleRows} of ${B} sequences at a time x ${V.toLocaleString("en")} ids, and their hidden states`,
    buffers: decode,
  });

  if (run.reference) {
    // frozenCopy(): a model whose gradients and moments are never made (they come on first use).
    terms.push({
      key: "reference",
      label: "Reference policy (KL)",
      bytes: P * baseBytes,
      why: "the frozen copy KL reads: its weights only",
      buffers: [{ name: "ref-params", bytes: P * baseBytes, binding: largest * baseBytes, windowed: true }],
    });
  }

  const total = sum(terms.map((t) => t.bytes));
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
  return { terms, total, budget, problems, advice: [...advice], fits: problems.length === 0 };
}

const ADVICE: Record<string, string> = {
  weights: "a smaller model (model.pretrained), or LoRA with an f16 base once it exists",
  gradients: "a smaller model, or LoRA once it exists (gradients over the adapter only)",
  optimizer: "a smaller model, or LoRA once it exists (Adam moments over the adapter only)",
  activations:
    "fewer sequences per minibatch (sft.batch; rl.minibatches up, rl.prompts_per_step or rl.group_size down) or a shorter model.context",
  "head-logits": "fewer rows per minibatch (sft.batch, rl.minibatches) or a shorter model.context",
  "kv-cache":
    "fewer sequences decoded at once (rl.prompts_per_step x rl.group_size, task.eval_size, task.dev_size) or a shorter model.context",
  decode: "fewer sequences decoded at once (rl.prompts_per_step x rl.group_size, task.eval_size)",
  reference: "no KL (rl.kl.coef 0): the reference copy is then not made",
};

/** The run shape of a RunConfig: the largest training batch and decode batch any phase uses. */
export function planRunOf(config: RunConfig): PlanRun {
  const rl = config.rl;
  const rlRows = Math.ceil((rl.prompts_per_step * rl.group_size) / rl.minibatches);
  const sftRows = config.sft.steps > 0 ? config.sft.batch : 0;
  return {
    trainRows: Math.max(rlRows, sftRows),
    seqLen: config.model.context,
    decodeRows: Math.max(rl.prompts_per_step * rl.group_size, config.task.eval_size, config.task.dev_size),
    reference: rl.kl.coef > 0,
  };
}

/** The plan of a RunConfig's model `mc` (modelConfigOf or the pretrained config.json's). */
export function planOfConfig(
  config: RunConfig,
  mc: ModelConfig,
  limits: PlanLimits = DEFAULT_LIMITS,
): MemoryPlan {
  return memoryPlan(mc, planRunOf(config), limits, config.model.memory_budget_gb * GB);
}

/** The error a refused plan throws: its terms, total, problems and advice. */
export function planRefusal(plan: MemoryPlan, what: string): string {
  const lines = [
    `${what}: the memory plan does not fit (${plan.problems.join("; ")})`,
    ...plan.terms.map((t) => `  ${t.label}: ${formatBytes(t.bytes)} (${t.why})`),
    `  total: ${formatBytes(plan.total)} of a ${formatBytes(plan.budget)} budget`,
    `change: ${plan.advice.join("; ")}`,
  ];
  return lines.join("\n");
}
