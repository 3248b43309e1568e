// The transformer on WebGPU, built from the kernels' ops: the same network as the CPU
// reference (model/cpu.ts), which it must equal. This file is GpuModel, the PolicyModel on
// WebGPU: weights, the optimizer step, scoring and the update's submits. Its parts, one concern
// each: model/gpu-buffers.ts (parameter stores, arenas, the training batch's buffers),
// model/gpu-lora.ts (the adapter's forward and backward), model/gpu-passes.ts (the network's
// forward and backward passes, attention included), model/gpu-generation.ts (KV-cache
// generation sessions), model/gpu-base.ts (the base weights as stored).
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
// Tested by model/gpu.gpu.test.ts (PyTorch golden fixture, CPU equality, KV cache, sampling),
// model/hf/read.gpu.test.ts (each Hugging Face family against PyTorch, GQA KV-cache decoding) and
// model/windowed.gpu.test.ts (everything under a lowered binding and buffer limit).
import { tuneMatmulTile } from "../kernels/autotune";
import {
  adamw,
  FlatBuffer,
  gradNorm,
  groupRows,
  normChunk,
  normParts,
  type RowGroupViews,
  Runtime,
  unsliceLogits,
  type View,
  view,
  zero,
} from "../kernels/index";
import type {
  AdamWHparams,
  GenerationSession,
  OptimizerState,
  PolicyModel,
  SamplingOptions,
  ScoreBatch,
  ScoreGrads,
  ScoreResult,
  StepResult,
} from "./api";
import { initParams, type ModelConfig, type ParamLayout, paramLayout } from "./config";
import { checkBatch } from "./cpu-passes";
import { GpuBase } from "./gpu-base";
import { arena, type ParamViews, paramStore, paramViews, TrainBuffers } from "./gpu-buffers";
import { GpuGenerationSession } from "./gpu-generation";
import type { GpuAdapter } from "./gpu-lora";
import { backwardPass, forwardPass } from "./gpu-passes";
import type { BaseStorage } from "./half";
import { headChunks, scoredSpans } from "./head";
import type { HfOptions } from "./hf/config";
import { loadHfWeights, type ModelDir, readHfConfig } from "./hf/read";
import { initLora, type LoraLayout, loraLayout } from "./lora";
import { NORM_LOG, trainCapacity } from "./memory-plan";

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
  /** Tokens a generation session samples per submit at most (decodeMany): the plan's. */
  get decodeWindow(): number {
    return this.rt.plan.decodeWindow;
  }
  private zeroPending = false;
  private backwardPending: { hasValue: boolean } | null = null;
  /** step() results waiting for their norm (slot i of normLog) to come back. */
  private stepWaiting: { slot: number; done: (norm: number) => void }[] = [];
  private stepsDone = 0;
  /** The norms of the last NORM_LOG steps, slot = step index mod NORM_LOG (its own buffer: a copy source). */
  private readonly normLog: View;

  /** step() results arrive with the next forwardScore's readback (the update is one submit, no readback). */
  readonly lateStepResults = true;

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
    await tuneMatmulTile(rt.device); // the matmul tile of this adapter, measured once (kernels/autotune.ts)
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
    tb.spans = options.logits ? undefined : scoredSpans(B, T, this.config.dModel, batch.scoreFrom);
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
    const read = this.rt.recordRead(enc, tb.io.out);
    this.rt.submit(enc);
    const out = new Float32Array(await read());
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
    // recorded by the next step() (or flushGradWork), in the same submit as the optimizer
    this.backwardPending = { hasValue: Boolean(grads.dvalue) };
  }

  /** Views of the same window of each flat buffer. */
  private window(store: FlatBuffer, [at, n]: [number, number]): View {
    return store.view(at, n);
  }

  zeroGrad(): void {
    this.flushGradWork();
    this.zeroPending = true;
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
    const { grads, m, v } = this.opt;
    const enc = this.rt.device.createCommandEncoder();
    this.recordGradWork(enc);
    const gw = this.windows.map((w) => this.window(grads, w));
    gradNorm(this.rt, enc, this.misc.norm, this.misc.normScratch, gw, this.normChunk);
    this.optStep++;
    const hp = this.adamwHp(h);
    // The trained parameters: the adapter with LoRA (the base is never written).
    const target = this.adapterStore ?? this.paramStore;
    for (const w of this.windows) {
      const p = this.window(target, w);
      const [gv, mv, vv] = [this.window(grads, w), this.window(m, w), this.window(v, w)];
      // clip-by-norm is read into AdamW (the gradients stay as backward left them)
      adamw(this.rt, enc, p, gv, mv, vv, w[1], hp, this.misc.norm, h.maxGradNorm);
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
