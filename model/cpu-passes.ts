// The transformer's forward and backward on the CPU (model/cpu.ts is the CpuModel around
// them), written with the ops of kernels/reference.ts: the specification model/gpu-passes.ts
// must equal. Reads top to bottom (llm.c train_gpt2.c style: outputs first, d-prefixed
// gradients, backward ADDS into gradients): the config's choice of ops, the LoRA adapter's
// term, the activations, the whole-network forward and backward, the optimizer step.
// Legend and network as model/cpu.ts. Tested by model/cpu.test.ts (PyTorch golden, finite
// differences, overfitting) and model/lora.test.ts.
import {
  adamwRef,
  attentionBackwardRef,
  attentionForwardRef,
  clipScale,
  columnsAddRef,
  columnsGatherRef,
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
  swigluBackwardRef,
  swigluForwardRef,
} from "../kernels/reference";
import type { AdamWHparams, OptimizerState, ScoreBatch, StepResult } from "./api";
import {
  attnDims,
  type ModelConfig,
  mlpHidden,
  type ParamLayout,
  type ParamTensors,
  paramTensors,
} from "./config";
import type { LoraBaseWeight, LoraLayout, LoraTargetSpec } from "./lora";

// The network takes float32 (the model) or float64 (finite-difference checks) arrays.
export type F32 = Float32Array<ArrayBufferLike> | Float64Array<ArrayBufferLike>;

export function allocLike(like: F32, n: number): F32 {
  return like instanceof Float64Array ? new Float64Array(n) : new Float32Array(n);
}

// ---------------------------------------------------------------------------------------
// The config's choice of ops

export function normForward(
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

export function normBackward(
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

export function mlpActForward(c: ModelConfig, out: F32, fch: F32, N: number): void {
  const H = mlpHidden(c);
  if (c.mlp === "gelu") geluForwardRef(out, fch, N * H);
  else swigluForwardRef(out, fch, N, H);
}

export function mlpActBackward(c: ModelConfig, dfch: F32, dout: F32, fch: F32, N: number): void {
  const H = mlpHidden(c);
  if (c.mlp === "gelu") geluBackwardRef(dfch, fch, dout, N * H);
  else swigluBackwardRef(dfch, fch, dout, N, H);
}

/** The q and k parts of qkv (N,QKV) as the RoPE op sees them. */
export function ropeShapes(c: ModelConfig, N: number): RopeShape[] {
  const { NH, KVH, hs, Q, QKV } = attnDims(c);
  const s = { N, headDim: hs, rowStride: QKV, base: c.ropeTheta };
  return [
    { ...s, nHeads: NH, colOffset: 0 },
    { ...s, nHeads: KVH, colOffset: Q },
  ];
}

/** Rotates q and k inside qkv (N,QKV) in place (no-op for learned positions). */
export function ropeForward(c: ModelConfig, qkv: F32, positions: Int32Array, N: number): void {
  if (c.positional === "rope") for (const s of ropeShapes(c, N)) ropeForwardRef(qkv, positions, s);
}

export function ropeBackward(c: ModelConfig, dqkv: F32, positions: Int32Array, N: number): void {
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
export function loraForward(out: F32, inp: F32, s: LoraTargetSpec, ad: Adapter, N: number): void {
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
export function loraBackward(
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

export function specsOf(ad: Adapter | null, l: number, w: LoraBaseWeight): LoraTargetSpec[] {
  return ad ? ad.layout.layers[l].filter((s) => s.weight === w) : [];
}

// ---------------------------------------------------------------------------------------
// The network: parameter views, activations, forward, backward

export type Params = ParamTensors<F32>;

/** Named views into a flat buffer of the layout (weights or gradients alike). */
export function paramViews(buf: F32, layout: ParamLayout): Params {
  return paramTensors(layout, (off, size) => buf.subarray(off, off + size));
}

export interface LayerActs {
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
export type SavedLayer = LayerActs | Pick<LayerActs, "res3">;

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

export function defaultPositions(B: number, T: number): Int32Array {
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
export function layerForward(
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

/** Gradient sinks of backward(): a fresh zeroed buffer, and a weight's gradient or a scratch sink for a frozen base. */
interface GradSinks {
  f: (n: number) => F32;
  dn: (x: F32 | null | undefined) => F32;
  dnb: (has: F32 | null, x: F32 | null | undefined) => F32 | null;
}

/**
 * Backward of the head and the final norm: dlogits (N,V) of sum_n dlogp[n]*logp[n] +
 * dentropy[n]*entropy[n] (logp and entropy are recomputed into scratch by the fused op), the
 * value head, then the final norm. Returns dres, the gradient of the residual stream, carried
 * down through the blocks. A residual add passes its gradient unchanged to both inputs, so dres
 * is also d(fcproj) and d(attproj).
 */
function headBackward(
  c: ModelConfig,
  params: Params,
  grads: Params | null,
  acts: Activations,
  g: { dlogp: F32; dentropy?: F32; dvalue?: F32 },
  { f, dn, dnb }: GradSinks,
): F32 {
  const { B, T } = acts;
  const N = B * T;
  const C = c.dModel;
  const V = c.vocab;
  const dlogits = f(N * V);
  const dentropy = g.dentropy ?? f(N);
  logSoftmaxRef(f(N), f(N), dlogits, acts.logits, acts.targets, g.dlogp, dentropy, N, V, acts.invTemp);
  const dlnf = f(N * C);
  matmulBackwardRef(dlnf, grads?.lmHead ?? null, null, dlogits, acts.lnf, params.lmHead, N, C, V);
  if (g.dvalue && params.valuew && grads?.valuew && grads.valueb) {
    matmulBackwardRef(dlnf, grads.valuew, grads.valueb, g.dvalue, acts.lnf, params.valuew, N, C, 1);
  }
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
  return dres;
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

  const dres = headBackward(c, params, grads, acts, g, { f, dn, dnb });

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
