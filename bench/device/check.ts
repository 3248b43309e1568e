// The device check's engine side, bundled into one file with everything it imports (see
// bench/device/build.mjs; run by bench/device-check.sh on a machine with a GPU, where there is
// no node_modules): it prints what WebGPU finds (adapter info, features, limits; plainly when
// the only adapter is a software one; a clear exit when there is none), then measures quick-sized
// rows headless through Dawn: our tiled matmul (GFLOP/s), the model's train step (tokens/s),
// k-token vs one-token decode, the pretrained-shape rows (attention fwd+bwd at SmolLM2's head shape, the
// fused decode at batch 1 and, on GPUs, the RL step at its layer shape and a group's decode whose
// rows finish at different lengths: bench/shapes-rows.ts), and
// the quick-demo RL step against the same plan decoding one token per submit; and
// merges PyTorch eager's figures (bench/device/torch_baseline.py) into bench/results/gpu-<adapter>.json.
//   node check.mjs --out ours.json [--rl-steps 3]
//   node check.mjs --merge ours.json torch.json --results <dir>
// Also runs from the repo: npx tsx --import ./cli/raw-loader.mjs bench/device/check.ts --out /tmp/ours.json
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseRecipeFile } from "../../config/recipe-file";
import { describeTileChoice, tuneMatmulTile } from "../../kernels/autotune";
import { canUseSubgroups, createGpu, type Gpu } from "../../kernels/device";
import { matmul } from "../../kernels/matmul";
import { nodeGpu } from "../../kernels/node-gpu";
import { Runtime } from "../../kernels/runtime";
import { modelConfig } from "../../model/config";
import { decodeRun } from "../../model/generate";
import { GpuModel } from "../../model/gpu";
import { createTrainer } from "../../rl/run/build-trainer";
import { SandboxPool } from "../../sandbox/pool";
import { nodeWorkerFactory } from "../../sandbox/pool-node";
import { countedStepRows } from "../counts";
import { variantModel } from "../plan-variant";
import { type BenchRow, makeRow, median } from "../report";
import { RL_SHAPE } from "../rl-shape";
import { attentionRow, decodeRow, decodeStaggeredRow, rlStepRow } from "../shapes-rows";

const HERE = dirname(fileURLToPath(import.meta.url));
/** public/ next to the bundle, or the repo's when run from source. */
const PUBLIC =
  [join(HERE, "public"), join(HERE, "../../public")].find((p) => existsSync(p)) ?? join(HERE, "public");

/** What check.mjs --out writes: the adapter, and our rows with the sizes torch_baseline.py repeats. */
export interface OursReport {
  date: string;
  adapter: Gpu["adapter"] & { software: boolean; name: string };
  /** The autotuned matmul tile (kernels/autotune.ts) and each candidate's median ms. */
  matmulTile: { chosen: string; medians: Record<string, number> };
  adapterLimits: Record<string, number>;
  spec: {
    matmul: number[];
    train: {
      layers: number;
      dModel: number;
      heads: number;
      context: number;
      batch: number;
      vocab: number;
      steps: number;
    };
  };
  measured: { matmulGflops: Record<string, number>; trainTokensPerS: number[] };
  rows: BenchRow[];
  seconds: number;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function describeAdapter(gpu: GPU): Promise<GPUAdapter> {
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) {
    console.error(
      "NO WEBGPU ADAPTER: Dawn found no Vulkan device. Check the ICDs listed above (VK_ICD_FILENAMES), " +
        "that the GPU's Vulkan driver is installed, and that /dev/dri or /dev/nvidia* is visible here.",
    );
    process.exit(3);
  }
  const info = adapter.info;
  console.log("== WebGPU adapter (Dawn)");
  console.log(
    JSON.stringify({
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      isFallbackAdapter: (info as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false,
      subgroupMinSize: (info as { subgroupMinSize?: number }).subgroupMinSize,
      subgroupMaxSize: (info as { subgroupMaxSize?: number }).subgroupMaxSize,
    }),
  );
  console.log(`features: ${[...adapter.features].sort().join(" ")}`);
  const limits: Record<string, number> = {};
  for (const k in adapter.limits) limits[k] = (adapter.limits as unknown as Record<string, number>)[k];
  console.log(`limits: ${JSON.stringify(limits)}`);
  return adapter;
}

/** GFLOP/s of our matmul at n^3 (median of reps, each `inner` products in one submit). */
async function matmulGflops(rt: Runtime, n: number, inner: number, reps: number): Promise<number> {
  const a = rt.tensor(Float32Array.from({ length: n * n }, (_, i) => ((i * 7) % 13) / 13 - 0.5));
  const b = rt.tensor(Float32Array.from({ length: n * n }, (_, i) => ((i * 5) % 11) / 11 - 0.5));
  const out = rt.tensor(n * n);
  const run = async () => {
    const enc = rt.device.createCommandEncoder();
    for (let i = 0; i < inner; i++) matmul(rt, enc, out, a, b, null, { M: n, N: n, K: n });
    rt.submit(enc);
    await rt.device.queue.onSubmittedWorkDone();
  };
  await run(); // compile
  const xs: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    await run();
    xs.push((2 * n * n * n * inner) / ((performance.now() - t0) / 1000) / 1e9);
  }
  for (const v of [a, b, out]) v.buffer.destroy();
  return median(xs);
}

/** Train-step tokens/s of GpuModel: zeroGrad, forwardScore, backward, AdamW, as the minibatch loop does. */
async function trainTokensPerS(device: GPUDevice, spec: OursReport["spec"]["train"]): Promise<number[]> {
  const config = modelConfig({
    layers: spec.layers,
    dModel: spec.dModel,
    heads: spec.heads,
    context: spec.context,
  });
  const model = await GpuModel.create(device, config, undefined, 1);
  const { batch: B, context: T } = spec;
  const tokens = Int32Array.from({ length: B * T }, (_, i) => (i * 31 + 7) % config.vocab);
  const targets = Int32Array.from({ length: B * T }, (_, i) => (i * 17 + 3) % config.vocab);
  const dlogp = new Float32Array(B * T).fill(-1 / (B * T));
  const h = { lr: 1e-3, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };
  const out: number[] = [];
  for (let i = 0; i <= spec.steps; i++) {
    const t0 = performance.now();
    model.zeroGrad();
    await model.forwardScore({ B, T, tokens, targets });
    await model.backward({ dlogp });
    await model.step(h);
    if (i > 0) out.push((B * T) / ((performance.now() - t0) / 1000)); // the first compiles
  }
  model.dispose();
  return out;
}

async function decodeRows(device: GPUDevice, software: boolean): Promise<BenchRow[]> {
  const tokens = software ? 64 : 256;
  const B = 16;
  const config = modelConfig({ layers: 3, dModel: 128, heads: 4, context: tokens + 16 });
  const models: Record<number, GpuModel> = {
    1: await variantModel(device, { decodeWindow: 1 }, config, undefined, 3),
    16: await variantModel(device, { decodeWindow: 16 }, config, undefined, 3),
  };
  const res: Record<string, { readbacks: number; tps: number }> = {};
  for (const k of [1, 16, 1, 16]) {
    const model = models[k];
    const s = model.startGeneration({ temperature: 1, seed: 5 });
    await s.prefill(Array.from({ length: B }, (_, b) => [1 + (b % 40)]));
    const before = model.perf();
    const t0 = performance.now();
    await decodeRun(s, new Array(B).fill(true), tokens, () => false, config.context);
    s.finish();
    res[k] = {
      readbacks: model.perf().readbacks - before.readbacks,
      tps: (B * tokens) / ((performance.now() - t0) / 1000),
    };
  }
  models[1].dispose();
  models[16].dispose();
  const what = `d128 L3 NH4, batch ${B}, ${tokens} tokens from a 1-token prompt`;
  return [
    makeRow({
      id: "decode_k16_vs_k1",
      group: "device",
      ours: [res[16].tps],
      baseline: [res[1].tps],
      unit: "tokens/s",
      better: "higher",
      note: `KV-cache decode, 16 tokens per submit vs 1; ${what}`,
    }),
    makeRow({
      id: `decode_${tokens}_b16_readbacks`,
      group: "device",
      ours: [res[16].readbacks],
      baseline: [res[1].readbacks],
      unit: "readbacks",
      better: "lower",
      note: what,
    }),
  ];
}

async function rlRows(device: GPUDevice, steps: number): Promise<BenchRow[]> {
  const file = join(PUBLIC, "recipes/quick-demo.json");
  const r = parseRecipeFile(readFileSync(file, "utf8"), file);
  if (!r.ok) throw new Error(r.error);
  // the bundle's own worker file (sandbox-worker.mjs) beside check.mjs; from source, tsx's bootstrap
  const bundled = join(HERE, "sandbox-worker.mjs");
  const sandbox = new SandboxPool(
    existsSync(bundled) ? nodeWorkerFactory(new URL(`file://${bundled}`), {}) : nodeWorkerFactory(),
    { size: 2 },
  );
  try {
    const make = (window1: boolean) =>
      createTrainer(r.config, {
        makeModel: async (mc, w, seed) =>
          window1
            ? variantModel(device, { decodeWindow: 1 }, mc, w, seed)
            : GpuModel.create(device, mc, w, seed),
        sandbox,
        readFile: async (p) => new Uint8Array(readFileSync(join(PUBLIC, p))),
      });
    const tr = { ours: await make(false), window1: await make(true) };
    const s = { ours: [] as number[], window1: [] as number[] };
    const trips = { ours: [] as number[], window1: [] as number[] };
    for (let i = 0; i < steps; i++) {
      for (const k of ["ours", "window1"] as const) {
        const t0 = performance.now();
        const { row } = await tr[k].rlStep();
        if (i === 0) continue; // compiles
        s[k].push((performance.now() - t0) / 1000);
        trips[k].push(Number(row["perf/submits"]) + Number(row["perf/readbacks"]));
      }
    }
    const what = `quick-demo (d48 L2, 8x8 rollouts, 2 epochs x 2 minibatches, from its SFT checkpoint), median of ${steps - 1} steps after the first; baseline = the plan decoding one token per submit (bench/plan-variant.ts)`;
    return [
      makeRow({
        id: "rl_step_s_vs_window1",
        group: "device",
        ours: s.ours,
        baseline: s.window1,
        unit: "s",
        better: "lower",
        note: what,
      }),
      makeRow({
        id: "rl_step_round_trips",
        group: "device",
        ours: trips.ours,
        baseline: trips.window1,
        unit: "submits+readbacks",
        better: "lower",
        note: what,
      }),
    ];
  } finally {
    await sandbox.close();
  }
}

async function measure(outPath: string): Promise<void> {
  const t0 = performance.now();
  const gpu = await nodeGpu({ softwareDefault: false }); // the machine's own drivers, GPU first
  const adapter = await describeAdapter(gpu);
  const g = await createGpu(gpu, {
    optionalFeatures: ["shader-f16", "subgroups", "timestamp-query"] as GPUFeatureName[],
  });
  const software = g.adapter.isFallback;
  if (software)
    console.log(
      `ONLY A SOFTWARE ADAPTER: ${g.adapter.description || g.adapter.device} runs WebGPU on the CPU; the figures below are not a GPU's.`,
    );
  const name = `${g.adapter.vendor}-${g.adapter.architecture || g.adapter.device}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");
  const tile = await tuneMatmulTile(g.device); // every Runtime and model below uses it
  console.log(
    `matmul tile: ${describeTileChoice(tile)}${
      tile.medians
        ? ` (${Object.entries(tile.medians)
            .map(([t, ms]) => `${t} ${ms.toFixed(2)} ms`)
            .join(", ")})`
        : ""
    }; subgroup reductions: ${canUseSubgroups(g.device) ? `on (sizes ${g.adapter.subgroupSizes.join("-")})` : "off"}`,
  );
  const rt = new Runtime(g.device);
  const rows: BenchRow[] = [];
  const sizes = software ? [256, 512] : [256, 512, 1024];
  const gflops: Record<string, number> = {};
  for (const n of sizes) {
    gflops[n] = await matmulGflops(rt, n, software ? 1 : 8, 3);
    console.log(`matmul ${n}^3: ${gflops[n].toFixed(2)} GFLOP/s`);
  }
  const train = software
    ? { layers: 3, dModel: 128, heads: 4, context: 32, batch: 2, vocab: 107, steps: 2 }
    : { layers: 3, dModel: 128, heads: 4, context: 128, batch: 16, vocab: 107, steps: 5 };
  const tps = await trainTokensPerS(g.device, train);
  console.log(
    `train step d${train.dModel} L${train.layers} T${train.context} B${train.batch}: ${median(tps).toFixed(0)} tokens/s`,
  );
  rows.push(...(await decodeRows(g.device, software)));
  // the blocked and tiled attention kernels (the adapter's pick: tiled on a GPU) against attention.wgsl's loop
  const adapterNote = `${g.adapter.description || g.adapter.device}`;
  for (const T of software ? [512] : [512, 2048])
    rows.push(await attentionRow(rt, T, software ? 1 : 5, adapterNote));
  // the fused decode kernels against the decode before them, and (GPUs: minutes on a CPU
  // rasteriser) the RL step at SmolLM2's layer shape, context 512, new kernels vs old
  rows.push(await decodeRow(rt, software ? 2 : 32, software ? 1 : 5, adapterNote));
  if (!software) {
    rows.push(await rlStepRow(rt, RL_SHAPE, 3, adapterNote));
    // decode windows that compute only the rows still running, against every row
    for (const B of [8, 16]) rows.push(await decodeStaggeredRow(rt, B, 4, 3, adapterNote));
    // the RL steps docs/PERFORMANCE.md counts and predicts, at their real depths
    rows.push(...(await countedStepRows(rt, 2, adapterNote)));
  }
  console.log(
    rows.map((r) => `${r.id}: ${r.ours.toFixed(2)} vs ${r.baseline.toFixed(2)} ${r.unit}`).join("\n"),
  );
  const rl = await rlRows(g.device, Number(arg("--rl-steps") ?? 3));
  rows.push(...rl);
  console.log(
    rl.map((r) => `${r.id}: ${r.ours.toFixed(2)} vs ${r.baseline.toFixed(2)} ${r.unit}`).join("\n"),
  );
  const report: OursReport = {
    date: new Date().toISOString(),
    adapter: { ...g.adapter, software, name },
    matmulTile: { chosen: describeTileChoice(tile), medians: tile.medians ?? {} },
    adapterLimits: Object.fromEntries(
      Object.keys(adapter.limits).map((k) => [k, (adapter.limits as unknown as Record<string, number>)[k]]),
    ),
    spec: { matmul: sizes, train },
    measured: { matmulGflops: gflops, trainTokensPerS: tps },
    rows,
    seconds: (performance.now() - t0) / 1000,
  };
  writeFileSync(outPath, JSON.stringify(report, null, 1));
  g.device.destroy();
}

/** Adds PyTorch eager's matmul and train-step figures as rows; writes gpu-<adapter>.json. */
function merge(oursPath: string, torchPath: string, resultsDir: string): string {
  const ours = JSON.parse(readFileSync(oursPath, "utf8")) as OursReport;
  const rows = [...ours.rows];
  if (existsSync(torchPath)) {
    const torch = JSON.parse(readFileSync(torchPath, "utf8")) as {
      device: string;
      torch: string;
      matmulGflops: Record<string, number>;
      trainTokensPerS: number[];
    };
    const t = ours.spec.train;
    rows.unshift(
      makeRow({
        id: "train_step_vs_torch",
        group: "device",
        ours: ours.measured.trainTokensPerS,
        baseline: torch.trainTokensPerS,
        unit: "tokens/s",
        better: "higher",
        note: `d${t.dModel} L${t.layers} NH${t.heads}, context ${t.context}, batch ${t.batch}: GpuModel through Dawn vs the same GPT in PyTorch ${torch.torch} eager on ${torch.device} (f32, AdamW)`,
      }),
      ...ours.spec.matmul.map((n) =>
        makeRow({
          id: `matmul_vs_torch_${n}`,
          group: "device",
          ours: [ours.measured.matmulGflops[n]],
          baseline: [torch.matmulGflops[n]],
          unit: "GFLOP/s",
          better: "higher",
          note: `our tiled matmul through Dawn vs torch.matmul f32 (TF32 off) on ${torch.device}`,
        }),
      ),
    );
  } else {
    console.log(`no PyTorch figures (${torchPath} missing): rows without the torch baseline`);
  }
  mkdirSync(resultsDir, { recursive: true });
  const path = join(resultsDir, `gpu-${ours.adapter.name}.json`);
  writeFileSync(
    path,
    `${JSON.stringify({ date: ours.date, adapter: ours.adapter, matmulTile: ours.matmulTile, limits: ours.adapterLimits, seconds: ours.seconds, rows }, null, 1)}\n`,
  );
  for (const r of rows)
    console.log(
      `${r.id.padEnd(28)} ours ${r.ours.toPrecision(4)} baseline ${r.baseline.toPrecision(4)} ${r.unit}  ratio ${r.ratio.toFixed(2)}x`,
    );
  return path;
}

const m = arg("--merge");
if (m) {
  const i = process.argv.indexOf("--merge");
  console.log(
    `wrote ${merge(process.argv[i + 1], process.argv[i + 2], arg("--results") ?? "bench/results")}`,
  );
} else {
  await measure(arg("--out") ?? "ours.json");
}
process.exit(0);
