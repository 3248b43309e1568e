// The CPU reference of the transformer in plain Float32Array code: the specification the
// WebGPU model (model/gpu.ts) must equal, and a PolicyModel backend for unit tests of rl/.
// Reads top to bottom: the layer functions (forward and backward side by side, llm.c
// style: outputs first, gradients with a d prefix, backward ADDS into gradients), the
// whole-network forward and backward, the optimizer, KV-cache decoding, the CpuModel class.
//
// Legend: B batch, T time, C channels (dModel), NH heads, hs head size (C/NH),
// H MLP hidden (mlpRatio*C), V vocab, L layers, N = B*T rows.
// Network (pre-norm GPT): x = wte[tok] (+ wpe[pos]); per block
//   x = x + proj(attn(rope?(qkv(norm1(x)))));  x = x + fcproj(act(fc(norm2(x))));
// then h = normf(x), logits = h @ lmHead^T, value = h . wv + bv.
// GELU is the tanh form (GPT-2's; WGSL has no erf). Norm eps = config.normEps.
// Tested by model/cpu.test.ts (PyTorch golden, finite differences, KV cache, generation,
// overfitting); sampling is kernels' sampleRef (the GPU sampler's specification).

import { sampleRef } from "../kernels/reference";
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
  initParams,
  type ModelConfig,
  mlpHidden,
  type ParamLayout,
  type ParamTensors,
  paramLayout,
  paramTensors,
} from "./config";

// Layers and the network take float32 (the model) or float64 (finite-difference checks) arrays.
type F32 = Float32Array<ArrayBufferLike> | Float64Array<ArrayBufferLike>;

function allocLike(like: F32, n: number): F32 {
  return like instanceof Float64Array ? new Float64Array(n) : new Float32Array(n);
}

// ---------------------------------------------------------------------------------------
// Layers

/** out (N,C) = wte[tokens] + wpe[positions] (wpe null with rope). */
export function encoderForward(
  out: F32,
  tokens: Int32Array,
  positions: Int32Array,
  wte: F32,
  wpe: F32 | null,
  C: number,
): void {
  for (let n = 0; n < tokens.length; n++) {
    const te = tokens[n] * C;
    const pe = positions[n] * C;
    for (let i = 0; i < C; i++) out[n * C + i] = wte[te + i] + (wpe ? wpe[pe + i] : 0);
  }
}

export function encoderBackward(
  dwte: F32,
  dwpe: F32 | null,
  dout: F32,
  tokens: Int32Array,
  positions: Int32Array,
  C: number,
): void {
  for (let n = 0; n < tokens.length; n++) {
    const te = tokens[n] * C;
    const pe = positions[n] * C;
    for (let i = 0; i < C; i++) {
      dwte[te + i] += dout[n * C + i];
      if (dwpe) dwpe[pe + i] += dout[n * C + i];
    }
  }
}

/** LayerNorm over the last dim: out (N,C), saves mean (N) and rstd (N). */
export function layernormForward(
  out: F32,
  mean: F32,
  rstd: F32,
  inp: F32,
  w: F32,
  b: F32,
  N: number,
  C: number,
  eps: number,
): void {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let m = 0;
    for (let i = 0; i < C; i++) m += inp[x + i];
    m /= C;
    let v = 0;
    for (let i = 0; i < C; i++) v += (inp[x + i] - m) ** 2;
    const s = 1 / Math.sqrt(v / C + eps);
    for (let i = 0; i < C; i++) out[x + i] = (inp[x + i] - m) * s * w[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

export function layernormBackward(
  dinp: F32,
  dw: F32,
  db: F32,
  dout: F32,
  inp: F32,
  w: F32,
  mean: F32,
  rstd: F32,
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let dnormMean = 0;
    let dnormNormMean = 0;
    for (let i = 0; i < C; i++) {
      const norm = (inp[x + i] - mean[n]) * rstd[n];
      const dnorm = w[i] * dout[x + i];
      dnormMean += dnorm;
      dnormNormMean += dnorm * norm;
    }
    dnormMean /= C;
    dnormNormMean /= C;
    for (let i = 0; i < C; i++) {
      const norm = (inp[x + i] - mean[n]) * rstd[n];
      const dnorm = w[i] * dout[x + i];
      db[i] += dout[x + i];
      dw[i] += norm * dout[x + i];
      dinp[x + i] += (dnorm - dnormMean - norm * dnormNormMean) * rstd[n];
    }
  }
}

/** RMSNorm: out = inp * rstd * w, saves rstd (N). */
export function rmsnormForward(
  out: F32,
  rstd: F32,
  inp: F32,
  w: F32,
  N: number,
  C: number,
  eps: number,
): void {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let ss = 0;
    for (let i = 0; i < C; i++) ss += inp[x + i] * inp[x + i];
    const s = 1 / Math.sqrt(ss / C + eps);
    for (let i = 0; i < C; i++) out[x + i] = inp[x + i] * s * w[i];
    rstd[n] = s;
  }
}

export function rmsnormBackward(
  dinp: F32,
  dw: F32,
  dout: F32,
  inp: F32,
  w: F32,
  rstd: F32,
  N: number,
  C: number,
): void {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let dnormNormMean = 0;
    for (let i = 0; i < C; i++) dnormNormMean += w[i] * dout[x + i] * inp[x + i] * rstd[n];
    dnormNormMean /= C;
    for (let i = 0; i < C; i++) {
      const norm = inp[x + i] * rstd[n];
      dw[i] += norm * dout[x + i];
      dinp[x + i] += (w[i] * dout[x + i] - norm * dnormNormMean) * rstd[n];
    }
  }
}

/** out (N,OC) = inp (N,IC) @ w (OC,IC)^T + b (OC); b may be null. */
export function matmulForward(
  out: F32,
  inp: F32,
  w: F32,
  b: F32 | null,
  N: number,
  IC: number,
  OC: number,
): void {
  for (let n = 0; n < N; n++) {
    const x = n * IC;
    for (let o = 0; o < OC; o++) {
      const wo = o * IC;
      let s = b ? b[o] : 0;
      for (let i = 0; i < IC; i++) s += inp[x + i] * w[wo + i];
      out[n * OC + o] = s;
    }
  }
}

export function matmulBackward(
  dinp: F32,
  dw: F32,
  db: F32 | null,
  dout: F32,
  inp: F32,
  w: F32,
  N: number,
  IC: number,
  OC: number,
): void {
  for (let n = 0; n < N; n++) {
    const x = n * IC;
    for (let o = 0; o < OC; o++) {
      const g = dout[n * OC + o];
      if (g === 0) continue;
      const wo = o * IC;
      for (let i = 0; i < IC; i++) {
        dinp[x + i] += g * w[wo + i];
        dw[wo + i] += g * inp[x + i];
      }
      if (db) db[o] += g;
    }
  }
}

/**
 * Rotary embedding on q and k inside qkv (N,3C), in place, NeoX half-rotation: per head the
 * pair (i, i + hs/2) turns by pos * theta^(-2i/hs). sign -1 applies the inverse (backward).
 */
export function ropeApply(
  qkv: F32,
  positions: Int32Array,
  N: number,
  C: number,
  NH: number,
  theta: number,
  sign: 1 | -1,
): void {
  const hs = C / NH;
  const half = hs / 2;
  for (let n = 0; n < N; n++) {
    for (let part = 0; part < 2; part++) {
      for (let h = 0; h < NH; h++) {
        const base = n * 3 * C + part * C + h * hs;
        for (let i = 0; i < half; i++) {
          const angle = positions[n] * theta ** ((-2 * i) / hs);
          const cos = Math.cos(angle);
          const sin = sign * Math.sin(angle);
          const x1 = qkv[base + i];
          const x2 = qkv[base + i + half];
          qkv[base + i] = x1 * cos - x2 * sin;
          qkv[base + i + half] = x1 * sin + x2 * cos;
        }
      }
    }
  }
}

/** Causal self-attention: out (B,T,C) from qkv (B,T,3C); saves att (B,NH,T,T) probabilities. */
export function attentionForward(
  out: F32,
  att: F32,
  qkv: F32,
  B: number,
  T: number,
  C: number,
  NH: number,
): void {
  const hs = C / NH;
  const scale = 1 / Math.sqrt(hs);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < NH; h++) {
        const q = (b * T + t) * 3 * C + h * hs;
        const a = ((b * NH + h) * T + t) * T;
        let max = -Infinity;
        for (let t2 = 0; t2 <= t; t2++) {
          const k = (b * T + t2) * 3 * C + C + h * hs;
          let s = 0;
          for (let i = 0; i < hs; i++) s += qkv[q + i] * qkv[k + i];
          s *= scale;
          att[a + t2] = s;
          if (s > max) max = s;
        }
        let sum = 0;
        for (let t2 = 0; t2 <= t; t2++) {
          const e = Math.exp(att[a + t2] - max);
          att[a + t2] = e;
          sum += e;
        }
        for (let t2 = 0; t2 < T; t2++) att[a + t2] = t2 <= t ? att[a + t2] / sum : 0;
        const o = (b * T + t) * C + h * hs;
        for (let i = 0; i < hs; i++) out[o + i] = 0;
        for (let t2 = 0; t2 <= t; t2++) {
          const v = (b * T + t2) * 3 * C + 2 * C + h * hs;
          const p = att[a + t2];
          for (let i = 0; i < hs; i++) out[o + i] += p * qkv[v + i];
        }
      }
    }
  }
}

export function attentionBackward(
  dqkv: F32,
  dout: F32,
  qkv: F32,
  att: F32,
  B: number,
  T: number,
  C: number,
  NH: number,
): void {
  const hs = C / NH;
  const scale = 1 / Math.sqrt(hs);
  const datt = allocLike(dqkv, T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < NH; h++) {
        const q = (b * T + t) * 3 * C + h * hs;
        const a = ((b * NH + h) * T + t) * T;
        const o = (b * T + t) * C + h * hs;
        let dot = 0;
        for (let t2 = 0; t2 <= t; t2++) {
          const v = (b * T + t2) * 3 * C + 2 * C + h * hs;
          let s = 0;
          for (let i = 0; i < hs; i++) {
            s += dout[o + i] * qkv[v + i];
            dqkv[v + i] += att[a + t2] * dout[o + i];
          }
          datt[t2] = s;
          dot += att[a + t2] * s;
        }
        for (let t2 = 0; t2 <= t; t2++) {
          const dpre = att[a + t2] * (datt[t2] - dot) * scale;
          const k = (b * T + t2) * 3 * C + C + h * hs;
          for (let i = 0; i < hs; i++) {
            dqkv[q + i] += dpre * qkv[k + i];
            dqkv[k + i] += dpre * qkv[q + i];
          }
        }
      }
    }
  }
}

const GELU_S = Math.sqrt(2 / Math.PI);

export function geluForward(out: F32, inp: F32, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = inp[i];
    out[i] = 0.5 * x * (1 + Math.tanh(GELU_S * (x + 0.044715 * x * x * x)));
  }
}

export function geluBackward(dinp: F32, dout: F32, inp: F32, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = inp[i];
    const th = Math.tanh(GELU_S * (x + 0.044715 * x * x * x));
    const dth = (1 - th * th) * GELU_S * (1 + 3 * 0.044715 * x * x);
    dinp[i] += dout[i] * (0.5 * (1 + th) + 0.5 * x * dth);
  }
}

/** out (N,H) = silu(gate) * up, from fch (N,2H) = [gate | up]. */
export function swigluForward(out: F32, fch: F32, N: number, H: number): void {
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < H; j++) {
      const g = fch[n * 2 * H + j];
      out[n * H + j] = (g / (1 + Math.exp(-g))) * fch[n * 2 * H + H + j];
    }
  }
}

export function swigluBackward(dfch: F32, dout: F32, fch: F32, N: number, H: number): void {
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < H; j++) {
      const g = fch[n * 2 * H + j];
      const u = fch[n * 2 * H + H + j];
      const sig = 1 / (1 + Math.exp(-g));
      const d = dout[n * H + j];
      dfch[n * 2 * H + j] += d * u * sig * (1 + g * (1 - sig));
      dfch[n * 2 * H + H + j] += d * g * sig;
    }
  }
}

/**
 * logp (N) of targets and entropy (N) of softmax(logits * invTemp) from logits (N,V), via a
 * stable log-softmax (invTemp = 1/temperature; 1 for training).
 */
export function scoreForward(
  logp: F32,
  entropy: F32,
  logits: F32,
  targets: Int32Array,
  N: number,
  V: number,
  invTemp = 1,
): void {
  const lp = new Float64Array(V);
  for (let n = 0; n < N; n++) {
    entropy[n] = rowLogSoftmax(lp, logits, n * V, V, invTemp);
    logp[n] = lp[targets[n]];
  }
}

// lp (V) = log softmax(logits[off..off+V) * invTemp); returns the entropy.
function rowLogSoftmax(lp: Float64Array, logits: F32, off: number, V: number, invTemp: number): number {
  let max = -Infinity;
  for (let v = 0; v < V; v++) max = Math.max(max, logits[off + v] * invTemp);
  let sum = 0;
  for (let v = 0; v < V; v++) sum += Math.exp(logits[off + v] * invTemp - max);
  const lse = max + Math.log(sum);
  let h = 0;
  for (let v = 0; v < V; v++) {
    lp[v] = logits[off + v] * invTemp - lse;
    h -= Math.exp(lp[v]) * lp[v];
  }
  return h;
}

/**
 * dlogits (N,V) of sum_n dlogp[n]*logp[n] + dent[n]*H[n], with z = logits * invTemp:
 * d logp/dz_v = [v==target] - p_v;  dH/dz_v = -p_v (log p_v + H); dz/dlogits = invTemp.
 * Overwrites dlogits.
 */
export function scoreBackward(
  dlogits: F32,
  dlogp: F32,
  dent: F32 | null,
  logits: F32,
  targets: Int32Array,
  N: number,
  V: number,
  invTemp = 1,
): void {
  const lp = new Float64Array(V);
  for (let n = 0; n < N; n++) {
    const z = n * V;
    const wl = dlogp[n];
    const we = dent ? dent[n] : 0;
    if (wl === 0 && we === 0) {
      dlogits.fill(0, z, z + V);
      continue;
    }
    const h = rowLogSoftmax(lp, logits, z, V, invTemp);
    for (let v = 0; v < V; v++) {
      const p = Math.exp(lp[v]);
      dlogits[z + v] = invTemp * (wl * ((v === targets[n] ? 1 : 0) - p) - we * p * (lp[v] + h));
    }
  }
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
  qkv: F32; // (N,3C), q and k after rope
  att: F32; // (B,NH,T,T)
  atty: F32; // (N,C)
  res2: F32; // (N,C) residual after attention
  ln2: F32;
  ln2Mean: F32;
  ln2Rstd: F32;
  fch: F32; // (N,H) or (N,2H)
  fchAct: F32; // (N,H)
  res3: F32; // (N,C) residual after the MLP
}

export interface Activations {
  B: number;
  T: number;
  tokens: Int32Array;
  targets: Int32Array;
  positions: Int32Array;
  encoded: F32; // (N,C)
  layers: LayerActs[];
  lnf: F32; // (N,C)
  lnfMean: F32;
  lnfRstd: F32;
  logits: F32; // (N,V)
  invTemp: number;
  logp: F32; // (N)
  entropy: F32; // (N)
  values: F32 | null; // (N)
}

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
  if (c.norm === "layernorm") layernormForward(out, mean, rstd, inp, w, b!, N, c.dModel, c.normEps);
  else rmsnormForward(out, rstd, inp, w, N, c.dModel, c.normEps);
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
  if (c.norm === "layernorm") layernormBackward(dinp, dw, db!, dout, inp, w, mean, rstd, N, c.dModel);
  else rmsnormBackward(dinp, dw, dout, inp, w, rstd, N, c.dModel);
}

function mlpActForward(c: ModelConfig, out: F32, fch: F32, N: number): void {
  const H = mlpHidden(c);
  if (c.mlp === "gelu") geluForward(out, fch, N * H);
  else swigluForward(out, fch, N, H);
}

function mlpActBackward(c: ModelConfig, dfch: F32, dout: F32, fch: F32, N: number): void {
  const H = mlpHidden(c);
  if (c.mlp === "gelu") geluBackward(dfch, dout, fch, N * H);
  else swigluBackward(dfch, dout, fch, N, H);
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

/** The whole forward pass over (B,T); returns everything backward needs. */
export function forward(c: ModelConfig, params: Params, batch: ScoreBatch): Activations {
  const { B, T } = batch;
  const positions = checkBatch(c, batch);
  const N = B * T;
  const C = c.dModel;
  const NH = c.heads;
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const V = c.vocab;
  const f = (n: number) => allocLike(params.wte, n);

  const encoded = f(N * C); // (N,C)
  encoderForward(encoded, batch.tokens, positions, params.wte, params.wpe, C);
  const layers: LayerActs[] = [];
  let residual: F32 = encoded;
  for (const p of params.layers) {
    const a: LayerActs = {
      ln1: f(N * C),
      ln1Mean: f(N),
      ln1Rstd: f(N),
      qkv: f(N * 3 * C),
      att: f(B * NH * T * T),
      atty: f(N * C),
      res2: f(N * C),
      ln2: f(N * C),
      ln2Mean: f(N),
      ln2Rstd: f(N),
      fch: f(N * fcRows),
      fchAct: f(N * H),
      res3: f(N * C),
    };
    normForward(c, a.ln1, a.ln1Mean, a.ln1Rstd, residual, p.ln1w, p.ln1b, N);
    matmulForward(a.qkv, a.ln1, p.qkvw, p.qkvb, N, C, 3 * C);
    if (c.positional === "rope") ropeApply(a.qkv, positions, N, C, NH, c.ropeTheta, 1);
    attentionForward(a.atty, a.att, a.qkv, B, T, C, NH);
    matmulForward(a.res2, a.atty, p.projw, p.projb, N, C, C);
    for (let i = 0; i < N * C; i++) a.res2[i] += residual[i];
    normForward(c, a.ln2, a.ln2Mean, a.ln2Rstd, a.res2, p.ln2w, p.ln2b, N);
    matmulForward(a.fch, a.ln2, p.fcw, p.fcb, N, C, fcRows);
    mlpActForward(c, a.fchAct, a.fch, N);
    matmulForward(a.res3, a.fchAct, p.fcprojw, p.fcprojb, N, H, C);
    for (let i = 0; i < N * C; i++) a.res3[i] += a.res2[i];
    layers.push(a);
    residual = a.res3;
  }
  const lnf = f(N * C);
  const lnfMean = f(N);
  const lnfRstd = f(N);
  normForward(c, lnf, lnfMean, lnfRstd, residual, params.lnfw, params.lnfb, N);
  const logits = f(N * V); // (N,V)
  matmulForward(logits, lnf, params.lmHead, null, N, C, V);
  const logp = f(N);
  const entropy = f(N);
  const invTemp = 1 / (batch.temperature ?? 1);
  scoreForward(logp, entropy, logits, batch.targets, N, V, invTemp);
  let values: F32 | null = null;
  if (params.valuew && params.valueb) {
    values = f(N);
    matmulForward(values, lnf, params.valuew, params.valueb, N, C, 1);
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

/** Backward of forward(): ADDS d(loss)/d(params) into grads, given dloss/d(logp, entropy, values). */
export function backward(
  c: ModelConfig,
  params: Params,
  grads: Params,
  acts: Activations,
  g: { dlogp: F32; dentropy?: F32; dvalue?: F32 },
): void {
  const { B, T } = acts;
  const N = B * T;
  const C = c.dModel;
  const NH = c.heads;
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const V = c.vocab;
  const f = (n: number) => allocLike(params.wte, n);

  const dlogits = f(N * V); // (N,V)
  scoreBackward(dlogits, g.dlogp, g.dentropy ?? null, acts.logits, acts.targets, N, V, acts.invTemp);
  const dlnf = f(N * C);
  matmulBackward(dlnf, grads.lmHead, null, dlogits, acts.lnf, params.lmHead, N, C, V);
  if (g.dvalue && params.valuew && grads.valuew && grads.valueb) {
    matmulBackward(dlnf, grads.valuew, grads.valueb, g.dvalue, acts.lnf, params.valuew, N, C, 1);
  }
  // dres: gradient w.r.t. the residual stream, carried down through the blocks.
  const dres = f(N * C);
  const last = acts.layers.length > 0 ? acts.layers[acts.layers.length - 1].res3 : acts.encoded;
  normBackward(c, dres, grads.lnfw, grads.lnfb, dlnf, last, params.lnfw, acts.lnfMean, acts.lnfRstd, N);

  const dfchAct = f(N * H);
  const dfch = f(N * fcRows);
  const dln = f(N * C);
  const datty = f(N * C);
  const dqkv = f(N * 3 * C);
  for (let l = c.layers - 1; l >= 0; l--) {
    const p = params.layers[l];
    const d = grads.layers[l];
    const a = acts.layers[l];
    const residual = l === 0 ? acts.encoded : acts.layers[l - 1].res3;
    // MLP: dres is d/d res3 and also d/d fcproj output.
    dfchAct.fill(0);
    matmulBackward(dfchAct, d.fcprojw, d.fcprojb, dres, a.fchAct, p.fcprojw, N, H, C);
    dfch.fill(0);
    mlpActBackward(c, dfch, dfchAct, a.fch, N);
    dln.fill(0);
    matmulBackward(dln, d.fcw, d.fcb, dfch, a.ln2, p.fcw, N, C, fcRows);
    normBackward(c, dres, d.ln2w, d.ln2b, dln, a.res2, p.ln2w, a.ln2Mean, a.ln2Rstd, N);
    // Attention: dres is now d/d res2, also d/d attention projection output.
    datty.fill(0);
    matmulBackward(datty, d.projw, d.projb, dres, a.atty, p.projw, N, C, C);
    dqkv.fill(0);
    attentionBackward(dqkv, datty, a.qkv, a.att, B, T, C, NH);
    if (c.positional === "rope") ropeApply(dqkv, acts.positions, N, C, NH, c.ropeTheta, -1);
    dln.fill(0);
    matmulBackward(dln, d.qkvw, d.qkvb, dqkv, a.ln1, p.qkvw, N, C, 3 * C);
    normBackward(c, dres, d.ln1w, d.ln1b, dln, residual, p.ln1w, a.ln1Mean, a.ln1Rstd, N);
  }
  encoderBackward(grads.wte, grads.wpe, dres, acts.tokens, acts.positions, C);
}

// ---------------------------------------------------------------------------------------
// Optimizer

export function gradNorm(grads: F32): number {
  let s = 0;
  for (let i = 0; i < grads.length; i++) s += grads[i] * grads[i];
  return Math.sqrt(s);
}

/**
 * Global norm, clip (scale = min(1, maxGradNorm / (norm + 1e-6)), as
 * torch.nn.utils.clip_grad_norm_ and kernels' clipByNorm), then AdamW as torch.optim.AdamW: p -= lr*wd*p;
 * m, v moments; p -= lr * mhat / (sqrt(vhat) + eps). Weight decay applies to every
 * parameter. A non-finite norm leaves params, moments and step unchanged.
 */
export function adamwStep(params: F32, grads: F32, state: OptimizerState, h: AdamWHparams): StepResult {
  const norm = gradNorm(grads);
  if (!Number.isFinite(norm)) return { gradNorm: norm, skipped: true };
  const scale = h.maxGradNorm > 0 ? Math.min(1, h.maxGradNorm / (norm + 1e-6)) : 1;
  const t = state.step + 1;
  const bc1 = 1 - h.beta1 ** t;
  const bc2 = 1 - h.beta2 ** t;
  const { m, v } = state;
  for (let i = 0; i < params.length; i++) {
    const g = grads[i] * scale;
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
    const mhat = m[i] / bc1;
    const vhat = v[i] / bc2;
    params[i] -= h.lr * (mhat / (Math.sqrt(vhat) + h.eps) + h.weightDecay * params[i]);
  }
  state.step = t;
  return { gradNorm: norm, skipped: false };
}

// ---------------------------------------------------------------------------------------
// KV-cache decoding: one sequence at a time, a chunk of new tokens per call

export interface KvCache {
  k: F32[]; // per layer (context, C), after rope
  v: F32[]; // per layer (context, C)
  length: number;
}

export function newKvCache(c: ModelConfig): KvCache {
  const make = (): F32[] => Array.from({ length: c.layers }, () => new Float32Array(c.context * c.dModel));
  return { k: make(), v: make(), length: 0 };
}

/**
 * Feeds n tokens at positions length..length+n-1 to one sequence's cache and returns the
 * logits (n,V) at those positions. Same arithmetic as forward() on the full sequence.
 */
export function forwardCached(c: ModelConfig, params: Params, cache: KvCache, tokens: number[]): F32 {
  const n = tokens.length;
  const start = cache.length;
  if (start + n > c.context)
    throw new Error(`sequence of ${start + n} tokens exceeds the context ${c.context}`);
  const C = c.dModel;
  const NH = c.heads;
  const hs = C / NH;
  const H = mlpHidden(c);
  const fcRows = c.mlp === "swiglu" ? 2 * H : H;
  const f = (k: number) => allocLike(params.wte, k);
  const positions = Int32Array.from({ length: n }, (_, i) => start + i);
  const x = f(n * C); // (n,C) residual stream
  encoderForward(x, Int32Array.from(tokens), positions, params.wte, params.wpe, C);
  const ln = f(n * C);
  const mean = f(n);
  const rstd = f(n);
  const qkv = f(n * 3 * C);
  const atty = f(n * C);
  const tmp = f(n * C);
  const fch = f(n * fcRows);
  const act = f(n * H);
  const scores = f(c.context);
  const scale = 1 / Math.sqrt(hs);
  params.layers.forEach((p, l) => {
    normForward(c, ln, mean, rstd, x, p.ln1w, p.ln1b, n);
    matmulForward(qkv, ln, p.qkvw, p.qkvb, n, C, 3 * C);
    if (c.positional === "rope") ropeApply(qkv, positions, n, C, NH, c.ropeTheta, 1);
    const K = cache.k[l];
    const Vc = cache.v[l];
    for (let i = 0; i < n; i++) {
      K.set(qkv.subarray(i * 3 * C + C, i * 3 * C + 2 * C), (start + i) * C);
      Vc.set(qkv.subarray(i * 3 * C + 2 * C, i * 3 * C + 3 * C), (start + i) * C);
    }
    for (let i = 0; i < n; i++) {
      const len = start + i + 1;
      for (let h = 0; h < NH; h++) {
        const q = i * 3 * C + h * hs;
        let max = -Infinity;
        for (let t2 = 0; t2 < len; t2++) {
          let s = 0;
          for (let j = 0; j < hs; j++) s += qkv[q + j] * K[t2 * C + h * hs + j];
          scores[t2] = s * scale;
          if (scores[t2] > max) max = scores[t2];
        }
        let sum = 0;
        for (let t2 = 0; t2 < len; t2++) {
          scores[t2] = Math.exp(scores[t2] - max);
          sum += scores[t2];
        }
        const o = i * C + h * hs;
        for (let j = 0; j < hs; j++) atty[o + j] = 0;
        for (let t2 = 0; t2 < len; t2++) {
          const w = scores[t2] / sum;
          for (let j = 0; j < hs; j++) atty[o + j] += w * Vc[t2 * C + h * hs + j];
        }
      }
    }
    matmulForward(tmp, atty, p.projw, p.projb, n, C, C);
    for (let i = 0; i < n * C; i++) x[i] += tmp[i];
    normForward(c, ln, mean, rstd, x, p.ln2w, p.ln2b, n);
    matmulForward(fch, ln, p.fcw, p.fcb, n, C, fcRows);
    mlpActForward(c, act, fch, n);
    matmulForward(tmp, act, p.fcprojw, p.fcprojb, n, H, C);
    for (let i = 0; i < n * C; i++) x[i] += tmp[i];
  });
  normForward(c, ln, mean, rstd, x, params.lnfw, params.lnfb, n);
  const logits = f(n * c.vocab);
  matmulForward(logits, ln, params.lmHead, null, n, C, c.vocab);
  cache.length = start + n;
  return logits;
}

/** The kernels' sampler parameters for decode call `step` of a session. */
export function samplerParams(s: SamplingOptions, step: number) {
  return { temperature: s.temperature, topK: s.topK ?? 0, topP: s.topP ?? 1, seed: s.seed >>> 0, step };
}

// A sampled token is fed to the cache lazily, at the next decode or append, so a sequence
// can sample its last token when its cache already holds context-1 tokens.
class CpuGenerationSession implements GenerationSession {
  private caches: KvCache[] = [];
  private lastLogits: F32[] = [];
  private pending: (number | null)[] = [];
  private steps = 0;

  constructor(
    private readonly model: CpuModel,
    private readonly sampling: SamplingOptions,
  ) {}

  async prefill(prompts: number[][]): Promise<void> {
    this.caches = prompts.map(() => newKvCache(this.model.config));
    this.pending = prompts.map(() => null);
    this.lastLogits = prompts.map((p, i) => {
      if (p.length === 0) throw new Error(`prompt ${i} is empty`);
      return this.feed(i, p);
    });
  }

  private feed(seq: number, tokens: number[]): F32 {
    const V = this.model.config.vocab;
    const logits = forwardCached(this.model.config, this.model.views, this.caches[seq], tokens);
    return logits.slice((tokens.length - 1) * V);
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
    sampleRef(sampled, logps, logits, B, V, samplerParams(this.sampling, this.steps++));
    const tokens = new Int32Array(B).fill(-1);
    const logprobs = new Float32Array(B).fill(Number.NaN);
    for (let b = 0; b < B; b++) {
      if (!active[b]) continue;
      tokens[b] = sampled[b];
      logprobs[b] = logps[b];
      this.pending[b] = sampled[b];
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
  readonly params: Float32Array;
  readonly grads: Float32Array;
  readonly views: Params;
  private readonly gradViews: Params;
  private opt: OptimizerState;
  private acts: Activations | null = null;

  constructor(
    readonly config: ModelConfig,
    weights?: Float32Array,
    seed = 0,
  ) {
    this.layout = paramLayout(config);
    this.params = weights ? Float32Array.from(weights) : initParams(config, this.layout, seed);
    if (this.params.length !== this.layout.total) {
      throw new Error(`weights have ${this.params.length} floats, the layout needs ${this.layout.total}`);
    }
    this.grads = new Float32Array(this.layout.total);
    this.views = paramViews(this.params, this.layout);
    this.gradViews = paramViews(this.grads, this.layout);
    this.opt = { m: new Float32Array(this.layout.total), v: new Float32Array(this.layout.total), step: 0 };
  }

  async forwardScore(batch: ScoreBatch, options: { logits?: boolean } = {}): Promise<ScoreResult> {
    this.acts = forward(this.config, this.views, batch);
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
    backward(this.config, this.views, this.gradViews, this.acts, grads);
  }

  zeroGrad(): void {
    this.grads.fill(0);
  }

  async step(hparams: AdamWHparams): Promise<StepResult> {
    return adamwStep(this.params, this.grads, this.opt, hparams);
  }

  async getWeights(): Promise<Float32Array> {
    return this.params.slice();
  }

  async setWeights(weights: Float32Array): Promise<void> {
    if (weights.length !== this.layout.total)
      throw new Error(`setWeights: ${weights.length} floats, expected ${this.layout.total}`);
    this.params.set(weights);
  }

  async getGrads(): Promise<Float32Array> {
    return this.grads.slice();
  }

  async getOptimizerState(): Promise<OptimizerState> {
    return { m: this.opt.m.slice(), v: this.opt.v.slice(), step: this.opt.step };
  }

  async setOptimizerState(state: OptimizerState): Promise<void> {
    if (state.m.length !== this.layout.total || state.v.length !== this.layout.total) {
      throw new Error(`setOptimizerState: moments must have ${this.layout.total} floats`);
    }
    this.opt = { m: state.m.slice(), v: state.v.slice(), step: state.step };
  }

  async frozenCopy(): Promise<PolicyModel> {
    return new CpuModel(this.config, this.params);
  }

  startGeneration(sampling: SamplingOptions): GenerationSession & { nextLogits(seq: number): Float32Array } {
    return new CpuGenerationSession(this, sampling);
  }

  dispose(): void {
    this.acts = null;
  }
}
