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
//  - decode_smollm2_l2_b1_swiftshader, attention_fwd_bwd_smollm2_128_b1_swiftshader: the same
//    measurements in headless Chromium on SwiftShader (bench/shapes-page.ts) at sizes it finishes
//    (2 layers; batch 1, context 128), where "auto" keeps the unrolled loop attention (ratio ~1);
// SHAPES_ONLY=decode,page npm run bench -- shapes runs those kinds and keeps the other shapes rows.
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/shapes.ts [--quick] [--only decode,attention,attention2048,rl,page]
import { fileURLToPath } from "node:url";
import { kvReadsPerQuery, trainKernel } from "../kernels/attention";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { type AttentionKernel, Runtime } from "../kernels/runtime";
import { GpuModel } from "../model/gpu";
import { inBenchPage } from "./page";
import { type BenchAdapter, type BenchRow, makeRow, readLatest } from "./report";
import { RL_SHAPE, type RlShape, rlShapeConfig, rlShapeStep } from "./rl-shape";
import { type AttentionMeasure, type DecodeMeasure, measureAttention, measureDecode } from "./shapes-measure";
import type { ShapesPageResult, ShapesPageSpec } from "./shapes-page";

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
    note: `causal attention forward + backward, 9 heads of 64 over 3 KV heads, batch ${B}, context ${T}, no T x T buffer; ours the ${m.kernel} kernel (the adapter's pick), baseline attention.wgsl (one thread per query or key); global K/V floats read per query in forward (and again in backward_query): ${readsOurs.toFixed(0)} vs ${readsLoop.toFixed(0)} (${(readsLoop / readsOurs).toFixed(1)}x fewer; the tiled GPU kernel at 16 KiB: ${readsTiled.toFixed(0)}, ${(readsLoop / readsTiled).toFixed(1)}x); max |ours - baseline| over out and dqkv ${m.maxDiff.toExponential(1)}; ${reps} interleaved repetitions after a warm-up; ${adapterNote}`,
  });
}

/**
 * KV-cache decode at batch 1 at SmolLM2-135M's shape (random weights): the fused decode kernels
 * (kernels/decode.ts) vs the path before them (Runtime.legacyDecode), `tokens` decoded tokens a
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
    note: `KV-cache decode at batch 1, SmolLM2-135M's shape (d576, ${layers === 30 ? "all 30 layers" : `${layers} of its 30 layers`}, 9 heads of 64 over 3 KV heads, MLP 1536, vocab 49152), random weights, after a 4-token prompt; ours the fused decode kernels (linear-rows.wgsl in vec4s with RMSNorm, residual and SwiGLU folded in, rope-append.wgsl: ${m.dispatches.ours.toFixed(0)} dispatches a token), baseline the path before them (Runtime.legacyDecode: matvec.wgsl, ${m.dispatches.base.toFixed(0)} dispatches a token); ${tokens} tokens a repetition, ${reps} interleaved repetitions after one warm-up token each (${m.warmS.toFixed(0)} s; init ${m.initS.toFixed(0)} s); max |next-token logits ours - baseline| after the same sampled tokens ${m.maxDiff.toExponential(1)}${m.sameLengths ? "" : " (lengths differ!)"}; ${adapterNote}`,
  });
}

/** One RL step at SmolLM2's layer shape, 4 layers, context 512: the adapter's attention vs "loop". */
export async function rlStepRow(
  rt: Runtime,
  shape: RlShape,
  reps: number,
  adapterNote: string,
): Promise<BenchRow> {
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

/** The SwiftShader rows' sizes: SmolLM2's layer shape with 2 layers, attention at batch 1, context 128. */
export const PAGE_SPEC: ShapesPageSpec = {
  decode: { layers: 2, tokens: 3, reps: 3 },
  attention: { B: 1, T: 128, reps: 5 },
};

/** The decode and attention rows measured in headless Chromium (SwiftShader), rows suffixed _swiftshader. */
export async function pageRows(spec: ShapesPageSpec = PAGE_SPEC): Promise<BenchRow[]> {
  const r = await inBenchPage("shapes-page.ts", "shapes", "shapesBench", (page) => {
    page.setDefaultTimeout(0);
    return page.evaluate(
      (x) =>
        (
          globalThis as unknown as { shapesBench: (s: ShapesPageSpec) => Promise<ShapesPageResult> }
        ).shapesBench(x),
      spec,
    ) as Promise<ShapesPageResult>;
  });
  const note = `Chromium page adapter: ${r.adapter.description || r.adapter.vendor}${r.adapter.isFallback ? " (software)" : ""}`;
  const { decode: d, attention: a } = spec;
  return [
    decodeRowOf(r.decode, d.layers, d.tokens, d.reps, note, "_swiftshader"),
    attentionRowOf(r.attention, a.B, a.T, a.reps, r.storageBytes, note, "_swiftshader"),
  ];
}

export async function runShapesBench(opts: {
  quick: boolean;
  /** Row kinds to run (decode, attention, attention2048, rl, page); all when absent. */
  only?: string[];
}): Promise<{ rows: BenchRow[]; adapter: BenchAdapter }> {
  const gpu = await createGpu(await nodeGpu());
  const { device, adapter } = gpu;
  const adapterNote = `Node/Dawn adapter: ${adapter.description || adapter.vendor}${adapter.isFallback ? " (software)" : ""}`;
  const rt = new Runtime(device);
  const rows: BenchRow[] = [];
  const only = opts.only ?? process.env.SHAPES_ONLY?.split(",");
  const runs = (kind: string) => !only || only.includes(kind);
  try {
    // --quick (what a loaded 2-core machine finishes): context 512 only, and the RL step at
    // context 128 with one prompt x 2 samples
    if (runs("decode")) rows.push(await decodeRow(rt, opts.quick ? 4 : 8, 3, adapterNote));
    if (runs("attention")) rows.push(await attentionRow(rt, 512, opts.quick ? 2 : 3, adapterNote));
    if (runs("attention2048") && (!opts.quick || only))
      rows.push(await attentionRow(rt, 2048, 1, adapterNote));
    const quickShape = { ...RL_SHAPE, prompts: 1, context: 128, promptTokens: 96 };
    if (runs("rl")) rows.push(await rlStepRow(rt, opts.quick ? quickShape : RL_SHAPE, 1, adapterNote));
    if (runs("page")) rows.push(...(await pageRows()));
    // a partial run keeps the previous shapes rows of the kinds it did not run
    if (only) {
      const kind = (id: string) =>
        id.endsWith("_swiftshader")
          ? "page"
          : id.startsWith("decode_")
            ? "decode"
            : id.endsWith("_2048")
              ? "attention2048"
              : id.split("_")[0];
      const kept = (readLatest()?.rows ?? []).filter(
        (r) => r.group === "shapes" && !runs(kind(r.id)) && !rows.some((x) => x.id === r.id),
      );
      rows.unshift(...kept);
    }
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
