// The memory plan of a training step: bytes per term (base weights, adapter, gradients, Adam
// moments, saved activations of one micro-batch, the backward's scratch, the head's logits) for
// full fine-tuning or LoRA, f32 or f16 base weights, micro-batches and per-layer activation
// recomputation. Counted from the same layouts and activation sizes the models allocate
// (model/config.ts, model/lora.ts, model/gpu.ts TrainBuffers), so the f32 / no-recompute plan
// is what GpuModel holds; the f16 base and recomputation terms are what those options would
// hold (the f16 base and recomputation are not implemented by the models yet: see the plan's
// notes). Tested by model/memory.test.ts; printed by `npx tsx model/memory.ts` (the bench rows
// at Qwen2.5-0.5B's shape).
import { attnDims, type ModelConfig, mlpHidden, modelConfig, paramLayout } from "./config";
import { loraLayout } from "./lora";

export interface PlanOptions {
  /** Sequences per minibatch and tokens per sequence. */
  B: number;
  T: number;
  /** Sequences per micro-batch (0: the whole minibatch). */
  micro: number;
  /** Keep only each layer's input and recompute the layer in backward. */
  recompute: boolean;
  /** Storage of the frozen base's matrices (LoRA only; full fine-tuning trains f32 weights). */
  baseDtype: "f32" | "f16";
}

export interface PlanTerm {
  name: string;
  bytes: number;
}

export interface MemoryPlan {
  terms: PlanTerm[];
  total: number;
  notes: string[];
}

/** Floats one layer saves for backward over n rows (model/gpu.ts layerActSizes). */
export function layerActivationFloats(c: ModelConfig, n: number): number {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { NH, QKV, Q } = attnDims(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const qkRaw = c.qkNorm ? n * QKV + n * (QKV / attnDims(c).hs) : 0;
  // ln1 (+mean, rstd), qkv, atty, lse, res2, ln2 (+mean, rstd), fch, fchAct, res3
  return (
    n * C + 2 * n + n * QKV + qkRaw + n * Q + NH * n + n * C + n * C + 2 * n + n * fcRows + n * H + n * C
  );
}

export function memoryPlan(c: ModelConfig, o: PlanOptions): MemoryPlan {
  const layout = paramLayout(c);
  const lora = c.lora.rank > 0 ? loraLayout(c, c.lora) : null;
  const C = c.dModel;
  const H = mlpHidden(c);
  const { QKV, Q } = attnDims(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const rows = (o.micro > 0 ? Math.min(o.micro, o.B) : o.B) * o.T;
  const notes: string[] = [];
  // Base: matrices (2-D tensors) may be f16 under LoRA; vectors (norms, biases) stay f32.
  let matrixFloats = 0;
  for (const t of layout.tensors) if (t.shape.length === 2) matrixFloats += t.size;
  const vectorFloats = layout.count - matrixFloats;
  const f16 = lora !== null && o.baseDtype === "f16";
  if (o.baseDtype === "f16" && !lora)
    notes.push("f16 storage applies to a frozen base only (LoRA): f32 here");
  if (f16)
    notes.push("f16 base: planned, not yet implemented by the models (f32 accumulation in every matmul)");
  if (o.recompute) notes.push("per-layer recomputation: planned, not yet implemented by the models");
  const trained = lora ? lora.count : layout.count;
  const maxRows = Math.max(0, ...(lora?.layers.flat().map((t) => t.rows) ?? []));
  const loraScratch = lora ? 2 * rows * lora.rank + rows * maxRows : 0;
  const perLayer = layerActivationFloats(c, rows);
  const saved = o.recompute
    ? c.layers * rows * C + perLayer // each layer's input, plus one layer rebuilt at a time
    : c.layers * perLayer;
  const terms: PlanTerm[] = [
    { name: "base weights", bytes: matrixFloats * (f16 ? 2 : 4) + vectorFloats * 4 },
    { name: "adapter weights", bytes: (lora?.count ?? 0) * 4 },
    { name: "gradients", bytes: trained * 4 },
    { name: "adam moments", bytes: 2 * trained * 4 },
    { name: `activations (${rows} tokens a micro-batch)`, bytes: (saved + 4 * rows * C) * 4 },
    {
      // TrainBuffers.grad (dres, dln, datty, dqkv, dqkvRaw, dfch, dfchAct, attScratch) and the LoRA scratch (u, delta, du)
      name: "backward scratch",
      bytes:
        (2 * rows * C +
          rows * Q +
          2 * rows * QKV +
          rows * fcRows +
          rows * H +
          attnDims(c).NH * rows +
          loraScratch) *
        4,
    },
    { name: "head logits + dlogits", bytes: 2 * rows * c.vocab * 4 },
  ];
  return { terms, total: terms.reduce((a, t) => a + t.bytes, 0), notes };
}

/** Qwen2.5-0.5B-Instruct's shape (its config.json: 24 layers, 896 wide, 14/2 heads, 4864 MLP, vocab 151936, tied). */
export function qwen05bConfig(loraRank: number): ModelConfig {
  return modelConfig({
    layers: 24,
    dModel: 896,
    heads: 14,
    kvHeads: 2,
    headDim: 64,
    context: 32768,
    vocab: 151936,
    norm: "rmsnorm",
    mlp: "swiglu",
    mlpSize: 4864,
    qkvBias: true,
    projBias: false,
    mlpBias: false,
    positional: "rope",
    tiedEmbeddings: true,
    normEps: 1e-6,
    ropeTheta: 1000000,
    lora: {
      rank: loraRank,
      alpha: 2 * Math.max(1, loraRank),
      targets: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    },
  });
}

function printPlan(title: string, p: MemoryPlan) {
  const gb = (b: number) => `${(b / 1e9).toFixed(3)} GB`;
  console.log(`${title}: total ${gb(p.total)}`);
  for (const t of p.terms) console.log(`  ${t.name.padEnd(40)} ${gb(t.bytes)}`);
  for (const n of p.notes) console.log(`  note: ${n}`);
}

if (typeof process !== "undefined" && process.argv[1]?.endsWith("model/memory.ts")) {
  const shape = { B: 8, T: 512 };
  printPlan(
    "Qwen2.5-0.5B, LoRA r16 all linear, f16 base, 8x512, micro-batch 1, recomputation",
    memoryPlan(qwen05bConfig(16), { ...shape, micro: 1, recompute: true, baseDtype: "f16" }),
  );
  printPlan(
    "Qwen2.5-0.5B, LoRA r16 all linear, f32 base, 8x512, micro-batch 1, no recomputation",
    memoryPlan(qwen05bConfig(16), { ...shape, micro: 1, recompute: false, baseDtype: "f32" }),
  );
  printPlan(
    "Qwen2.5-0.5B, full fine-tune f32, 8x512, whole minibatch, no recomputation",
    memoryPlan(qwen05bConfig(0), { ...shape, micro: 0, recompute: false, baseDtype: "f32" }),
  );
}
