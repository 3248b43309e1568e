// One measurement of the baseline group (bench/baseline.ts) on ONE source tree, in its own process:
//   tsx --import <root>/cli/raw-loader.mjs bench/baseline-child.ts <root> <measure>
// Every engine module is imported from <root> (this tree or the pinned commit's worktree), so the
// code under test is that tree's; only the calls made here are shared, and they use what both
// trees export alike (Runtime, GpuModel, createGpu, nodeGpu, hfModelConfig, the recipe reader,
// bench/rl-shape.ts and the trainer factory, whose module moved from rl/session.ts to
// rl/run/build-trainer.ts). Prints one JSON line: {"value": number, "unit": string, "detail": string}.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const MEASURES = ["quick_demo_rl_step", "rl_step_l4_512", "decode_b1", "train_step"] as const;
export type Measure = (typeof MEASURES)[number];

// The slices of the two trees' APIs this file calls (both trees have them in this form).
interface Model {
  config: { vocab: number };
  startGeneration(o: { temperature: number; seed: number }): {
    prefill(p: number[][]): Promise<unknown>;
    decode(active: boolean[]): Promise<unknown>;
    finish(): void;
  };
  zeroGrad(): void;
  forwardScore(b: {
    B: number;
    T: number;
    tokens: Int32Array;
    targets: Int32Array;
  }): Promise<{ logp: Float32Array }>;
  backward(g: { dlogp: Float32Array }): Promise<unknown>;
  step(h: Record<string, number>): Promise<unknown>;
  dispose(): void;
}
type ModelCtor = new (rt: unknown, c: unknown, w: unknown, seed: number) => Model;
interface Gpu {
  device: { destroy(): void };
  adapter: { description: string; vendor: string };
}

const secs = (t0: number) => (performance.now() - t0) / 1000;

function tokens(n: number, V: number, seed: number): Int32Array {
  let s = seed >>> 0 || 1;
  return Int32Array.from({ length: n }, () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % V;
  });
}

async function load(root: string, rel: string): Promise<Record<string, unknown>> {
  return import(pathToFileURL(join(root, rel)).href);
}

async function engine(root: string) {
  const device = await load(root, "kernels/device.ts");
  const nodeGpu = await load(root, "kernels/node-gpu.ts");
  const gpu = (await (device.createGpu as (g: unknown) => Promise<Gpu>)(
    await (nodeGpu.nodeGpu as () => Promise<unknown>)(),
  )) as Gpu;
  const Runtime = (await load(root, "kernels/runtime.ts")).Runtime as new (d: unknown) => unknown;
  const gpuMod = await load(root, "model/gpu.ts");
  const hf = await load(root, "model/hf/config.ts");
  const configs = await load(root, "model/hf/configs.ts");
  const smollm2 = (context: number) =>
    (hf.hfModelConfig as (j: unknown, n: string, o: unknown) => unknown)(
      configs.SMOLLM2_135M,
      "SmolLM2-135M config.json",
      { context },
    );
  return {
    gpu,
    rt: new Runtime(gpu.device),
    GpuModel: gpuMod.GpuModel as ModelCtor & Record<string, unknown>,
    smollm2,
  };
}

type Engine = Awaited<ReturnType<typeof engine>>;
type Result = { value: number; unit: string; detail: string; adapter?: string };

/** SmolLM2-135M's shape, batch 1 x 64: one warm-up train step, then one timed (tokens/s). */
async function trainStep(e: Engine): Promise<Result> {
  const model = new e.GpuModel(e.rt, e.smollm2(256), undefined, 1);
  const T = 64;
  const V = model.config.vocab;
  const batch = { B: 1, T, tokens: tokens(T, V, 1), targets: tokens(T, V, 2) };
  const h = { lr: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };
  const once = async () => {
    const t = performance.now();
    model.zeroGrad();
    await model.forwardScore(batch);
    await model.backward({ dlogp: new Float32Array(T).fill(-1 / T) });
    await model.step(h);
    return secs(t);
  };
  const warm = await once();
  const s = await once();
  model.dispose();
  return {
    value: T / s,
    unit: "tokens/s",
    detail: `timed step ${s.toFixed(2)} s after a warm-up of ${warm.toFixed(1)} s`,
  };
}

/** SmolLM2-135M's shape (30 layers), batch 1, 4-token prompt, one warm-up decode, then 8 timed (tokens/s). */
async function decodeB1(e: Engine): Promise<Result> {
  const model = new e.GpuModel(e.rt, e.smollm2(256), undefined, 1);
  const gen = model.startGeneration({ temperature: 1, seed: 3 });
  await gen.prefill([Array.from(tokens(4, model.config.vocab, 4))]);
  await gen.decode([true]);
  const n = 8;
  const t = performance.now();
  for (let i = 0; i < n; i++) await gen.decode([true]);
  const s = secs(t);
  gen.finish();
  model.dispose();
  return { value: n / s, unit: "tokens/s", detail: `${n} tokens in ${s.toFixed(2)} s` };
}

/** bench/rl-shape.ts's step (SmolLM2 layers x 4, context 512) after a warm-up at context 32 (s). */
async function rlStep512(root: string, e: Engine): Promise<Result> {
  const m = await load(root, "bench/rl-shape.ts");
  const shape = m.RL_SHAPE as { promptTokens: number; context: number };
  const cfg = m.rlShapeConfig as (s: unknown) => unknown;
  const step = m.rlShapeStep as (
    model: Model,
    s: unknown,
    seed: number,
  ) => Promise<{ totalS: number; rolloutS: number; oldLogprobsS: number; updateS: number }>;
  const small = { ...shape, promptTokens: 24, context: 32 };
  const warmModel = new e.GpuModel(e.rt, cfg(small), undefined, 1);
  await step(warmModel, small, 1);
  warmModel.dispose();
  const model = new e.GpuModel(e.rt, cfg(shape), undefined, 1);
  const r = await step(model, shape, 2);
  model.dispose();
  return {
    value: r.totalS,
    unit: "s",
    detail: `rollout ${r.rolloutS.toFixed(1)}, old log-probs ${r.oldLogprobsS.toFixed(1)}, update ${r.updateS.toFixed(1)} s`,
  };
}

/** The quick-demo recipe from its SFT checkpoint: one warm-up RL step, then the median of 3 (s). */
async function quickDemoStep(root: string, e: Engine): Promise<Result> {
  const recipes = await load(root, "config/recipe-file.ts");
  const path = join(root, "public/recipes/quick-demo.json");
  const parsed = (
    recipes.parseRecipeFile as (t: string, p: string) => { ok: boolean; config: unknown; error?: string }
  )(readFileSync(path, "utf8"), path);
  if (!parsed.ok) throw new Error(parsed.error);
  const factory = existsSync(join(root, "rl/run/build-trainer.ts"))
    ? "rl/run/build-trainer.ts"
    : "rl/session.ts";
  const createTrainer = (await load(root, factory)).createTrainer as (
    c: unknown,
    o: unknown,
  ) => Promise<{ rlStep(): Promise<unknown>; policy: { dispose(): void } }>;
  const pool = await load(root, "sandbox/pool-node.ts");
  const sandbox = (pool.createNodeSandboxPool as (o: unknown) => { close(): Promise<void> })({ size: 2 });
  const create = e.GpuModel.create as (d: unknown, mc: unknown, w: unknown, seed: number) => Promise<Model>;
  try {
    const trainer = await createTrainer(parsed.config, {
      makeModel: (mc: unknown, w: unknown, seed: number) => create(e.gpu.device, mc, w, seed),
      sandbox,
      readFile: async (p: string) => new Uint8Array(readFileSync(join(root, "public", p))),
    });
    await trainer.rlStep();
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await trainer.rlStep();
      times.push(secs(t));
    }
    trainer.policy.dispose();
    const sorted = [...times].sort((a, b) => a - b);
    return {
      value: sorted[1],
      unit: "s",
      detail: `steps 2-4: ${times.map((x) => x.toFixed(2)).join(", ")} s`,
    };
  } finally {
    await sandbox.close();
  }
}

async function main(root: string, measure: Measure): Promise<Result> {
  const e = await engine(root);
  try {
    const adapter = e.gpu.adapter.description || e.gpu.adapter.vendor;
    const run = () => {
      if (measure === "train_step") return trainStep(e);
      if (measure === "decode_b1") return decodeB1(e);
      if (measure === "rl_step_l4_512") return rlStep512(root, e);
      return quickDemoStep(root, e);
    };
    return { ...(await run()), adapter };
  } finally {
    e.gpu.device.destroy();
  }
}

const [root, measure] = process.argv.slice(2);
if (root && measure) {
  if (!(MEASURES as readonly string[]).includes(measure)) throw new Error(`unknown measure ${measure}`);
  main(root, measure as Measure).then(
    (r) => {
      console.log(JSON.stringify(r));
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
