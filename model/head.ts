// The LM head at any vocabulary (49,152 for SmolLM2, 151,936 for Qwen): logits = x · Wᵀ with W
// (V,C) the tied embedding or lm_head, then the fused log-softmax (training) or the sampler
// (decoding), without ever holding the logits of a whole batch. The batch's rows go through in
// chunks of whole rows (at most HEAD_CHUNK_BYTES of logits, and one binding); each chunk's
// logits are made by one matmul per vocabulary slice (a slice of W is at most one binding) into
// the slice-major layout the log-softmax and sampler kernels read (kernels/logsoftmax.ts).
// Training keeps two chunk buffers, logits and dlogits: when the whole batch is one chunk (small
// vocabularies, the tiny models) backward reuses the forward's logits; otherwise it recomputes
// each chunk's logits (one more matmul, the price of a bounded head).
// Tested by model/head.gpu.test.ts (parity with the CPU reference at tiny chunks) and through
// model/gpu.gpu.test.ts.
import {
  chunkSlice,
  FLOAT_ALIGN,
  type LogitsChunk,
  logSoftmaxBackward,
  logSoftmaxForward,
  matmul,
  matmulBackward,
  type Recorder,
  type Runtime,
  type SampleParams,
  sample,
  subview,
  type View,
  view,
  zero,
} from "../kernels/index";

/** Logits one chunk holds at most (each of the logits and dlogits buffers). */
export const HEAD_CHUNK_BYTES = 64 * 1024 * 1024;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** How the head cuts a batch: vocabulary slices and rows per chunk. */
export interface HeadPlan {
  V: number;
  C: number;
  /** Ids per vocabulary slice (V when W fits one binding; else a multiple of 64). */
  sliceV: number;
  /** Rows of logits one chunk holds at most (whole rows; a multiple of 64/gcd(C,64) when < N). */
  maxRows: number;
}

/** The head's plan on this runtime for a vocabulary V and width C (budget: bytes per chunk buffer). */
export function headPlan(rt: Runtime, V: number, C: number, budgetBytes = HEAD_CHUNK_BYTES): HeadPlan {
  const W = rt.bindingFloats;
  const sliceV = V * C <= W ? V : Math.floor(W / C / FLOAT_ALIGN) * FLOAT_ALIGN;
  if (sliceV === 0)
    throw new Error(`the head cannot bind 64 rows of W (${C} floats each) under ${rt.maxBindingBytes} bytes`);
  const F = Math.min(Math.floor(budgetBytes / 4), W);
  const maxRows = Math.floor(F / V);
  if (maxRows === 0)
    throw new Error(
      `one row of ${V} logits is over the head's chunk of ${F * 4} bytes (binding limit ${rt.maxBindingBytes})`,
    );
  return { V, C, sliceV, maxRows };
}

/** Rows per chunk for a batch of N rows: all of them when they fit, else an aligned count. */
export function chunkRows(plan: HeadPlan, N: number): number {
  if (N <= plan.maxRows) return N;
  const unit = FLOAT_ALIGN / gcd(plan.C, FLOAT_ALIGN); // rows of x per 256 bytes: chunk views stay aligned
  const rows = Math.floor(plan.maxRows / unit) * unit;
  if (rows === 0)
    throw new Error(`the head's chunk holds ${plan.maxRows} rows, fewer than the ${unit} alignment needs`);
  return rows;
}

/**
 * The chunks of a batch of N rows, in order: all of them, or only the rows of `spans` ([start,
 * end) row ranges in order, each start a multiple of scoredSpans' alignment), never more rows a
 * chunk than chunkRows(plan, N).
 */
export function headChunks(
  plan: HeadPlan,
  N: number,
  spans?: readonly (readonly [number, number])[],
): LogitsChunk[] {
  const rows = chunkRows(plan, N);
  const out: LogitsChunk[] = [];
  for (const [a, b] of spans ?? [[0, N]])
    for (let n0 = a; n0 < b; n0 += rows)
      out.push({ rows: Math.min(rows, b - n0), V: plan.V, sliceV: plan.sliceV, rowBase: n0 });
  return out;
}

/**
 * The rows of a (B,T) batch the head must score when each sequence b needs logits only from
 * position from[b] on (the RL update and scoring: prompt rows carry no loss): one span per
 * sequence, its start rounded down so its rows stay 256-byte aligned in x (C floats a row),
 * adjacent spans merged. undefined (every row) when nothing is skipped.
 */
export function scoredSpans(
  B: number,
  T: number,
  C: number,
  from: ArrayLike<number> | undefined,
): [number, number][] | undefined {
  if (!from) return undefined;
  const unit = FLOAT_ALIGN / gcd(C, FLOAT_ALIGN);
  const spans: [number, number][] = [];
  for (let b = 0; b < B; b++) {
    const f = Math.min(Math.max(0, Math.floor(from[b])), T);
    const start = Math.floor((b * T + f) / unit) * unit;
    const end = (b + 1) * T;
    if (start >= end) continue;
    const last = spans[spans.length - 1];
    if (last && start <= last[1]) last[1] = end;
    else spans.push([start, end]);
  }
  if (spans.length === 1 && spans[0][0] === 0 && spans[0][1] === B * T) return undefined;
  return spans;
}

/** Floats of one chunk buffer for batches of up to N rows. */
export function chunkFloats(plan: HeadPlan, N: number): number {
  return chunkRows(plan, N) * plan.V;
}

/** chunk logits (slice-major) = x[rows of the chunk] · Wᵀ, one matmul per vocabulary slice. */
export function headLogits(
  rt: Runtime,
  rec: Recorder,
  out: View,
  x: View,
  W: View,
  ch: LogitsChunk,
  C: number,
) {
  const xr = subview(x, ch.rowBase * C, ch.rows * C); // (rows,C)
  for (let s = 0; s * ch.sliceV < ch.V; s++) {
    const { at, len } = chunkSlice(ch, s);
    const w = subview(W, s * ch.sliceV * C, len * C); // (len,C)
    matmul(rt, rec, subview(out, at, ch.rows * len), xr, w, null, { M: ch.rows, N: len, K: C, transB: true });
  }
}

/** dx[rows] += dchunk · W, dW += dchunkᵀ · x[rows], slice by slice. */
function headLogitsBackward(
  rt: Runtime,
  rec: Recorder,
  dx: View,
  dW: View | null,
  dchunk: View,
  x: View,
  W: View,
  ch: LogitsChunk,
  C: number,
) {
  const xr = subview(x, ch.rowBase * C, ch.rows * C);
  const dxr = subview(dx, ch.rowBase * C, ch.rows * C);
  for (let s = 0; s * ch.sliceV < ch.V; s++) {
    const { at, len } = chunkSlice(ch, s);
    const w = subview(W, s * ch.sliceV * C, len * C);
    const dw = dW ? subview(dW, s * ch.sliceV * C, len * C) : null;
    matmulBackward(rt, rec, dxr, dw, null, subview(dchunk, at, ch.rows * len), xr, w, ch.rows, C, len);
  }
}

/**
 * The training head's two chunk buffers, for batches of up to `capacity` rows. forward() scores
 * (logp, entropy); backward() writes dlogits chunk by chunk and adds into dx and dW.
 */
export class TrainHead {
  readonly plan: HeadPlan;
  readonly logits: View;
  readonly dlogits: View;
  /** The batch size whose logits the logits buffer holds whole (one chunk), or -1. */
  private keptN = -1;
  /** The rows the last forward scored (undefined: all). */
  private spans: [number, number][] | undefined;

  constructor(
    private readonly rt: Runtime,
    V: number,
    private readonly C: number,
    capacity: number,
    budgetBytes = HEAD_CHUNK_BYTES,
  ) {
    this.plan = headPlan(rt, V, C, budgetBytes);
    const n = chunkFloats(this.plan, capacity);
    this.logits = view(rt.buffer(n, "head-logits"), 0, n);
    this.dlogits = view(rt.buffer(n, "head-dlogits"), 0, n);
  }

  /** Bytes of logits this head holds (both buffers): its peak, whatever the batch. */
  get bytes(): number {
    return this.logits.buffer.size + this.dlogits.buffer.size;
  }

  /**
   * logp, ent (N) of targets under softmax(x·Wᵀ · invTemp). `copyTo` (N*V floats), when given,
   * receives each chunk's logits as written (slice-major per chunk; unsliceLogits reads them).
   * `spans` (scoredSpans): score only those rows; the others get logp = entropy = 0, no logits,
   * and backward() takes no gradient through them.
   */
  forward(
    rec: GPUCommandEncoder,
    logp: View,
    ent: View,
    x: View,
    W: View,
    targets: View,
    N: number,
    invTemp: number,
    copyTo?: View,
    spans?: [number, number][],
  ): void {
    const chunks = headChunks(this.plan, N, spans);
    this.spans = spans;
    if (spans) {
      zero(this.rt, rec, logp, N);
      zero(this.rt, rec, ent, N);
    }
    for (const ch of chunks) {
      const out = subview(this.logits, 0, ch.rows * ch.V);
      headLogits(this.rt, rec, out, x, W, ch, this.C);
      logSoftmaxForward(this.rt, rec, logp, ent, out, targets, ch, invTemp);
      if (copyTo)
        rec.copyBufferToBuffer(
          out.buffer,
          out.offset,
          copyTo.buffer,
          copyTo.offset + ch.rowBase * ch.V * 4,
          out.size,
        );
    }
    this.keptN = chunks.length === 1 ? N : -1;
  }

  /**
   * dlogits of wlp*logp + went*entropy per row, then dx (N,C) += and dW (V,C) += through the head,
   * over the rows the last forward scored (its spans: the others' wlp and went must be 0).
   */
  backward(
    rec: Recorder,
    dx: View,
    dW: View | null,
    x: View,
    W: View,
    targets: View,
    wlp: View,
    went: View,
    N: number,
    invTemp: number,
  ): void {
    for (const ch of headChunks(this.plan, N, this.spans)) {
      const out = subview(this.logits, 0, ch.rows * ch.V);
      const dout = subview(this.dlogits, 0, ch.rows * ch.V);
      if (this.keptN !== N) headLogits(this.rt, rec, out, x, W, ch, this.C);
      logSoftmaxBackward(this.rt, rec, dout, out, targets, wlp, went, ch, invTemp);
      headLogitsBackward(this.rt, rec, dx, dW, dout, x, W, ch, this.C);
    }
  }

  destroy(): void {
    this.logits.buffer.destroy();
    this.dlogits.buffer.destroy();
  }
}

/** The decoding head: one chunk buffer; sample() draws a token for each of B rows of x. */
export class SampleHead {
  readonly plan: HeadPlan;
  readonly logits: View;

  constructor(
    private readonly rt: Runtime,
    V: number,
    private readonly C: number,
    B: number,
    budgetBytes = HEAD_CHUNK_BYTES,
  ) {
    this.plan = headPlan(rt, V, C, budgetBytes);
    const n = chunkFloats(this.plan, B);
    this.logits = view(rt.buffer(n, "sample-logits"), 0, n);
  }

  get bytes(): number {
    return this.logits.buffer.size;
  }

  /**
   * tokens int32 (B), logps (B) sampled from softmax(x·Wᵀ) of each row of x (B,C); row r draws at
   * params.step + rowStep[r] when rowStep (B) is given, as row rowId[r] when rowId (B) is
   * (kernels/sample.ts).
   */
  sample(
    rec: Recorder,
    tokens: View,
    logps: View,
    x: View,
    W: View,
    B: number,
    params: SampleParams,
    rowStep: View | null = null,
    rowId: View | null = null,
  ): void {
    for (const ch of headChunks(this.plan, B)) {
      const out = subview(this.logits, 0, ch.rows * ch.V);
      headLogits(this.rt, rec, out, x, W, ch, this.C);
      sample(
        this.rt,
        rec,
        tokens,
        logps,
        out,
        ch.rows,
        ch.V,
        params,
        { sliceV: ch.sliceV, rowBase: ch.rowBase },
        rowStep,
        rowId,
      );
    }
  }

  /** Records the logits of the chunk holding row b of x (B,C) into this head's buffer (tests). */
  chunkLogits(rec: Recorder, x: View, W: View, B: number, b: number): { view: View; chunk: LogitsChunk } {
    const ch = headChunks(this.plan, B).find((c) => b >= c.rowBase && b < c.rowBase + c.rows);
    if (!ch) throw new Error(`row ${b} is outside a batch of ${B}`);
    const out = subview(this.logits, 0, ch.rows * ch.V);
    headLogits(this.rt, rec, out, x, W, ch, this.C);
    return { view: out, chunk: ch };
  }

  destroy(): void {
    this.logits.buffer.destroy();
  }
}
