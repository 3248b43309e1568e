// The GPU model's buffers (model/gpu.ts): the flat parameter stores and their named views, the
// arenas carved at 256-byte aligned offsets, and TrainBuffers, everything a training batch
// holds (inputs, each layer's saved activations, backward scratch, the head's chunks, LoRA
// scratch), sized by the memory plan's functions (model/memory-plan.ts), so the plan is what
// this allocates. Legend as model/gpu.ts. Tested through model/gpu.gpu.test.ts and
// model/recompute.gpu.test.ts (the plan against what is allocated).
import {
  alignFloats,
  FlatBuffer,
  type QkNormShape,
  qkNormScratchSize,
  type RowGroupViews,
  type Runtime,
  type View,
  view,
} from "../kernels/index";
import {
  attnDims,
  type LayerTensors,
  type ModelConfig,
  type ParamLayout,
  type ParamTensors,
  paramTensors,
} from "./config";
import type { LoraScratch } from "./gpu-lora";
import { TrainHead } from "./head";
import type { LoraLayout } from "./lora";
import { layerActSizes, loraScratchSizes, NORM_LOG, trainGradSizes, trainIoSizes } from "./memory-plan";

// ---------------------------------------------------------------------------------------
// Buffers

export type LayerViews = LayerTensors<View>;
export type ParamViews = ParamTensors<View>;

export function paramStore(rt: Runtime, layout: ParamLayout, label: string): FlatBuffer {
  return new FlatBuffer(
    rt,
    layout.total,
    label,
    layout.tensors.map((t) => t.offset),
  );
}

export function paramViews(store: FlatBuffer, layout: ParamLayout): ParamViews {
  return paramTensors(layout, (off, size) => store.view(off, size));
}

/** Named tensors carved out of one buffer at 256-byte aligned offsets. */
export function arena<K extends string>(
  rt: Runtime,
  label: string,
  sizes: Record<K, number>,
): Record<K, View> {
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

export type LayerActs = Record<keyof ReturnType<typeof layerActSizes>, View>;

/**
 * Everything a training batch needs, sized for up to `capacity` tokens (B*T): RL minibatches
 * change T every step, so buffers are reused while the batch fits and views are sized to it.
 */
export class TrainBuffers {
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

export function qkNormShape(c: ModelConfig, N: number): QkNormShape {
  const { NH, KVH, hs } = attnDims(c);
  return { N, NH, KVH, hs, eps: c.normEps };
}
