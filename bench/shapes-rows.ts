// The "shapes" bench group's rows measured in Node through Dawn (bench/shapes.ts runs them; the
// device check, bench/device/check.ts, imports them without the Chromium page's Vite and
// playwright): attention forward + backward and KV decode at SmolLM2-135M's shapes
// (bench/shapes-measure.ts), one RL step at its layer shape (bench/rl-shape.ts) and a group's
// decode whose rows finish at different lengths, new kernels vs old side by side, and the row
// builders the page's rows share.
import { kvReadsPerQuery, trainKernel } from "../kernels/attention";
import { subgroupMatmulSize } from "../kernels/matmul-subgroup";
import { planWith } from "../kernels/plan";
import { Runtime } from "../kernels/runtime";
import { decodeRun } from "../model/generate";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";
import { type BenchRow, makeRow } from "./report";
import { type RlShape, rlShapeConfig, rlShapeStep } from "./rl-shape";
import { type AttentionMeasure, type DecodeMeasure, measureAttention, measureDecode } from "./shapes-measure";

const secs = (t0: number) => (performance.now() - t0) / 1000;

/** Attention forward + backward at SmolLM2's head shape, batch B, context T: kernel vs "loop". */
export async function attentionRow(
  rt: Runtime,
  T: number,
  reps: number,
  adapterNote: string,
  B = 4,
): Promise<BenchRow> {
  const m = await measureAttention(rt, B, T, reps);
  return attentionRowOf(m, B, T, reps, rt.maxWorkgroupStorageBytes, adapterNote);
}

/** The attention row of a measurement (Node or page); `suffix` names the page's rows. */
export function attentionRowOf(
  m: AttentionMeasure,
  B: number,
  T: number,
  reps: number,
  storageBytes: number,
  adapterNote: string,
  suffix = "",
): BenchRow {
  const [NH, KVH, hs] = [9, 3, 64];
  const readsLoop = kvReadsPerQuery("loop", T, hs, NH / KVH);
  const readsOurs = kvReadsPerQuery(m.kernel, T, hs, NH / KVH, storageBytes);
  const readsTiled = kvReadsPerQuery("tiled", T, hs, NH / KVH, 16384);
  return makeRow({
    id: `attention_fwd_bwd_smollm2_${T}${B === 4 ? "" : `_b${B}`}${suffix}`,
    group: "shapes",
    ours: m.ours,
    baseline: m.base,
    unit: "s",
    better: "lower",
    note: `causal attention forward + backward, 9 heads of 64 over 3 KV heads, batch ${B}, context ${T}, no T x T buffer; ours the ${m.kernel} kernel (the adapter's pick), baseline attention.wgsl (one thread per query or key); global K/V floats read per query in forward (and again in backward_query): ${readsOurs.toFixed(0)} vs ${readsLoop.toFixed(0)} (${(readsLoop / readsOurs).toFixed(1)}x fewer; the tiled GPU kernel at 16 KiB: ${readsTiled.toFixed(0)}, ${(readsLoop / readsTiled).toFixed(1)}x); max |ours - baseline| over out and dqkv ${m.maxDiff.toExponential(1)}; ${reps} interleaved repetitions after a warm-up at context 64 (compiles); ${adapterNote}`,
  });
}

/**
 * KV-cache decode at batch 1 at SmolLM2-135M's shape (random weights): the fused decode kernels
 * (kernels/decode.ts) vs a plan variant without them (the tiles), `tokens` decoded tokens a
 * repetition, repetitions interleaved on one model and one generation session each, tokens/s.
 */
export async function decodeRow(
  rt: Runtime,
  tokens: number,
  reps: number,
  adapterNote: string,
  layers = 30,
): Promise<BenchRow> {
  return decodeRowOf(await measureDecode(rt, layers, tokens, reps), layers, tokens, reps, adapterNote);
}

/** The decode row of a measurement (Node or page); `suffix` names the page's rows. */
export function decodeRowOf(
  m: DecodeMeasure,
  layers: number,
  tokens: number,
  reps: number,
  adapterNote: string,
  suffix = "",
): BenchRow {
  return makeRow({
    id: `decode_smollm2${layers === 30 ? "" : `_l${layers}`}_b1${suffix}`,
    group: "shapes",
    ours: m.ours,
    baseline: m.base,
    unit: "tokens/s",
    better: "higher",
    note: `KV-cache decode at batch 1, SmolLM2-135M's shape (d576, ${layers === 30 ? "all 30 layers" : `${layers} of its 30 layers`}, 9 heads of 64 over 3 KV heads, MLP 1536, vocab 49152), random weights, after a 4-token prompt; ours the fused decode kernels (linear-rows.wgsl in vec4s with RMSNorm, residual and SwiGLU folded in, rope-append.wgsl: ${m.dispatches.ours.toFixed(0)} dispatches a token), baseline a plan variant without the small-rows kernels (the tiles, ${m.dispatches.base.toFixed(0)} dispatches a token); ${tokens} tokens a repetition, ${reps} interleaved repetitions after one warm-up token each (${m.warmS.toFixed(0)} s; init ${m.initS.toFixed(0)} s); max |next-token logits ours - baseline| after the same 8-token prompt and 3 appended tokens ${m.maxDiff.toExponential(1)}${m.sameLengths ? "" : " (lengths differ!)"}; ${adapterNote}`,
  });
}

/** One RL step at SmolLM2's layer shape, 4 layers, context 512: the adapter's attention vs "loop". */
export async function rlStepRow(
  rt: Runtime,
  shape: RlShape,
  reps: number,
  adapterNote: string,
): Promise<BenchRow> {
  const tRow = performance.now();
  const picked = trainKernel(rt, 64, 3);
  // the baseline: a plan variant with attention.wgsl, the tiles for every product (no small-rows
  // kernels: a decode block as 13 dispatches) and matmul.wgsl for the subgroup matmul
  const baseRt = new Runtime(rt.device, {
    plan: planWith(rt.plan, { attention: "loop", smallRows: 0, subgroupMatmul: false }),
  });
  const made = (s: RlShape) => ({
    ours: new GpuModel(rt, rlShapeConfig(s), undefined, 1),
    base: new GpuModel(baseRt, rlShapeConfig(s), undefined, 1),
  });
  let models = made({ ...shape, promptTokens: 24, context: 32 });
  const step = async (which: "ours" | "base", seed: number, at = shape) =>
    rlShapeStep(models[which], at, seed);
  // warm-up (pipeline compiles) of both paths at a short context on a model of the same layer
  // shape: a full-size warm-up step would add a third step to the row (minutes on a CPU adapter)
  const t0 = performance.now();
  const small = { ...shape, promptTokens: 24, context: 32 };
  for (const which of ["ours", "base"] as const) await step(which, 1, small);
  models.ours.dispose();
  models.base.dispose();
  const warmS = secs(t0);
  models = made(shape);
  const ours: Awaited<ReturnType<typeof step>>[] = [];
  const base: Awaited<ReturnType<typeof step>>[] = [];
  for (let r = 0; r < reps; r++) {
    // ours first: what compiles at the full shape is paid by ours
    ours.push(await step("ours", r + 2));
    base.push(await step("base", r + 2));
  }
  models.ours.dispose();
  models.base.dispose();
  const phases = (x: (typeof ours)[number]) =>
    `rollout ${x.rolloutS.toFixed(1)}, old log-probs ${x.oldLogprobsS.toFixed(1)}, update ${x.updateS.toFixed(1)} s`;
  return makeRow({
    id: `rl_step_smollm2_l${shape.layers}_${shape.context}`,
    group: "shapes",
    ours: ours.map((x) => x.totalS),
    baseline: base.map((x) => x.totalS),
    unit: "s",
    better: "lower",
    note: `one RL step's GPU work (bench/rl-shape.ts): SmolLM2-135M's layers x ${shape.layers}, LoRA r16, random weights, ${shape.prompts} prompts x ${shape.samples} samples, ${shape.promptTokens}-token prompts decoded to context ${shape.context}, old log-probs, one update; ours the ${picked} attention, the head over response rows, the fused decode kernels and ${subgroupMatmulSize(rt) ? "the subgroup matmul (matmul-subgroup.ts)" : "matmul.wgsl (the subgroup matmul does not run on this adapter)"} (${phases(ours[0])}), baseline a plan variant with attention.wgsl, the tiles for every product and matmul.wgsl (${phases(base[0])}); ${reps} interleaved repetitions (ours first) after both paths' warm-up at context 32 (${warmS.toFixed(0)} s); the row took ${secs(tRow).toFixed(0)} s; ${adapterNote}`,
  });
}

/**
 * A group's decode where rows finish at different lengths (row b stops after 4 + 6b tokens, up
 * to 48), at SmolLM2-135M's layer shape with `layers` of its layers, random weights, batch B,
 * windows of 16 tokens: ours computes only the rows still running (model/gpu-generation.ts);
 * ours only.
 */
export async function decodeStaggeredRow(
  rt: Runtime,
  B: number,
  layers: number,
  reps: number,
  adapterNote: string,
): Promise<BenchRow> {
  const c = { ...hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: 96 }), layers };
  const model = new GpuModel(rt, c, undefined, 1);
  const stopAt = (b: number) => 4 + ((6 * b) % 45);
  const run = async () => {
    const s = model.startGeneration({ temperature: 1, seed: 7 });
    await s.prefill(Array.from({ length: B }, (_, b) => [1 + b, 2, 3, 4]));
    const made = new Array(B).fill(0);
    const t0 = performance.now();
    const out = await decodeRun(s, new Array(B).fill(true), 48, (b) => ++made[b] >= stopAt(b), c.context);
    const s1 = secs(t0);
    s.finish();
    return { s: s1, tokens: JSON.stringify(out.tokens), n: out.tokens.reduce((a, t) => a + t.length, 0) };
  };
  const t0 = performance.now();
  await run(); // compiles
  const warmS = secs(t0);
  const ours: number[] = [];
  let tokens = 0;
  for (let r = 0; r < reps; r++) {
    const o = await run();
    ours.push(o.s);
    tokens = o.n;
  }
  model.dispose();
  const rowSteps = Array.from({ length: B }, (_, b) => stopAt(b)).reduce((a, n) => a + n, 0);
  return makeRow({
    id: `decode_smollm2_l${layers}_b${B}_staggered`,
    group: "shapes",
    ours,
    baseline: ours,
    unit: "s",
    better: "lower",
    note: `ours only (the engine keeps no every-row path to compare with); KV-cache decode of a group of ${B} rows that finish at different lengths (row b stops after 4 + (6b mod 45) tokens: ${tokens} tokens in all, at most 48 a row) at SmolLM2-135M's layer shape x ${layers} (d576, vocab 49152), random weights, 4-token prompts, windows of 16 tokens; ours each window computes only the rows still running (moved to the front of the batch${B > 8 ? "; padded to 9 rows where the batch runs the tiled matmul, whose tiles now fit the rows" : ""}): about ${rowSteps} row-steps where every row of every window would be ${B * 48}; ${reps} repetitions after a warm-up (${warmS.toFixed(0)} s); ${adapterNote}`,
  });
}
