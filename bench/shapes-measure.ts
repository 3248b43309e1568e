// The measurements of the "shapes" bench group that run the same in Node (bench/shapes.ts, Dawn)
// and in a Chromium page (bench/shapes-page.ts, SwiftShader): no Node imports here.
//  - measureDecode: KV-cache decode at batch 1 at SmolLM2-135M's shape (`layers` of its 30),
//    random weights, the fused decode kernels vs Runtime.legacyDecode, repetitions interleaved;
//  - measureAttention: causal attention forward + backward at SmolLM2's head shape (9 heads of 64
//    over 3 KV heads), the adapter's kernel vs attention.wgsl's loop, repetitions interleaved.
import { attentionBackward, attentionForward, trainKernel } from "../kernels/attention";
import { randomMatrix } from "../kernels/dev/matmul-variants";
import type { AttentionKernel, Runtime } from "../kernels/runtime";
import { GpuModel } from "../model/gpu";
import { hfModelConfig } from "../model/hf/config";
import { SMOLLM2_135M } from "../model/hf/configs";

const secs = (t0: number) => (performance.now() - t0) / 1000;

export interface DecodeMeasure {
  /** tokens/s of each repetition: fused (ours), legacy (base) */
  ours: number[];
  base: number[];
  /** max |next-token logits fused - legacy| after the same tokens */
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
  const dispatches = { ours: 0, base: 0 };
  const rate = async (legacy: boolean) => {
    rt.legacyDecode = legacy;
    const gen = legacy ? gens.legacy : gens.fused;
    const d0 = rt.counters.dispatches;
    const t = performance.now();
    for (let i = 0; i < tokens; i++) await gen.decode([true]);
    const s = secs(t);
    dispatches[legacy ? "base" : "ours"] = (rt.counters.dispatches - d0) / tokens;
    rt.legacyDecode = false;
    return tokens / s;
  };
  const ours: number[] = [];
  const base: number[] = [];
  for (let r = 0; r < reps; r++) {
    base.push(await rate(true));
    ours.push(await rate(false));
  }
  const [a, b] = [await gens.fused.nextLogits(0), await gens.legacy.nextLogits(0)];
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
  const sameLengths = JSON.stringify(gens.fused.lengths()) === JSON.stringify(gens.legacy.lengths());
  gens.fused.finish();
  gens.legacy.finish();
  model.dispose();
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
  const qkv = rt.tensor(randomMatrix(B * T * row, 1));
  const dout = rt.tensor(randomMatrix(B * T * C, 2));
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
  return { ours, base, kernel: picked, maxDiff };
}
