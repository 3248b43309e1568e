// The large-model rows of the model benchmark, in Node through Dawn (lavapipe here: the page's
// SwiftShader would need more than 10 minutes a row and ~3 GB inside the page at this size):
//  - smollm2_train_step: train-step tokens/s (forwardScore + backward + clipped AdamW, as the SFT
//    loop does) at SmolLM2-135M's shape (its config.json through model/hf/read.ts: 134.5M parameters)
//    with random weights, batch 1 x 64 tokens, one timed step after one warm-up step;
//  - smollm2_decode_kv: KV-cache decode tokens/s at batch 1 at the same shape, with the small-M
//    matvec (kernels/matvec.wgsl) against the tiled matmul alone;
//  - head_logits_peak_bytes_151936: the bytes of logits the training head holds (its logits and
//    dlogits chunk buffers) when scoring 8 x 512 tokens at vocabulary 151,936, against the (N,V)
//    logits and dlogits of the unchunked head; measured on a 1-layer d64 model (the chunk depends
//    on V and the limits, not on the width);
//  - qwen05b_lora16_train_step: the adapter's train-step tokens/s (forwardScore + backward +
//    clipped AdamW on the adapter) at Qwen2.5-0.5B's shape (its config.json: 494M parameters)
//    with random weights, LoRA rank 16 on all seven targets, f32 base (the row's note says how
//    the base was stored), batch 1 x 64 tokens, one
//    timed step after a warm-up step (only the warm-up, said so, when it alone took over 4
//    minutes: the row stays within 10), with the training buffers it allocated against the
//    memory plan's figure.
// The train-step rows have no side-by-side baseline (ours only: baseline = ours, ratio 1).
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/bigmodel.ts
import { fileURLToPath } from "node:url";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { planWith } from "../kernels/plan";
import { Runtime } from "../kernels/runtime";
import type { ScoreBatch } from "../model/api";
import { type ModelConfig, modelConfig } from "../model/config";
import { GpuModel } from "../model/gpu";
import { describeStorage } from "../model/half";
import { hfModelConfig } from "../model/hf/config";
import { QWEN25_05B, SMOLLM2_135M } from "../model/hf/configs";
import { LORA_TARGETS } from "../model/lora";
import { memoryPlan } from "../model/memory-plan";
import { type BenchRow, makeRow } from "./report";

/** SmolLM2-135M's config.json (HuggingFaceTB/SmolLM2-135M), read by the lab's own HF config reader. */
export const SMOLLM2_135M_CONFIG = SMOLLM2_135M;
const SHAPE_NOTE =
  "SmolLM2-135M's shape from its config.json (d576 L30, 9 heads of 64 over 3 KV heads, intermediate 1536, vocab 49152, tied), random weights";

/** n tokens below V from a seeded xorshift (the benches' inputs). */
export function seededTokens(n: number, V: number, seed: number): Int32Array {
  let s = seed >>> 0 || 1;
  return Int32Array.from({ length: n }, () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % V;
  });
}

const secs = (t0: number) => (performance.now() - t0) / 1000;

/** Qwen2.5-0.5B's shape (its config.json through model/hf/read.ts) at `context`, with LoRA rank `rank` on all seven targets (0: none) and a base dtype. */
export function qwen05bShape(rank: number, context = 512, baseDtype: "f32" | "f16" = "f32"): ModelConfig {
  const mc = hfModelConfig(QWEN25_05B, "Qwen2.5-0.5B config.json", { context });
  return modelConfig({
    ...mc,
    lora: { rank, alpha: 2 * Math.max(1, rank), targets: [...LORA_TARGETS] },
    baseDtype,
  });
}

/** One timed train step on `batch` (mean log-prob loss, AdamW), as the train benches take it. */
export function trainStepOf(model: GpuModel, batch: ScoreBatch): () => Promise<{ s: number; loss: number }> {
  const h = { lr: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };
  const T = batch.T;
  return async () => {
    const t = performance.now();
    model.zeroGrad();
    const out = await model.forwardScore(batch);
    await model.backward({ dlogp: new Float32Array(T).fill(-1 / T) });
    await model.step(h);
    return { s: secs(t), loss: -out.logp.reduce((a, b) => a + b, 0) / T };
  };
}

export async function adapterTrainStepRow(
  rt: Runtime,
  c: ModelConfig,
  id: string,
  shapeNote: string,
  adapterNote: string,
  T = 64,
): Promise<BenchRow> {
  let t0 = performance.now();
  const model = new GpuModel(rt, c, undefined, 1);
  const initS = secs(t0);
  const batch = { B: 1, T, tokens: seededTokens(T, c.vocab, 7), targets: seededTokens(T, c.vocab, 8) };
  const trainStep = trainStepOf(model, batch);
  t0 = performance.now();
  const warm = await trainStep();
  const timed = warm.s > 240 ? null : await trainStep();
  const trainBytes = model.trainBytes;
  const storage = describeStorage(model.baseStorage());
  model.dispose();
  const plan = memoryPlan(c, { trainRows: 1, seqLen: T, decodeRows: 1, reference: false });
  const planned = plan.terms
    .filter((t) => t.key === "activations" || t.key === "scratch")
    .reduce((a, t) => a + t.bytes, 0);
  const s = timed?.s ?? warm.s;
  const steps = timed
    ? `one timed step (${timed.s.toFixed(1)} s) after a warm-up step (${warm.s.toFixed(1)} s, with pipeline compiles); loss ${warm.loss.toFixed(2)} -> ${timed.loss.toFixed(2)}`
    : `the warm-up step only (${warm.s.toFixed(1)} s, pipeline compiles included: over 4 minutes, so no second step)`;
  return makeRow({
    id,
    group: "model",
    ours: [T / s],
    baseline: [T / s],
    unit: "tokens/s",
    better: "higher",
    note: `${shapeNote}; LoRA rank ${c.lora.rank} on ${c.lora.targets.join("/")}, frozen base, AdamW on the adapter; ${storage}; batch 1 x ${T}, ${steps}; init ${initS.toFixed(0)} s; training buffers ${(trainBytes / 1e6).toFixed(1)} MB allocated, ${(planned / 1e6).toFixed(1)} MB planned; ours only; ${adapterNote}`,
  });
}

/** SmolLM2-135M's shape (random weights): a train step at batch 1 x 64, then KV-cache decode at batch 1, the matvec path (ours) vs the 64-row tiles (before it). */
async function smollm2Rows(rt: Runtime, adapterNote: string): Promise<BenchRow[]> {
  // context 256: the rows use at most 80 positions, and the KV caches are sized to the context
  const c = hfModelConfig(SMOLLM2_135M_CONFIG, "SmolLM2-135M config.json", { context: 256 });
  const t0 = performance.now();
  const model = new GpuModel(rt, c, undefined, 1);
  const initS = secs(t0);
  const T = 64;
  const batch = { B: 1, T, tokens: seededTokens(T, c.vocab, 1), targets: seededTokens(T, c.vocab, 2) };
  const trainStep = trainStepOf(model, batch);
  const warm = await trainStep();
  const timed = await trainStep();
  const trainRow = makeRow({
    id: "smollm2_train_step",
    group: "model",
    ours: [T / timed.s],
    baseline: [T / timed.s],
    unit: "tokens/s",
    better: "higher",
    note: `${SHAPE_NOTE}; batch 1 x ${T}, one timed step (${timed.s.toFixed(1)} s) after a warm-up step (${warm.s.toFixed(1)} s, with pipeline compiles); loss ${warm.loss.toFixed(2)} -> ${timed.loss.toFixed(2)}; init ${initS.toFixed(0)} s; ours only; ${adapterNote}`,
  });

  // ---- KV-cache decode at batch 1: the matvec path (ours) vs the 64-row tiles (before it)
  // the baseline: the same weights on a plan variant that runs every product on the 64-row tiles
  const tiles = new GpuModel(
    new Runtime(rt.device, { plan: planWith(rt.plan, { smallRows: 0, subgroupMatmul: false }) }),
    c,
    await model.getWeights(),
  );
  const decodeRate = async (matvec: boolean, n: number) => {
    const gen = (matvec ? model : tiles).startGeneration({ temperature: 1, seed: 3 });
    let t = performance.now();
    await gen.prefill([Array.from(seededTokens(4, c.vocab, 4))]);
    await gen.decode([true]);
    const firstS = secs(t);
    t = performance.now();
    for (let i = 0; i < n; i++) await gen.decode([true]);
    const s = secs(t);
    gen.finish();
    return { rate: n / s, s, firstS, n };
  };
  const mv = await decodeRate(true, 16);
  const tiled = await decodeRate(false, 2);
  model.dispose();
  tiles.dispose();
  const decodeRow = makeRow({
    id: "smollm2_decode_kv",
    group: "model",
    ours: [mv.rate],
    baseline: [tiled.rate],
    unit: "tokens/s",
    better: "higher",
    note: `${SHAPE_NOTE}; KV-cache decode at batch 1 after a 4-token prompt and one decode: ${mv.n} tokens in ${mv.s.toFixed(1)} s with the small-M matvec; baseline the same decode on the 64-row matmul tiles only (a plan variant with smallRows 0, ${tiled.n} tokens in ${tiled.s.toFixed(1)} s); ${adapterNote}`,
  });
  return [trainRow, decodeRow];
}

/** The head's logits buffers at vocabulary 151,936, scoring 8 x 512, against the unchunked head's. */
async function headLogitsRow(rt: Runtime, adapterNote: string): Promise<BenchRow> {
  const V = 151936;
  const hc = modelConfig({
    layers: 1,
    dModel: 64,
    heads: 1,
    context: 512,
    vocab: V,
    norm: "rmsnorm",
    mlp: "swiglu",
    mlpRatio: 1,
    positional: "rope",
  });
  const hm = new GpuModel(rt, hc, undefined, 2);
  const [B, TT] = [8, 512];
  const N = B * TT;
  const t0 = performance.now();
  const scored = await hm.forwardScore({
    B,
    T: TT,
    tokens: seededTokens(N, V, 5),
    targets: seededTokens(N, V, 6),
  });
  const scoreS = secs(t0);
  const finite = scored.logp.every(Number.isFinite) && scored.entropy.every(Number.isFinite);
  if (!finite) throw new Error("the chunked head gave non-finite log-probs at vocab 151936");
  const ours = hm.headBytes;
  hm.dispose();
  const unchunked = 2 * N * V * 4;
  const mb = (x: number) => `${(x / 1e6).toFixed(0)} MB`;
  return makeRow({
    id: "head_logits_peak_bytes_151936",
    group: "model",
    ours: [ours],
    baseline: [unchunked],
    unit: "bytes",
    better: "lower",
    note: `logits + dlogits chunk buffers the training head allocates to score ${B} x ${TT} tokens at vocab ${V} (${mb(ours)}; goal under 256 MB at any batch) vs the unchunked head's (N,V) logits and dlogits (${mb(unchunked)}); measured on a 1-layer d64 model, forward over the batch in ${scoreS.toFixed(0)} s; ${adapterNote}`,
  });
}

export async function runBigModelBench(): Promise<{ rows: BenchRow[]; adapterNote: string }> {
  const gpu = await createGpu(await nodeGpu());
  const { device, adapter } = gpu;
  const adapterNote = `Node/Dawn adapter: ${adapter.description || adapter.vendor}${adapter.isFallback ? " (software)" : ""}`;
  const rt = new Runtime(device);
  const rows: BenchRow[] = [];
  try {
    rows.push(...(await smollm2Rows(rt, adapterNote)));
    rows.push(await headLogitsRow(rt, adapterNote));

    // ---- the adapter's train step at Qwen2.5-0.5B's shape, LoRA r16 on all seven targets, batch 1 x 64
    rows.push(
      await adapterTrainStepRow(
        rt,
        qwen05bShape(16, 256),
        "qwen05b_lora16_train_step",
        "Qwen2.5-0.5B's shape from its config.json (d896 L24, 14 heads of 64 over 2 KV heads, intermediate 4864, vocab 151936, tied, q/k/v biases), random weights",
        adapterNote,
      ),
    );
  } finally {
    device.destroy();
  }
  return { rows, adapterNote };
}

const argv1 = process.argv[1];
if (argv1 && fileURLToPath(import.meta.url) === argv1) {
  const t0 = Date.now();
  const { rows } = await runBigModelBench();
  for (const r of rows)
    console.log(
      `${r.id.padEnd(30)} ours ${r.ours.toPrecision(4)} ${r.unit}  ratio ${r.ratio.toFixed(2)}  (${r.note})`,
    );
  console.log(`took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}
