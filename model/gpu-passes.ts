// The network on WebGPU, top to bottom: norms and MLP activations by config, one block's
// forward (attention is the caller's: full causal attention here, cached attention in
// model/gpu-generation.ts), the training forward layer by layer (with recomputation: one
// layer re-run before its backward), and the backward. The attention kernels are called in
// layerForward (forward) and backwardPass (backward). Legend as model/gpu.ts.
// Tested by model/gpu.gpu.test.ts (PyTorch golden fixture, CPU equality) and
// model/hf/read.gpu.test.ts (each Hugging Face family).
import {
  attentionBackward,
  attentionForward,
  embeddingBackward,
  embeddingForward,
  type FlatBuffer,
  geluBackward,
  geluForward,
  layernormBackward,
  layernormForward,
  linearRows,
  linearRowsFits,
  matmulBackward,
  matmulForward,
  qkNormBackward,
  qkNormForward,
  type Recorder,
  type Runtime,
  residualForward,
  rmsnormBackward,
  rmsnormForward,
  ropeBackward,
  ropeForward,
  smallRowsKernel,
  swigluBackward,
  swigluForward,
  type View,
  zero,
} from "../kernels/index";
import { attnDims, type ModelConfig, mlpHidden } from "./config";
import {
  type LayerActs,
  type LayerViews,
  type ParamViews,
  qkNormShape,
  type TrainBuffers,
} from "./gpu-buffers";
import { type GpuAdapter, loraBackward, loraForward } from "./gpu-lora";
import type { LoraBaseWeight } from "./lora";
import { layerActSizes } from "./memory-plan";

// ---------------------------------------------------------------------------------------
// The network: norms and MLP activations by config, forward, backward

export function normForward(
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

export function normBackward(
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

export function rope(
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
    if (backward) ropeBackward(rt, rec, qkv, pos, s, c.context);
    else ropeForward(rt, rec, qkv, pos, s, c.context);
  }
}

/** What one block forward writes: a training layer's saved activations, or a decode step's. */
export type BlockActs = Pick<
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
>;

/**
 * Floats of each BlockActs buffer for a block forward over N rows (an arena's sizes): a training
 * layer's saved activations (memory-plan.ts layerActSizes) less the attention's log-sum-exp.
 */
export function blockActSizes(c: ModelConfig, N: number): Record<keyof BlockActs, number> {
  const { lse: _, ...block } = layerActSizes(c, N);
  return block;
}

/** One block forward over N rows: residual -> a.res3 (attention is the caller's: full or cached). */
export function blockForward(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  p: LayerViews,
  a: BlockActs,
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

/** Whether decodeBlockForward runs this model at N rows (else blockForward: rows past the plan's smallRows, odd sizes). */
export function fusedDecodeFits(rt: Runtime, c: ModelConfig, N: number): boolean {
  const { Q, hs } = attnDims(c);
  return (
    smallRowsKernel(rt, N) && hs % 2 === 0 && [c.dModel, Q, mlpHidden(c)].every((K) => linearRowsFits(N, K))
  );
}

/**
 * One block forward over N <= 8 decode rows with kernels/decode.ts's fused kernels: RMSNorm +
 * QKV, RoPE + the KV-cache append (`append`), the cached attention (`attention`), projection +
 * residual, RMSNorm + gate/up + SwiGLU, down projection + residual: 6 dispatches where
 * blockForward records 13 (a LayerNorm, GELU, QK-norm or a LoRA target on the MLP's first
 * weight keeps that step's own dispatch). Writes a.res3 (and a.ln1/a.ln2 where LoRA reads them).
 */
export function decodeBlockForward(
  rt: Runtime,
  rec: Recorder,
  c: ModelConfig,
  p: LayerViews,
  a: BlockActs,
  residual: View,
  N: number,
  append: (qkv: View) => void,
  attention: () => void,
  lora: ((out: View, inp: View, w: LoraBaseWeight) => void) | null,
  loraOn: (w: LoraBaseWeight) => boolean,
) {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { Q, QKV } = attnDims(c);
  const rms = c.norm === "rmsnorm";
  // RMSNorm folded into the linear layer after it (the normed rows written only where LoRA reads them)
  const normed = (
    out: View,
    mean: View,
    rstd: View,
    inp: View,
    w: View,
    b: View | null,
    lw: LoraBaseWeight,
  ) => {
    if (rms) return { inp, norm: { gain: w, eps: c.normEps, normed: loraOn(lw) ? out : undefined } };
    normForward(rt, rec, c, out, mean, rstd, inp, w, b, N);
    return { inp: out, norm: undefined };
  };
  const n1 = normed(a.ln1, a.ln1Mean, a.ln1Rstd, residual, p.ln1w, p.ln1b, "qkvw");
  const qkvOut = p.qnormw && p.knormw ? a.qkvRaw : a.qkv;
  linearRows(rt, rec, qkvOut, n1.inp, p.qkvw, p.qkvb, N, C, QKV, { norm: n1.norm }); // (N,QKV)
  lora?.(qkvOut, a.ln1, "qkvw");
  if (p.qnormw && p.knormw)
    qkNormForward(rt, rec, a.qkv, a.qkRstd, a.qkvRaw, p.qnormw, p.knormw, qkNormShape(c, N));
  append(a.qkv);
  attention(); // a.atty (N,Q) from a.qkv and the caches
  linearRows(rt, rec, a.res2, a.atty, p.projw, p.projb, N, Q, C, { residual }); // (N,C)
  lora?.(a.res2, a.atty, "projw");
  const n2 = normed(a.ln2, a.ln2Mean, a.ln2Rstd, a.res2, p.ln2w, p.ln2b, "fcw");
  if (c.mlp === "swiglu" && !loraOn("fcw")) {
    linearRows(rt, rec, a.fchAct, n2.inp, p.fcw, p.fcb, N, C, 2 * H, { norm: n2.norm, glu: true }); // (N,H)
  } else {
    const fcRows = c.mlp === "swiglu" ? 2 * H : H;
    linearRows(rt, rec, a.fch, n2.inp, p.fcw, p.fcb, N, C, fcRows, { norm: n2.norm }); // (N,fcRows)
    lora?.(a.fch, a.ln2, "fcw");
    if (c.mlp === "gelu") geluForward(rt, rec, a.fchAct, a.fch, N * H);
    else swigluForward(rt, rec, a.fchAct, a.fch, N, H);
  }
  linearRows(rt, rec, a.res3, a.fchAct, p.fcprojw, p.fcprojb, N, H, C, { residual: a.res2 }); // (N,C)
  lora?.(a.res3, a.fchAct, "fcprojw");
}

/** Layer l of the training forward: its input (io.encoded or layer l-1's res3) -> tb.layers[l]. */
export function layerForward(
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

export function forwardPass(
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

/** What every part of the backward reads: the runtime, the model, its weights and gradients, the buffers, the adapter. */
interface BackwardArgs {
  rt: Runtime;
  rec: Recorder;
  c: ModelConfig;
  p: ParamViews;
  g: ParamViews | null;
  tb: TrainBuffers;
}

/** The LoRA backward of one base weight of the current layer (nothing without an adapter). */
type LayerLora = (w: LoraBaseWeight, dinp: View, dout: View, inp: View) => void;

/**
 * Backward of the head and the final norm into d.dres, the gradient of the residual stream:
 * dlogits chunk by chunk (recomputing the logits unless the batch was one chunk) -> dlnf,
 * dlmHead, then the value head's gradient.
 */
function headBackward({ rt, rec, c, p, g, tb }: BackwardArgs, hasValue: boolean) {
  const N = tb.B * tb.T;
  const C = c.dModel;
  const { io, grad: d } = tb;
  zero(rt, rec, d.dln, N * C); // dlnf
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
}

/** Backward of layer l's MLP: dres is d/d res3 and d/d (MLP output); leaves d/d res2 in dres. */
function mlpBackward({ rt, rec, c, p, g, tb }: BackwardArgs, l: number, lora: LayerLora) {
  const N = tb.B * tb.T;
  const C = c.dModel;
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const d = tb.grad;
  const lp = p.layers[l];
  const lg = g?.layers[l] ?? null;
  const a = tb.layers[l];
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
}

/** Backward of layer l's attention: dres is d/d res2 and d/d (attention output); leaves d/d (layer input) in dres. */
function attentionBackwardLayer({ rt, rec, c, p, g, tb }: BackwardArgs, l: number, lora: LayerLora) {
  const { B, T } = tb;
  const N = B * T;
  const C = c.dModel;
  const { NH, KVH, Q, QKV } = attnDims(c);
  const { io, grad: d } = tb;
  const lp = p.layers[l];
  const lg = g?.layers[l] ?? null;
  const a = tb.layers[l];
  const residual = l === 0 ? io.encoded : tb.layers[l - 1].res3;
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

/**
 * Adds d(loss)/d(params) into g, with io.wlp/went/dvalue holding dloss/d(logp, entropy, value).
 * g null: a frozen base (LoRA), whose ops compute only input gradients; the adapter's go to dad.
 */
export function backwardPass(
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
  const N = tb.B * tb.T;
  const C = c.dModel;
  const args: BackwardArgs = { rt, rec, c, p, g, tb };
  headBackward(args, hasValue);
  for (let l = c.layers - 1; l >= 0; l--) {
    // Recomputation: the shared arena holds the last layer forwarded; re-run this one from its
    // input (the same ops on the same inputs: the same bits as the forward's).
    if (tb.recompute && l < c.layers - 1) layerForward(rt, rec, c, p, tb, l, ad);
    const lora: LayerLora = (w, dinp, dout, inp) =>
      loraBackward(rt, rec, ad, dad, tb.lora, l, w, dinp, dout, inp, N);
    mlpBackward(args, l, lora);
    attentionBackwardLayer(args, l, lora);
  }
  if (!g) return; // a frozen base: no embedding gradients
  const d = tb.grad;
  if (tb.wteGroups) embeddingBackward(rt, rec, g.wte, d.dres, tb.wteGroups, C);
  if (g.wpe && tb.wpeGroups) embeddingBackward(rt, rec, g.wpe, d.dres, tb.wpeGroups, C);
}
