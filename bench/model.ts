// The model benchmark, in ONE headless Chromium run on one adapter (bench/model-page.ts,
// bundled with Vite into a temp dir and served from http://localhost: WebGPU needs a secure
// context). Rows:
//  - train_step_vs_tfjs: train-step tokens/s of our GpuModel vs the same GPT in tfjs (webgpu
//    backend, its own autodiff, Adam), demo model d128 L3 NH4, context 128, batch 16;
//  - decode_kv_vs_recompute_256: KV-cache decode tokens/s vs a forward over the whole prefix
//    per new token, context 256, batch 16, same dims;
//  - decode_batch_<B>: KV-cache decode tokens/s at batch B vs batch 1 (how decoding scales);
//  - train_step_frac_of_peak: our train step's GFLOP/s vs a long loop of our matmul (1024^3);
//  - smollm2_train_step, smollm2_decode_kv, head_logits_peak_bytes_151936,
//    qwen05b_lora16_train_step: the large-model rows (bench/bigmodel.ts), in Node through Dawn,
//    the same sizes in --quick and full runs;
//  - memory_plan_qwen05b_lora16: the memory plan (counted) at Qwen2.5-0.5B's shape.
// --quick uses smaller sizes on SwiftShader (named in each row's note); the full run the real ones.
// Standalone: npx tsx --import ./cli/raw-loader.mjs bench/model.ts [--full] [--out rows.json]
import { rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../e2e/chromium";
import { type MemoryPlan, memoryPlan } from "../model/memory-plan";
import { qwen05bShape, runBigModelBench } from "./bigmodel";
import type { ModelPageResult, ModelPageSpec } from "./model-page";
import { serveBenchPage } from "./page";
import { type BenchAdapter, type BenchRow, makeRow, median } from "./report";

/** Sizes per mode. The full run is the spec; quick shrinks what SwiftShader makes slow. */
export function modelSpec(quick: boolean): ModelPageSpec {
  const dims = { layers: 3, dModel: 128, heads: 4 };
  if (!quick) {
    return {
      train: { ...dims, context: 128, batch: 16, steps: 3, warmup: 1 },
      decode: {
        ...dims,
        context: 256,
        batch: 16,
        reps: 2,
        recomputeAt: [64, 160, 255],
        batches: [1, 4, 16, 64],
        batchTokens: 16,
      },
      peak: { n: 512, inner: 4, reps: 3 },
    };
  }
  // SwiftShader on 2 busy cores runs about 0.05 GFLOP/s and ~1 s per decode step (dispatch
  // bound), so --quick keeps the demo's width and depth but shrinks tokens and context.
  return {
    train: { ...dims, context: 32, batch: 2, steps: 2, warmup: 1 },
    decode: {
      ...dims,
      context: 32,
      batch: 4,
      reps: 1,
      recomputeAt: [16, 31],
      batches: [1, 4],
      batchTokens: 4,
    },
    peak: { n: 256, inner: 4, reps: 2 },
  };
}

export async function runPage(spec: ModelPageSpec): Promise<ModelPageResult> {
  const server = await serveBenchPage("model-page.ts", "model");
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
      else if (m.type() === "log") console.error(`[model page] ${m.text()}`);
    });
    await page.goto(server.url);
    await page
      .waitForFunction(() => "modelBench" in globalThis, null, { timeout: 60_000 })
      .catch(() => {
        throw new Error(`the model bench page did not load: ${errors.join("; ") || "no error reported"}`);
      });
    page.setDefaultTimeout(0);
    return (await page.evaluate(
      (s) =>
        (globalThis as unknown as { modelBench: (s: ModelPageSpec) => Promise<ModelPageResult> }).modelBench(
          s,
        ),
      spec,
    )) as ModelPageResult;
  } finally {
    await browser.close();
    await server.close();
    rmSync(server.dir, { recursive: true, force: true });
  }
}

export function modelRows(spec: ModelPageSpec, r: ModelPageResult, quick: boolean): BenchRow[] {
  const t = spec.train;
  const d = spec.decode;
  const sw = r.adapter.isFallback ? "; software adapter" : "";
  const trainSize = `d${t.dModel} L${t.layers} NH${t.heads}, context ${t.context}, batch ${t.batch}`;
  const demoTrain = t.context === 128 && t.batch === 16 && t.dModel === 128 && t.layers === 3;
  const demoDecode = d.context === 256 && d.batch === 16;
  const rows: BenchRow[] = [
    makeRow({
      id: "train_step_vs_tfjs",
      group: "model",
      ours: r.train.ours,
      baseline: r.train.tfjs,
      unit: "tokens/s",
      better: "higher",
      note:
        `${trainSize}${demoTrain ? "" : quick ? " (--quick size; the full run uses context 128, batch 16)" : ""}; ` +
        `baseline: the same GPT in tfjs-backend-webgpu (autodiff, Adam); loss after the steps ours ${r.train.lossOurs.toFixed(3)} tfjs ${r.train.lossTfjs.toFixed(3)}${sw}`,
    }),
    makeRow({
      id: "decode_kv_vs_recompute_256",
      group: "model",
      ours: r.decode.kv,
      baseline: r.decode.recompute,
      unit: "tokens/s",
      better: "higher",
      note:
        `d${d.dModel} L${d.layers} NH${d.heads}, context ${d.context}, batch ${d.batch}${demoDecode ? "" : quick ? " (--quick size; the full run uses context 256, batch 16)" : ""}; ` +
        `positions 1..${d.context - 1} from a 1-token prompt; recompute = forwardScore over the prefix per token, ` +
        `timed at prefix ${spec.decode.recomputeAt.join("/")} (${r.decode.recomputeMs.map((x) => x.toFixed(0)).join("/")} ms) and interpolated${sw}`,
    }),
  ];
  const b1 = r.batches.find((b) => b.batch === 1);
  for (const b of r.batches) {
    if (!b1 || b.batch === 1) continue;
    rows.push(
      makeRow({
        id: `decode_batch_${b.batch}`,
        group: "model",
        ours: b.tokensPerS,
        baseline: b1.tokensPerS,
        unit: "tokens/s",
        better: "higher",
        note: `KV-cache decode of ${Math.min(d.batchTokens, d.context - 1)} tokens at batch ${b.batch} vs batch 1 (${median(b1.tokensPerS).toFixed(1)} tokens/s), context ${d.context}, d${d.dModel} L${d.layers}${sw}`,
      }),
    );
  }
  const gflops = r.train.ours.map((tps) => (tps / r.train.tokens) * (r.train.flopsPerStep / 1e9));
  rows.push(
    makeRow({
      id: "train_step_frac_of_peak",
      group: "model",
      ours: gflops,
      baseline: r.peak,
      unit: "GFLOP/s",
      better: "higher",
      note: `our train step (${trainSize}, ${(r.train.flopsPerStep / 1e9).toFixed(2)} GFLOP/step counted) vs a measured peak: a long loop of our matmul at ${spec.peak.n}^3 (${spec.peak.inner} per submit); ratio = fraction of peak${sw}`,
    }),
  );
  rows.push(...memoryPlanRows());
  return rows;
}

/** The memory plan (model/memory-plan.ts, counted, not measured) at Qwen2.5-0.5B's shape, minibatch 8 x 512. */
export function memoryPlanRows(): BenchRow[] {
  const shape = { trainRows: 8, seqLen: 512, decodeRows: 8, reference: true };
  const big = { maxBufferSize: 2 ** 31, maxStorageBufferBindingSize: 2 ** 31 };
  const lora = memoryPlan(
    qwen05bShape(16, 512, "f16"),
    { ...shape, microBatchRows: 1, recompute: true },
    big,
  );
  const full = memoryPlan(qwen05bShape(0), shape, big);
  const gb = (b: number) => b / 1e9;
  const terms = (p: MemoryPlan) => p.terms.map((t) => `${t.key} ${gb(t.bytes).toFixed(3)}`).join(", ");
  return [
    makeRow({
      id: "memory_plan_qwen05b_lora16",
      group: "model",
      ours: [gb(lora.total)],
      baseline: [gb(full.total)],
      unit: "GB",
      better: "lower",
      note:
        `planned bytes at Qwen2.5-0.5B's shape, minibatch 8x512, 8 decoded at once, KL reference: LoRA r16 on all linear layers, f16 base, micro-batch 1, per-layer recomputation (${terms(lora)}) ` +
        `vs full fine-tune f32, whole minibatch, no recomputation (${terms(full)}); goal: LoRA under 4 GB`,
    }),
  ];
}

export async function runModelBench(opts: {
  quick: boolean;
}): Promise<{ rows: BenchRow[]; adapter: BenchAdapter }> {
  const spec = modelSpec(opts.quick);
  const r = await runPage(spec);
  const { vendor, architecture, description } = r.adapter;
  const big = await runBigModelBench();
  return {
    rows: [...modelRows(spec, r, opts.quick), ...big.rows],
    adapter: { vendor, architecture, description },
  };
}

const argv = process.argv;
if (argv[1] && fileURLToPath(import.meta.url) === argv[1]) {
  const t0 = Date.now();
  const { rows, adapter } = await runModelBench({ quick: !argv.includes("--full") });
  console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
  for (const r of rows)
    console.log(
      `${r.id.padEnd(28)} ours ${r.ours.toFixed(2)} ${r.unit}  baseline ${r.baseline.toFixed(2)}  ratio ${r.ratio.toFixed(2)}x  spread ${(r.spread * 100).toFixed(0)}%  (${r.note})`,
    );
  const took = (Date.now() - t0) / 1000;
  console.log(`took ${took.toFixed(0)} s`);
  const out = argv.indexOf("--out");
  if (out > 0 && argv[out + 1]) {
    const report = { date: new Date().toISOString(), adapter, rows, seconds: Math.round(took) };
    writeFileSync(argv[out + 1], `${JSON.stringify(report, null, 2)}\n`);
  }
}
