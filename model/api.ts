// The model interface the RL loop uses; the CPU reference (model/cpu.ts) and the WebGPU
// model (model/gpu.ts) both implement it, so rl/ code and its unit tests run on either.
//
// Training path: forwardScore(batch) -> per-token logp of the given next tokens, entropy
// (and values) -> the loss is computed in TS -> backward({dlogp, dentropy, dvalue}) adds
// into the gradients -> step(hparams). SFT cross-entropy is dlogp = -1/N on trained tokens.
// Generation path: a GenerationSession holds a KV cache per sequence (each with its own
// length), samples with a seed, and lets the rollout append tool-response tokens to one
// sequence and keep decoding without recomputing its prefix. model/generate.ts adds stop
// strings and token budgets on top of it.
// Tested through model/cpu.test.ts and model/gpu.gpu.test.ts.
import type { RuntimeCounters } from "../kernels/runtime";
import type { ModelConfig, ParamLayout } from "./config";
import type { BaseStorage } from "./half";

/** B sequences of T tokens, right-padded (causal attention: padding after a token never changes it). */
export interface ScoreBatch {
  B: number;
  T: number;
  /** (B,T) input ids. */
  tokens: Int32Array;
  /** (B,T) the next token scored at each position (tokens shifted left by one); any id where unused. */
  targets: Int32Array;
  /** (B,T) position of each token (default t); must be < config.context. */
  positions?: Int32Array;
  /**
   * Score under softmax(logits / temperature) (default 1): PPO ratios compare against the
   * distribution the rollout sampled from. Entropy and gradients follow the same scaling.
   */
  temperature?: number;
  /**
   * (B) the first position of each sequence whose logp and entropy are read (packSequences: a
   * response's first token is scored at its prompt's last position). Earlier positions need not be
   * scored: the WebGPU model's head skips their logits (most of a prompt-heavy batch's head work)
   * and gives them logp = entropy = 0; their dlogp and dentropy must be 0. The CPU model scores
   * every position. Absent: every position.
   */
  scoreFrom?: Int32Array;
}

export interface ScoreResult {
  /** (B,T) log p(target | prefix). */
  logp: Float32Array;
  /** (B,T) entropy of the next-token distribution, in nats. */
  entropy: Float32Array;
  /** (B,T) the value head's output, when the config has one. */
  values?: Float32Array;
  /** (B,T,V) raw logits, only when asked for (tests, inspection). */
  logits?: Float32Array;
}

/** Gradients of the scalar loss w.r.t. the outputs of the last forwardScore, each (B,T). */
export interface ScoreGrads {
  dlogp: Float32Array;
  dentropy?: Float32Array;
  dvalue?: Float32Array;
}

export interface AdamWHparams {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Clip the global gradient norm to this (<= 0 or Infinity: no clipping). */
  maxGradNorm: number;
}

export interface StepResult {
  /** Global L2 norm of the gradients before clipping. */
  gradNorm: number;
  /** True when the norm was not finite: the weights and moments were left unchanged. */
  skipped: boolean;
}

export interface OptimizerState {
  m: Float32Array;
  v: Float32Array;
  /** Completed AdamW steps (bias correction uses step + 1 next). */
  step: number;
}

export interface SamplingOptions {
  /** 0: greedy (argmax). Otherwise logits are divided by it before softmax. */
  temperature: number;
  /** Keep the k most likely tokens (0 or undefined: all). */
  topK?: number;
  /** Keep the smallest most-likely set whose probability reaches p (1 or undefined: all). */
  topP?: number;
  /**
   * Same seed, same prompts and same calls -> same tokens. The n-th token sequence b samples
   * in a session is drawn with kernels' sampleUniform(seed, n, b), on the CPU and the GPU, so
   * how many tokens one call (or one submit) samples never changes them.
   */
  seed: number;
}

export interface DecodeResult {
  /** (B) the sampled token of each active sequence, -1 for inactive ones. */
  tokens: Int32Array;
  /**
   * (B) log-prob of that token under the distribution it was drawn from: softmax(logits/T)
   * renormalized over the top-k / top-p set (the full tempered softmax when both are off);
   * 0 for greedy. NaN for inactive sequences.
   */
  logprobs: Float32Array;
}

/**
 * Asked for each token of a sequence's run in order (length: the sequence's length with this
 * token); true at the token that ends the run (that token is kept, the rest discarded).
 */
export type RunEnd = (seq: number, token: number, logprob: number, length: number) => boolean;

/** Per sequence, the tokens a decodeMany kept (empty for inactive sequences). */
export interface DecodeRun {
  tokens: number[][];
  logprobs: number[][];
}

export interface GenerationSession {
  /** Fills the KV caches with the prompts (one per sequence, lengths may differ). */
  prefill(prompts: number[][]): Promise<void>;
  /** Samples one token for each active sequence and feeds it back (extends its cache). */
  decode(active: ArrayLike<boolean>): Promise<DecodeResult>;
  /**
   * Samples up to maxTokens tokens for each active sequence, several per round trip (the
   * session picks how many), cut where `ends` says or where the sequence fills the context;
   * tokens past a cut are discarded, cache positions included. Gives exactly what decode()
   * called once per token would (model/generate.ts's decodeRun is that loop, for sessions
   * without this method).
   */
  decodeMany?(active: ArrayLike<boolean>, maxTokens: number, ends: RunEnd): Promise<DecodeRun>;
  /** Feeds extra tokens (a tool response) to one sequence; its next decode continues after them. */
  append(seq: number, tokens: number[]): Promise<void>;
  /** Tokens in each sequence so far (prompt, appended and sampled). */
  lengths(): number[];
  /** Releases the caches. */
  finish(): void;
}

export interface PolicyModel {
  readonly config: ModelConfig;
  readonly layout: ParamLayout;
  readonly backend: "cpu" | "webgpu";
  /**
   * Per-layer activation recomputation (gradient checkpointing; RunConfig
   * model.gradient_checkpointing): forwardScore keeps each layer's output only and backward
   * re-runs each layer's forward before its backward. Same gradients, less memory, one more
   * forward. Both backends have it; false by default, true on frozen copies and the reference
   * (they only score, so they keep one layer's arena).
   */
  recompute?: boolean;
  /** Forward over a batch; keeps what backward needs until the next forwardScore. */
  forwardScore(batch: ScoreBatch, options?: { logits?: boolean }): Promise<ScoreResult>;
  /** Backward of the last forwardScore; ADDS into the gradient buffer. */
  backward(grads: ScoreGrads): Promise<void>;
  zeroGrad(): void;
  /**
   * Global grad norm, clip, AdamW (non-finite norm: reported, weights untouched). The result
   * may arrive late: the WebGPU model reads the norm with the next forwardScore's readback
   * (or when the result is awaited first), so a caller that awaits it after that forward
   * saves a round trip.
   */
  step(hparams: AdamWHparams): PromiseLike<StepResult>;
  /**
   * True when step() results come back with the next forwardScore's readback, so a loop should
   * await them after that forward (the fused WebGPU update); otherwise await them at once.
   */
  readonly lateStepResults?: boolean;
  /** The base weights (the layout). With LoRA they are frozen: step() never writes them. */
  getWeights(): Promise<Float32Array>;
  setWeights(weights: Float32Array): Promise<void>;
  /** The LoRA adapter (its own layout, model/lora.ts), or null without LoRA. */
  getAdapter(): Promise<Float32Array | null>;
  setAdapter(weights: Float32Array): Promise<void>;
  /** Gradients of the trained parameters: the layout's, or the adapter's with LoRA. */
  getGrads(): Promise<Float32Array>;
  /** Moments of the trained parameters (same size as getGrads). */
  getOptimizerState(): Promise<OptimizerState>;
  setOptimizerState(state: OptimizerState): Promise<void>;
  /** An independent copy of the current policy; its optimizer state is fresh (a LoRA copy shares the frozen base). */
  frozenCopy(): Promise<PolicyModel>;
  /**
   * The reference policy of KL terms: a frozen copy of the weights now (full fine-tuning), or
   * the base with the adapter off, sharing the base weights (LoRA, as verl does: no second copy).
   */
  referencePolicy(): Promise<PolicyModel>;
  startGeneration(sampling: SamplingOptions): GenerationSession;
  /**
   * Cumulative round trips of the device this model runs on (WebGPU only; models on one
   * device share them): the RL step reports their differences per phase as perf/*.
   */
  perf?(): RuntimeCounters;
  /** How the base weights are stored (ModelConfig.baseDtype f16: which tensors, which kept f32, why). */
  baseStorage?(): BaseStorage;
  dispose(): void;
}
