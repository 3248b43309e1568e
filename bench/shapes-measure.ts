// The measurements of the "shapes" bench group that run the same in Node (bench/shapes.ts, Dawn)
// and in a Chromium page (bench/shapes-page.ts, SwiftShader): no Node imports here.
//  - measureDecode: KV-cache decode at batch 1 at SmolLM2-135M's shape (`layers` of its 30),
//    random weights, the fused decode kernels vs a plan variant without the small-rows kernels (the tiles, 13 dispatches a block), repetitions interleaved;
//  - measureAttention: causal attention forward + backward at SmolLM2's head shape (9 heads of 64
//    over 3 KV heads), the adapter's kernel vs attention.wgsl's loop, repetitions interleaved.
import { type AttentionKernel, attentionBackward, attentionForward, trainKernel } from "../kernels/attention";
import { randomMatrix } from "../kernels/dev/matmul-variants";
import { planWith } from "../kernels/plan";
import { Runtime } from "../kernels/runtime";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";

const secs = (t0: number) => (performance.now() - t0) / 1000;

export interface DecodeMeasure {
  /** tokens/s of each repetition: fused (ours), the tiles variant (base) */
  ours: number[];
  base: number[];
  /** max |next-token logits fused - tiles| after the same prompt and appended tokens */
  maxDiff: number;
  sameLengths: boolean;
  initS: number;
  warmS: number;
  dispatches: { ours: number; base: number };
}

export async function measureDecode(
  rt: Runtime,
  layers: number,
  tokens: number,
  reps: number,
): Promise<DecodeMeasure> {
  const c = { ...hfModelConfig(SMOLLM2_135M, "SmolLM2-135M config.json", { context: 256 }), layers };
  let t0 = performance.now();
  const model = new GpuModel(rt, c, undefined, 1);
  // the baseline: the same weights on a plan variant without the small-rows kernels (the tiles,
  // a block as 13 dispatches)
  const tiles = new GpuModel(
    new Runtime(rt.device, { plan: planWith(rt.plan, { smallRows: 0, subgroupMatmul: false }) }),
    c,
    undefined,
    1,
  );
  const initS = secs(t0);
  const session = async (tilesVariant: boolean) => {
    const gen = (tilesVariant ? tiles : model).startGeneration({ temperature: 1, seed: 3 });
    await gen.prefill([[1, 2, 3, 4]]);
    await gen.decode([true]); // pipeline compiles
    return gen;
  };
  t0 = performance.now();
  const gens = { fused: await session(false), tiles: await session(true) };
  const warmS = secs(t0);
  const dispatches = { ours: 0, base: 0 };
  const rate = async (tilesVariant: boolean) => {
    const gen = tilesVariant ? gens.tiles : gens.fused;
    const r = tilesVariant ? tiles.rt : rt;
    const d0 = r.counters.dispatches;
    const t = performance.now();
    for (let i = 0; i < tokens; i++) await gen.decode([true]);
    const s = secs(t);
    dispatches[tilesVariant ? "base" : "ours"] = (r.counters.dispatches - d0) / tokens;
    return tokens / s;
  };
  const ours: number[] = [];
  const base: number[] = [];
  for (let r = 0; r < reps; r++) {
    base.push(await rate(true));
    ours.push(await rate(false));
  }
  const sameLengths = JSON.stringify(gens.fused.lengths()) === JSON.stringify(gens.tiles.lengths());
  gens.fused.finish();
  gens.tiles.finish();
  // parity after the same tokens: each path's sessions above sample their own, and one flipped
  // sample makes every later logit differ, so both now take one prompt and appended tokens
  const logitsAfter = async (tilesVariant: boolean) => {
    const gen = (tilesVariant ? tiles : model).startGeneration({ temperature: 1, seed: 3 });
    await gen.prefill([[1, 2, 3, 4, 17, 250, 9000, 31]]);
    await gen.append(0, [42, 7, 4096]);
    const l = await gen.nextLogits(0);
    gen.finish();
    return l;
  };
  const [a, b] = [await logitsAfter(false), await logitsAfter(true)];
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
  model.dispose();
  tiles.dispose();
  return { ours, base, maxDiff, sameLengths, initS, warmS, dispatches };
}

export interface AttentionMeasure {
  /** seconds of each repetition: the adapter's kernel (ours), loop (base) */
  ours: number[];
  base: number[];
  kernel: Exclude<AttentionKernel, "auto">;
  /** max |ours - loop| over out and dqkv */
  maxDiff: number;
}

export async function measureAttention(
  rt: Runtime,
  B: number,
  T: number,
  reps: number,
): Promise<AttentionMeasure> {
  const [NH, KVH, hs] = [9, 3, 64];
  const C = NH * hs;
  const row = C + 2 * KVH * hs;
  const picked = trainKernel(rt, hs, NH / KVH);
  const buffers = (T: number) => ({
    qkv: rt.tensor(randomMatrix(B * T * row, 1)),
    dout: rt.tensor(randomMatrix(B * T * C, 2)),
    out: rt.tensor(B * T * C),
    lse: rt.tensor(B * NH * T),
    dqkv: rt.tensor(B * T * row),
    scratch: rt.tensor(B * NH * T),
  });
  type Buffers = ReturnType<typeof buffers>;
  const runtimes = new Map<AttentionKernel, Runtime>();
  const run = async (x: Buffers, T: number, kernel: AttentionKernel) => {
    let kr = runtimes.get(kernel);
    if (!kr) {
      kr = new Runtime(rt.device, { plan: planWith(rt.plan, { attention: kernel }) });
      runtimes.set(kernel, kr);
    }
    rt.device.queue.writeBuffer(x.dqkv.buffer, x.dqkv.offset, new Float32Array(B * T * row)); // backward adds
    await rt.device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    const enc = rt.device.createCommandEncoder();
    attentionForward(kr, enc, x.out, x.lse, x.qkv, null, B, T, C, NH, KVH);
    attentionBackward(kr, enc, x.dqkv, x.scratch, x.dout, x.qkv, x.out, x.lse, null, B, T, C, NH, KVH);
    kr.submit(enc);
    await rt.device.queue.onSubmittedWorkDone();
    return secs(t0);
  };
  const dispose = (x: Buffers) => {
    for (const v of Object.values(x)) v.buffer.destroy();
  };
  // warm-up (pipeline compiles) at a short context: the kernels do not depend on T, and at 2048 a
  // full-size warm-up would double the row's time
  const warm = buffers(Math.min(T, 64));
  await run(warm, Math.min(T, 64), "loop");
  await run(warm, Math.min(T, 64), picked);
  dispose(warm);
  const x = buffers(T);
  const outputs = async () => ({ out: await rt.read(x.out), dqkv: await rt.read(x.dqkv) });
  const ours: number[] = [];
  const base: number[] = [];
  let maxDiff = 0;
  for (let r = 0; r < reps; r++) {
    base.push(await run(x, T, "loop"));
    const a = r === 0 ? await outputs() : null;
    ours.push(await run(x, T, picked));
    if (a) {
      // parity of the two kernels' outputs on the first repetition
      const b = await outputs();
      for (let i = 0; i < a.out.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a.out[i] - b.out[i]));
      for (let i = 0; i < a.dqkv.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a.dqkv[i] - b.dqkv[i]));
    }
  }
  dispose(x);
  return { ours, base, kernel: picked, maxDiff };
}
