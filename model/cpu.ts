// The transformer on the CPU, written with the ops of kernels/reference.ts: the specification
// the WebGPU model (model/gpu.ts) must equal, and a PolicyModel backend for unit tests of rl/.
// The ops themselves (matmul, embedding, LayerNorm/RMSNorm, residual, GELU/SwiGLU, causal
// attention and its KV-cache form, RoPE, the log-softmax head, AdamW, sampling) live in
// kernels/reference.ts, the same functions every kernel is tested against, so a fix to an op
// fixes both. This file is the CpuModel (weights, scoring, the update, the reference view);
// the network is model/cpu-passes.ts (forward, backward, the LoRA term, AdamW) and decoding
// model/cpu-generation.ts (KV caches, the generation session).
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
import { CpuGenerationSession } from "./cpu-generation";
import {
  type Activations,
  type Adapter,
  adamwStep,
  backward,
  forward,
  type Params,
  paramViews,
} from "./cpu-passes";
import { type BaseStorage, halfBase, halfTensors, type KeptF32, roundHalfBase } from "./half";
import { type HfOptions, loadHfModel, type ModelDir } from "./hf/read";
import { initLora, type LoraLayout, loraLayout } from "./lora";

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
