// CPU references for every kernel: the specification the WGSL must match. Plain loops over
// Float32Array (or Float64Array, for the float64 finite-difference checks in reference.test.ts).
// Shapes: B batch, T time, C channels, NH heads, hs = C/NH head size, V vocab, N = B*T rows;
// attention also KVH key/value heads (grouped-query), KV = KVH*hs.
// Backward functions ADD into their gradient arrays (zeroing is the caller's step).
// Tested by kernels/reference.test.ts (finite differences) and every kernels/*.gpu.test.ts; model/cpu.ts
// is the whole network written with these functions (and tested against PyTorch).

export type F = Float32Array | Float64Array;
export type I = Int32Array | Uint32Array;

// ---------------------------------------------------------------- matmul

export interface MatmulShape {
  M: number;
  N: number;
  K: number;
  transA?: boolean;
  transB?: boolean;
  /** out += instead of out = */
  accumulate?: boolean;
  alpha?: number;
  batch?: number;
  strideA?: number;
  strideB?: number;
  strideOut?: number;
}

/** out[b] (M,N) = alpha * op(A[b]) op(B[b]) (+ out) (+ bias (N)); op(A) (M,K), op(B) (K,N). */
export function matmulRef(out: F, a: F, b: F, bias: F | null, s: MatmulShape): void {
  const { M, N, K } = s;
  const alpha = s.alpha ?? 1;
  const batch = s.batch ?? 1;
  for (let z = 0; z < batch; z++) {
    const oa = z * (s.strideA ?? 0);
    const ob = z * (s.strideB ?? 0);
    const oo = z * (s.strideOut ?? 0);
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let acc = 0;
        for (let k = 0; k < K; k++) {
          const x = s.transA ? a[oa + k * M + m] : a[oa + m * K + k];
          const y = s.transB ? b[ob + n * K + k] : b[ob + k * N + n];
          acc += x * y;
        }
        let v = alpha * acc;
        if (bias) v += bias[n];
        if (s.accumulate) v += out[oo + m * N + n];
        out[oo + m * N + n] = v;
      }
    }
  }
}

/** out (N,OC) = inp (N,C) · weightᵀ (OC,C) + bias (OC): the linear layer (bias may be null). */
export function matmulForwardRef(
  out: F,
  inp: F,
  weight: F,
  bias: F | null,
  N: number,
  C: number,
  OC: number,
) {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    for (let o = 0; o < OC; o++) {
      const wo = o * C;
      let s = bias ? bias[o] : 0;
      for (let c = 0; c < C; c++) s += inp[x + c] * weight[wo + c];
      out[n * OC + o] = s;
    }
  }
}

/** dinp (N,C) += dout·weight, dweight (OC,C) += doutᵀ·inp (null: a frozen weight), dbias (OC) += Σ_n dout. */
export function matmulBackwardRef(
  dinp: F,
  dweight: F | null,
  dbias: F | null,
  dout: F,
  inp: F,
  weight: F,
  N: number,
  C: number,
  OC: number,
) {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    for (let o = 0; o < OC; o++) {
      const g = dout[n * OC + o];
      if (g === 0) continue; // rows the loss does not reach (padding, unscored tokens)
      const wo = o * C;
      for (let c = 0; c < C; c++) dinp[x + c] += g * weight[wo + c];
      if (dweight) for (let c = 0; c < C; c++) dweight[wo + c] += g * inp[x + c];
      if (dbias) dbias[o] += g;
    }
  }
}

// ---------------------------------------------------------------- column blocks (LoRA)

/** out[n, start+j] += scale * src[n, j] for n < N, j < cols; out has rows of `stride` floats. */
export function columnsAddRef(
  out: F,
  src: F,
  N: number,
  cols: number,
  stride: number,
  start: number,
  scale: number,
) {
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < cols; j++) out[n * stride + start + j] += scale * src[n * cols + j];
  }
}

/** dst[n, j] = scale * src[n, start+j] (N, cols): a column block of a (N, stride) array. */
export function columnsGatherRef(
  dst: F,
  src: F,
  N: number,
  cols: number,
  stride: number,
  start: number,
  scale: number,
) {
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < cols; j++) dst[n * cols + j] = scale * src[n * stride + start + j];
  }
}

// ---------------------------------------------------------------- embedding

/** out (N,C) = wte[tokens[n]] + wpe[pos[n]] (wpe null: no learned positions, as with RoPE); a token < 0 gives a zero row. */
export function embeddingForwardRef(out: F, tokens: I, pos: I, wte: F, wpe: F | null, N: number, C: number) {
  for (let n = 0; n < N; n++) {
    const t = tokens[n] | 0;
    for (let c = 0; c < C; c++) out[n * C + c] = t < 0 ? 0 : wte[t * C + c] + (wpe ? wpe[pos[n] * C + c] : 0);
  }
}

export function embeddingBackwardRef(
  dwte: F,
  dwpe: F | null,
  dout: F,
  tokens: I,
  pos: I,
  N: number,
  C: number,
) {
  for (let n = 0; n < N; n++) {
    const t = tokens[n] | 0;
    if (t < 0) continue;
    for (let c = 0; c < C; c++) {
      dwte[t * C + c] += dout[n * C + c];
      if (dwpe) dwpe[pos[n] * C + c] += dout[n * C + c];
    }
  }
}

// ---------------------------------------------------------------- norms

/** The norms' default eps (GPT-2's); the models pass config.normEps (Qwen: 1e-6). */
export const NORM_EPS = 1e-5;

/** LayerNorm over the last dim: out (N,C); saves mean (N) and rstd (N) for backward. */
export function layernormForwardRef(
  out: F,
  mean: F,
  rstd: F,
  inp: F,
  weight: F,
  bias: F,
  N: number,
  C: number,
  eps = NORM_EPS,
) {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let m = 0;
    for (let c = 0; c < C; c++) m += inp[x + c];
    m /= C;
    let v = 0;
    for (let c = 0; c < C; c++) v += (inp[x + c] - m) ** 2;
    v /= C;
    const s = 1 / Math.sqrt(v + eps);
    for (let c = 0; c < C; c++) out[x + c] = (inp[x + c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

export function layernormBackwardRef(
  dinp: F,
  dweight: F,
  dbias: F,
  dout: F,
  inp: F,
  weight: F,
  mean: F,
  rstd: F,
  N: number,
  C: number,
) {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let dnormMean = 0;
    let dnormNormMean = 0;
    for (let c = 0; c < C; c++) {
      const norm = (inp[x + c] - mean[n]) * rstd[n];
      const dnorm = weight[c] * dout[x + c];
      dnormMean += dnorm;
      dnormNormMean += dnorm * norm;
    }
    dnormMean /= C;
    dnormNormMean /= C;
    for (let c = 0; c < C; c++) {
      const norm = (inp[x + c] - mean[n]) * rstd[n];
      const dnorm = weight[c] * dout[x + c];
      dbias[c] += dout[x + c];
      dweight[c] += norm * dout[x + c];
      dinp[x + c] += (dnorm - dnormMean - norm * dnormNormMean) * rstd[n];
    }
  }
}

/** RMSNorm: out (N,C) = inp * rstd * weight; saves rstd (N). */
export function rmsnormForwardRef(out: F, rstd: F, inp: F, weight: F, N: number, C: number, eps = NORM_EPS) {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss += inp[x + c] * inp[x + c];
    const s = 1 / Math.sqrt(ss / C + eps);
    for (let c = 0; c < C; c++) out[x + c] = inp[x + c] * s * weight[c];
    rstd[n] = s;
  }
}

export function rmsnormBackwardRef(
  dinp: F,
  dweight: F,
  dout: F,
  inp: F,
  weight: F,
  rstd: F,
  N: number,
  C: number,
) {
  for (let n = 0; n < N; n++) {
    const x = n * C;
    let dot = 0; // mean over c of dnorm * norm
    for (let c = 0; c < C; c++) dot += weight[c] * dout[x + c] * inp[x + c] * rstd[n];
    dot /= C;
    for (let c = 0; c < C; c++) {
      const norm = inp[x + c] * rstd[n];
      dweight[c] += norm * dout[x + c];
      dinp[x + c] += (weight[c] * dout[x + c] - norm * dot) * rstd[n];
    }
  }
}

// ---------------------------------------------------------------- pointwise

export function residualForwardRef(out: F, a: F, b: F, n: number) {
  for (let i = 0; i < n; i++) out[i] = a[i] + b[i];
}

export function residualBackwardRef(da: F, db: F, dout: F, n: number) {
  for (let i = 0; i < n; i++) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

const GELU_K = Math.sqrt(2 / Math.PI);

/** GELU, tanh approximation (GPT-2; PyTorch approximate='tanh'). */
export function geluForwardRef(out: F, inp: F, n: number) {
  for (let i = 0; i < n; i++) {
    const x = inp[i];
    out[i] = 0.5 * x * (1 + Math.tanh(GELU_K * (x + 0.044715 * x * x * x)));
  }
}

export function geluBackwardRef(dinp: F, inp: F, dout: F, n: number) {
  for (let i = 0; i < n; i++) {
    const x = inp[i];
    const u = GELU_K * (x + 0.044715 * x * x * x);
    const t = Math.tanh(u);
    const du = GELU_K * (1 + 3 * 0.044715 * x * x);
    dinp[i] += (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du) * dout[i];
  }
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** SwiGLU: out (N,H)[n,j] = silu(inp[n,j]) * inp[n,H+j]; inp (N,2H) holds [gate | up]. */
export function swigluForwardRef(out: F, inp: F, N: number, H: number) {
  for (let n = 0; n < N; n++)
    for (let j = 0; j < H; j++) {
      const g = inp[n * 2 * H + j];
      out[n * H + j] = g * sigmoid(g) * inp[n * 2 * H + H + j];
    }
}

export function swigluBackwardRef(dinp: F, inp: F, dout: F, N: number, H: number) {
  for (let n = 0; n < N; n++)
    for (let j = 0; j < H; j++) {
      const g = inp[n * 2 * H + j];
      const u = inp[n * 2 * H + H + j];
      const s = sigmoid(g);
      const d = dout[n * H + j];
      dinp[n * 2 * H + j] += d * u * s * (1 + g * (1 - s));
      dinp[n * 2 * H + H + j] += d * g * s;
    }
}

/** SiLU alone: out = x * sigmoid(x). */
export function siluForwardRef(out: F, inp: F, n: number) {
  for (let i = 0; i < n; i++) out[i] = inp[i] * sigmoid(inp[i]);
}

export function siluBackwardRef(dinp: F, inp: F, dout: F, n: number) {
  for (let i = 0; i < n; i++) {
    const s = sigmoid(inp[i]);
    dinp[i] += dout[i] * s * (1 + inp[i] * (1 - s));
  }
}

// ---------------------------------------------------------------- attention

/** The logsumexp stored for a query that sees no key (all masked): exp(s - LSE_EMPTY) is 0. */
export const LSE_EMPTY = 3.0e38;

/**
 * Causal attention with grouped-query heads. C = NH*hs is the width of q and of out; each of the
 * KVH key/value heads (KVH divides NH; KVH = NH is plain multi-head attention) serves NH/KVH
 * consecutive query heads: query head h reads kv head h / (NH/KVH). qkv (B,T,C+2KV) holds
 * [q (C) | k (KV) | v (KV)] per token, KV = KVH*hs; out (B,T,C); lse (B,NH,T) is saved for backward.
 * mask (B,T), 1 = real token: query t sees keys j <= t with mask 1 (left or right padding). A
 * query with no visible key outputs 0.
 */
export function attentionForwardRef(
  out: F,
  lse: F,
  qkv: F,
  mask: I | null,
  B: number,
  T: number,
  C: number,
  NH: number,
  KVH = NH,
) {
  const hs = C / NH;
  const KV = KVH * hs;
  const row = C + 2 * KV;
  const group = NH / KVH;
  const scale = 1 / Math.sqrt(hs);
  const s = new Float64Array(T);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < NH; h++)
      for (let t = 0; t < T; t++) {
        const q = (b * T + t) * row + h * hs;
        const kh = C + Math.floor(h / group) * hs; // column of this head's k in a row
        let mx = -Infinity;
        for (let j = 0; j <= t; j++) {
          if (mask && !mask[b * T + j]) continue;
          const k = (b * T + j) * row + kh;
          let dot = 0;
          for (let d = 0; d < hs; d++) dot += qkv[q + d] * qkv[k + d];
          s[j] = dot * scale;
          mx = Math.max(mx, s[j]);
        }
        const o = (b * T + t) * C + h * hs;
        for (let d = 0; d < hs; d++) out[o + d] = 0;
        if (mx === -Infinity) {
          lse[(b * NH + h) * T + t] = LSE_EMPTY;
          continue;
        }
        let sum = 0;
        for (let j = 0; j <= t; j++) if (!mask || mask[b * T + j]) sum += Math.exp(s[j] - mx);
        for (let j = 0; j <= t; j++) {
          if (mask && !mask[b * T + j]) continue;
          const p = Math.exp(s[j] - mx) / sum;
          const v = (b * T + j) * row + kh + KV;
          for (let d = 0; d < hs; d++) out[o + d] += p * qkv[v + d];
        }
        lse[(b * NH + h) * T + t] = mx + Math.log(sum);
      }
}

/** dqkv (B,T,C+2KV) += the gradient through attentionForwardRef; out and lse are the forward's. */
export function attentionBackwardRef(
  dqkv: F,
  dout: F,
  qkv: F,
  out: F,
  lse: F,
  mask: I | null,
  B: number,
  T: number,
  C: number,
  NH: number,
  KVH = NH,
) {
  const hs = C / NH;
  const KV = KVH * hs;
  const row = C + 2 * KV;
  const group = NH / KVH;
  const scale = 1 / Math.sqrt(hs);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < NH; h++)
      for (let t = 0; t < T; t++) {
        const L = lse[(b * NH + h) * T + t];
        if (L === LSE_EMPTY) continue;
        const q = (b * T + t) * row + h * hs;
        const o = (b * T + t) * C + h * hs;
        const kh = C + Math.floor(h / group) * hs;
        let D = 0;
        for (let d = 0; d < hs; d++) D += dout[o + d] * out[o + d];
        for (let j = 0; j <= t; j++) {
          if (mask && !mask[b * T + j]) continue;
          const k = (b * T + j) * row + kh;
          const v = k + KV;
          let dot = 0;
          let dP = 0;
          for (let d = 0; d < hs; d++) {
            dot += qkv[q + d] * qkv[k + d];
            dP += dout[o + d] * qkv[v + d];
          }
          const p = Math.exp(dot * scale - L);
          const dS = p * (dP - D) * scale;
          for (let d = 0; d < hs; d++) {
            dqkv[q + d] += dS * qkv[k + d];
            dqkv[k + d] += dS * qkv[q + d];
            dqkv[v + d] += p * dout[o + d];
          }
        }
      }
}

/**
 * One new query per sequence over a KV cache: q is row b of a (B, qStride) buffer (the first C =
 * NH*hs columns; qStride = C+2KV when it is the qkv row), kcache/vcache (B,Tmax,KV) with KV =
 * KVH*hs, lens (B) valid cache positions (the current token's k,v included), mask (B,Tmax)
 * optional. Query head h reads cache head h / (NH/KVH). out (B,C).
 */
export function decodeAttentionRef(
  out: F,
  q: F,
  kcache: F,
  vcache: F,
  lens: I,
  mask: I | null,
  B: number,
  Tmax: number,
  C: number,
  NH: number,
  qStride: number,
  KVH = NH,
) {
  const hs = C / NH;
  const KV = KVH * hs;
  const group = NH / KVH;
  const scale = 1 / Math.sqrt(hs);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < NH; h++) {
      const kh = Math.floor(h / group) * hs;
      const s: number[] = [];
      let mx = -Infinity;
      for (let j = 0; j < lens[b]; j++) {
        if (mask && !mask[b * Tmax + j]) {
          s.push(-Infinity);
          continue;
        }
        let dot = 0;
        for (let d = 0; d < hs; d++)
          dot += q[b * qStride + h * hs + d] * kcache[(b * Tmax + j) * KV + kh + d];
        s.push(dot * scale);
        mx = Math.max(mx, dot * scale);
      }
      const o = b * C + h * hs;
      for (let d = 0; d < hs; d++) out[o + d] = 0;
      if (mx === -Infinity) continue;
      let sum = 0;
      for (const x of s) sum += Math.exp(x - mx);
      for (let j = 0; j < s.length; j++) {
        const p = Math.exp(s[j] - mx) / sum;
        for (let d = 0; d < hs; d++) out[o + d] += p * vcache[(b * Tmax + j) * KV + kh + d];
      }
    }
}

// ---------------------------------------------------------------- q/k norm (Qwen3)

/**
 * RMSNorm over each head's hs values of q and k inside a qkv row (N, (NH+2KVH)*hs) = [q heads |
 * k heads | v heads]: q heads are scaled by qw (hs), k heads by kw (hs), v heads copied. out has
 * the same shape; rstd (N, NH+KVH) is saved for backward.
 */
export function qkNormForwardRef(
  out: F,
  rstd: F,
  inp: F,
  qw: F,
  kw: F,
  N: number,
  NH: number,
  KVH: number,
  hs: number,
  eps = NORM_EPS,
) {
  const heads = NH + 2 * KVH;
  for (let n = 0; n < N; n++)
    for (let h = 0; h < heads; h++) {
      const x = (n * heads + h) * hs;
      if (h >= NH + KVH) {
        for (let d = 0; d < hs; d++) out[x + d] = inp[x + d];
        continue;
      }
      const w = h < NH ? qw : kw;
      let ss = 0;
      for (let d = 0; d < hs; d++) ss += inp[x + d] * inp[x + d];
      const r = 1 / Math.sqrt(ss / hs + eps);
      for (let d = 0; d < hs; d++) out[x + d] = inp[x + d] * r * w[d];
      rstd[n * (NH + KVH) + h] = r;
    }
}

/** dinp += the gradient through qkNormForwardRef (v heads pass it through), dqw and dkw (hs) += theirs. */
export function qkNormBackwardRef(
  dinp: F,
  dqw: F,
  dkw: F,
  dout: F,
  inp: F,
  qw: F,
  kw: F,
  rstd: F,
  N: number,
  NH: number,
  KVH: number,
  hs: number,
) {
  const heads = NH + 2 * KVH;
  for (let n = 0; n < N; n++)
    for (let h = 0; h < heads; h++) {
      const x = (n * heads + h) * hs;
      if (h >= NH + KVH) {
        for (let d = 0; d < hs; d++) dinp[x + d] += dout[x + d];
        continue;
      }
      const [w, dw] = h < NH ? [qw, dqw] : [kw, dkw];
      const r = rstd[n * (NH + KVH) + h];
      let dot = 0; // mean over d of dnorm * norm
      for (let d = 0; d < hs; d++) dot += w[d] * dout[x + d] * inp[x + d] * r;
      dot /= hs;
      for (let d = 0; d < hs; d++) {
        const norm = inp[x + d] * r;
        dw[d] += norm * dout[x + d];
        dinp[x + d] += (w[d] * dout[x + d] - norm * dot) * r;
      }
    }
}

// ---------------------------------------------------------------- RoPE

export interface RopeShape {
  /** rows (tokens) */
  N: number;
  nHeads: number;
  headDim: number;
  /** floats between consecutive rows (3C for the q or k part of qkv) */
  rowStride: number;
  /** float offset of head 0 inside a row (0 for q, C for k in qkv) */
  colOffset: number;
  base: number;
}

/**
 * Rotates pairs (i, i + hd/2) of each head by theta = pos[n] * base^(-2i/hd), in place
 * (GPT-NeoX / Llama "rotate_half"). theta, cos and sin in float64, as the GPU's table.
 */
export function ropeForwardRef(x: F, pos: I, s: RopeShape, sign = 1) {
  const half = s.headDim / 2;
  for (let n = 0; n < s.N; n++)
    for (let h = 0; h < s.nHeads; h++)
      for (let i = 0; i < half; i++) {
        // the angle in float64 as the GPU's table (kernels/rope.ts ropeAngles): exact at any position
        const theta = pos[n] * s.base ** ((-2 * i) / s.headDim);
        const c = Math.cos(theta);
        const sn = sign * Math.sin(theta);
        const a = n * s.rowStride + s.colOffset + h * s.headDim + i;
        const x0 = x[a];
        const x1 = x[a + half];
        x[a] = x0 * c - x1 * sn;
        x[a + half] = x0 * sn + x1 * c;
      }
}

/** The gradient of a rotation is the inverse rotation, applied in place to dx. */
export function ropeBackwardRef(dx: F, pos: I, s: RopeShape) {
  ropeForwardRef(dx, pos, s, -1);
}

// ---------------------------------------------------------------- fused log-softmax head

/**
 * Per row n of logits (N,V), with z = logits * invTemp: logp[n] = log softmax(z)[target[n]],
 * ent[n] = H(softmax(z)), and dlogits = d/dlogits of sum_n (wlp[n] * logp[n] + went[n] * ent[n]).
 * dlogits is WRITTEN (it is the head of the backward pass); null skips it (a forward-only call).
 * target < 0: logp 0 and a zero row.
 */
export function logSoftmaxRef(
  logp: F,
  ent: F,
  dlogits: F | null,
  logits: F,
  targets: I,
  wlp: F,
  went: F,
  N: number,
  V: number,
  invTemp: number,
) {
  for (let n = 0; n < N; n++) {
    const r = n * V;
    let mx = -Infinity;
    for (let v = 0; v < V; v++) mx = Math.max(mx, logits[r + v] * invTemp);
    let sum = 0;
    for (let v = 0; v < V; v++) sum += Math.exp(logits[r + v] * invTemp - mx);
    const lse = mx + Math.log(sum);
    let pz = 0;
    for (let v = 0; v < V; v++) {
      const z = logits[r + v] * invTemp;
      pz += Math.exp(z - lse) * z;
    }
    const t = targets[n] | 0;
    ent[n] = lse - pz;
    logp[n] = t < 0 ? 0 : logits[r + t] * invTemp - lse;
    if (!dlogits) continue;
    for (let v = 0; v < V; v++) {
      if (t < 0) {
        dlogits[r + v] = 0;
        continue;
      }
      const z = logits[r + v] * invTemp;
      const p = Math.exp(z - lse);
      dlogits[r + v] = invTemp * (wlp[n] * ((v === t ? 1 : 0) - p) - went[n] * p * (z - pz));
    }
  }
}

// ---------------------------------------------------------------- optimizer

export interface AdamWParams {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** 1-based step, for bias correction */
  step: number;
}

/** AdamW (decoupled weight decay, as torch.optim.AdamW), in place. `gradScale` multiplies g first. */
export function adamwRef(params: F, grads: F, m: F, v: F, n: number, h: AdamWParams, gradScale = 1) {
  const bc1 = 1 - h.beta1 ** h.step;
  const bc2 = 1 - h.beta2 ** h.step;
  for (let i = 0; i < n; i++) {
    const g = grads[i] * gradScale;
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
    const mh = m[i] / bc1;
    const vh = v[i] / bc2;
    params[i] -= h.lr * (mh / (Math.sqrt(vh) + h.eps) + h.weightDecay * params[i]);
  }
}

export function gradNormRef(g: F, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += g[i] * g[i];
  return Math.sqrt(s);
}

/** The clip factor applied by clip-by-norm (as torch.nn.utils.clip_grad_norm_). */
export function clipScale(norm: number, maxNorm: number): number {
  return Math.min(1, maxNorm / (norm + 1e-6));
}

// ---------------------------------------------------------------- sampling

/** PCG hash (O'Neill; Jarzynski & Olano 2020), as u32 math. */
export function pcgHash(x: number): number {
  const state = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul((state >>> ((state >>> 28) + 4)) ^ state, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The uniform in [0,1) that the sampler draws for (seed, step, row): counter-based, no state. */
export function sampleUniform(seed: number, step: number, row: number): number {
  const h = pcgHash((pcgHash((pcgHash(seed >>> 0) ^ step) >>> 0) ^ row) >>> 0);
  return (h >>> 8) / 16777216;
}

export interface SampleParams {
  /** 0 = greedy */
  temperature: number;
  /** 0 = off */
  topK: number;
  /** 1 = off */
  topP: number;
  seed: number;
  step: number;
  /** (B) per-row additions to `step` (a generation session's per-sequence token counts). */
  rowStep?: ArrayLike<number>;
}

/** Maps a float to a u32 whose unsigned order is the float order. */
export function orderedKey(x: number): number {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  return (u & 0x80000000 ? ~u : u | 0x80000000) >>> 0;
}

/**
 * The distribution the sampler draws row `row` from: q (V) sums to 1 over the kept tokens (those
 * whose logit is >= a threshold: the k-th largest for top-k, the smallest nucleus with mass >= topP),
 * 0 elsewhere, with softmax(logits / temperature) renormalized over the kept set.
 */
export function sampleDistribution(logits: F, V: number, s: SampleParams): Float64Array {
  let mx = -Infinity;
  for (let v = 0; v < V; v++) mx = Math.max(mx, logits[v]);
  const inv = 1 / s.temperature;
  const p = new Float64Array(V);
  let total = 0;
  for (let v = 0; v < V; v++) total += p[v] = Math.exp((logits[v] - mx) * inv);
  const keys = Array.from({ length: V }, (_, v) => orderedKey(logits[v]));
  const sorted = [...keys].sort((x, y) => y - x);
  let thr = 0;
  if (s.topK > 0 && s.topK < V) thr = sorted[s.topK - 1];
  if (s.topP < 1) {
    // the largest key whose "keys >= it" mass reaches topP
    for (let i = 0; i < V; i++) {
      const k = sorted[i];
      if (i + 1 < V && sorted[i + 1] === k) continue;
      let mass = 0;
      for (let v = 0; v < V; v++) if (keys[v] >= k) mass += p[v];
      if (mass >= s.topP * total) {
        thr = Math.max(thr, k);
        break;
      }
    }
  }
  let kept = 0;
  for (let v = 0; v < V; v++) {
    if (keys[v] < thr) p[v] = 0;
    kept += p[v];
  }
  for (let v = 0; v < V; v++) p[v] /= kept;
  return p;
}

/**
 * Samples one token per row of logits (B,V) by inverting the CDF of sampleDistribution in index
 * order at u = sampleUniform(seed, step + rowStep[row], row). logps[b] = log q(token). Greedy
 * (temperature 0): the first argmax, logp 0.
 */
export function sampleRef(tokens: Int32Array, logps: F, logits: F, B: number, V: number, s: SampleParams) {
  for (let b = 0; b < B; b++) {
    const row = logits.subarray(b * V, (b + 1) * V);
    if (s.temperature === 0) {
      let arg = 0;
      for (let v = 1; v < V; v++) if (row[v] > row[arg]) arg = v;
      tokens[b] = arg;
      logps[b] = 0;
      continue;
    }
    const q = sampleDistribution(row, V, s);
    const u = sampleUniform(s.seed, (s.step + (s.rowStep?.[b] ?? 0)) >>> 0, b);
    let cum = 0;
    let tok = -1;
    for (let v = 0; v < V; v++) {
      if (q[v] === 0) continue;
      tok = v;
      cum += q[v];
      if (u < cum) break;
    }
    tokens[b] = tok;
    logps[b] = Math.log(q[tok]);
  }
}
