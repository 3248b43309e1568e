// The "shapes" bench group (issue 42): kernels at pretrained models' shapes, in Node through Dawn
// (lavapipe here), new against today's kernels side by side in one process, repetitions
// interleaved, medians:
//  - attention_fwd_bwd_smollm2_<T>: causal attention forward + backward at SmolLM2-135M's head
//    shape (9 query heads of 64 over 3 KV heads), batch 4, context T (512, 2048), the adapter's
//    pick (Runtime.attentionKernel "auto": blocked on lavapipe) vs attention.wgsl's one thread per
//    query or key ("loop"); the note counts the global K/V floats each reads per query;
//  - rl_step_smollm2_l4_512: one RL step's GPU work at SmolLM2's layer shape with 4 layers
//    (bench/rl-shape.ts: LoRA r16, 2 prompts x 2 samples, context 512), the new kernels (the
//    adapter's attention, the head over response rows) vs the old (loop, every row);
//    --quick: rl_step_smollm2_l4_128 (1 prompt x 2 samples, context 128) and no context 2048.
//  - decode_smollm2_b1: KV-cache decode tokens/s at batch 1 at SmolLM2-135M's whole shape, the
//    fused decode kernels (kernels/decode.ts) vs the path before them (Runtime.legacyDecode);
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/shapes.ts [--quick] [--only decode,attention,rl]
import { fileURLToPath } from "node:url";
import { attentionBackward, attentionForward, kvReadsPerQuery, trainKernel } from "../kernels/attention";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { type AttentionKernel, Runtime } from "../kernels/runtime";
import { randn } from "../kernels/testing";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";
import { type BenchAdapter, type BenchRow, makeRow } from "./report";
import { RL_SHAPE, type RlShape, rlShapeConfig, rlShapeStep } from "./rl-shape";

const secs = (t0: number) => (performance.now() - t0) / 1000;

/** Attention forward + backward at SmolLM2's head shape, batch 4, context T: kernel vs "loop". */
export async function attentionRow(
  rt: Runtime,
  T: number,
  reps: number,
  adapterNote: string,
): Promise<BenchRow> {
  const [B, NH, KVH, hs] = [4, 9, 3, 64];
  const C = NH * hs;
  const row = C + 2 * KVH * hs;
  const qkv = rt.tensor(randn(B * T * row, 1));
  const dout = rt.tensor(randn(B * T * C, 2));
  const out = rt.tensor(B * T * C);
  const lse = rt.tensor(B * NH * T);
  const dqkv = rt.tensor(B * T * row);
  const scratch = rt.tensor(B * NH * T);
  const picked = trainKernel(rt, hs, NH / KVH);
  const run = async (kernel: Exclude<AttentionKernel, "auto">) => {
    rt.attentionKernel = kernel;
    const t0 = performance.now();
    const enc = rt.device.createCommandEncoder();
    attentionForward(rt, enc, out, lse, qkv, null, B, T, C, NH, KVH);
    attentionBackward(rt, enc, dqkv, scratch, dout, qkv, out, lse, null, B, T, C, NH, KVH);
    rt.submit(enc);
    await rt.device.queue.onSubmittedWorkDone();
    return secs(t0);
  };
  const outputs = async () => ({ out: await rt.read(out), dqkv: await rt.read(dqkv) });
  // warm-up (pipeline compiles) and a parity check of the two kernels' outputs
  await run("loop");
  const a = await outputs();
  rt.device.queue.writeBuffer(dqkv.buffer, dqkv.offset, new Float32Array(B * T * row));
  await run(picked);
  const b = await outputs();
  let maxDiff = 0;
  for (let i = 0; i < a.out.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a.out[i] - b.out[i]));
  for (let i = 0; i < a.dqkv.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a.dqkv[i] - b.dqkv[i]));
  const ours: number[] = [];
  const base: number[] = [];
  for (let r = 0; r < reps; r++) {
    base.push(await run("loop"));
    ours.push(await run(picked));
  }
  rt.attentionKernel = "auto";
  for (const v of [qkv, dout, out, lse, dqkv, scratch]) v.buffer.destroy();
  const readsLoop = kvReadsPerQuery("loop", T, hs, NH / KVH);
  const readsOurs = kvReadsPerQuery(picked, T, hs, NH / KVH, rt.maxWorkgroupStorageBytes);
  const readsTiled = kvReadsPerQuery("tiled", T, hs, NH / KVH, 16384);
  return makeRow({
    id: `attention_fwd_bwd_smollm2_${T}`,
    group: "shapes",
    ours,
    baseline: base,
    unit: "s",
    better: "lower",
    note: `causal attention forward + backward, 9 heads of 64 over 3 KV heads, batch 4, context ${T}, no T x T buffer; ours the ${picked} kernel (the adapter's pick), baseline attention.wgsl (one thread per query or key); global K/V floats read per query in forward (and again in backward_query): ${readsOurs.toFixed(0)} vs ${readsLoop.toFixed(0)} (${(readsLoop / readsOurs).toFixed(1)}x fewer; the tiled GPU kernel at 16 KiB: ${readsTiled.toFixed(0)}, ${(readsLoop / readsTiled).toFixed(1)}x); max |ours - baseline| over out and dqkv ${maxDiff.toExponential(1)}; ${reps} interleaved repetitions after a warm-up; ${adapterNote}`,
  });
}

/**
 * KV-cache decode at batch 1 at SmolLM2-135M's whole shape (30 layers, random weights): the fused
 * decode kernels (kernels/decode.ts) vs the path before them (Runtime.legacyDecode), `tokens`
 * decoded tokens a repetition, repetitions interleaved on one model and one generation session
 * each, tokens/s.
 */
export async function decodeRow(
  rt: Runtime,
  tokens: number,
  reps: number,
  adapterNote: string,
): Promise<BenchRow> {
  const c = hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: 256 });
  let t0 = performance.now();
  const model = new GpuModel(rt, c, undefined, 1);
  const initS = secs(t0);
  const session = async (legacy: boolean) => {
    rt.legacyDecode = legacy;
    const gen = model.startGeneration({ temperature: 1, seed: 3 });
    await gen.prefill([[1, 2, 3, 4]]);
    await gen.decode([true]); // pipeline compiles
    rt.legacyDecode = false;
    return gen;
  };
  t0 = performance.now();
  const gens = { fused: await session(false), legacy: await session(true) };
  const warmS = secs(t0);
  const rate = async (legacy: boolean) => {
    rt.legacyDecode = legacy;
    const gen = legacy ? gens.legacy : gens.fused;
    const t = performance.now();
    for (let i = 0; i < tokens; i++) await gen.decode([true]);
    rt.legacyDecode = false;
    return tokens / secs(t);
  };
  const ours: number[] = [];
  const base: number[] = [];
  for (let r = 0; r < reps; r++) {
    base.push(await rate(true));
    ours.push(await rate(false));
  }
  // the two paths' next-token logits after the same tokens: equal within rounding
  const [a, b] = [await gens.fused.nextLogits(0), await gens.legacy.nextLogits(0)];
  const same =
    JSON.stringify(gens.fused.lengths()) === JSON.stringify(gens.legacy.lengths())
      ? ""
      : " (lengths differ!)";
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
  gens.fused.finish();
  gens.legacy.finish();
  model.dispose();
  return makeRow({
    id: "decode_smollm2_b1",
    group: "shapes",
    ours,
    baseline: base,
    unit: "tokens/s",
    better: "higher",
    note: `KV-cache decode at batch 1, SmolLM2-135M's shape (d576 L30, 9 heads of 64 over 3 KV heads, MLP 1536, vocab 49152), random weights, after a 4-token prompt; ours the fused decode kernels (linear-rows.wgsl in vec4s with RMSNorm, residual and SwiGLU folded in, rope-append.wgsl: 6 dispatches a block), baseline the path before them (Runtime.legacyDecode: matvec.wgsl, 13 dispatches a block); ${tokens} tokens a repetition, ${reps} interleaved repetitions after one warm-up token each (${warmS.toFixed(0)} s; init ${initS.toFixed(0)} s); max |logits ours - baseline| after the same sampled tokens ${maxDiff.toExponential(1)}${same}; ${adapterNote}`,
  });
}

/** One RL step at SmolLM2's layer shape, 4 layers, context 512: the adapter's attention vs "loop". */
async function rlStepRow(rt: Runtime, shape: RlShape, reps: number, adapterNote: string): Promise<BenchRow> {
  const model = new GpuModel(rt, rlShapeConfig(shape), undefined, 1);
  const picked = trainKernel(rt, 64, 3);
  const step = async (kernel: Exclude<AttentionKernel, "auto">, seed: number) => {
    rt.attentionKernel = kernel;
    model.headAllRows = kernel === "loop";
    rt.legacyDecode = kernel === "loop";
    const t = await rlShapeStep(model, shape, seed);
    rt.attentionKernel = "auto";
    model.headAllRows = false;
    rt.legacyDecode = false;
    return t;
  };
  const t0 = performance.now();
  await step(picked, 1); // warm-up: pipeline compiles
  const warmS = secs(t0);
  const ours: Awaited<ReturnType<typeof step>>[] = [];
  const base: Awaited<ReturnType<typeof step>>[] = [];
  for (let r = 0; r < reps; r++) {
    base.push(await step("loop", r + 2));
    ours.push(await step(picked, r + 2));
  }
  model.dispose();
  const phases = (x: (typeof ours)[number]) =>
    `rollout ${x.rolloutS.toFixed(1)}, old log-probs ${x.oldLogprobsS.toFixed(1)}, update ${x.updateS.toFixed(1)} s`;
  return makeRow({
    id: `rl_step_smollm2_l${shape.layers}_${shape.context}`,
    group: "shapes",
    ours: ours.map((x) => x.totalS),
    baseline: base.map((x) => x.totalS),
    unit: "s",
    better: "lower",
    note: `one RL step's GPU work (bench/rl-shape.ts): SmolLM2-135M's layers x ${shape.layers}, LoRA r16, random weights, ${shape.prompts} prompts x ${shape.samples} samples, ${shape.promptTokens}-token prompts decoded to context ${shape.context}, old log-probs, one update; ours the ${picked} attention, the head over response rows and the fused decode kernels (${phases(ours[0])}), baseline attention.wgsl, the head over every row and the decode before the fused kernels (GpuModel.headAllRows, Runtime.legacyDecode; ${phases(base[0])}); ${reps} interleaved repetitions after a warm-up step (${warmS.toFixed(0)} s); ${adapterNote}`,
  });
}

export async function runShapesBench(opts: {
  quick: boolean;
  /** Row kinds to run (decode, attention, rl); all when absent. */
  only?: string[];
}): Promise<{ rows: BenchRow[]; adapter: BenchAdapter }> {
  const gpu = await createGpu(await nodeGpu());
  const { device, adapter } = gpu;
  const adapterNote = `Node/Dawn adapter: ${adapter.description || adapter.vendor}${adapter.isFallback ? " (software)" : ""}`;
  const rt = new Runtime(device);
  const rows: BenchRow[] = [];
  const runs = (kind: string) => !opts.only || opts.only.includes(kind);
  try {
    // --quick (what a loaded 2-core machine finishes): context 512 only, and the RL step at
    // context 128 with one prompt x 2 samples
    if (runs("decode")) rows.push(await decodeRow(rt, opts.quick ? 4 : 8, 3, adapterNote));
    if (runs("attention")) {
      rows.push(await attentionRow(rt, 512, opts.quick ? 2 : 3, adapterNote));
      if (!opts.quick) rows.push(await attentionRow(rt, 2048, 2, adapterNote));
    }
    const quickShape = { ...RL_SHAPE, prompts: 1, context: 128, promptTokens: 96 };
    if (runs("rl")) rows.push(await rlStepRow(rt, opts.quick ? quickShape : RL_SHAPE, 1, adapterNote));
  } finally {
    device.destroy();
  }
  return {
    rows,
    adapter: { vendor: adapter.vendor, architecture: adapter.architecture, description: adapter.description },
  };
}

const argv1 = process.argv[1];
if (argv1 && fileURLToPath(import.meta.url) === argv1) {
  const i = process.argv.indexOf("--only");
  const only = i > 0 ? process.argv[i + 1].split(",") : undefined;
  const { rows } = await runShapesBench({ quick: process.argv.includes("--quick"), only });
  for (const r of rows)
    console.log(`${r.id}: ours ${r.ours} baseline ${r.baseline} ratio ${r.ratio.toFixed(2)}; ${r.note}`);
}
