// The transformer on WebGPU, built from the kernels' ops: the same network as the CPU
// reference (model/cpu.ts), which it must equal. Reads top to bottom: buffers, the forward
// pass, the backward pass, the optimizer step, KV-cache generation, the GpuModel class.
//
// Legend: B batch, T time, C channels (dModel), NH query heads, KVH key/value heads, hs head
// size, Q = NH*hs, KV = KVH*hs, QKV = Q+2KV, H MLP hidden, V vocab, L layers, N = B*T rows.
// Parameters, gradients and the two Adam moments are four FlatBuffers of the one flat layout
// (model/config.ts): one GPUBuffer each, or several cut at tensor starts past the device's
// buffer limit; passes over them (zeroing, grad norm, clip, AdamW, reads and writes) go window
// by window under the binding limit. The token table is bound in row slices (kernels/
// embedding.ts) and the head in chunks of rows and vocabulary slices (model/head.ts), so the
// logits of a batch never exist whole. A forward (or backward) is one command encoder and one submit; a
// forwardScore reads back one small buffer (logp, entropy, values); step() reads back the
// 4-byte gradient norm before deciding to apply AdamW (a non-finite norm changes nothing).
// The base weights are held by model/gpu-base.ts (an f16 base's linear weights as HalfViews, read
// by the f16 matmul). Right padding only (causal attention, no key mask): padding after a token never changes it.
// Generation: per-layer KV caches (B, context, KV); a "feed step" pushes one token for each
// sequence that has input waiting (prompt, appended tool response or the last sampled token)
// through the network and keeps the final normed hidden state of those rows; decode() feeds,
// runs the head chunk by chunk with the kernels' sampler and reads back B tokens and log-probs.
// Tested by model/gpu.gpu.test.ts (PyTorch golden fixture, CPU equality, KV cache, sampling),
// model/hf/read.gpu.test.ts (each Hugging Face family against PyTorch, GQA KV-cache decoding) and
// model/windowed.gpu.test.ts (everything under a lowered binding and buffer limit).
import { tuneMatmulTile } from "../kernels/autotune";
import {
  adamw,
  alignFloats,
  attentionBackward,
  attentionForward,
  clipByNorm,
  columnsAdd,
  columnsGather,
  DEFAULT_MATMUL_TILE,
  decodeAttention,
  embeddingBackward,
  embeddingForward,
  FlatBuffer,
  geluBackward,
  geluForward,
  gradNorm,
  groupRows,
  kvCacheWrite,
  layernormBackward,
  layernormForward,
  matmulBackward,
  matmulForward,
  normChunk,
  normParts,
  type QkNormShape,
  qkNormBackward,
  qkNormForward,
  qkNormScratchSize,
  type Recorder,
  type RowGroupViews,
  Runtime,
  residualForward,
  rmsnormBackward,
  rmsnormForward,
  ropeBackward,
  ropeForward,
  subview,
  swigluBackward,
  swigluForward,
  unsliceLogits,
  type View,
  view,
  zero,
} from "../kernels/index";
import type {
  AdamWHparams,
  DecodeResult,
  DecodeRun,
  GenerationSession,
  OptimizerState,
  PolicyModel,
  RunEnd,
  SamplingOptions,
  ScoreBatch,
  ScoreGrads,
  ScoreResult,
  StepResult,
} from "./api";
import {
  attnDims,
  initParams,
  type LayerTensors,
  type ModelConfig,
  mlpHidden,
  type ParamLayout,
  type ParamTensors,
  paramLayout,
  paramTensors,
} from "./config";
import { checkBatch, samplerParams } from "./cpu";
import { decodeRunStepwise } from "./generate";
import { GpuBase } from "./gpu-base";
import type { BaseStorage } from "./half";
import { headChunks, SampleHead, scoredSpans, TrainHead } from "./head";
import { type HfOptions, loadHfWeights, type ModelDir, readHfConfig } from "./hf/read";
import { initLora, type LoraBaseWeight, type LoraLayout, loraLayout } from "./lora";
import {
  layerActSizes,
  loraScratchSizes,
  NORM_LOG,
  trainCapacity,
  trainGradSizes,
  trainIoSizes,
} from "./memory-plan";

// ---------------------------------------------------------------------------------------
// Buffers

type LayerViews = LayerTensors<View>;
type ParamViews = ParamTensors<View>;

function paramStore(rt: Runtime, layout: ParamLayout, label: string): FlatBuffer {
  return new FlatBuffer(
    rt,
    layout.total,
    label,
    layout.tensors.map((t) => t.offset),
  );
}

function paramViews(store: FlatBuffer, layout: ParamLayout): ParamViews {
  return paramTensors(layout, (off, size) => store.view(off, size));
}

/** Named tensors carved out of one buffer at 256-byte aligned offsets. */
function arena<K extends string>(rt: Runtime, label: string, sizes: Record<K, number>): Record<K, View> {
  let total = 0;
  const at = {} as Record<K, number>;
  for (const k of Object.keys(sizes) as K[]) {
    at[k] = total;
    total += alignFloats(Math.max(1, sizes[k]));
  }
  const buf = rt.buffer(total, label);
  const out = {} as Record<K, View>;
  for (const k of Object.keys(sizes) as K[]) out[k] = view(buf, at[k], sizes[k]);
  return out;
}

// ---------------------------------------------------------------------------------------
// LoRA: the adapter's term added into a fused base output (model/lora.ts, as model/cpu.ts)

/** The adapter's weights: its own flat layout in a FlatBuffer. */
interface GpuAdapter {
  layout: LoraLayout;
  w: FlatBuffer;
}

type LoraScratch = Record<keyof ReturnType<typeof loraScratchSizes>, View>;

/** out columns of each target on weight `w` of layer l += scale * (inp A^T) B^T. */
function loraForward(
  rt: Runtime,
  rec: Recorder,
  ad: GpuAdapter | null,
  sc: LoraScratch | null,
  l: number,
  w: LoraBaseWeight,
  out: View,
  inp: View,
  N: number,
) {
  if (!ad || !sc) return;
  const r = ad.layout.rank;
  for (const s of ad.layout.layers[l]) {
    if (s.weight !== w) continue;
    const A = ad.w.view(s.a, r * s.inDim); // (r,in)
    const Bm = ad.w.view(s.b, s.rows * r); // (rows,r)
    matmulForward(rt, rec, sc.loraU, inp, A, null, N, s.inDim, r); // (N,r)
    matmulForward(rt, rec, sc.loraDelta, sc.loraU, Bm, null, N, r, s.rows); // (N,rows)
    columnsAdd(rt, rec, out, sc.loraDelta, N, s.rows, s.outStride, s.rowStart, ad.layout.scale);
  }
}

/** dinp += the adapter's input gradient; dA, dB (in dad, the adapter's layout) += theirs. u is recomputed. */
function loraBackward(
  rt: Runtime,
  rec: Recorder,
  ad: GpuAdapter | null,
  dad: FlatBuffer | null,
  sc: LoraScratch | null,
  l: number,
  w: LoraBaseWeight,
  dinp: View,
  dout: View,
  inp: View,
  N: number,
) {
  if (!ad || !dad || !sc) return;
  const r = ad.layout.rank;
  for (const s of ad.layout.layers[l]) {
    if (s.weight !== w) continue;
    const A = ad.w.view(s.a, r * s.inDim);
    const Bm = ad.w.view(s.b, s.rows * r);
    matmulForward(rt, rec, sc.loraU, inp, A, null, N, s.inDim, r);
    columnsGather(rt, rec, sc.loraDelta, dout, N, s.rows, s.outStride, s.rowStart, ad.layout.scale);
    zero(rt, rec, sc.loraDu, N * r);
    matmulBackward(
      rt,
      rec,
      sc.loraDu,
      dad.view(s.b, s.rows * r),
      null,
      sc.loraDelta,
      sc.loraU,
      Bm,
      N,
      r,
      s.rows,
    );
    matmulBackward(rt, rec, dinp, dad.view(s.a, r * s.inDim), null, sc.loraDu, inp, A, N, s.inDim, r);
  }
}

type LayerActs = Record<keyof ReturnType<typeof layerActSizes>, View>;

/**
 * Everything a training batch needs, sized for up to `capacity` tokens (B*T): RL minibatches
 * change T every step, so buffers are reused while the batch fits and views are sized to it.
 */
class TrainBuffers {
  readonly io: Record<
    | "tokens"
    | "targets"
    | "pos"
    | "wlp"
    | "went"
    | "dvalue"
    | "encoded"
    | "tmp"
    | "lnf"
    | "lnfMean"
    | "lnfRstd"
    | "values"
    | "out"
    | "wteKeys"
    | "wteStarts"
    | "wteOrder"
    | "wpeKeys"
    | "wpeStarts"
    | "wpeOrder",
    View
  >;
  /**
   * Each layer's saved activations. With recomputation the layers share one arena (the layer
   * being back-propagated re-runs its forward into it) and only each layer's output res3, the
   * next layer's input, is a buffer of its own.
   */
  readonly layers: LayerActs[];
  /** The head's chunk buffers (bounded whatever the batch: model/head.ts). */
  readonly head: TrainHead;
  /** The batch's rows grouped by token and by position, for the embedding backward. */
  wteGroups: RowGroupViews | null = null;
  wpeGroups: RowGroupViews | null = null;
  readonly grad: Record<
    "dres" | "dln" | "datty" | "dqkv" | "dqkvRaw" | "qkScratch" | "dfch" | "dfchAct" | "attScratch",
    View
  >;
  /** 1/temperature of the batch in these buffers (the head's scaling, forward and backward). */
  invTemp = 1;
  /** The rows the head scores (model/head.ts scoredSpans; undefined: all). */
  spans: [number, number][] | undefined;
  /**
   * Offsets (floats) of logp, entropy, values and the previous steps' grad norms inside io.out:
   * one readback per forward.
   */
  readonly outAt: { logp: number; entropy: number; values: number; norm: number };

  B = 0;
  T = 0;

  /** LoRA scratch (null without an adapter). */
  readonly lora: LoraScratch | null;

  constructor(
    rt: Runtime,
    c: ModelConfig,
    readonly capacity: number,
    lora: LoraLayout | null = null,
    /** Per-layer activation recomputation: one shared layer arena + each layer's output. */
    readonly recompute = false,
  ) {
    // The arenas' sizes are the memory plan's (model/memory-plan.ts), so the plan is what this allocates.
    const N = capacity;
    const C = c.dModel;
    const a = alignFloats(N);
    this.outAt = { logp: 0, entropy: a, values: 2 * a, norm: 3 * a };
    this.io = arena(rt, "train-io", trainIoSizes(c, N, NORM_LOG));
    if (recompute) {
      const shared = arena(rt, "train-layer", layerActSizes(c, N));
      this.layers = Array.from({ length: c.layers }, (_, l) => ({
        ...shared,
        res3: view(rt.buffer(N * C, `train-res-${l}`), 0, N * C),
      }));
    } else
      this.layers = Array.from({ length: c.layers }, (_, l) =>
        arena(rt, `train-layer-${l}`, layerActSizes(c, N)),
      );
    this.head = new TrainHead(rt, c.vocab, C, N);
    const grad = trainGradSizes(c, N);
    if (c.qkNorm && grad.qkScratch !== qkNormScratchSize(qkNormShape(c, N)))
      throw new Error("model/memory-plan.ts trainGradSizes: qkScratch differs from kernels/qknorm.ts");
    this.grad = arena(rt, "train-grad", grad);
    this.lora = lora ? arena(rt, "train-lora", loraScratchSizes(lora, N, attnDims(c).hs)) : null;
  }

  /** The GPU buffers these views live in (the head's excepted). */
  private buffers(): Set<GPUBuffer> {
    const bufs = new Set<GPUBuffer>([this.io.tokens.buffer, this.grad.dres.buffer]);
    if (this.lora) bufs.add(this.lora.loraU.buffer);
    for (const l of this.layers) bufs.add(l.ln1.buffer).add(l.res3.buffer);
    return bufs;
  }

  /** Bytes allocated for training activations and scratch, the head's chunks excepted. */
  get bytes(): number {
    let n = 0;
    for (const b of this.buffers()) n += b.size;
    return n;
  }

  destroy(): void {
    for (const b of this.buffers()) b.destroy();
    this.head.destroy();
  }
}

// ---------------------------------------------------------------------------------------
// The network: norms and MLP activations by config, forward, backward

function normForward(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  out: View,
  mean: View,
  rstd: View,
  inp: View,
  w: View,
  b: View | null,
  N: number,
) {
  if (c.norm === "layernorm") layernormForward(rt, rec, out, mean, rstd, inp, w, b!, N, c.dModel, c.normEps);
  else rmsnormForward(rt, rec, out, rstd, inp, w, N, c.dModel, c.normEps);
}

function normBackward(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  dinp: View,
  dw: View | null,
  db: View | null,
  dout: View,
  inp: View,
  w: View,
  mean: View,
  rstd: View,
  N: number,
) {
  if (c.norm === "layernorm") layernormBackward(rt, rec, dinp, dw, db, dout, inp, w, mean, rstd, N, c.dModel);
  else rmsnormBackward(rt, rec, dinp, dw, dout, inp, w, rstd, N, c.dModel);
}

function rope(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  qkv: View,
  pos: View,
  N: number,
  backward: boolean,
) {
  const { NH, KVH, hs, Q, QKV } = attnDims(c);
  const parts: [number, number][] = [
    [NH, 0], // q
    [KVH, Q], // k
  ];
  for (const [nHeads, colOffset] of parts) {
    const s = { N, nHeads, headDim: hs, rowStride: QKV, colOffset, base: c.ropeTheta };
    if (backward) ropeBackward(rt, rec, qkv, pos, s);
    else ropeForward(rt, rec, qkv, pos, s);
  }
}

function qkNormShape(c: ModelConfig, N: number): QkNormShape {
  const { NH, KVH, hs } = attnDims(c);
  return { N, NH, KVH, hs, eps: c.normEps };
}

/** One block forward over N rows: residual -> a.res3 (attention is the caller's: full or cached). */
function blockForward(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  p: LayerViews,
  a: Pick<
    LayerActs,
    | "ln1"
    | "ln1Mean"
    | "ln1Rstd"
    | "qkvRaw"
    | "qkRstd"
    | "qkv"
    | "atty"
    | "res2"
    | "ln2"
    | "ln2Mean"
    | "ln2Rstd"
    | "fch"
    | "fchAct"
    | "res3"
  >,
  residual: View,
  tmp: View,
  pos: View,
  N: number,
  attention: () => void,
  lora: (out: View, inp: View, w: LoraBaseWeight) => void = () => {},
) {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { Q, QKV } = attnDims(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  normForward(rt, rec, c, a.ln1, a.ln1Mean, a.ln1Rstd, residual, p.ln1w, p.ln1b, N);
  if (p.qnormw && p.knormw) {
    matmulForward(rt, rec, a.qkvRaw, a.ln1, p.qkvw, p.qkvb, N, C, QKV); // (N,QKV)
    lora(a.qkvRaw, a.ln1, "qkvw");
    qkNormForward(rt, rec, a.qkv, a.qkRstd, a.qkvRaw, p.qnormw, p.knormw, qkNormShape(c, N));
  } else {
    matmulForward(rt, rec, a.qkv, a.ln1, p.qkvw, p.qkvb, N, C, QKV); // (N,QKV)
    lora(a.qkv, a.ln1, "qkvw");
  }
  if (c.positional === "rope") rope(rt, rec, c, a.qkv, pos, N, false);
  attention(); // a.atty (N,Q) from a.qkv
  matmulForward(rt, rec, tmp, a.atty, p.projw, p.projb, N, Q, C);
  lora(tmp, a.atty, "projw");
  residualForward(rt, rec, a.res2, residual, tmp, N * C);
  normForward(rt, rec, c, a.ln2, a.ln2Mean, a.ln2Rstd, a.res2, p.ln2w, p.ln2b, N);
  matmulForward(rt, rec, a.fch, a.ln2, p.fcw, p.fcb, N, C, fcRows); // (N,H) or (N,2H)
  lora(a.fch, a.ln2, "fcw");
  if (c.mlp === "gelu") geluForward(rt, rec, a.fchAct, a.fch, N * H);
  else swigluForward(rt, rec, a.fchAct, a.fch, N, H);
  matmulForward(rt, rec, tmp, a.fchAct, p.fcprojw, p.fcprojb, N, H, C);
  lora(tmp, a.fchAct, "fcprojw");
  residualForward(rt, rec, a.res3, a.res2, tmp, N * C);
}

/** Layer l of the training forward: its input (io.encoded or layer l-1's res3) -> tb.layers[l]. */
function layerForward(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  p: ParamViews,
  tb: TrainBuffers,
  l: number,
  ad: GpuAdapter | null,
) {
  const { B, T, io } = tb;
  const N = B * T;
  const { NH, KVH, Q } = attnDims(c);
  const a = tb.layers[l];
  blockForward(
    rt,
    rec,
    c,
    p.layers[l],
    a,
    l === 0 ? io.encoded : tb.layers[l - 1].res3,
    io.tmp,
    io.pos,
    N,
    () => attentionForward(rt, rec, a.atty, a.lse, a.qkv, null, B, T, Q, NH, KVH),
    (out, inp, w) => loraForward(rt, rec, ad, tb.lora, l, w, out, inp, N),
  );
}

function forwardPass(
  rt: Runtime,
  enc: GPUCommandEncoder,
  c: ModelConfig,
  p: ParamViews,
  tb: TrainBuffers,
  copyLogits?: View,
  ad: GpuAdapter | null = null,
) {
  const rec = enc;
  const { B, T } = tb;
  const N = B * T;
  const C = c.dModel;
  const io = tb.io;
  embeddingForward(rt, rec, io.encoded, io.tokens, io.pos, p.wte, p.wpe, N, C); // (N,C)
  for (let l = 0; l < c.layers; l++) layerForward(rt, rec, c, p, tb, l, ad);
  const residual = c.layers > 0 ? tb.layers[c.layers - 1].res3 : io.encoded;
  normForward(rt, rec, c, io.lnf, io.lnfMean, io.lnfRstd, residual, p.lnfw, p.lnfb, N);
  const out = io.out;
  const o = (at: number) => ({ buffer: out.buffer, offset: out.offset + at * 4, size: N * 4 });
  // logits (N,V) chunk by chunk -> logp, entropy (N)
  tb.head.forward(
    enc,
    o(tb.outAt.logp),
    o(tb.outAt.entropy),
    io.lnf,
    p.lmHead,
    io.targets,
    N,
    tb.invTemp,
    copyLogits,
    tb.spans,
  );
  if (p.valuew && p.valueb) matmulForward(rt, rec, o(tb.outAt.values), io.lnf, p.valuew, p.valueb, N, C, 1);
}

/**
 * Adds d(loss)/d(params) into g, with io.wlp/went/dvalue holding dloss/d(logp, entropy, value).
 * g null: a frozen base (LoRA), whose ops compute only input gradients; the adapter's go to dad.
 */
function backwardPass(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  p: ParamViews,
  g: ParamViews | null,
  tb: TrainBuffers,
  hasValue: boolean,
  ad: GpuAdapter | null = null,
  dad: FlatBuffer | null = null,
) {
  const { B, T } = tb;
  const N = B * T;
  const C = c.dModel;
  const H = mlpHidden(c);
  const { NH, KVH, Q, QKV } = attnDims(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const { io, grad: d } = tb;
  zero(rt, rec, d.dln, N * C); // dlnf
  // dlogits chunk by chunk (recomputing the logits unless the batch was one chunk) -> dlnf, dlmHead
  tb.head.backward(
    rec,
    d.dln,
    g?.lmHead ?? null,
    io.lnf,
    p.lmHead,
    io.targets,
    io.wlp,
    io.went,
    N,
    tb.invTemp,
  );
  if (hasValue && p.valuew && g?.valuew && g.valueb) {
    matmulBackward(rt, rec, d.dln, g.valuew, g.valueb, io.dvalue, io.lnf, p.valuew, N, C, 1);
  }
  const last = c.layers > 0 ? tb.layers[c.layers - 1].res3 : io.encoded;
  zero(rt, rec, d.dres, N * C); // d/d residual stream
  normBackward(
    rt,
    rec,
    c,
    d.dres,
    g?.lnfw ?? null,
    g?.lnfb ?? null,
    d.dln,
    last,
    p.lnfw,
    io.lnfMean,
    io.lnfRstd,
    N,
  );
  for (let l = c.layers - 1; l >= 0; l--) {
    const lp = p.layers[l];
    const lg = g?.layers[l] ?? null;
    const a = tb.layers[l];
    // Recomputation: the shared arena holds the last layer forwarded; re-run this one from its
    // input (the same ops on the same inputs: the same bits as the forward's).
    if (tb.recompute && l < c.layers - 1) layerForward(rt, rec, c, p, tb, l, ad);
    const lora = (w: LoraBaseWeight, dinp: View, dout: View, inp: View) =>
      loraBackward(rt, rec, ad, dad, tb.lora, l, w, dinp, dout, inp, N);
    const residual = l === 0 ? io.encoded : tb.layers[l - 1].res3;
    // MLP: dres is d/d res3 and d/d (MLP output).
    zero(rt, rec, d.dfchAct, N * H);
    matmulBackward(
      rt,
      rec,
      d.dfchAct,
      lg?.fcprojw ?? null,
      lg?.fcprojb ?? null,
      d.dres,
      a.fchAct,
      lp.fcprojw,
      N,
      H,
      C,
    );
    lora("fcprojw", d.dfchAct, d.dres, a.fchAct);
    zero(rt, rec, d.dfch, N * fcRows);
    if (c.mlp === "gelu") geluBackward(rt, rec, d.dfch, a.fch, d.dfchAct, N * H);
    else swigluBackward(rt, rec, d.dfch, a.fch, d.dfchAct, N, H);
    zero(rt, rec, d.dln, N * C);
    matmulBackward(rt, rec, d.dln, lg?.fcw ?? null, lg?.fcb ?? null, d.dfch, a.ln2, lp.fcw, N, C, fcRows);
    lora("fcw", d.dln, d.dfch, a.ln2);
    normBackward(
      rt,
      rec,
      c,
      d.dres,
      lg?.ln2w ?? null,
      lg?.ln2b ?? null,
      d.dln,
      a.res2,
      lp.ln2w,
      a.ln2Mean,
      a.ln2Rstd,
      N,
    );
    // Attention: dres is now d/d res2 and d/d (attention output).
    zero(rt, rec, d.datty, N * Q);
    matmulBackward(rt, rec, d.datty, lg?.projw ?? null, lg?.projb ?? null, d.dres, a.atty, lp.projw, N, Q, C);
    lora("projw", d.datty, d.dres, a.atty);
    zero(rt, rec, d.dqkv, N * QKV);
    attentionBackward(rt, rec, d.dqkv, d.attScratch, d.datty, a.qkv, a.atty, a.lse, null, B, T, Q, NH, KVH);
    if (c.positional === "rope") rope(rt, rec, c, d.dqkv, io.pos, N, true);
    let dproj = d.dqkv; // d(qkv projection output)
    if (lp.qnormw && lp.knormw) {
      zero(rt, rec, d.dqkvRaw, N * QKV);
      const s = qkNormShape(c, N);
      qkNormBackward(
        rt,
        rec,
        d.dqkvRaw,
        lg?.qnormw ?? tb.lora!.loraSinkQ, // a frozen base: the q/k norm weights' gradients go to a sink
        lg?.knormw ?? tb.lora!.loraSinkK,
        d.dqkv,
        a.qkvRaw,
        lp.qnormw,
        lp.knormw,
        a.qkRstd,
        d.qkScratch,
        s,
      );
      dproj = d.dqkvRaw;
    }
    zero(rt, rec, d.dln, N * C);
    matmulBackward(rt, rec, d.dln, lg?.qkvw ?? null, lg?.qkvb ?? null, dproj, a.ln1, lp.qkvw, N, C, QKV);
    lora("qkvw", d.dln, dproj, a.ln1);
    normBackward(
      rt,
      rec,
      c,
      d.dres,
      lg?.ln1w ?? null,
      lg?.ln1b ?? null,
      d.dln,
      residual,
      lp.ln1w,
      a.ln1Mean,
      a.ln1Rstd,
      N,
    );
  }
  if (!g) return; // a frozen base: no embedding gradients
  if (tb.wteGroups) embeddingBackward(rt, rec, g.wte, d.dres, tb.wteGroups, C);
  if (g.wpe && tb.wpeGroups) embeddingBackward(rt, rec, g.wpe, d.dres, tb.wpeGroups, C);
}

// ---------------------------------------------------------------------------------------
// Generation: KV caches and feed steps of one token per sequence

const NO_SLOT = 0xffffffff; // kvCacheWrite skips slots >= Tmax: rows without input write nothing

/** The per-step inputs of a feed step: (B) each, uploaded before the submit that runs it. */
interface FeedInputs {
  tokens: View;
  pos: View;
  slot: View;
  lens: View;
}

/** Most tokens one decodeMany samples per submit (the window the runtime picks from). */
export const MAX_DECODE_WINDOW = 32;

class GpuGenerationSession implements GenerationSession {
  private B = 0;
  private kcache: View[] = [];
  private vcache: View[] = [];
  private step: Record<
    | "tokens"
    | "pos"
    | "slot"
    | "lens"
    | "x"
    | "tmp"
    | "ln1"
    | "ln1Mean"
    | "ln1Rstd"
    | "qkvRaw"
    | "qkRstd"
    | "qkv"
    | "atty"
    | "res2"
    | "ln2"
    | "ln2Mean"
    | "ln2Rstd"
    | "fch"
    | "fchAct"
    | "res3"
    | "sampled"
    | "rowStep",
    View
  > | null = null;
  private loraScratch: LoraScratch | null = null;
  /**
   * Inputs of up to `slots` feed steps recorded into one encoder (tokens, pos, slot, lens, each
   * (slots, aB)), the window's sampler counters (W, aB) and its sampled tokens and log-probs
   * (W, aB) each: one readback for the window.
   */
  private multi: { inputs: GPUBuffer; slots: number; counters: View; out: View } | null = null;
  /** The head's logits chunk: the head runs at decode time, on `hidden`, chunk by chunk. */
  private head: SampleHead | null = null;
  /** (B,C) final normed hidden state of each sequence's last fed token (its own buffer: a copy target). */
  private hidden: View | null = null;
  private fed: number[] = []; // tokens in each cache
  private queue: number[][] = []; // tokens waiting to be fed, per sequence
  /** Tokens each sequence has sampled: the sampler's counter for its next draw. */
  private sampledCount: number[] = [];
  private buffers: GPUBuffer[] = [];

  constructor(
    private readonly model: GpuModel,
    private readonly sampling: SamplingOptions,
  ) {}

  async prefill(prompts: number[][]): Promise<void> {
    this.finish();
    const { rt, config: c } = this.model;
    const B = prompts.length;
    const C = c.dModel;
    const H = mlpHidden(c);
    const { NH, KVH, Q, KV, QKV } = attnDims(c);
    const fcRows = c.mlp === "swiglu" ? 2 * H : H;
    this.B = B;
    prompts.forEach((p, i) => {
      if (p.length === 0) throw new Error(`prompt ${i} is empty`);
      if (p.length > c.context)
        throw new Error(`prompt ${i} has ${p.length} tokens, the context is ${c.context}`);
    });
    const cache = (label: string) => {
      const buf = rt.buffer(B * c.context * KV, label);
      this.buffers.push(buf);
      return view(buf, 0, B * c.context * KV); // (B,context,KV)
    };
    this.kcache = Array.from({ length: c.layers }, (_, l) => cache(`kcache-${l}`));
    this.vcache = Array.from({ length: c.layers }, (_, l) => cache(`vcache-${l}`));
    this.step = arena(rt, "decode-step", {
      tokens: B,
      pos: B,
      slot: B,
      lens: B,
      x: B * C,
      tmp: B * C,
      ln1: B * C,
      ln1Mean: B,
      ln1Rstd: B,
      qkvRaw: c.qkNorm ? B * QKV : 1,
      qkRstd: c.qkNorm ? B * (NH + KVH) : 1,
      qkv: B * QKV,
      atty: B * Q,
      res2: B * C,
      ln2: B * C,
      ln2Mean: B,
      ln2Rstd: B,
      fch: B * fcRows,
      fchAct: B * H,
      res3: B * C,
      sampled: 2 * alignFloats(B), // tokens (int32) then log-probs: one readback
      rowStep: B,
    });
    this.buffers.push(this.step.tokens.buffer);
    const ad = this.model.adapter;
    if (ad) {
      this.loraScratch = arena(rt, "decode-lora", loraScratchSizes(ad.layout, B));
      this.buffers.push(this.loraScratch.loraU.buffer);
    }
    this.head = new SampleHead(rt, c.vocab, C, B);
    const hidden = rt.buffer(B * C, "decode-hidden");
    this.buffers.push(hidden);
    this.hidden = view(hidden, 0, B * C);
    this.fed = prompts.map(() => 0);
    this.queue = prompts.map((p) => [...p]);
    this.sampledCount = prompts.map(() => 0);
    this.multi = null;
    if (this.model.decodeWindow > 1) {
      // The whole prefill in one submit, no readback (the first decodeMany's submit would
      // take it too, but a prefill is often followed by a plain decode in tests).
      const enc = rt.device.createCommandEncoder();
      this.recordDrain(enc, 0);
      rt.submit(enc);
    } else {
      this.drain();
    }
  }

  /**
   * One-token path (decode, and decodeMany with model.decodeWindow 1): feeds every waiting
   * token, one step (one submit) per token position, no readback. `then` records more work
   * (the sampler) into the last step's encoder. A step's inputs are uploaded after the
   * previous step's submit, which the queue orders before them.
   */
  private drain(then?: (enc: GPUCommandEncoder) => void): void {
    const rt = this.model.rt;
    const s = this.step!;
    let enc: GPUCommandEncoder | null = null;
    while (this.queue.some((q) => q.length > 0)) {
      if (enc) rt.submit(enc);
      enc = rt.device.createCommandEncoder();
      this.feedStep(enc, s, this.takeQueued());
    }
    if (!enc && !then) return;
    enc ??= rt.device.createCommandEncoder();
    then?.(enc);
    rt.submit(enc);
  }

  /** Step inputs for one token of every sequence with input waiting (pops them off the queues). */
  private takeQueued() {
    const B = this.B;
    const context = this.model.config.context;
    const tokens = new Int32Array(B);
    const pos = new Uint32Array(B);
    const slot = new Uint32Array(B).fill(NO_SLOT);
    const lens = new Uint32Array(B).fill(1);
    const rows: number[] = [];
    for (let b = 0; b < B; b++) {
      if (this.queue[b].length === 0) continue;
      if (this.fed[b] >= context) throw new Error(`sequence ${b} exceeds the context ${context}`);
      tokens[b] = this.queue[b].shift()!;
      pos[b] = this.fed[b];
      slot[b] = this.fed[b];
      lens[b] = this.fed[b] + 1;
      this.fed[b]++;
      rows.push(b);
    }
    return { tokens, pos, slot, lens, rows };
  }

  /** The views of feed-step slot i of the multi-step inputs (made to fit `slots` steps). */
  private inputSlot(i: number): FeedInputs {
    const m = this.multi!;
    const aB = alignFloats(this.B);
    const at = (k: number): View => ({
      buffer: m.inputs,
      offset: (k * m.slots + i) * aB * 4,
      size: this.B * 4,
    });
    return { tokens: at(0), pos: at(1), slot: at(2), lens: at(3) };
  }

  private ensureMulti(slots: number): void {
    if (this.multi && this.multi.slots >= slots) return;
    const rt = this.model.rt;
    const aB = alignFloats(this.B);
    const W = MAX_DECODE_WINDOW;
    if (this.multi) {
      this.multi.inputs.destroy();
      this.multi.counters.buffer.destroy();
    }
    // Sized for the longest drain (a full context) plus a window, rounded up.
    const n = Math.max(slots, this.model.config.context + W);
    const inputs = rt.buffer(4 * n * aB, "decode-multi-inputs");
    const rest = rt.buffer(3 * W * aB, "decode-window");
    this.buffers.push(inputs, rest);
    this.multi = {
      inputs,
      slots: n,
      counters: view(rest, 0, W * aB),
      out: view(rest, W * aB, 2 * W * aB),
    };
  }

  /**
   * Records every waiting token's feed step into `enc` (one encoder, one submit for a whole
   * prefill or appended tool responses), using input slots from `first`; returns the next free slot.
   */
  private recordDrain(enc: GPUCommandEncoder, first: number): number {
    const rt = this.model.rt;
    const steps = Math.max(0, ...this.queue.map((q) => q.length));
    this.ensureMulti(first + steps + MAX_DECODE_WINDOW);
    let i = first;
    while (this.queue.some((q) => q.length > 0)) {
      const inp = this.takeQueued();
      const v = this.inputSlot(i++);
      rt.upload(v.tokens, inp.tokens);
      rt.upload(v.pos, inp.pos);
      rt.upload(v.slot, inp.slot);
      rt.upload(v.lens, inp.lens);
      this.recordFeed(enc, v, inp.rows);
    }
    return i;
  }

  /** Uploads one step's inputs into the session's step buffers and records the step. */
  private feedStep(
    enc: GPUCommandEncoder,
    s: FeedInputs,
    inp: ReturnType<GpuGenerationSession["takeQueued"]>,
  ) {
    const rt = this.model.rt;
    rt.upload(s.tokens, inp.tokens);
    rt.upload(s.pos, inp.pos);
    rt.upload(s.slot, inp.slot);
    rt.upload(s.lens, inp.lens);
    this.recordFeed(enc, s, inp.rows);
  }

  /**
   * One token for every row through the network (rows whose slot is NO_SLOT compute but write
   * nothing); the final hidden state of `copyRows` goes to `hidden`, what the next sample reads.
   */
  private recordFeed(enc: GPUCommandEncoder, inp: FeedInputs, copyRows: number[]): void {
    const { rt, config: c, params: p } = this.model;
    const s = this.step!;
    const B = this.B;
    const C = c.dModel;
    embeddingForward(rt, enc, s.x, inp.tokens, inp.pos, p.wte, p.wpe, B, C); // (B,C)
    let residual = s.x;
    const ad = this.model.adapter;
    p.layers.forEach((lp, l) => {
      const lora = (out: View, inp0: View, w: LoraBaseWeight) =>
        loraForward(rt, enc, ad, this.loraScratch, l, w, out, inp0, B);
      blockForward(
        rt,
        enc,
        c,
        lp,
        s,
        residual,
        s.tmp,
        inp.pos,
        B,
        () => {
          const { NH, KVH, Q } = attnDims(c);
          const [k, v] = [this.kcache[l], this.vcache[l]];
          kvCacheWrite(rt, enc, k, v, s.qkv, inp.slot, B, c.context, Q, NH, undefined, KVH);
          decodeAttention(rt, enc, s.atty, s.qkv, k, v, inp.lens, null, B, c.context, Q, NH, undefined, KVH);
        },
        lora,
      );
      // The next block may read res3 as its residual: no dispatch binds it with the res3 it writes.
      residual = s.res3;
    });
    normForward(rt, enc, c, s.ln1, s.ln1Mean, s.ln1Rstd, residual, p.lnfw, p.lnfb, B);
    const h = this.hidden!;
    for (const b of copyRows) {
      enc.copyBufferToBuffer(s.ln1.buffer, s.ln1.offset + b * C * 4, h.buffer, h.offset + b * C * 4, C * 4);
    }
  }

  async decode(active: ArrayLike<boolean>): Promise<DecodeResult> {
    const { rt, config: c } = this.model;
    const B = this.B;
    for (let b = 0; b < B; b++) {
      if (active[b] && this.fed[b] + this.queue[b].length >= c.context)
        throw new Error(`sequence ${b} is full`);
    }
    const a = alignFloats(B);
    const s = this.step!;
    const sampled = s.sampled;
    const at = (k: number): View => ({ buffer: sampled.buffer, offset: sampled.offset + k * 4, size: B * 4 });
    rt.upload(s.rowStep, Uint32Array.from(this.sampledCount));
    const params = samplerParams(this.sampling, 0);
    const h = this.hidden!;
    this.drain((enc) =>
      this.head!.sample(enc, at(0), at(a), h, this.model.params.lmHead, B, params, s.rowStep),
    );
    const bytes = await rt.readBytes(sampled);
    const toks = new Int32Array(bytes, 0, B);
    const lps = new Float32Array(bytes, a * 4, B);
    const tokens = new Int32Array(B).fill(-1);
    const logprobs = new Float32Array(B).fill(Number.NaN);
    for (let b = 0; b < B; b++) {
      if (!active[b]) continue;
      tokens[b] = toks[b];
      logprobs[b] = lps[b];
      this.queue[b].push(toks[b]);
      this.sampledCount[b]++;
    }
    return { tokens, logprobs };
  }

  /**
   * k = min(maxTokens, model.decodeWindow) tokens per submit: the waiting tokens' feed steps,
   * then k samples, each but the last fed back on the GPU (its token read by the embedding
   * straight from the sampler's output), and one readback of the k x B tokens. The CPU cuts
   * each row where `ends` says; the cache positions past a cut are simply not counted (the
   * attention reads lens positions) and are overwritten later. Row b's j-th draw uses its own
   * counter (sampledCount[b] + j), so the tokens equal one decode() per token.
   */
  async decodeMany(active: ArrayLike<boolean>, maxTokens: number, ends: RunEnd): Promise<DecodeRun> {
    const c = this.model.config;
    if (Math.min(maxTokens, this.model.decodeWindow) <= 1)
      return decodeRunStepwise(this, active, maxTokens, ends, c.context);
    const B = this.B;
    const out: DecodeRun = { tokens: [], logprobs: [] };
    const running: boolean[] = [];
    for (let b = 0; b < B; b++) {
      out.tokens.push([]);
      out.logprobs.push([]);
      running.push(Boolean(active[b]));
    }
    for (let made = 0; made < maxTokens && running.some(Boolean); ) {
      const k = Math.min(maxTokens - made, this.model.decodeWindow, MAX_DECODE_WINDOW);
      const w = await this.window(running, k, ends);
      for (let b = 0; b < B; b++) {
        if (!running[b]) continue;
        out.tokens[b].push(...w.tokens[b]);
        out.logprobs[b].push(...w.logprobs[b]);
        // a row keeps running only if its whole window was kept without a cut
        if (w.cut[b]) running[b] = false;
      }
      made += k;
    }
    return out;
  }

  /** One window of up to k tokens per active row in one submit; cut[b]: the run of row b ended. */
  private async window(active: boolean[], k: number, ends: RunEnd): Promise<DecodeRun & { cut: boolean[] }> {
    const { rt, config: c } = this.model;
    const B = this.B;
    const len0 = this.lengths();
    const kb = Array.from({ length: B }, (_, b) => {
      if (!active[b]) return 0;
      if (len0[b] >= c.context) throw new Error(`sequence ${b} is full`);
      return Math.min(k, c.context - len0[b]);
    });
    const K = Math.max(...kb);
    const out = {
      tokens: kb.map((): number[] => []),
      logprobs: kb.map((): number[] => []),
      cut: kb.map(() => false),
    };
    if (K === 0) return out;
    const aB = alignFloats(B);
    const enc = rt.device.createCommandEncoder();
    let slot = this.recordDrain(enc, 0);
    const m = this.multi!;
    const start = [...this.fed]; // cache lengths once the waiting tokens are in
    const counters = new Uint32Array(K * aB);
    for (let j = 0; j < K; j++) for (let b = 0; b < B; b++) counters[j * aB + b] = this.sampledCount[b] + j;
    rt.upload(subview(m.counters, 0, K * aB), counters);
    const tokAt = (j: number): View => subview(m.out, j * aB, B);
    const lpAt = (j: number): View => subview(m.out, (MAX_DECODE_WINDOW + j) * aB, B);
    const params = samplerParams(this.sampling, 0);
    for (let j = 0; j < K; j++) {
      // j = 0 samples from the hidden state each row left in `hidden`; later steps from the rows just fed
      const from = j === 0 ? this.hidden! : this.step!.ln1;
      this.head!.sample(
        enc,
        tokAt(j),
        lpAt(j),
        from,
        this.model.params.lmHead,
        B,
        params,
        subview(m.counters, j * aB, B),
      );
      if (j === K - 1) break;
      const pos = new Uint32Array(B);
      const slots = new Uint32Array(B).fill(NO_SLOT);
      const lens = new Uint32Array(B).fill(1);
      for (let b = 0; b < B; b++) {
        if (j + 1 >= kb[b]) continue; // this row needs no token j + 1
        pos[b] = start[b] + j;
        slots[b] = start[b] + j;
        lens[b] = start[b] + j + 1;
      }
      const v = this.inputSlot(slot++);
      rt.upload(v.pos, pos);
      rt.upload(v.slot, slots);
      rt.upload(v.lens, lens);
      this.recordFeed(enc, { ...v, tokens: tokAt(j) }, []);
    }
    const read = rt.recordRead(enc, subview(m.out, 0, 2 * MAX_DECODE_WINDOW * aB));
    rt.submit(enc);
    const bytes = await read();
    const toks = new Int32Array(bytes);
    const lps = new Float32Array(bytes);
    for (let b = 0; b < B; b++) {
      let n = 0;
      while (n < kb[b]) {
        const tok = toks[n * aB + b];
        const lp = lps[(MAX_DECODE_WINDOW + n) * aB + b];
        out.tokens[b].push(tok);
        out.logprobs[b].push(lp);
        n++;
        if (ends(b, tok, lp, len0[b] + n) || len0[b] + n >= c.context) {
          out.cut[b] = true;
          break;
        }
      }
      if (n === 0) continue;
      // tokens 0..n-2 are in the cache; token n-1 waits to be fed like a decode()'s token
      this.fed[b] = start[b] + n - 1;
      this.queue[b].push(out.tokens[b][n - 1]);
      this.sampledCount[b] += n;
    }
    return out;
  }

  async append(seq: number, tokens: number[]): Promise<void> {
    if (this.fed[seq] + this.queue[seq].length + tokens.length > this.model.config.context) {
      throw new Error(`append: sequence ${seq} would exceed the context ${this.model.config.context}`);
    }
    this.queue[seq].push(...tokens);
  }

  /** (V) logits the next decode of this sequence samples from (tests). */
  async nextLogits(seq: number): Promise<Float32Array> {
    this.drain();
    const rt = this.model.rt;
    const V = this.model.config.vocab;
    const enc = rt.device.createCommandEncoder();
    const { view: out, chunk } = this.head!.chunkLogits(
      enc,
      this.hidden!,
      this.model.params.lmHead,
      this.B,
      seq,
    );
    rt.submit(enc);
    const row = seq - chunk.rowBase;
    return unsliceLogits(await rt.read(out), chunk).slice(row * V, (row + 1) * V);
  }

  lengths(): number[] {
    return this.fed.map((f, b) => f + this.queue[b].length);
  }

  finish(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
    this.head?.destroy();
    this.head = null;
    this.step = null;
    this.multi = null;
    this.B = 0;
  }
}

// ---------------------------------------------------------------------------------------
// The PolicyModel on WebGPU

export class GpuModel implements PolicyModel {
  readonly backend = "webgpu" as const;
  readonly layout: ParamLayout;
  /** The adapter's layout with LoRA (config.lora.rank > 0), else null. */
  readonly lora: LoraLayout | null;
  /** The base weights as stored (model/gpu-base.ts: f32, or the f16 base of a LoRA model). */
  readonly base: GpuBase;
  /** The LoRA adapter's weights (its own flat layout), with LoRA. */
  readonly adapterStore: FlatBuffer | null;
  /**
   * Gradients and Adam moments of the trained parameters (the layout's, or the adapter's with
   * LoRA: no base gradients then), made on first use (a frozen reference model never needs them).
   */
  private optim: { grads: FlatBuffer; m: FlatBuffer; v: FlatBuffer; views: ParamViews | null } | null = null;
  /** False on the reference view of a LoRA model: the base alone. */
  private adapterOn = true;
  /** The base belongs to another model (a LoRA copy or reference view shares it). */
  private readonly sharesBase: boolean;
  /** [flat start, length] windows of the flat buffers under the binding limit, cut at normChunk. */
  private readonly windows: [number, number][];
  private readonly normChunk: number;
  private readonly misc: Record<"norm" | "normScratch", View>;
  private train: TrainBuffers | null = null;
  /**
   * Per-layer activation recomputation (gradient checkpointing): the training forward keeps
   * each layer's output only and the backward re-runs each layer's forward before its backward.
   * The same gradients bit for bit, one layer's activations alive, one more forward per step.
   */
  recompute = false;
  private hasForward = false;
  private optStep = 0;
  /**
   * Tokens a generation session samples per submit at most (decodeMany); 1 is the
   * one-token-per-submit path, kept for side-by-side benchmarks.
   */
  decodeWindow = 16;
  /**
   * "fused": zeroing, backward, grad norm, clipping and AdamW in one submit with no readback
   * (a non-finite norm makes AdamW a no-op on the GPU; step()'s result is read with the next
   * forwardScore's readback, or when awaited); "legacy": a submit each and the norm read back
   * before AdamW, the path before round trips were counted, kept for side-by-side benchmarks.
   */
  updatePath: "fused" | "legacy" = "fused";
  /** Score every row in the head even where ScoreBatch.scoreFrom skips some (the path before it; side-by-side benchmarks). */
  headAllRows = false;
  private zeroPending = false;
  private backwardPending: { hasValue: boolean } | null = null;
  /** step() results waiting for their norm (slot i of normLog) to come back. */
  private stepWaiting: { slot: number; done: (norm: number) => void }[] = [];
  private stepsDone = 0;
  /** The norms of the last NORM_LOG steps, slot = step index mod NORM_LOG (its own buffer: a copy source). */
  private readonly normLog: View;

  /**
   * The engine as it was before round trips were counted: one token per decode submit, the
   * legacy update, the fixed workgroup sizes of the row reductions, no subgroups and the 8x8
   * matmul tile (on this model's runtime).
   */
  selectLegacyRoundTrips(): void {
    this.decodeWindow = 1;
    this.updatePath = "legacy";
    this.rt.legacyWorkgroups = true;
    this.rt.subgroups = false;
    this.rt.matmulTile = [...DEFAULT_MATMUL_TILE];
  }

  get lateStepResults(): boolean {
    return this.updatePath === "fused";
  }

  /**
   * weights: the flat layout, or "zeros" to fill later (fromHf); default: initParams(seed).
   * options.adapter: the LoRA adapter (default initLora(seed)); shareBase: use that model's base
   * store (LoRA only: the base is frozen); adapterOn false: the base alone (the reference view).
   */
  constructor(
    readonly rt: Runtime,
    readonly config: ModelConfig,
    weights?: Float32Array | "zeros",
    seed = 0,
    options: { adapter?: Float32Array; shareBase?: GpuModel; adapterOn?: boolean } = {},
  ) {
    this.layout = paramLayout(config);
    this.lora = config.lora.rank > 0 ? loraLayout(config, config.lora) : null;
    const n = this.layout.total;
    this.sharesBase = options.shareBase !== undefined;
    if (options.shareBase) {
      if (!this.lora) throw new Error("GpuModel: only a LoRA model shares its (frozen) base");
      this.base = options.shareBase.base;
    } else {
      this.base = new GpuBase(rt, config, this.layout);
      if (weights !== "zeros") {
        const w = weights ?? initParams(config, this.layout, seed);
        if (w.length !== n) throw new Error(`weights have ${w.length} floats, the layout needs ${n}`);
        this.base.upload(w);
      }
    }
    if (this.lora) {
      const a = options.adapter ?? initLora(this.lora, seed);
      if (a.length !== this.lora.total)
        throw new Error(`adapter has ${a.length} floats, the LoRA layout needs ${this.lora.total}`);
      this.adapterStore = this.trainedStore("lora");
      this.adapterStore.upload(rt, a);
    } else {
      if (options.adapter) throw new Error("adapter weights given but config.lora.rank is 0");
      this.adapterStore = null;
    }
    this.adapterOn = options.adapterOn ?? true;
    const trained = this.adapterStore ?? this.paramStore;
    this.normChunk = normChunk(trained.total, rt.bindingFloats);
    this.windows = trained.windows(rt.bindingFloats, this.normChunk);
    const parts = normParts(
      this.windows.map(([, len]) => len),
      this.normChunk,
    );
    this.misc = arena(rt, "optim-misc", { norm: 1, normScratch: parts });
    this.normLog = view(rt.buffer(NORM_LOG, "norm-log"), 0, NORM_LOG);
  }

  /** The base's f32 store: the flat layout in one buffer, or several past the buffer limit (frozen with LoRA). */
  get paramStore(): FlatBuffer {
    return this.base.f32;
  }

  /** The named views of the base's tensors (f16 ones as HalfViews, read by the f16 matmul). */
  get params(): ParamViews {
    return this.base.views();
  }

  /** How the base weights are stored (model/half.ts). */
  baseStorage(): BaseStorage {
    return this.base.report(this.config.baseDtype);
  }

  /** A model on a fresh device from navigator.gpu (browser) or Dawn (Node): see kernels/device.ts. */
  static async create(
    device: GPUDevice,
    config: ModelConfig,
    weights?: Float32Array,
    seed = 0,
    adapter?: Float32Array,
  ): Promise<GpuModel> {
    await tuneMatmulTile(device); // the matmul tile of this adapter, measured once (kernels/autotune.ts)
    return new GpuModel(new Runtime(device), config, weights, seed, { adapter });
  }

  /** A flat store of the trained parameters' layout: the adapter's with LoRA, else the base's. */
  private trainedStore(label: string): FlatBuffer {
    if (!this.lora) return paramStore(this.rt, this.layout, label);
    return new FlatBuffer(
      this.rt,
      this.lora.total,
      label,
      this.lora.tensors.map((t) => t.offset),
    );
  }

  private get opt() {
    if (!this.optim) {
      const grads = this.trainedStore("grads");
      this.optim = {
        grads,
        m: this.trainedStore("adam-m"),
        v: this.trainedStore("adam-v"),
        views: this.lora ? null : paramViews(grads, this.layout),
      };
    }
    return this.optim;
  }

  /** The adapter the passes use, or null (no LoRA, or the reference view). */
  get adapter(): GpuAdapter | null {
    return this.lora && this.adapterOn && this.adapterStore
      ? { layout: this.lora, w: this.adapterStore }
      : null;
  }

  /** Bytes of the training activations and scratch (0 before the first forwardScore; the head's chunks excepted). */
  get trainBytes(): number {
    return this.train?.bytes ?? 0;
  }

  /** Bytes of logits the training head holds (0 before the first forwardScore). */
  get headBytes(): number {
    return this.train?.head.bytes ?? 0;
  }

  /**
   * A Hugging Face checkpoint (model/hf/read.ts): config.json and safetensors uploaded tensor by
   * tensor into the parameter buffer, so host memory peaks near one tensor.
   */
  static async fromHf(rt: Runtime, dir: ModelDir, opts: HfOptions = {}): Promise<GpuModel> {
    rt.matmulTile = [...(await tuneMatmulTile(rt.device)).tile];
    const config = await readHfConfig(dir, opts);
    const model = new GpuModel(rt, config, "zeros");
    const write = (offset: number, data: Float32Array) => model.writeWeights(offset, data);
    await loadHfWeights(dir, config, write);
    // An f16 tensor found beyond f16's range after some of it went in rounded: read it again, f32.
    if (model.base.hasStale) {
      await loadHfWeights(dir, config, write, undefined, (t) => model.base.isStale(t.offset));
      model.base.clearStale();
    }
    return model;
  }

  /** Writes `data` into the parameters at float `offset` of the layout (a slice of setWeights). */
  writeWeights(offset: number, data: Float32Array): void {
    if (offset < 0 || offset + data.length > this.layout.total)
      throw new Error(
        `writeWeights: [${offset}, ${offset + data.length}) is outside the layout's ${this.layout.total}`,
      );
    this.base.write(offset, data);
  }

  private trainBuffers(B: number, T: number): TrainBuffers {
    const N = B * T;
    if (!this.train || this.train.capacity < N || this.train.recompute !== this.recompute) {
      this.train?.destroy();
      // Rounded up so that slowly growing batches do not reallocate every step.
      const capacity = trainCapacity(N);
      this.train = new TrainBuffers(this.rt, this.config, capacity, this.lora, this.recompute);
    }
    this.train.B = B;
    this.train.T = T;
    return this.train;
  }

  async forwardScore(batch: ScoreBatch, options: { logits?: boolean } = {}): Promise<ScoreResult> {
    const positions = checkBatch(this.config, batch);
    if (this.backwardPending) this.flushGradWork(); // the forward overwrites what it reads
    const { B, T } = batch;
    const N = B * T;
    const V = this.config.vocab;
    const tb = this.trainBuffers(B, T);
    tb.invTemp = 1 / (batch.temperature ?? 1);
    tb.spans =
      options.logits || this.headAllRows ? undefined : scoredSpans(B, T, this.config.dModel, batch.scoreFrom);
    this.rt.upload(tb.io.tokens, batch.tokens);
    this.rt.upload(tb.io.targets, batch.targets);
    this.rt.upload(tb.io.pos, Uint32Array.from(positions));
    const zeros = new Float32Array(N);
    this.rt.upload(tb.io.wlp, zeros);
    this.rt.upload(tb.io.went, zeros);
    tb.wteGroups = this.uploadGroups(batch.tokens, N, tb.io.wteKeys, tb.io.wteStarts, tb.io.wteOrder);
    tb.wpeGroups = this.params.wpe
      ? this.uploadGroups(positions, N, tb.io.wpeKeys, tb.io.wpeStarts, tb.io.wpeOrder)
      : null;
    // Raw logits only when asked (tests, inspection): a (N,V) buffer the head copies each chunk into.
    const copy = options.logits ? view(this.rt.buffer(N * V, "score-logits"), 0, N * V) : undefined;
    const enc = this.rt.device.createCommandEncoder();
    forwardPass(this.rt, enc, this.config, this.params, tb, copy, this.adapter);
    // The steps waiting for their norm get it from this readback (final before this submit).
    const waiting = this.stepWaiting.splice(0);
    if (waiting.length > 0) {
      const log = this.normLog;
      const dst = tb.io.out.offset + tb.outAt.norm * 4;
      enc.copyBufferToBuffer(log.buffer, log.offset, tb.io.out.buffer, dst, log.size);
    }
    let out: Float32Array;
    if (this.updatePath === "legacy") {
      this.rt.submit(enc);
      out = await this.rt.read(tb.io.out);
    } else {
      const read = this.rt.recordRead(enc, tb.io.out);
      this.rt.submit(enc);
      out = new Float32Array(await read());
    }
    this.hasForward = true;
    for (const w of waiting) w.done(out[tb.outAt.norm + w.slot]);
    const { logp, entropy, values } = tb.outAt;
    let logits: Float32Array | undefined;
    if (copy) {
      const raw = await this.rt.read(copy);
      copy.buffer.destroy();
      logits = new Float32Array(N * V);
      for (const ch of headChunks(tb.head.plan, N)) {
        const at = ch.rowBase * V;
        logits.set(unsliceLogits(raw.subarray(at, at + ch.rows * V), ch), at);
      }
    }
    return {
      logp: out.slice(logp, logp + N),
      entropy: out.slice(entropy, entropy + N),
      values: this.config.valueHead ? out.slice(values, values + N) : undefined,
      logits,
    };
  }

  /** Groups the batch's non-padding rows by key (token or position) and uploads the groups. */
  private uploadGroups(keys: ArrayLike<number>, N: number, k: View, st: View, ord: View): RowGroupViews {
    const host = groupRows(keys, N);
    if (host.keys.length > 0) {
      this.rt.upload(k, host.keys);
      this.rt.upload(ord, host.order);
    }
    this.rt.upload(st, host.starts);
    return { host, keys: k, starts: st, order: ord };
  }

  async backward(grads: ScoreGrads): Promise<void> {
    const tb = this.train;
    if (!tb || !this.hasForward) throw new Error("backward() needs a forwardScore() first");
    if (this.backwardPending) this.flushGradWork(); // two backwards accumulate: the first goes now
    if (this.lora && !this.adapterOn)
      throw new Error("backward(): the reference view of a LoRA model is frozen");
    const N = tb.B * tb.T;
    this.rt.upload(tb.io.wlp, grads.dlogp);
    this.rt.upload(tb.io.went, grads.dentropy ?? new Float32Array(N));
    if (grads.dvalue) this.rt.upload(tb.io.dvalue, grads.dvalue);
    if (this.updatePath === "fused") {
      // recorded by the next step() (or flushGradWork), in the same submit as the optimizer
      this.backwardPending = { hasValue: Boolean(grads.dvalue) };
      return;
    }
    const enc = this.rt.device.createCommandEncoder();
    const o = this.opt;
    backwardPass(
      this.rt,
      enc,
      this.config,
      this.params,
      o.views,
      tb,
      Boolean(grads.dvalue),
      this.adapter,
      this.lora ? o.grads : null,
    );
    this.rt.submit(enc);
  }

  /** Views of the same window of each flat buffer. */
  private window(store: FlatBuffer, [at, n]: [number, number]): View {
    return store.view(at, n);
  }

  zeroGrad(): void {
    if (this.updatePath === "fused") {
      this.flushGradWork();
      this.zeroPending = true;
      return;
    }
    const g = this.opt.grads;
    const enc = this.rt.device.createCommandEncoder();
    for (const w of this.windows) zero(this.rt, enc, this.window(g, w));
    this.rt.submit(enc);
  }

  /** Records the deferred zeroing and backward (in that order) into enc. */
  private recordGradWork(enc: GPUCommandEncoder): void {
    if (this.zeroPending) for (const w of this.windows) zero(this.rt, enc, this.window(this.opt.grads, w));
    this.zeroPending = false;
    if (this.backwardPending && this.train) {
      const hasValue = this.backwardPending.hasValue;
      backwardPass(
        this.rt,
        enc,
        this.config,
        this.params,
        this.opt.views,
        this.train,
        hasValue,
        this.adapter,
        this.lora ? this.opt.grads : null,
      );
    }
    this.backwardPending = null;
  }

  /** Submits deferred gradient work before anything that reads or overwrites its inputs. */
  private flushGradWork(): void {
    if (!this.zeroPending && !this.backwardPending) return;
    const enc = this.rt.device.createCommandEncoder();
    this.recordGradWork(enc);
    this.rt.submit(enc);
  }

  /** Reads the norm for steps still waiting (when no forwardScore has brought it). */
  private async settleSteps(): Promise<void> {
    const waiting = this.stepWaiting.splice(0);
    if (waiting.length === 0) return;
    const log = await this.rt.read(this.normLog);
    for (const w of waiting) w.done(log[w.slot]);
  }

  private adamwHp(h: AdamWHparams) {
    return {
      lr: h.lr,
      beta1: h.beta1,
      beta2: h.beta2,
      eps: h.eps,
      weightDecay: h.weightDecay,
      step: this.optStep,
    };
  }

  step(h: AdamWHparams): PromiseLike<StepResult> {
    if (this.updatePath === "legacy") return this.stepLegacy(h);
    const { grads, m, v } = this.opt;
    const enc = this.rt.device.createCommandEncoder();
    this.recordGradWork(enc);
    const gw = this.windows.map((w) => this.window(grads, w));
    gradNorm(this.rt, enc, this.misc.norm, this.misc.normScratch, gw, this.normChunk);
    if (h.maxGradNorm > 0 && Number.isFinite(h.maxGradNorm))
      for (const g of gw) clipByNorm(this.rt, enc, g, this.misc.norm, g.size / 4, h.maxGradNorm);
    this.optStep++;
    const hp = this.adamwHp(h);
    // The trained parameters: the adapter with LoRA (the base is never written).
    const target = this.adapterStore ?? this.paramStore;
    for (const w of this.windows) {
      const p = this.window(target, w);
      const [gv, mv, vv] = [this.window(grads, w), this.window(m, w), this.window(v, w)];
      adamw(this.rt, enc, p, gv, mv, vv, w[1], hp, this.misc.norm);
    }
    const slot = this.stepsDone++ % NORM_LOG;
    const log = this.normLog;
    enc.copyBufferToBuffer(
      this.misc.norm.buffer,
      this.misc.norm.offset,
      log.buffer,
      log.offset + slot * 4,
      4,
    );
    this.rt.submit(enc);
    if (this.stepWaiting.length >= NORM_LOG - 1)
      throw new Error(`${NORM_LOG} optimizer steps without a readback: await a step() result`);
    let resolve!: (r: StepResult) => void;
    const result = new Promise<StepResult>((r) => {
      resolve = r;
    });
    this.stepWaiting.push({
      slot,
      done: (norm) => {
        const skipped = !Number.isFinite(norm);
        if (skipped) this.optStep--; // the GPU left the weights, moments and step count alone
        resolve({ gradNorm: norm, skipped });
      },
    });
    // Awaiting the result before the next forwardScore costs one readback; the minibatch
    // loop awaits it after, so the norm rides on that forward's readback.
    let asked = false;
    return {
      // biome-ignore lint/suspicious/noThenProperty: a lazy thenable on purpose: awaiting it first asks for the readback
      then: (onDone, onFail) => {
        if (!asked) {
          asked = true;
          void this.settleSteps();
        }
        return result.then(onDone, onFail);
      },
    };
  }

  private async stepLegacy(h: AdamWHparams): Promise<StepResult> {
    const { grads, m, v } = this.opt;
    let enc = this.rt.device.createCommandEncoder();
    const gw = this.windows.map((w) => this.window(grads, w));
    gradNorm(this.rt, enc, this.misc.norm, this.misc.normScratch, gw, this.normChunk);
    this.rt.submit(enc);
    const norm = (await this.rt.read(this.misc.norm))[0];
    if (!Number.isFinite(norm)) return { gradNorm: norm, skipped: true };
    enc = this.rt.device.createCommandEncoder();
    if (h.maxGradNorm > 0 && Number.isFinite(h.maxGradNorm))
      for (const g of gw) clipByNorm(this.rt, enc, g, this.misc.norm, g.size / 4, h.maxGradNorm);
    this.optStep++;
    const hp = this.adamwHp(h);
    const target = this.adapterStore ?? this.paramStore;
    for (const w of this.windows) {
      const p = this.window(target, w);
      adamw(this.rt, enc, p, this.window(grads, w), this.window(m, w), this.window(v, w), w[1], hp);
    }
    this.rt.submit(enc);
    return { gradNorm: norm, skipped: false };
  }

  async getWeights(): Promise<Float32Array> {
    this.flushGradWork();
    await this.settleSteps();
    return this.base.read();
  }

  async setWeights(weights: Float32Array): Promise<void> {
    this.flushGradWork();
    await this.settleSteps();
    if (weights.length !== this.layout.total)
      throw new Error(`setWeights: ${weights.length} floats, expected ${this.layout.total}`);
    this.base.upload(weights);
  }

  async getAdapter(): Promise<Float32Array | null> {
    this.flushGradWork();
    await this.settleSteps();
    return this.adapterStore ? this.adapterStore.read(this.rt) : null;
  }

  async setAdapter(w: Float32Array): Promise<void> {
    if (!this.lora || !this.adapterStore)
      throw new Error("setAdapter: the model has no LoRA (config.lora.rank 0)");
    if (w.length !== this.lora.total)
      throw new Error(`setAdapter: ${w.length} floats, the LoRA layout needs ${this.lora.total}`);
    this.adapterStore.upload(this.rt, w);
  }

  async getGrads(): Promise<Float32Array> {
    this.flushGradWork();
    await this.settleSteps();
    return this.opt.grads.read(this.rt);
  }

  async getOptimizerState(): Promise<OptimizerState> {
    this.flushGradWork();
    await this.settleSteps();
    const { m, v } = this.opt;
    return { m: await m.read(this.rt), v: await v.read(this.rt), step: this.optStep };
  }

  async setOptimizerState(state: OptimizerState): Promise<void> {
    this.flushGradWork();
    await this.settleSteps();
    const n = this.lora ? this.lora.total : this.layout.total;
    if (state.m.length !== n || state.v.length !== n)
      throw new Error(`setOptimizerState: moments must have ${n} floats`);
    this.opt.m.upload(this.rt, state.m);
    this.opt.v.upload(this.rt, state.v);
    this.optStep = state.step;
  }

  async frozenCopy(): Promise<PolicyModel> {
    const m = this.lora
      ? // The base never changes under LoRA: the copy shares it and copies the adapter.
        new GpuModel(this.rt, this.config, undefined, 0, {
          adapter: (await this.getAdapter())!,
          shareBase: this,
          adapterOn: this.adapterOn,
        })
      : new GpuModel(this.rt, this.config, await this.getWeights());
    // A frozen copy scores (the KL reference, try-the-model): the recomputation layout holds one
    // layer's arena instead of all, and a backward, if one came, would still be exact.
    m.recompute = true;
    return m;
  }

  async referencePolicy(): Promise<PolicyModel> {
    if (!this.lora) return this.frozenCopy();
    const m = new GpuModel(this.rt, this.config, undefined, 0, {
      adapter: new Float32Array(this.lora.total),
      shareBase: this,
      adapterOn: false,
    });
    m.recompute = true; // it only scores (as frozenCopy)
    return m;
  }

  startGeneration(
    sampling: SamplingOptions,
  ): GenerationSession & { nextLogits(seq: number): Promise<Float32Array> } {
    return new GpuGenerationSession(this, sampling);
  }

  perf() {
    return { ...this.rt.counters };
  }

  dispose(): void {
    this.normLog.buffer.destroy();
    this.train?.destroy();
    this.train = null;
    if (!this.sharesBase) this.base.destroy();
    this.adapterStore?.destroy();
    if (this.optim) for (const b of [this.optim.grads, this.optim.m, this.optim.v]) b.destroy();
    this.optim = null;
    this.misc.norm.buffer.destroy();
  }
}
