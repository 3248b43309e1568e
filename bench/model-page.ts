// Browser side of the model benchmark (bundled by bench/model.ts with Vite, loaded in headless
// Chromium). On ONE adapter, in one page:
//  - train step: our GpuModel (forwardScore + backward + AdamW step, as the SFT loop does) beside
//    the same architecture written with tfjs ops (webgpu backend, tfjs autodiff, tf.train.adam);
//  - decode: our KV-cache generation beside full recompute (a forward over the whole prefix per
//    new token, timed at a few prefix lengths and integrated over the generated range);
//  - decode tokens/s against batch size;
//  - a measured peak: a long loop of our matmul (1024^3) in one submit.
// Every timing ends at GPU completion (a readback or queue.onSubmittedWorkDone).
// Exposes globalThis.modelBench(spec).
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-core/dist/register_all_gradients";
import "@tensorflow/tfjs-backend-webgpu";
import { browserGpu, createGpu } from "../kernels/device";
import { matmul } from "../kernels/matmul";
import { Runtime } from "../kernels/runtime";
import type { ModelConfig } from "../model/config";
import { modelConfig } from "../model/config";
import { GpuModel } from "../model/gpu";
import { interpolate, trainStepFlops } from "./page/model-math";

export interface TrainSpec {
  layers: number;
  dModel: number;
  heads: number;
  context: number;
  batch: number;
  /** Timed steps per framework (after warm-up steps). */
  steps: number;
  warmup: number;
}

export interface DecodeSpec {
  layers: number;
  dModel: number;
  heads: number;
  /** Context of the model; decoding generates positions 1..context-1 from a 1-token prompt. */
  context: number;
  batch: number;
  reps: number;
  /** Prefix lengths at which a recompute forward is timed (integrated over 1..context-1). */
  recomputeAt: number[];
  /** Batch sizes for the tokens/s vs batch rows (each decodes `batchTokens` tokens). */
  batches: number[];
  batchTokens: number;
}

export interface ModelPageSpec {
  train: TrainSpec;
  decode: DecodeSpec;
  peak: { n: number; inner: number; reps: number };
}

export interface ModelPageResult {
  adapter: { vendor: string; architecture: string; description: string; isFallback: boolean };
  train: {
    ours: number[];
    tfjs: number[];
    tokens: number;
    flopsPerStep: number;
    lossOurs: number;
    lossTfjs: number;
  };
  decode: {
    kv: number[];
    recompute: number[];
    /** ms of one recompute forward at each prefix length of spec.recomputeAt (medians). */
    recomputeMs: number[];
    generated: number;
  };
  batches: { batch: number; tokensPerS: number[] }[];
  peak: number[];
}

const VOCAB = 107;

function cfgOf(s: { layers: number; dModel: number; heads: number; context: number }): ModelConfig {
  return modelConfig({
    layers: s.layers,
    dModel: s.dModel,
    heads: s.heads,
    context: s.context,
    vocab: VOCAB,
  });
}

/** Seeded uniform ints in [0, n). */
function randomTokens(count: number, n: number, seed: number): Int32Array {
  let s = seed >>> 0 || 1;
  const out = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = (s >>> 0) % n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The tfjs baseline: the same GPT (learned positions, pre-LN, causal MHA, GELU(tanh) MLP,
// tied head, token-mean cross-entropy), tfjs autodiff, Adam.

interface TfGpt {
  vars: tf.Variable[];
  loss(tokens: tf.Tensor2D, targets: tf.Tensor2D): tf.Scalar;
}

function tfGpt(c: ModelConfig, seed: number): TfGpt {
  const C = c.dModel;
  const H = 4 * C;
  const NH = c.heads;
  const hs = C / NH;
  const vars: tf.Variable[] = [];
  let k = seed;
  const normal = (shape: number[], std: number) => {
    const v = tf.variable(tf.randomNormal(shape, 0, std, "float32", k++));
    vars.push(v);
    return v;
  };
  const fill = (shape: number[], x: number) => {
    const v = tf.variable(tf.fill(shape, x));
    vars.push(v);
    return v;
  };
  const wte = normal([c.vocab, C], 0.02); // (V,C)
  const wpe = normal([c.context, C], 0.02); // (maxT,C)
  const layers = Array.from({ length: c.layers }, () => ({
    ln1g: fill([C], 1),
    ln1b: fill([C], 0),
    qkvw: normal([C, 3 * C], 0.02),
    qkvb: fill([3 * C], 0),
    projw: normal([C, C], 0.02 / Math.sqrt(2 * c.layers)),
    projb: fill([C], 0),
    ln2g: fill([C], 1),
    ln2b: fill([C], 0),
    fcw: normal([C, H], 0.02),
    fcb: fill([H], 0),
    fcpw: normal([H, C], 0.02 / Math.sqrt(2 * c.layers)),
    fcpb: fill([C], 0),
  }));
  const lnfg = fill([C], 1);
  const lnfb = fill([C], 0);
  const layerNorm = (x: tf.Tensor2D, g: tf.Tensor, b: tf.Tensor) => {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5))), g), b) as tf.Tensor2D;
  };
  const gelu = (x: tf.Tensor) => {
    const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.pow(x, 3))));
    return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
  };
  const masks = new Map<number, tf.Tensor2D>();
  const causalMask = (T: number) => {
    let m = masks.get(T);
    if (!m) {
      const lower = tf.linalg.bandPart(tf.ones([T, T]), -1, 0);
      m = tf.keep(tf.mul(tf.sub(1, lower), -1e9)) as tf.Tensor2D; // (T,T) 0 on and below the diagonal
      masks.set(T, m);
    }
    return m;
  };
  const loss = (tokens: tf.Tensor2D, targets: tf.Tensor2D): tf.Scalar => {
    const [B, T] = tokens.shape;
    const N = B * T;
    const heads = (x: tf.Tensor) => tf.transpose(tf.reshape(x, [B, T, NH, hs]), [0, 2, 1, 3]); // (B,NH,T,hs)
    let x = tf.reshape(
      tf.add(tf.reshape(tf.gather(wte, tf.reshape(tokens, [N])), [B, T, C]), tf.slice(wpe, [0, 0], [T, C])),
      [N, C],
    ) as tf.Tensor2D; // (N,C)
    for (const l of layers) {
      const h = layerNorm(x, l.ln1g, l.ln1b);
      const qkv = tf.add(tf.matMul(h, l.qkvw), l.qkvb); // (N,3C)
      const [q, kk, v] = tf.split(qkv, 3, 1);
      const att = tf.softmax(
        tf.add(tf.mul(tf.matMul(heads(q), heads(kk), false, true), 1 / Math.sqrt(hs)), causalMask(T)),
      ); // (B,NH,T,T)
      const y = tf.reshape(tf.transpose(tf.matMul(att, heads(v)), [0, 2, 1, 3]), [N, C]);
      x = tf.add(x, tf.add(tf.matMul(y, l.projw), l.projb)) as tf.Tensor2D;
      const h2 = layerNorm(x, l.ln2g, l.ln2b);
      const f = gelu(tf.add(tf.matMul(h2, l.fcw), l.fcb)) as tf.Tensor2D;
      x = tf.add(x, tf.add(tf.matMul(f, l.fcpw), l.fcpb)) as tf.Tensor2D;
    }
    const logits = tf.matMul(layerNorm(x, lnfg, lnfb), wte, false, true); // (N,V) tied head
    return tf.losses.softmaxCrossEntropy(tf.oneHot(tf.reshape(targets, [N]), c.vocab), logits) as tf.Scalar;
  };
  return { vars, loss };
}

// ---------------------------------------------------------------------------------------

async function trainBench(device: GPUDevice, s: TrainSpec): Promise<ModelPageResult["train"]> {
  const c = cfgOf(s);
  const B = s.batch;
  const T = s.context;
  const N = B * T;
  const tokensAll = randomTokens(N + B, c.vocab, 7);
  const tokens = new Int32Array(N);
  const targets = new Int32Array(N);
  for (let b = 0; b < B; b++)
    for (let t = 0; t < T; t++) {
      tokens[b * T + t] = tokensAll[b * (T + 1) + t];
      targets[b * T + t] = tokensAll[b * (T + 1) + t + 1];
    }

  const model = await GpuModel.create(device, c, undefined, 1);
  const dlogp = new Float32Array(N).fill(-1 / N); // token-mean cross-entropy
  const hp = { lr: 3e-3, beta1: 0.9, beta2: 0.98, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };
  let lossOurs = 0;
  const ourStep = async () => {
    const t0 = performance.now();
    model.zeroGrad();
    const r = await model.forwardScore({ B, T, tokens, targets });
    await model.backward({ dlogp });
    await model.step(hp);
    await device.queue.onSubmittedWorkDone();
    const ms = performance.now() - t0;
    let s = 0;
    for (const x of r.logp) s -= x;
    lossOurs = s / N;
    return ms;
  };

  const gpt = tfGpt(c, 1);
  const opt = tf.train.adam(hp.lr, hp.beta1, hp.beta2, hp.eps);
  const tTok = tf.tensor2d(tokens, [B, T], "int32");
  const tTgt = tf.tensor2d(targets, [B, T], "int32");
  let lossTfjs = 0;
  const tfStep = async () => {
    const t0 = performance.now();
    const l = opt.minimize(() => gpt.loss(tTok, tTgt), true, gpt.vars) as tf.Scalar;
    lossTfjs = (await l.data())[0];
    const ms = performance.now() - t0;
    l.dispose();
    return ms;
  };

  const ours: number[] = [];
  const theirs: number[] = [];
  for (let i = 0; i < s.warmup; i++) {
    await ourStep();
    await tfStep();
  }
  for (let i = 0; i < s.steps; i++) {
    ours.push(N / ((await ourStep()) / 1000));
    theirs.push(N / ((await tfStep()) / 1000));
  }
  model.dispose();
  tf.dispose([tTok, tTgt, ...gpt.vars]);
  opt.dispose();
  return { ours, tfjs: theirs, tokens: N, flopsPerStep: trainStepFlops(c, B, T), lossOurs, lossTfjs };
}

/** Tokens/s of KV-cache decoding of `steps` tokens after a 1-token prompt, batch B. */
async function kvDecode(model: GpuModel, B: number, steps: number, seed: number): Promise<number> {
  const session = model.startGeneration({ temperature: 1, seed });
  const prompts = Array.from({ length: B }, (_, b) => [b % model.config.vocab]);
  const active = new Array<boolean>(B).fill(true);
  const t0 = performance.now();
  await session.prefill(prompts);
  for (let i = 0; i < steps; i++) await session.decode(active);
  const ms = performance.now() - t0;
  session.finish();
  return (B * steps) / (ms / 1000);
}

async function decodeBench(
  device: GPUDevice,
  s: DecodeSpec,
): Promise<{ decode: ModelPageResult["decode"]; batches: ModelPageResult["batches"] }> {
  const c = cfgOf(s);
  const model = await GpuModel.create(device, c, undefined, 2);
  const B = s.batch;
  const steps = c.context - 1; // positions 1..context-1
  await kvDecode(model, B, 4, 0); // warm-up: pipelines
  const kv: number[] = [];
  for (let r = 0; r < s.reps; r++) kv.push(await kvDecode(model, B, steps, r + 1));

  // Recompute: the token at position t needs a forward over the t-token prefix. Time that
  // forward at a few t, interpolate linearly between them (and to the ends), sum over t.
  const forwardMs = async (t: number) => {
    const tokens = randomTokens(B * t, c.vocab, t);
    const t0 = performance.now();
    await model.forwardScore({ B, T: t, tokens, targets: tokens });
    return performance.now() - t0;
  };
  await forwardMs(s.recomputeAt[0]); // warm-up
  const points = [...s.recomputeAt].sort((a, b) => a - b);
  const perRep: number[][] = points.map(() => []);
  const recompute: number[] = [];
  for (let r = 0; r < s.reps; r++) {
    const ms: number[] = [];
    for (let i = 0; i < points.length; i++) {
      const m = await forwardMs(points[i]);
      perRep[i].push(m);
      ms.push(m);
    }
    let total = 0;
    for (let t = 1; t <= steps; t++) total += interpolate(points, ms, t);
    recompute.push((B * steps) / (total / 1000));
  }
  model.dispose();

  const batches: ModelPageResult["batches"] = [];
  for (const b of s.batches) {
    const m = await GpuModel.create(device, c, undefined, 3);
    await kvDecode(m, b, 2, 0);
    const tps: number[] = [];
    for (let r = 0; r < s.reps; r++) tps.push(await kvDecode(m, b, Math.min(s.batchTokens, steps), r + 1));
    batches.push({ batch: b, tokensPerS: tps });
    m.dispose();
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  return { decode: { kv, recompute, recomputeMs: perRep.map(med), generated: B * steps }, batches };
}

/** GFLOP/s of a long loop of our matmul (n^3, `inner` products in one submit). */
async function peakBench(device: GPUDevice, p: ModelPageSpec["peak"]): Promise<number[]> {
  const rt = new Runtime(device);
  const n = p.n;
  const rnd = (seed: number) => Float32Array.from(randomTokens(n * n, 1000, seed), (x) => x / 1000 - 0.5);
  const [a, b, out] = [rt.tensor(rnd(1)), rt.tensor(rnd(2)), rt.tensor(n * n)];
  const run = async (inner: number) => {
    const enc = device.createCommandEncoder();
    for (let i = 0; i < inner; i++) matmul(rt, enc, out, a, b, null, { M: n, N: n, K: n });
    const t0 = performance.now();
    rt.submit(enc);
    await device.queue.onSubmittedWorkDone();
    return (2 * n * n * n * inner) / ((performance.now() - t0) * 1e6);
  };
  await run(1);
  const out_: number[] = [];
  for (let r = 0; r < p.reps; r++) out_.push(await run(p.inner));
  for (const t of [a, b, out]) t.buffer.destroy();
  return out_;
}

async function bench(spec: ModelPageSpec): Promise<ModelPageResult> {
  const { device, adapter } = await createGpu(browserGpu());
  // A validation error turns a dispatch into a no-op that "runs" instantly: collect them all.
  const gpuErrors: string[] = [];
  device.addEventListener("uncapturederror", (e) => {
    if (gpuErrors.length < 5) gpuErrors.push((e as GPUUncapturedErrorEvent).error.message);
  });
  device.lost.then((info) => gpuErrors.push(`device lost: ${info.reason} ${info.message}`));
  await tf.setBackend("webgpu");
  await tf.ready();
  const check = (what: string) => {
    if (gpuErrors.length) throw new Error(`WebGPU errors during ${what}: ${gpuErrors.join(" | ")}`);
  };
  const t0 = performance.now();
  const progress = (what: string) =>
    console.log(`${what} done at ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const train = await trainBench(device, spec.train);
  check("the train step");
  progress("train step (ours and tfjs)");
  const { decode, batches } = await decodeBench(device, spec.decode);
  check("decoding");
  progress("decode (KV cache, recompute, batch sizes)");
  const peak = await peakBench(device, spec.peak);
  check("the peak matmul loop");
  progress("peak matmul loop");
  device.destroy();
  const { vendor, architecture, description, isFallback } = adapter;
  return { adapter: { vendor, architecture, description, isFallback }, train, decode, batches, peak };
}

(globalThis as unknown as { modelBench: typeof bench }).modelBench = bench;
