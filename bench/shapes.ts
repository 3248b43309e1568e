// The "shapes" bench group: kernels at pretrained models' shapes, in Node through Dawn
// (lavapipe here), new against today's kernels side by side in one process, repetitions
// interleaved, medians:
//  - attention_fwd_bwd_smollm2_<T>: causal attention forward + backward at SmolLM2-135M's head
//    shape (9 query heads of 64 over 3 KV heads), batch 4, context T (512, 2048), the adapter's
//    pick (the kernel plan's attention: blocked on lavapipe) vs attention.wgsl's one thread per
//    query or key ("loop"); the note counts the global K/V floats each reads per query;
//  - rl_step_smollm2_l4_512: one RL step's GPU work at SmolLM2's layer shape with 4 layers
//    (bench/rl-shape.ts: LoRA r16, 2 prompts x 2 samples, context 512), the new kernels (the
//    adapter's attention, the head over response rows) vs a plan variant with attention.wgsl and
//    the tiles for every product (bench/shapes-rows.ts);
//    --quick: rl_step_smollm2_l4_128 (1 prompt x 2 samples, context 128) and no context 2048.
//  - decode_smollm2_b1: KV-cache decode tokens/s at batch 1 at SmolLM2-135M's whole shape, the
//    fused decode kernels (kernels/decode.ts) vs a plan variant without them (the tiles);
//  - decode_smollm2_l4_b8_staggered, _b16_staggered: a group's decode whose rows finish at
//    different lengths, windows that compute only the running rows (ours only: no every-row path
//    is kept to compare with);
//  - decode_smollm2_l2_b1_swiftshader, attention_fwd_bwd_smollm2_128_b1_swiftshader: the same
//    measurements in headless Chromium on SwiftShader (bench/shapes-page.ts) at sizes it finishes
//    (2 layers; batch 1, context 128), where the swiftshader plan keeps the loop attention (ratio ~1);
// SHAPES_ONLY=decode,page npm run bench -- shapes runs those kinds and keeps the other shapes rows.
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/shapes.ts [--quick] [--only decode,staggered,attention,attention2048,rl,page]
import { fileURLToPath } from "node:url";
import { describeTileChoice, tuneMatmulTile } from "../kernels/autotune";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { Runtime } from "../kernels/runtime";
import { inBenchPage } from "./page";
import { type BenchAdapter, type BenchRow, readLatest } from "./report";
import { RL_SHAPE } from "./rl-shape";
import type { ShapesPageResult, ShapesPageSpec } from "./shapes-page";
import {
  attentionRow,
  attentionRowOf,
  decodeRow,
  decodeRowOf,
  decodeStaggeredRow,
  rlStepRow,
} from "./shapes-rows";

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
  /** Row kinds to run (decode, staggered, attention, attention2048, rl, page); all when absent. */
  only?: string[];
}): Promise<{ rows: BenchRow[]; adapter: BenchAdapter }> {
  const gpu = await createGpu(await nodeGpu());
  const { device, adapter } = gpu;
  // the matmul tile the lab would use here (GpuModel.create and the device check tune it too):
  // both sides of every row run with it
  const tile = await tuneMatmulTile(device);
  const adapterNote = `Node/Dawn adapter: ${adapter.description || adapter.vendor}${adapter.isFallback ? " (software)" : ""}, matmul tile ${describeTileChoice(tile)}`;
  const rt = new Runtime(device);
  const rows: BenchRow[] = [];
  const only = opts.only ?? process.env.SHAPES_ONLY?.split(",");
  const runs = (kind: string) => !only || only.includes(kind);
  try {
    // --quick (what a loaded 2-core machine finishes): context 512 only, and the RL step at
    // context 128 with one prompt x 2 samples
    if (runs("decode")) rows.push(await decodeRow(rt, opts.quick ? 4 : 8, 3, adapterNote));
    if (runs("staggered")) {
      rows.push(await decodeStaggeredRow(rt, 8, opts.quick ? 2 : 4, opts.quick ? 1 : 2, adapterNote));
      if (!opts.quick) rows.push(await decodeStaggeredRow(rt, 16, 4, 2, adapterNote));
    }
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
          : id.endsWith("_staggered")
            ? "staggered"
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
