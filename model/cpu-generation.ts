// KV-cache generation on the CPU: per-sequence caches, the cached forward of new tokens, the
// sampler's parameters and the CpuGenerationSession (prefill, decode, append) that the CpuModel
// (model/cpu.ts) hands out. Legend as model/cpu.ts. Tested by model/cpu.test.ts (KV cache,
// generation) and model/gpu.gpu.test.ts (the GPU session against this one).
import {
  decodeAttentionRef,
  embeddingForwardRef,
  matmulForwardRef,
  qkNormForwardRef,
  residualForwardRef,
  sampleRef,
} from "../kernels/reference";
import type { DecodeResult, GenerationSession, SamplingOptions } from "./api";
import { attnDims, type ModelConfig, mlpHidden } from "./config";
import {
  type Adapter,
  allocLike,
  type F32,
  loraForward,
  mlpActForward,
  normForward,
  type Params,
  ropeForward,
  specsOf,
} from "./cpu-passes";
import type { LoraBaseWeight } from "./lora";

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
/** What a generation session reads of its model (CpuModel, model/cpu.ts). */
export interface CpuGenerationHost {
  readonly config: ModelConfig;
  /** The base weights' views. */
  readonly views: Params;
  /** The LoRA adapter, or null (none, or the reference view with it off). */
  readonly adapter: Adapter | null;
}

export class CpuGenerationSession implements GenerationSession {
  private caches: KvCache[] = [];
  private lastLogits: F32[] = [];
  private pending: (number | null)[] = [];
  /** Tokens each sequence has sampled: the sampler's counter for its next draw. */
  private sampled: number[] = [];

  constructor(
    private readonly model: CpuGenerationHost,
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
