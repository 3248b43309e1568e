// The transformer on the CPU, written with the ops of kernels/reference.ts: the specification
// the WebGPU model (model/gpu.ts) must equal, and a PolicyModel backend for unit tests of rl/.
// The ops themselves (matmul, embedding, LayerNorm/RMSNorm, residual, GELU/SwiGLU, causal
// attention and its KV-cache form, RoPE, the log-softmax head, AdamW, sampling) live in
// kernels/reference.ts, the same functions every kernel is tested against, so a fix to an op
// fixes both. This file reads top to bottom (llm.c train_gpt2.c style: outputs first, d-prefixed
// gradients, backward ADDS into gradients): the config's choice of ops, the activations, the
// whole-network forward and backward, the optimizer, KV-cache decoding, the CpuModel class.
//
// Legend: B batch, T time, C channels (dModel), NH query heads, KVH key/value heads, hs head
// size (C/NH unless config.headDim), Q = NH*hs, KV = KVH*hs, QKV = Q+2KV, H MLP hidden, V vocab,
// L layers, N = B*T rows.
// Network (pre-norm): x = wte[tok] (+ wpe[pos]); per block
//   x = x + proj(attn(rope?(qkNorm?(qkv(norm1(x))))));  x = x + fcproj(act(fc(norm2(x))));
// then h = normf(x), logits = h @ lmHead^T, value = h . wv + bv. The tiny GPT models and the
// Hugging Face Llama family (model/hf/read.ts: GQA, RMSNorm, SwiGLU, RoPE, Qwen3's q/k norms) are
// options of this one network.
// GELU is the tanh form (GPT-2's; WGSL has no erf). Norm eps = config.normEps.
// Tested by model/cpu.test.ts (PyTorch golden, finite differences, KV cache, generation,
// overfitting), model/hf/read.test.ts (each Hugging Face family against PyTorch); the ops alone by
// kernels/reference.test.ts.

import {
  adamwRef,
  attentionBackwardRef,
  attentionForwardRef,
  clipScale,
  columnsAddRef,
  columnsGatherRef,
  decodeAttentionRef,
  embeddingBackwardRef,
  embeddingForwardRef,
  geluBackwardRef,
  geluForwardRef,
  gradNormRef,
  layernormBackwardRef,
  layernormForwardRef,
  logSoftmaxRef,
  matmulBackwardRef,
  matmulForwardRef,
  qkNormBackwardRef,
  qkNormForwardRef,
  type RopeShape,
  residualForwardRef,
  rmsnormBackwardRef,
  rmsnormForwardRef,
  ropeBackwardRef,
  ropeForwardRef,
  sampleRef,
  swigluBackwardRef,
  swigluForwardRef,
} from "../kernels/reference";
import type {
  AdamWHparams,
  DecodeResult,
  GenerationSession,
  OptimizerState,
  PolicyModel,
  SamplingOptions,
  ScoreBatch,
  ScoreGrads,
  ScoreResult,
  StepResult,
} from "./api";
import {
  attnDims,
  initParams,
  type ModelConfig,
  mlpHidden,
  type ParamLayout,
  type ParamTensors,
  paramLayout,
  paramTensors,
} from "./config";
import { type BaseStorage, halfBase, halfTensors, type KeptF32, roundHalfBase } from "./half";
import { type HfOptions, loadHfModel, type ModelDir } from "./hf/read";
import { initLora, type LoraBaseWeight, type LoraLayout, type LoraTargetSpec, loraLayout } from "./lora";

// The network takes float32 (the model) or float64 (finite-difference checks) arrays.
type F32 = Float32Array<ArrayBufferLike> | Float64Array<ArrayBufferLike>;

function allocLike(like: F32, n: number): F32 {
  return like instanceof Float64Array ? new Float64Array(n) : new Float32Array(n);
}

// ---------------------------------------------------------------------------------------
// The config's choice of ops

function normForward(
  c: ModelConfig,
  out: F32,
  mean: F32,
  rstd: F32,
  inp: F32,
  w: F32,
  b: F32 | null,
  N: number,
): void {
  if (c.norm === "layernorm") layernormForwardRef(out, mean, rstd, inp, w, b!, N, c.dModel, c.normEps);
  else rmsnormForwardRef(out, rstd, inp, w, N, c.dModel, c.normEps);
}

function normBackward(
  c: ModelConfig,
  dinp: F32,
  dw: F32,
  db: F32 | null,
  dout: F32,
  inp: F32,
  w: F32,
  mean: F32,
  rstd: F32,
  N: number,
): void {
  if (c.norm === "layernorm") layernormBackwardRef(dinp, dw, db!, dout, inp, w, mean, rstd, N, c.dModel);
  else rmsnormBackwardRef(dinp, dw, dout, inp, w, rstd, N, c.dModel);
}

function mlpActForward(c: ModelConfig, out: F32, fch: F32, N: number): void {
  const H = mlpHidden(c);
  if (c.mlp === "gelu") geluForwardRef(out, fch, N * H);
  else swigluForwardRef(out, fch, N, H);
}

function mlpActBackward(c: ModelConfig, dfch: F32, dout: F32, fch: F32, N: number): void {
  const H = mlpHidden(c);
  if (c.mlp === "gelu") geluBackwardRef(dfch, fch, dout, N * H);
  else swigluBackwardRef(dfch, fch, dout, N, H);
}

/** The q and k parts of qkv (N,QKV) as the RoPE op sees them. */
function ropeShapes(c: ModelConfig, N: number): RopeShape[] {
  const { NH, KVH, hs, Q, QKV } = attnDims(c);
  const s = { N, headDim: hs, rowStride: QKV, base: c.ropeTheta };
  return [
    { ...s, nHeads: NH, colOffset: 0 },
    { ...s, nHeads: KVH, colOffset: Q },
  ];
}

/** Rotates q and k inside qkv (N,QKV) in place (no-op for learned positions). */
function ropeForward(c: ModelConfig, qkv: F32, positions: Int32Array, N: number): void {
  if (c.positional === "rope") for (const s of ropeShapes(c, N)) ropeForwardRef(qkv, positions, s);
}

function ropeBackward(c: ModelConfig, dqkv: F32, positions: Int32Array, N: number): void {
  if (c.positional === "rope") for (const s of ropeShapes(c, N)) ropeBackwardRef(dqkv, positions, s);
}

// ---------------------------------------------------------------------------------------
// LoRA: the adapter's term added into a fused base output, and its backward

/** The adapter weights (its own flat buffer) and which of them the forward uses; null: none. */
export interface Adapter {
  layout: LoraLayout;
  w: F32; // (layout.total)
}

/** out (N,outStride) columns [rowStart, rowStart+rows) += scale * (inp A^T) B^T, inp (N,inDim). */
function loraForward(out: F32, inp: F32, s: LoraTargetSpec, ad: Adapter, N: number): void {
  const r = ad.layout.rank;
  const A = ad.w.subarray(s.a, s.a + r * s.inDim); // (r,in)
  const Bm = ad.w.subarray(s.b, s.b + s.rows * r); // (rows,r)
  const u = allocLike(ad.w, N * r); // (N,r)
  matmulForwardRef(u, inp, A, null, N, s.inDim, r);
  const delta = allocLike(ad.w, N * s.rows); // (N,rows)
  matmulForwardRef(delta, u, Bm, null, N, r, s.rows);
  columnsAddRef(out, delta, N, s.rows, s.outStride, s.rowStart, ad.layout.scale);
}

/** dinp += the adapter's part of dout's gradient, dA and dB (in dad) += theirs; u is recomputed. */
function loraBackward(
  dinp: F32,
  dad: F32,
  dout: F32,
  inp: F32,
  s: LoraTargetSpec,
  ad: Adapter,
  N: number,
): void {
  const r = ad.layout.rank;
  const A = ad.w.subarray(s.a, s.a + r * s.inDim);
  const Bm = ad.w.subarray(s.b, s.b + s.rows * r);
  const u = allocLike(ad.w, N * r);
  matmulForwardRef(u, inp, A, null, N, s.inDim, r);
  const ddelta = allocLike(ad.w, N * s.rows); // (N,rows) = scale * dout's block
  columnsGatherRef(ddelta, dout, N, s.rows, s.outStride, s.rowStart, ad.layout.scale);
  const du = allocLike(ad.w, N * r);
  matmulBackwardRef(du, dad.subarray(s.b, s.b + s.rows * r), null, ddelta, u, Bm, N, r, s.rows);
  matmulBackwardRef(dinp, dad.subarray(s.a, s.a + r * s.inDim), null, du, inp, A, N, s.inDim, r);
}

function specsOf(ad: Adapter | null, l: number, w: LoraBaseWeight): LoraTargetSpec[] {
  return ad ? ad.layout.layers[l].filter((s) => s.weight === w) : [];
}

// ---------------------------------------------------------------------------------------
// The network: parameter views, activations, forward, backward

type Params = ParamTensors<F32>;

/** Named views into a flat buffer of the layout (weights or gradients alike). */
export function paramViews(buf: F32, layout: ParamLayout): Params {
  return paramTensors(layout, (off, size) => buf.subarray(off, off + size));
}

interface LayerActs {
  ln1: F32; // (N,C)
  ln1Mean: F32; // (N)
  ln1Rstd: F32; // (N)
  qkvRaw: F32 | null; // (N,QKV) the projection before the q/k norms (qkNorm only)
  qkRstd: F32 | null; // (N,NH+KVH) the q/k norms' rstd
  qkv: F32; // (N,QKV), q and k after the q/k norms and rope
  atty: F32; // (N,Q) attention output
  attLse: F32; // (B,NH,T) logsumexp of each query's scores, for backward
  attproj: F32; // (N,C)
  res2: F32; // (N,C) residual after attention
  ln2: F32; // (N,C)
  ln2Mean: F32; // (N)
  ln2Rstd: F32; // (N)
  fch: F32; // (N,H) or (N,2H) for swiglu's [gate | up]
  fchAct: F32; // (N,H)
  fcproj: F32; // (N,C)
  res3: F32; // (N,C) residual after the MLP
}

/** What forward() keeps of a layer: everything, or only its output with recomputation. */
type SavedLayer = LayerActs | Pick<LayerActs, "res3">;

export interface Activations {
  B: number;
  T: number;
  tokens: Int32Array;
  targets: Int32Array;
  positions: Int32Array;
  encoded: F32; // (N,C)
  /** Per layer; with recomputation only each layer's output (backward re-runs the layer). */
  layers: SavedLayer[];
  lnf: F32; // (N,C)
  lnfMean: F32; // (N)
  lnfRstd: F32; // (N)
  logits: F32; // (N,V)
  invTemp: number;
  logp: F32; // (N)
  entropy: F32; // (N)
  values: F32 | null; // (N)
}

function defaultPositions(B: number, T: number): Int32Array {
  return Int32Array.from({ length: B * T }, (_, n) => n % T);
}

export function checkBatch(c: ModelConfig, batch: ScoreBatch): Int32Array {
  const N = batch.B * batch.T;
  if (batch.tokens.length !== N || batch.targets.length !== N) {
    throw new Error(`ScoreBatch: tokens and targets must have B*T = ${N} entries`);
  }
  const positions = batch.positions ?? defaultPositions(batch.B, batch.T);
  if (batch.temperature !== undefined && !(batch.temperature > 0)) {
    throw new Error(`ScoreBatch.temperature must be > 0, got ${batch.temperature}`);
  }
  for (let n = 0; n < N; n++) {
    if (positions[n] < 0 || positions[n] >= c.context)
      throw new Error(`position ${positions[n]} is outside the context ${c.context}`);
    if (batch.tokens[n] < 0 || batch.tokens[n] >= c.vocab)
      throw new Error(`token ${batch.tokens[n]} is outside the vocabulary`);
    if (batch.targets[n] < 0 || batch.targets[n] >= c.vocab)
      throw new Error(`target ${batch.targets[n]} is outside the vocabulary`);
  }
  return positions;
}

/** Layer l's forward from its input `residual` (N,C): every activation its backward reads. */
function layerForward(
  c: ModelConfig,
  p: Params["layers"][number],
  residual: F32,
  positions: Int32Array,
  B: number,
  T: number,
  l: number,
  ad: Adapter | null,
): LayerActs {
  const N = B * T;
  const C = c.dModel;
  const { NH, KVH, hs, Q, QKV } = attnDims(c);
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const f = (n: number) => allocLike(residual, n);
  const lora = (out: F32, inp: F32, w: LoraBaseWeight) => {
    for (const s of specsOf(ad, l, w)) loraForward(out, inp, s, ad!, N);
  };
  const a: LayerActs = {
    ln1: f(N * C),
    ln1Mean: f(N),
    ln1Rstd: f(N),
    qkvRaw: c.qkNorm ? f(N * QKV) : null,
    qkRstd: c.qkNorm ? f(N * (NH + KVH)) : null,
    qkv: f(N * QKV),
    atty: f(N * Q),
    attLse: f(B * NH * T),
    attproj: f(N * C),
    res2: f(N * C),
    ln2: f(N * C),
    ln2Mean: f(N),
    ln2Rstd: f(N),
    fch: f(N * fcRows),
    fchAct: f(N * H),
    fcproj: f(N * C),
    res3: f(N * C),
  };
  normForward(c, a.ln1, a.ln1Mean, a.ln1Rstd, residual, p.ln1w, p.ln1b, N);
  matmulForwardRef(a.qkvRaw ?? a.qkv, a.ln1, p.qkvw, p.qkvb, N, C, QKV);
  lora(a.qkvRaw ?? a.qkv, a.ln1, "qkvw");
  if (a.qkvRaw && a.qkRstd && p.qnormw && p.knormw)
    qkNormForwardRef(a.qkv, a.qkRstd, a.qkvRaw, p.qnormw, p.knormw, N, NH, KVH, hs, c.normEps);
  ropeForward(c, a.qkv, positions, N);
  attentionForwardRef(a.atty, a.attLse, a.qkv, null, B, T, Q, NH, KVH);
  matmulForwardRef(a.attproj, a.atty, p.projw, p.projb, N, Q, C);
  lora(a.attproj, a.atty, "projw");
  residualForwardRef(a.res2, a.attproj, residual, N * C);
  normForward(c, a.ln2, a.ln2Mean, a.ln2Rstd, a.res2, p.ln2w, p.ln2b, N);
  matmulForwardRef(a.fch, a.ln2, p.fcw, p.fcb, N, C, fcRows);
  lora(a.fch, a.ln2, "fcw");
  mlpActForward(c, a.fchAct, a.fch, N);
  matmulForwardRef(a.fcproj, a.fchAct, p.fcprojw, p.fcprojb, N, H, C);
  lora(a.fcproj, a.fchAct, "fcprojw");
  residualForwardRef(a.res3, a.fcproj, a.res2, N * C);
  return a;
}

/**
 * The whole forward pass over (B,T); returns everything backward needs. With an adapter, LoRA
 * adds into q/k/v/o/gate/up/down. recompute: keep only each layer's output (backward re-runs
 * each layer from its input: the same ops on the same inputs, the same bits).
 */
export function forward(
  c: ModelConfig,
  params: Params,
  batch: ScoreBatch,
  ad: Adapter | null = null,
  recompute = false,
): Activations {
  const { B, T } = batch;
  const positions = checkBatch(c, batch);
  const N = B * T;
  const C = c.dModel;
  const V = c.vocab;
  const f = (n: number) => allocLike(params.wte, n);

  const encoded = f(N * C); // (N,C)
  embeddingForwardRef(encoded, batch.tokens, positions, params.wte, params.wpe, N, C);
  const layers: SavedLayer[] = [];
  let residual: F32 = encoded;
  for (const [l, p] of params.layers.entries()) {
    const a = layerForward(c, p, residual, positions, B, T, l, ad);
    layers.push(recompute ? { res3: a.res3 } : a);
    residual = a.res3;
  }
  const lnf = f(N * C);
  const lnfMean = f(N);
  const lnfRstd = f(N);
  normForward(c, lnf, lnfMean, lnfRstd, residual, params.lnfw, params.lnfb, N);
  const logits = f(N * V); // (N,V)
  matmulForwardRef(logits, lnf, params.lmHead, null, N, C, V);
  const logp = f(N);
  const entropy = f(N);
  const invTemp = 1 / (batch.temperature ?? 1);
  logSoftmaxRef(logp, entropy, null, logits, batch.targets, f(N), f(N), N, V, invTemp);
  let values: F32 | null = null;
  if (params.valuew && params.valueb) {
    values = f(N);
    matmulForwardRef(values, lnf, params.valuew, params.valueb, N, C, 1);
  }
  return {
    B,
    T,
    tokens: batch.tokens,
    targets: batch.targets,
    positions,
    encoded,
    layers,
    lnf,
    lnfMean,
    lnfRstd,
    logits,
    invTemp,
    logp,
    entropy,
    values,
  };
}

/**
 * Backward of forward(): ADDS d(loss)/d(params) into grads, given dloss/d(logp, entropy,
 * values). With an adapter, its gradients are added into `dad` (its layout) and `grads` may be
 * null: the frozen base gets no gradient (its matmuls compute only the input gradient).
 */
export function backward(
  c: ModelConfig,
  params: Params,
  grads: Params | null,
  acts: Activations,
  g: { dlogp: F32; dentropy?: F32; dvalue?: F32 },
  ad: Adapter | null = null,
  dad: F32 | null = null,
): void {
  const { B, T } = acts;
  const N = B * T;
  const C = c.dModel;
  const { NH, KVH, hs, Q, QKV } = attnDims(c);
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const V = c.vocab;
  const f = (n: number) => allocLike(params.wte, n);
  if (ad && !dad) throw new Error("backward: an adapter needs its gradient buffer");
  // A frozen base: norm weight gradients go to a scratch sink, matmul weight gradients are skipped.
  const sink = f(C);
  const dn = (x: F32 | null | undefined): F32 => (grads ? x! : sink.fill(0));
  const dnb = (has: F32 | null, x: F32 | null | undefined): F32 | null =>
    has === null ? null : grads ? x! : sink.fill(0);
  const lora = (l: number, w: LoraBaseWeight, dinp: F32, dout: F32, inp: F32) => {
    for (const s of specsOf(ad, l, w)) loraBackward(dinp, dad!, dout, inp, s, ad!, N);
  };

  // The head: dlogits (N,V) of sum_n dlogp[n]*logp[n] + dentropy[n]*entropy[n] (logp and
  // entropy are recomputed into scratch by the fused op).
  const dlogits = f(N * V);
  const dentropy = g.dentropy ?? f(N);
  logSoftmaxRef(f(N), f(N), dlogits, acts.logits, acts.targets, g.dlogp, dentropy, N, V, acts.invTemp);
  const dlnf = f(N * C);
  matmulBackwardRef(dlnf, grads?.lmHead ?? null, null, dlogits, acts.lnf, params.lmHead, N, C, V);
  if (g.dvalue && params.valuew && grads?.valuew && grads.valueb) {
    matmulBackwardRef(dlnf, grads.valuew, grads.valueb, g.dvalue, acts.lnf, params.valuew, N, C, 1);
  }
  // dres: the gradient of the residual stream, carried down through the blocks. A residual
  // add passes its gradient unchanged to both inputs, so dres is also d(fcproj) and d(attproj).
  const dres = f(N * C);
  const last = acts.layers.length > 0 ? acts.layers[acts.layers.length - 1].res3 : acts.encoded;
  normBackward(
    c,
    dres,
    dn(grads?.lnfw),
    dnb(params.lnfb, grads?.lnfb),
    dlnf,
    last,
    params.lnfw,
    acts.lnfMean,
    acts.lnfRstd,
    N,
  );

  const dfchAct = f(N * H);
  const dfch = f(N * fcRows);
  const dln = f(N * C);
  const datty = f(N * Q);
  const dqkv = f(N * QKV);
  const dqkvRaw = c.qkNorm ? f(N * QKV) : null;
  for (let l = c.layers - 1; l >= 0; l--) {
    const p = params.layers[l];
    const d = grads?.layers[l];
    const residual = l === 0 ? acts.encoded : acts.layers[l - 1].res3;
    const saved = acts.layers[l];
    const a = "ln1" in saved ? saved : layerForward(c, p, residual, acts.positions, B, T, l, ad);
    // MLP (dres = d res3 = d fcproj)
    dfchAct.fill(0);
    matmulBackwardRef(dfchAct, d?.fcprojw ?? null, d?.fcprojb ?? null, dres, a.fchAct, p.fcprojw, N, H, C);
    lora(l, "fcprojw", dfchAct, dres, a.fchAct);
    dfch.fill(0);
    mlpActBackward(c, dfch, dfchAct, a.fch, N);
    dln.fill(0);
    matmulBackwardRef(dln, d?.fcw ?? null, d?.fcb ?? null, dfch, a.ln2, p.fcw, N, C, fcRows);
    lora(l, "fcw", dln, dfch, a.ln2);
    normBackward(c, dres, dn(d?.ln2w), dnb(p.ln2b, d?.ln2b), dln, a.res2, p.ln2w, a.ln2Mean, a.ln2Rstd, N);
    // Attention (dres = d res2 = d attproj)
    datty.fill(0);
    matmulBackwardRef(datty, d?.projw ?? null, d?.projb ?? null, dres, a.atty, p.projw, N, Q, C);
    lora(l, "projw", datty, dres, a.atty);
    dqkv.fill(0);
    attentionBackwardRef(dqkv, datty, a.qkv, a.atty, a.attLse, null, B, T, Q, NH, KVH);
    ropeBackward(c, dqkv, acts.positions, N);
    let dproj = dqkv; // d(qkv projection output)
    if (dqkvRaw && a.qkvRaw && a.qkRstd && p.qnormw && p.knormw) {
      dqkvRaw.fill(0);
      qkNormBackwardRef(
        dqkvRaw,
        d ? d.qnormw! : f(hs),
        d ? d.knormw! : f(hs),
        dqkv,
        a.qkvRaw,
        p.qnormw,
        p.knormw,
        a.qkRstd,
        N,
        NH,
        KVH,
        hs,
      );
      dproj = dqkvRaw;
    }
    dln.fill(0);
    matmulBackwardRef(dln, d?.qkvw ?? null, d?.qkvb ?? null, dproj, a.ln1, p.qkvw, N, C, QKV);
    lora(l, "qkvw", dln, dproj, a.ln1);
    normBackward(c, dres, dn(d?.ln1w), dnb(p.ln1b, d?.ln1b), dln, residual, p.ln1w, a.ln1Mean, a.ln1Rstd, N);
  }
  if (grads) embeddingBackwardRef(grads.wte, grads.wpe, dres, acts.tokens, acts.positions, N, C);
}

// ---------------------------------------------------------------------------------------
// Optimizer

/**
 * Global norm, clip (clipScale, as torch.nn.utils.clip_grad_norm_ and kernels' clipByNorm),
 * then AdamW as torch.optim.AdamW (adamwRef). Weight decay applies to every parameter. A
 * non-finite norm leaves params, moments and step unchanged.
 */
export function adamwStep(params: F32, grads: F32, state: OptimizerState, h: AdamWHparams): StepResult {
  const norm = gradNormRef(grads, grads.length);
  if (!Number.isFinite(norm)) return { gradNorm: norm, skipped: true };
  const scale = h.maxGradNorm > 0 ? clipScale(norm, h.maxGradNorm) : 1;
  const step = state.step + 1;
  const { lr, beta1, beta2, eps, weightDecay } = h;
  adamwRef(
    params,
    grads,
    state.m,
    state.v,
    params.length,
    { lr, beta1, beta2, eps, weightDecay, step },
    scale,
  );
  state.step = step;
  return { gradNorm: norm, skipped: false };
}

// ---------------------------------------------------------------------------------------
// KV-cache decoding: one sequence at a time, a chunk of new tokens per call

export interface KvCache {
  k: F32[]; // per layer (context, KV), after the q/k norm and rope
  v: F32[]; // per layer (context, KV)
  length: number;
}

export function newKvCache(c: ModelConfig): KvCache {
  const { KV } = attnDims(c);
  const make = (): F32[] => Array.from({ length: c.layers }, () => new Float32Array(c.context * KV));
  return { k: make(), v: make(), length: 0 };
}

/**
 * Feeds n tokens at positions length..length+n-1 to one sequence's cache and returns the
 * logits (V) at the last of them (what the next token is sampled from; as the WebGPU session,
 * the head runs for that row only). Same ops as forward() on the full sequence, with the
 * attention of each new token over the cache (decodeAttentionRef).
 */
export function forwardCached(
  c: ModelConfig,
  params: Params,
  cache: KvCache,
  tokens: number[],
  ad: Adapter | null = null,
): F32 {
  const n = tokens.length;
  const start = cache.length;
  if (start + n > c.context)
    throw new Error(`sequence of ${start + n} tokens exceeds the context ${c.context}`);
  const C = c.dModel;
  const { NH, KVH, hs, Q, KV, QKV } = attnDims(c);
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const f = (k: number) => allocLike(params.wte, k);
  const positions = Int32Array.from({ length: n }, (_, i) => start + i);
  const x = f(n * C); // (n,C) residual stream
  embeddingForwardRef(x, Int32Array.from(tokens), positions, params.wte, params.wpe, n, C);
  const ln = f(n * C);
  const mean = f(n);
  const rstd = f(n);
  const qkvRaw = c.qkNorm ? f(n * QKV) : null;
  const qkRstd = f(n * (NH + KVH));
  const qkv = f(n * QKV);
  const atty = f(n * Q);
  const tmp = f(n * C);
  const fch = f(n * fcRows);
  const act = f(n * H);
  params.layers.forEach((p, l) => {
    const lora = (out: F32, inp: F32, w: LoraBaseWeight) => {
      for (const s of specsOf(ad, l, w)) loraForward(out, inp, s, ad!, n);
    };
    normForward(c, ln, mean, rstd, x, p.ln1w, p.ln1b, n);
    matmulForwardRef(qkvRaw ?? qkv, ln, p.qkvw, p.qkvb, n, C, QKV);
    lora(qkvRaw ?? qkv, ln, "qkvw");
    if (qkvRaw && p.qnormw && p.knormw)
      qkNormForwardRef(qkv, qkRstd, qkvRaw, p.qnormw, p.knormw, n, NH, KVH, hs, c.normEps);
    ropeForward(c, qkv, positions, n);
    const K = cache.k[l]; // (context,KV)
    const Vc = cache.v[l]; // (context,KV)
    for (let i = 0; i < n; i++) {
      K.set(qkv.subarray(i * QKV + Q, i * QKV + Q + KV), (start + i) * KV);
      Vc.set(qkv.subarray(i * QKV + Q + KV, (i + 1) * QKV), (start + i) * KV);
    }
    // new token i sees the cache up to and including its own position
    for (let i = 0; i < n; i++) {
      const q = qkv.subarray(i * QKV, (i + 1) * QKV);
      const lens = Int32Array.of(start + i + 1);
      decodeAttentionRef(
        atty.subarray(i * Q, (i + 1) * Q),
        q,
        K,
        Vc,
        lens,
        null,
        1,
        c.context,
        Q,
        NH,
        QKV,
        KVH,
      );
    }
    matmulForwardRef(tmp, atty, p.projw, p.projb, n, Q, C);
    lora(tmp, atty, "projw");
    residualForwardRef(x, x, tmp, n * C);
    normForward(c, ln, mean, rstd, x, p.ln2w, p.ln2b, n);
    matmulForwardRef(fch, ln, p.fcw, p.fcb, n, C, fcRows);
    lora(fch, ln, "fcw");
    mlpActForward(c, act, fch, n);
    matmulForwardRef(tmp, act, p.fcprojw, p.fcprojb, n, H, C);
    lora(tmp, act, "fcprojw");
    residualForwardRef(x, x, tmp, n * C);
  });
  normForward(c, ln, mean, rstd, x, params.lnfw, params.lnfb, n);
  const logits = f(c.vocab); // (V) of the last row
  matmulForwardRef(logits, ln.subarray((n - 1) * C, n * C), params.lmHead, null, 1, C, c.vocab);
  cache.length = start + n;
  return logits;
}

/**
 * The kernels' sampler parameters; row b draws at step + rowStep[b] (a session passes its
 * per-sequence counts of sampled tokens as rowStep, with step 0).
 */
export function samplerParams(s: SamplingOptions, step: number, rowStep?: ArrayLike<number>) {
  return {
    temperature: s.temperature,
    topK: s.topK ?? 0,
    topP: s.topP ?? 1,
    seed: s.seed >>> 0,
    step,
    rowStep,
  };
}

// A sampled token is fed to the cache lazily, at the next decode or append, so a sequence
// can sample its last token when its cache already holds context-1 tokens.
class CpuGenerationSession implements GenerationSession {
  private caches: KvCache[] = [];
  private lastLogits: F32[] = [];
  private pending: (number | null)[] = [];
  /** Tokens each sequence has sampled: the sampler's counter for its next draw. */
  private sampled: number[] = [];

  constructor(
    private readonly model: CpuModel,
    private readonly sampling: SamplingOptions,
  ) {}

  async prefill(prompts: number[][]): Promise<void> {
    this.caches = prompts.map(() => newKvCache(this.model.config));
    this.pending = prompts.map(() => null);
    this.sampled = prompts.map(() => 0);
    this.lastLogits = prompts.map((p, i) => {
      if (p.length === 0) throw new Error(`prompt ${i} is empty`);
      return this.feed(i, p);
    });
  }

  private feed(seq: number, tokens: number[]): F32 {
    return forwardCached(this.model.config, this.model.views, this.caches[seq], tokens, this.model.adapter);
  }

  private flush(seq: number, extra: number[] = []): void {
    const p = this.pending[seq];
    const tokens = p === null ? extra : [p, ...extra];
    this.pending[seq] = null;
    if (tokens.length > 0) this.lastLogits[seq] = this.feed(seq, tokens);
  }

  async decode(active: ArrayLike<boolean>): Promise<DecodeResult> {
    const B = this.caches.length;
    const V = this.model.config.vocab;
    const logits = new Float32Array(B * V); // (B,V), rows of inactive sequences stay 0
    for (let b = 0; b < B; b++) {
      if (!active[b]) continue;
      this.flush(b);
      if (this.caches[b].length >= this.model.config.context) throw new Error(`sequence ${b} is full`);
      logits.set(this.lastLogits[b], b * V);
    }
    const sampled = new Int32Array(B);
    const logps = new Float32Array(B);
    sampleRef(sampled, logps, logits, B, V, samplerParams(this.sampling, 0, this.sampled));
    const tokens = new Int32Array(B).fill(-1);
    const logprobs = new Float32Array(B).fill(Number.NaN);
    for (let b = 0; b < B; b++) {
      if (!active[b]) continue;
      tokens[b] = sampled[b];
      logprobs[b] = logps[b];
      this.pending[b] = sampled[b];
      this.sampled[b]++;
    }
    return { tokens, logprobs };
  }

  async append(seq: number, tokens: number[]): Promise<void> {
    this.flush(seq, tokens);
  }

  /** (V) logits the next decode of this sequence samples from (tests). */
  nextLogits(seq: number): Float32Array {
    this.flush(seq);
    return Float32Array.from(this.lastLogits[seq]);
  }

  lengths(): number[] {
    return this.caches.map((c, b) => c.length + (this.pending[b] === null ? 0 : 1));
  }

  finish(): void {
    this.caches = [];
    this.lastLogits = [];
    this.pending = [];
  }
}

// ---------------------------------------------------------------------------------------
// The PolicyModel on the CPU

export class CpuModel implements PolicyModel {
  readonly backend = "cpu" as const;
  readonly layout: ParamLayout;
  /** The adapter's layout with LoRA (config.lora.rank > 0), else null. */
  readonly lora: LoraLayout | null;
  /** Base weights (layout.total); read only when LoRA is on. */
  readonly params: Float32Array;
  /** Adapter weights (lora.total) with LoRA. */
  readonly adapterWeights: Float32Array | null;
  /** Gradients of the trained parameters: the base layout, or the adapter's with LoRA. */
  readonly grads: Float32Array;
  readonly views: Params;
  private readonly gradViews: Params | null;
  private opt: OptimizerState;
  private acts: Activations | null = null;
  /** Per-layer activation recomputation: forward keeps each layer's output, backward re-runs the layer. */
  recompute = false;
  /** False on the reference view of a LoRA model: the base alone. */
  private adapterOn = true;
  /** f16 base tensors kept f32 (beyond f16's range). */
  private keptF32: KeptF32[];

  constructor(
    readonly config: ModelConfig,
    weights?: Float32Array,
    seed = 0,
    adapterWeights?: Float32Array,
    /** Share these base weights instead of copying (LoRA: the base is never written). */
    shareBase = false,
  ) {
    this.layout = paramLayout(config);
    this.lora = config.lora.rank > 0 ? loraLayout(config, config.lora) : null;
    this.params = weights
      ? shareBase
        ? weights
        : Float32Array.from(weights)
      : initParams(config, this.layout, seed);
    if (this.params.length !== this.layout.total) {
      throw new Error(`weights have ${this.params.length} floats, the layout needs ${this.layout.total}`);
    }
    // An f16 base (model/half.ts): the linear weights rounded to f16 once, here (a shared base already is).
    this.keptF32 = halfBase(config) && !shareBase ? roundHalfBase(this.layout, this.params) : [];
    if (this.lora) {
      this.adapterWeights = adapterWeights ? Float32Array.from(adapterWeights) : initLora(this.lora, seed);
      if (this.adapterWeights.length !== this.lora.total)
        throw new Error(
          `adapter has ${this.adapterWeights.length} floats, the LoRA layout needs ${this.lora.total}`,
        );
    } else {
      if (adapterWeights) throw new Error("adapter weights given but config.lora.rank is 0");
      this.adapterWeights = null;
    }
    const trained = this.lora ? this.lora.total : this.layout.total;
    this.grads = new Float32Array(trained);
    this.views = paramViews(this.params, this.layout);
    this.gradViews = this.lora ? null : paramViews(this.grads, this.layout);
    this.opt = { m: new Float32Array(trained), v: new Float32Array(trained), step: 0 };
  }

  /** The adapter the forward passes use, or null (no LoRA, or the reference view). */
  get adapter(): Adapter | null {
    return this.lora && this.adapterOn ? { layout: this.lora, w: this.adapterWeights! } : null;
  }

  /** A Hugging Face checkpoint (model/hf/read.ts): config.json and its safetensors. */
  static async fromHf(dir: ModelDir, opts: HfOptions = {}): Promise<CpuModel> {
    const { config, weights } = await loadHfModel(dir, opts);
    return new CpuModel(config, weights);
  }

  async forwardScore(batch: ScoreBatch, options: { logits?: boolean } = {}): Promise<ScoreResult> {
    this.acts = forward(this.config, this.views, batch, this.adapter, this.recompute);
    const a = this.acts;
    return {
      logp: Float32Array.from(a.logp),
      entropy: Float32Array.from(a.entropy),
      values: a.values ? Float32Array.from(a.values) : undefined,
      logits: options.logits ? Float32Array.from(a.logits) : undefined,
    };
  }

  async backward(grads: ScoreGrads): Promise<void> {
    if (!this.acts) throw new Error("backward() needs a forwardScore() first");
    if (this.lora && !this.adapterOn)
      throw new Error("backward(): the reference view of a LoRA model is frozen");
    backward(
      this.config,
      this.views,
      this.gradViews,
      this.acts,
      grads,
      this.adapter,
      this.lora ? this.grads : null,
    );
  }

  zeroGrad(): void {
    this.grads.fill(0);
  }

  /** AdamW on the trained parameters: the adapter with LoRA (the base stays bit-identical). */
  async step(hparams: AdamWHparams): Promise<StepResult> {
    return adamwStep(this.adapterWeights ?? this.params, this.grads, this.opt, hparams);
  }

  async getWeights(): Promise<Float32Array> {
    return this.params.slice();
  }

  async setWeights(weights: Float32Array): Promise<void> {
    if (weights.length !== this.layout.total)
      throw new Error(`setWeights: ${weights.length} floats, expected ${this.layout.total}`);
    this.params.set(weights);
    if (halfBase(this.config)) this.keptF32 = roundHalfBase(this.layout, this.params);
  }

  /** How the base is stored: an f16 base's values are rounded to f16 and held in f32 here. */
  baseStorage(): BaseStorage {
    const n = halfBase(this.config) ? halfTensors(this.layout).length - this.keptF32.length : 0;
    return {
      requested: this.config.baseDtype,
      storage: "f32",
      reason:
        this.config.baseDtype === "f16" ? "the CPU backend holds f32 arrays (of the f16-rounded values)" : "",
      halfTensors: n,
      keptF32: this.keptF32,
      bytes: this.params.byteLength,
    };
  }

  async getAdapter(): Promise<Float32Array | null> {
    return this.adapterWeights ? this.adapterWeights.slice() : null;
  }

  async setAdapter(w: Float32Array): Promise<void> {
    if (!this.lora || !this.adapterWeights)
      throw new Error("setAdapter: the model has no LoRA (config.lora.rank 0)");
    if (w.length !== this.lora.total)
      throw new Error(`setAdapter: ${w.length} floats, the LoRA layout needs ${this.lora.total}`);
    this.adapterWeights.set(w);
  }

  async getGrads(): Promise<Float32Array> {
    return this.grads.slice();
  }

  async getOptimizerState(): Promise<OptimizerState> {
    return { m: this.opt.m.slice(), v: this.opt.v.slice(), step: this.opt.step };
  }

  async setOptimizerState(state: OptimizerState): Promise<void> {
    const n = this.grads.length;
    if (state.m.length !== n || state.v.length !== n) {
      throw new Error(`setOptimizerState: moments must have ${n} floats`);
    }
    this.opt = { m: state.m.slice(), v: state.v.slice(), step: state.step };
  }

  async frozenCopy(): Promise<PolicyModel> {
    // With LoRA the base never changes: the copy shares it and copies the adapter.
    const m = new CpuModel(this.config, this.params, 0, this.adapterWeights ?? undefined, this.lora !== null);
    m.adapterOn = this.adapterOn;
    m.recompute = true; // a frozen copy scores: each layer's output kept only (a backward would still be exact)
    m.keptF32 = this.keptF32;
    return m;
  }

  async referencePolicy(): Promise<PolicyModel> {
    if (!this.lora) return this.frozenCopy();
    const m = new CpuModel(this.config, this.params, 0, this.adapterWeights!, true);
    m.adapterOn = false;
    m.recompute = true; // it only scores (as frozenCopy)
    m.keptF32 = this.keptF32;
    return m;
  }

  startGeneration(sampling: SamplingOptions): GenerationSession & { nextLogits(seq: number): Float32Array } {
    return new CpuGenerationSession(this, sampling);
  }

  dispose(): void {
    this.acts = null;
  }
}
