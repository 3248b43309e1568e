// Generation on WebGPU: per-layer KV caches (B, context, KV); a "feed step" pushes one token for
// each sequence that has input waiting (prompt, appended tool response or the last sampled
// token) through the network (model/gpu-passes.ts's blockForward with cached attention) and
// keeps the final normed hidden state of those rows; decode() feeds, runs the head chunk by
// chunk with the kernels' sampler and reads back B tokens and log-probs; decodeMany() records a
// window of feed steps per submit over only the rows that run: they are swapped to the front of
// the batch (caches, hidden state and per-row counters with them) and the steps compute those
// rows, so rows that finished or sit out cost nothing (the sampler draws by the sequence a row
// holds, so tokens do not depend on where it sits). Legend as model/gpu.ts.
// Tested by model/gpu.gpu.test.ts (KV cache, sampling), model/decode-window.gpu.test.ts and
// model/hf/read.gpu.test.ts (GQA KV-cache decoding).
import {
  alignFloats,
  attentionForward,
  decodeAttention,
  embeddingForward,
  FLOAT_ALIGN,
  kvCacheWrite,
  type Runtime,
  ropeAppend,
  smallRowsKernel,
  subview,
  unsliceLogits,
  type View,
  view,
} from "../kernels/index";
import type { DecodeResult, DecodeRun, GenerationSession, RunEnd, SamplingOptions } from "./api";
import { attnDims, type ModelConfig, mlpHidden } from "./config";
import { samplerParams } from "./cpu-generation";
import { decodeRunStepwise } from "./generate";
import { arena, type ParamViews } from "./gpu-buffers";
import { type GpuAdapter, type LoraScratch, loraForward, loraForwardRows } from "./gpu-lora";
import {
  type BlockActs,
  blockActSizes,
  blockForward,
  decodeBlockForward,
  fusedDecodeFits,
  normForward,
} from "./gpu-passes";
import { SampleHead } from "./head";
import type { LoraBaseWeight } from "./lora";
import { loraScratchSizes } from "./memory-plan";

// ---------------------------------------------------------------------------------------
// Generation: KV caches and feed steps of one token per sequence

export const NO_SLOT = 0xffffffff; // kvCacheWrite skips slots >= Tmax: rows without input write nothing

/** The per-step inputs of a feed step: (B) each, uploaded before the submit that runs it. */
export interface FeedInputs {
  tokens: View;
  pos: View;
  slot: View;
  lens: View;
}

/** What a generation session reads of its model (GpuModel, model/gpu.ts). */
export interface GpuGenerationHost {
  readonly rt: Runtime;
  readonly config: ModelConfig;
  /** The base weights' views. */
  readonly params: ParamViews;
  /** The LoRA adapter, or null (none, or the reference view with it off). */
  readonly adapter: GpuAdapter | null;
  /** Tokens decodeMany samples per submit at most (the kernel plan's). */
  readonly decodeWindow: number;
}

/** Most tokens one decodeMany samples per submit (the window the runtime picks from). */
export const MAX_DECODE_WINDOW = 32;

/**
 * A group's samples share their prompt: each distinct prompt runs once (row u), and every row b
 * that has it (rowOf[b] = u) gets u's keys, values and last hidden state.
 */
function distinctPrompts(prompts: number[][]): { unique: number[][]; rowOf: number[] } {
  const firstOf = new Map<string, number>();
  const unique: number[][] = [];
  const rowOf = prompts.map((pr) => {
    const key = pr.join(",");
    let u = firstOf.get(key);
    if (u === undefined) {
      u = unique.length;
      firstOf.set(key, u);
      unique.push(pr);
    }
    return u;
  });
  return { unique, rowOf };
}

export class GpuGenerationSession implements GenerationSession {
  private B = 0;
  private kcache: View[] = [];
  private vcache: View[] = [];
  private step:
    | (Record<"tokens" | "pos" | "slot" | "lens" | "x" | "tmp" | "sampled" | "rowStep" | "rowId", View> &
        BlockActs)
    | null = null;
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
  private fed: number[] = []; // tokens in each row's cache
  private queue: number[][] = []; // tokens waiting to be fed, per row
  /** Tokens each sequence has sampled: the sampler's counter for its next draw. */
  private sampledCount: number[] = [];
  /**
   * perm[i]: the caller's sequence that internal row i holds; rowOf[seq]: its row. Caches,
   * `hidden` and the per-row state above are indexed by internal row: a window moves the rows
   * that run to the front (swapRows) and computes only those (computeRows).
   */
  private perm: number[] = [];
  private rowOf: number[] = [];
  /** Two row-sized scratch buffers for swapRows. */
  private swapScratch: [View, View] | null = null;
  /** Rows pushed through the network by feed steps since the prefill (what shrinking windows save; tests). */
  rowsComputed = 0;
  private buffers: GPUBuffer[] = [];

  constructor(
    private readonly model: GpuGenerationHost,
    private readonly sampling: SamplingOptions,
  ) {}

  async prefill(prompts: number[][]): Promise<void> {
    this.finish();
    const { rt, config: c } = this.model;
    const B = prompts.length;
    const C = c.dModel;
    const { KV } = attnDims(c);
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
      ...blockActSizes(c, B),
      sampled: 2 * alignFloats(B), // tokens (int32) then log-probs: one readback
      rowStep: B,
      rowId: B, // the sequence each row holds: the sampler draws by it, wherever the row has moved
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
    this.perm = prompts.map((_, b) => b);
    this.rowOf = prompts.map((_, b) => b);
    this.rowsComputed = 0;
    this.multi = null;
    if (await this.prefillBatched(prompts)) return;
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
   * The prompts in one forward over (B, Tp) rows (Tp the longest prompt, shorter ones padded at
   * the end) with the training kernels: blockForward with the causal attention over the whole
   * prompt, each layer's keys and values copied into the caches (positions 0..Tp-1; a padded
   * row's positions past its prompt are never read and are overwritten as it decodes), and the
   * final normed hidden state of each row's last prompt token into `hidden`. Where the feed steps
   * ran one submit of ~15 dispatches a layer per prompt token (384 tokens: 384 steps), this is one
   * of ~15 a layer; a prompt that several rows share (a GRPO group) runs once. False (nothing
   * done: the feed steps run) where the rows' buffers or the per-row cache views do not fit the binding limits and alignment.
   */
  private async prefillBatched(prompts: number[][]): Promise<boolean> {
    const { rt, config: c, params: p } = this.model;
    const { unique, rowOf } = distinctPrompts(prompts);
    const B = unique.length;
    const Tp = Math.max(...prompts.map((x) => x.length));
    const N = B * Tp;
    const C = c.dModel;
    const H = mlpHidden(c);
    const { NH, KVH, Q, KV, QKV } = attnDims(c);
    const fcRows = c.mlp === "swiglu" ? 2 * H : H;
    const ad = this.model.adapter;
    const sizes = {
      tokens: N,
      pos: N,
      zeros: Tp,
      x: N * C,
      tmp: N * C,
      lse: B * NH * Tp,
      ...blockActSizes(c, N),
    };
    const total = Object.values(sizes).reduce((a, n) => a + alignFloats(n), 0);
    const fits =
      Tp > 1 &&
      (Tp * QKV) % FLOAT_ALIGN === 0 &&
      (c.context * KV) % FLOAT_ALIGN === 0 &&
      4 * N * Math.max(fcRows, QKV) <= rt.maxBindingBytes &&
      4 * total <= rt.maxBufferBytes;
    if (!fits) return false;
    const a = arena(rt, "prefill", sizes);
    const scratch = ad ? arena(rt, "prefill-lora", loraScratchSizes(ad.layout, N)) : null;
    const tokens = new Int32Array(N);
    const pos = new Uint32Array(N);
    unique.forEach((pr, u) => {
      tokens.set(pr, u * Tp);
      for (let t = 0; t < Tp; t++) pos[u * Tp + t] = t;
    });
    rt.upload(a.tokens, tokens);
    rt.upload(a.pos, pos);
    rt.upload(a.zeros, new Uint32Array(Tp));
    const enc = rt.device.createCommandEncoder();
    embeddingForward(rt, enc, a.x, a.tokens, a.pos, p.wte, p.wpe, N, C); // (N,C)
    let residual = a.x;
    p.layers.forEach((lp, l) => {
      const attention = () => {
        attentionForward(rt, enc, a.atty, a.lse, a.qkv, null, B, Tp, Q, NH, KVH);
        // row b's Tp positions as Tp one-slot "sequences" of its cache: (Tp,KV) at position 0..Tp-1
        rowOf.forEach((u, b) => {
          const at = b * c.context * KV;
          kvCacheWrite(
            rt,
            enc,
            subview(this.kcache[l], at, Tp * KV),
            subview(this.vcache[l], at, Tp * KV),
            subview(a.qkv, u * Tp * QKV, Tp * QKV),
            a.zeros,
            Tp,
            1,
            Q,
            NH,
            undefined,
            KVH,
          );
        });
      };
      const lora = (out: View, inp: View, w: LoraBaseWeight) =>
        loraForward(rt, enc, ad, scratch, l, w, out, inp, N);
      blockForward(rt, enc, c, lp, a, residual, a.tmp, a.pos, N, attention, lora);
      residual = a.res3;
    });
    this.recordLastHidden(enc, prompts, rowOf, residual, Tp);
    rt.submit(enc);
    this.fed = prompts.map((pr) => pr.length);
    this.queue = prompts.map(() => []);
    await rt.device.queue.onSubmittedWorkDone();
    a.tokens.buffer.destroy();
    scratch?.loraU.buffer.destroy();
    return true;
  }

  /** Records each row's last prompt token of the prefill's `residual` through the final norm into `hidden`. */
  private recordLastHidden(
    enc: GPUCommandEncoder,
    prompts: number[][],
    rowOf: number[],
    residual: View,
    Tp: number,
  ): void {
    const { rt, config: c, params: p } = this.model;
    const C = c.dModel;
    const s = this.step!;
    prompts.forEach((pr, b) => {
      const row = rowOf[b] * Tp + pr.length - 1;
      enc.copyBufferToBuffer(
        residual.buffer,
        residual.offset + row * C * 4,
        s.x.buffer,
        s.x.offset + b * C * 4,
        C * 4,
      );
    });
    normForward(rt, enc, c, s.ln1, s.ln1Mean, s.ln1Rstd, s.x, p.lnfw, p.lnfb, this.B);
    const h = this.hidden!;
    enc.copyBufferToBuffer(s.ln1.buffer, s.ln1.offset, h.buffer, h.offset, this.B * C * 4);
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

  /** Step inputs for one token of every row below n with input waiting (pops them off the queues). */
  private takeQueued(n = this.B) {
    const B = this.B;
    const context = this.model.config.context;
    const tokens = new Int32Array(B);
    const pos = new Uint32Array(B);
    const slot = new Uint32Array(B).fill(NO_SLOT);
    const lens = new Uint32Array(B).fill(1);
    const rows: number[] = [];
    for (let b = 0; b < n; b++) {
      if (this.queue[b].length === 0) continue;
      if (this.fed[b] >= context) throw new Error(`sequence ${this.perm[b]} exceeds the context ${context}`);
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
  private recordDrain(enc: GPUCommandEncoder, first: number, n = this.B): number {
    const rt = this.model.rt;
    const waiting = this.queue.slice(0, n);
    const steps = Math.max(0, ...waiting.map((q) => q.length));
    this.ensureMulti(first + steps + MAX_DECODE_WINDOW);
    let i = first;
    while (waiting.some((q) => q.length > 0)) {
      const inp = this.takeQueued(n);
      const v = this.inputSlot(i++);
      rt.upload(v.tokens, inp.tokens);
      rt.upload(v.pos, inp.pos);
      rt.upload(v.slot, inp.slot);
      rt.upload(v.lens, inp.lens);
      this.recordFeed(enc, v, inp.rows, n);
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
   * One token for each of the first n rows through the network (rows whose slot is NO_SLOT
   * compute but write nothing); the final hidden state of `copyRows` goes to `hidden`, what the
   * next sample reads. The fused kernels or not as for the session's B, whatever n.
   */
  private recordFeed(enc: GPUCommandEncoder, inp: FeedInputs, copyRows: number[], n = this.B): void {
    const { rt, config: c, params: p } = this.model;
    const s = this.step!;
    const B = n;
    const C = c.dModel;
    this.rowsComputed += n;
    embeddingForward(rt, enc, s.x, inp.tokens, inp.pos, p.wte, p.wpe, B, C); // (B,C)
    let residual = s.x;
    const ad = this.model.adapter;
    const fused = fusedDecodeFits(rt, c, this.B);
    const { NH, KVH, Q, hs } = attnDims(c);
    p.layers.forEach((lp, l) => {
      const lora = (out: View, inp0: View, w: LoraBaseWeight) =>
        (fused ? loraForwardRows : loraForward)(rt, enc, ad, this.loraScratch, l, w, out, inp0, B);
      const [k, v] = [this.kcache[l], this.vcache[l]];
      const attention = () =>
        decodeAttention(rt, enc, s.atty, s.qkv, k, v, inp.lens, null, B, c.context, Q, NH, undefined, KVH);
      if (fused) {
        const ropeBase = c.positional === "rope" ? c.ropeTheta : null;
        const append = (qkv: View) =>
          ropeAppend(rt, enc, qkv, k, v, inp.pos, inp.slot, {
            B,
            Tmax: c.context,
            NH,
            KVH,
            headDim: hs,
            ropeBase,
            positions: c.context,
          });
        const loraOn = (w: LoraBaseWeight) => !!ad && ad.layout.layers[l].some((t) => t.weight === w);
        decodeBlockForward(rt, enc, c, lp, s, residual, B, append, attention, ad ? lora : null, loraOn);
        residual = s.res3;
        return;
      }
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
          kvCacheWrite(rt, enc, k, v, s.qkv, inp.slot, B, c.context, Q, NH, undefined, KVH);
          attention();
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
    const len = this.rowLengths();
    for (let b = 0; b < B; b++) {
      if (active[b] && len[this.rowOf[b]] >= c.context) throw new Error(`sequence ${b} is full`);
    }
    const a = alignFloats(B);
    const s = this.step!;
    const sampled = s.sampled;
    const at = (k: number): View => ({ buffer: sampled.buffer, offset: sampled.offset + k * 4, size: B * 4 });
    rt.upload(s.rowStep, Uint32Array.from(this.sampledCount));
    rt.upload(s.rowId, Uint32Array.from(this.perm));
    const params = samplerParams(this.sampling, 0);
    const h = this.hidden!;
    this.drain((enc) =>
      this.head!.sample(enc, at(0), at(a), h, this.model.params.lmHead, B, params, s.rowStep, s.rowId),
    );
    const bytes = await rt.readBytes(sampled);
    const toks = new Int32Array(bytes, 0, B);
    const lps = new Float32Array(bytes, a * 4, B);
    const tokens = new Int32Array(B).fill(-1);
    const logprobs = new Float32Array(B).fill(Number.NaN);
    for (let i = 0; i < B; i++) {
      const b = this.perm[i];
      if (!active[b]) continue;
      tokens[b] = toks[i];
      logprobs[b] = lps[i];
      this.queue[i].push(toks[i]);
      this.sampledCount[i]++;
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

  /**
   * One window of up to k tokens per active sequence in one submit; cut[b]: the run of sequence b
   * ended. Only the rows that run are computed: they are moved to the front first (computeRows).
   */
  private async window(active: boolean[], k: number, ends: RunEnd): Promise<DecodeRun & { cut: boolean[] }> {
    const { rt, config: c } = this.model;
    const B = this.B;
    const out = {
      tokens: active.map((): number[] => []),
      logprobs: active.map((): number[] => []),
      cut: active.map(() => false),
    };
    const runs = (i: number) => active[this.perm[i]];
    let running = 0;
    for (const [i, len] of this.rowLengths().entries()) {
      if (!runs(i)) continue;
      if (len >= c.context) throw new Error(`sequence ${this.perm[i]} is full`);
      running++;
    }
    const enc = rt.device.createCommandEncoder();
    const n = this.computeRows(running);
    if (n < B) this.runningFirst(enc, runs);
    const len0 = this.rowLengths();
    const kb = Array.from({ length: B }, (_, i) => (runs(i) ? Math.min(k, c.context - len0[i]) : 0));
    const K = Math.max(...kb);
    if (K === 0) {
      rt.submit(enc);
      return out;
    }
    const aB = alignFloats(B);
    let slot = this.recordDrain(enc, 0, n);
    const m = this.multi!;
    const start = [...this.fed]; // cache lengths once the waiting tokens are in
    const counters = new Uint32Array(K * aB);
    for (let j = 0; j < K; j++) for (let i = 0; i < B; i++) counters[j * aB + i] = this.sampledCount[i] + j;
    rt.upload(subview(m.counters, 0, K * aB), counters);
    rt.upload(this.step!.rowId, Uint32Array.from(this.perm));
    const tokAt = (j: number): View => subview(m.out, j * aB, n);
    const lpAt = (j: number): View => subview(m.out, (MAX_DECODE_WINDOW + j) * aB, n);
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
        n,
        params,
        subview(m.counters, j * aB, n),
        subview(this.step!.rowId, 0, n),
      );
      if (j === K - 1) break;
      const pos = new Uint32Array(B);
      const slots = new Uint32Array(B).fill(NO_SLOT);
      const lens = new Uint32Array(B).fill(1);
      for (let i = 0; i < n; i++) {
        if (j + 1 >= kb[i]) continue; // this row needs no token j + 1
        pos[i] = start[i] + j;
        slots[i] = start[i] + j;
        lens[i] = start[i] + j + 1;
      }
      const v = this.inputSlot(slot++);
      rt.upload(v.pos, pos);
      rt.upload(v.slot, slots);
      rt.upload(v.lens, lens);
      this.recordFeed(enc, { ...v, tokens: tokAt(j) }, [], n);
    }
    const read = rt.recordRead(enc, subview(m.out, 0, 2 * MAX_DECODE_WINDOW * aB));
    rt.submit(enc);
    const bytes = await read();
    const toks = new Int32Array(bytes);
    const lps = new Float32Array(bytes);
    for (let i = 0; i < n; i++) {
      const b = this.perm[i];
      let t = 0;
      while (t < kb[i]) {
        const tok = toks[t * aB + i];
        const lp = lps[(MAX_DECODE_WINDOW + t) * aB + i];
        out.tokens[b].push(tok);
        out.logprobs[b].push(lp);
        t++;
        if (ends(b, tok, lp, len0[i] + t) || len0[i] + t >= c.context) {
          out.cut[b] = true;
          break;
        }
      }
      if (t === 0) continue;
      // tokens 0..t-2 are in the cache; token t-1 waits to be fed like a decode()'s token
      this.fed[i] = start[i] + t - 1;
      this.queue[i].push(out.tokens[b][t - 1]);
      this.sampledCount[i] += t;
    }
    return out;
  }

  /**
   * Rows a window computes when `running` rows run (moved to the front): those, padded where
   * needed so that every A·Bᵀ picks the kernel it picks at the session's B (smallRowsKernel):
   * each row's numbers then equal a full step's bit for bit, and decodeMany still equals one
   * decode() per token.
   */
  private computeRows(running: number): number {
    const rt = this.model.rt;
    const B = this.B;
    if (running >= B || running === 0) return B;
    if (smallRowsKernel(rt, B)) return running;
    let n = running;
    while (n < B && smallRowsKernel(rt, n)) n++;
    return n;
  }

  /**
   * Swaps rows so that those `runs` holds for come first: the last running row into the first
   * gap, as few swaps as there are gaps (the order of rows does not change their numbers).
   */
  private runningFirst(enc: GPUCommandEncoder, runs: (i: number) => boolean): void {
    let i = 0;
    let j = this.B - 1;
    for (;;) {
      while (i < this.B && runs(i)) i++;
      while (j >= 0 && !runs(j)) j--;
      if (i >= j) return;
      this.swapRows(enc, i, j);
    }
  }

  /** Swaps internal rows i and j: every layer's cached keys and values, `hidden`, the per-row state. */
  private swapRows(enc: GPUCommandEncoder, i: number, j: number): void {
    const { rt, config: c } = this.model;
    const rowFloats = c.context * attnDims(c).KV;
    if (!this.swapScratch) {
      const size = Math.max(rowFloats, c.dModel);
      const buf = rt.buffer(2 * alignFloats(size) * 4, "decode-swap");
      this.buffers.push(buf);
      this.swapScratch = [view(buf, 0, size), view(buf, alignFloats(size), size)];
    }
    const [ta, tb] = this.swapScratch;
    const swap = (v: View, floats: number) => {
      const at = (r: number) => v.offset + r * floats * 4;
      const bytes = floats * 4;
      enc.copyBufferToBuffer(v.buffer, at(i), ta.buffer, ta.offset, bytes);
      enc.copyBufferToBuffer(v.buffer, at(j), tb.buffer, tb.offset, bytes);
      enc.copyBufferToBuffer(ta.buffer, ta.offset, v.buffer, at(j), bytes);
      enc.copyBufferToBuffer(tb.buffer, tb.offset, v.buffer, at(i), bytes);
    };
    for (let l = 0; l < c.layers; l++) {
      swap(this.kcache[l], rowFloats);
      swap(this.vcache[l], rowFloats);
    }
    swap(this.hidden!, c.dModel);
    for (const a of [this.fed, this.queue, this.sampledCount, this.perm] as unknown[][]) {
      [a[i], a[j]] = [a[j], a[i]];
    }
    this.rowOf[this.perm[i]] = i;
    this.rowOf[this.perm[j]] = j;
  }

  async append(seq: number, tokens: number[]): Promise<void> {
    const i = this.rowOf[seq];
    if (this.fed[i] + this.queue[i].length + tokens.length > this.model.config.context) {
      throw new Error(`append: sequence ${seq} would exceed the context ${this.model.config.context}`);
    }
    this.queue[i].push(...tokens);
  }

  /** (V) logits the next decode of this sequence samples from (tests). */
  async nextLogits(seq: number): Promise<Float32Array> {
    this.drain();
    const rt = this.model.rt;
    const V = this.model.config.vocab;
    const enc = rt.device.createCommandEncoder();
    const i = this.rowOf[seq];
    const { view: out, chunk } = this.head!.chunkLogits(
      enc,
      this.hidden!,
      this.model.params.lmHead,
      this.B,
      i,
    );
    rt.submit(enc);
    const row = i - chunk.rowBase;
    return unsliceLogits(await rt.read(out), chunk).slice(row * V, (row + 1) * V);
  }

  lengths(): number[] {
    const len = this.rowLengths();
    return this.rowOf.map((i) => len[i]);
  }

  /** Tokens in each internal row's cache and queue. */
  private rowLengths(): number[] {
    return this.fed.map((f, i) => f + this.queue[i].length);
  }

  finish(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
    this.head?.destroy();
    this.head = null;
    this.step = null;
    this.multi = null;
    this.swapScratch = null;
    this.B = 0;
  }
}
