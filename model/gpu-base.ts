// The GPU model's base weights, as stored: one f32 FlatBuffer of the flat layout (today's, and
// every model whose ModelConfig.baseDtype is f32), or, for an f16 base (model/half.ts) on a device
// with shader-f16, two: the f16 tensors (each layer's linear weights) packed two to a word in one,
// the rest packed f32 in the other, plus an f32 buffer for each f16 tensor whose values are
// beyond f16's range. Without shader-f16 an f16 base keeps the f32 layout and stores the
// f16-rounded values (the CPU model's semantics, the reason in report()). Every tensor view the
// network binds comes from views(): f16 tensors as HalfViews, which kernels/matmul.ts reads with
// its f16 variant. Writes take float32 in layout offsets (a piece of a tensor at a time, as
// model/hf/read.ts reads them) and round f16 tensors here; read() gives the layout back in f32
// (checkpoints and exports keep writing f32). Tested by model/half.gpu.test.ts.
import {
  alignFloats,
  F16_MAX,
  FlatBuffer,
  HALF_FEATURE,
  halfBits,
  halfValue,
  halfView,
  hasHalf,
  maxAbs,
  type Runtime,
  roundHalfArray,
  type View,
} from "../kernels/index";
import {
  type ModelConfig,
  type ParamLayout,
  type ParamTensors,
  paramTensors,
  type TensorSpec,
} from "./config";
import { type BaseStorage, halfBase, halfTensors, type KeptF32 } from "./half";

type Kept = KeptF32 & { buf: FlatBuffer | null };

export class GpuBase {
  /** The f32 tensors: the whole layout, or (f16 storage) those not stored f16, packed. */
  readonly f32: FlatBuffer;
  readonly storage: "f16" | "f32";
  /** Why the storage is not what ModelConfig.baseDtype asked ("" when it is). */
  readonly reason: string;
  /** Round the f16 tensors (an f16 base, whatever the storage). */
  private readonly round: boolean;
  private readonly half: FlatBuffer | null = null;
  /** Layout offset -> float offset in f32 (f16 storage: the packed f32 tensors). */
  private readonly at32 = new Map<number, number>();
  /** Layout offset -> float offset in half (2 values a float). */
  private readonly at16 = new Map<number, number>();
  /** The f16 tensors by layout offset. */
  private readonly halfSpecs = new Map<number, TensorSpec>();
  /** f16 tensors kept f32 (a value beyond f16's range), by layout offset. */
  private readonly kept = new Map<number, Kept>();
  /** f16 tensors that had a piece written rounded before one beyond range came: write them again. */
  private readonly stale = new Set<number>();
  private readonly written = new Set<number>();
  /** The 32-bit words of the half store that pieces ending mid-word wrote (the other half's value). */
  private readonly edges = new Map<number, number>();
  private readonly sorted: TensorSpec[];
  private cached: ParamTensors<View> | null = null;

  constructor(
    private readonly rt: Runtime,
    config: ModelConfig,
    private readonly layout: ParamLayout,
  ) {
    this.round = halfBase(config);
    this.sorted = [...layout.tensors].sort((a, b) => a.offset - b.offset);
    if (this.round) for (const t of halfTensors(layout)) this.halfSpecs.set(t.offset, t);
    this.storage = this.round && hasHalf(rt) ? "f16" : "f32";
    this.reason =
      this.round && this.storage === "f32"
        ? `this device has no ${HALF_FEATURE}: f32 storage of the f16-rounded values`
        : "";
    if (this.storage === "f32") {
      this.f32 = new FlatBuffer(
        rt,
        layout.total,
        "params",
        layout.tensors.map((t) => t.offset),
      );
      return;
    }
    let n32 = 0;
    let n16 = 0;
    for (const t of this.sorted) {
      if (this.halfSpecs.has(t.offset)) {
        this.at16.set(t.offset, n16);
        n16 += alignFloats(Math.ceil(t.size / 2));
      } else {
        this.at32.set(t.offset, n32);
        n32 += alignFloats(t.size);
      }
    }
    this.f32 = new FlatBuffer(rt, n32, "params", [...this.at32.values()]);
    this.half = new FlatBuffer(rt, n16, "params-f16", [...this.at16.values()]);
  }

  /** The named views of every tensor, as the network binds them. */
  views(): ParamTensors<View> {
    this.cached ??= paramTensors(this.layout, (off, size) => this.tensorView(off, size));
    return this.cached;
  }

  private tensorView(off: number, size: number): View {
    if (this.storage === "f32") return this.f32.view(off, size);
    const k = this.kept.get(off);
    if (k) return k.buf!.view(0, size);
    const h = this.at16.get(off);
    if (h !== undefined) {
      const v = this.half!.view(h, Math.ceil(size / 2));
      return halfView(v.buffer, v.offset, size);
    }
    return this.f32.view(this.at32.get(off)!, size);
  }

  /** Writes float32 `data` at layout float `offset` (it may span tensors; gaps are dropped). */
  write(offset: number, data: Float32Array): void {
    if (!this.round) {
      this.f32.write(this.rt, offset, data);
      return;
    }
    const end = offset + data.length;
    for (const t of this.sorted) {
      const lo = Math.max(offset, t.offset);
      const hi = Math.min(end, t.offset + t.size);
      if (lo < hi) this.writeTensor(t, lo - t.offset, data.subarray(lo - offset, hi - offset));
    }
  }

  /** The whole layout: each f16 tensor's range is checked as a whole (kept f32 only if beyond f16). */
  upload(data: Float32Array): void {
    if (data.length !== this.layout.total)
      throw new Error(`base weights: ${data.length} floats, the layout needs ${this.layout.total}`);
    if (!this.round) {
      this.f32.upload(this.rt, data);
      return;
    }
    for (const t of this.sorted) {
      const d = data.subarray(t.offset, t.offset + t.size);
      if (this.halfSpecs.has(t.offset)) {
        const m = maxAbs(d);
        const k = this.kept.get(t.offset);
        if (m > F16_MAX && !k) this.keep(t, m);
        else if (m <= F16_MAX && k) {
          k.buf?.destroy();
          this.kept.delete(t.offset);
          this.cached = null;
        }
        this.written.delete(t.offset);
        this.stale.delete(t.offset);
      }
      this.writeTensor(t, 0, d);
    }
  }

  /** Values [r, r + data.length) of tensor t. */
  private writeTensor(t: TensorSpec, r: number, data: Float32Array): void {
    if (!this.halfSpecs.has(t.offset)) {
      const at = this.storage === "f16" ? this.at32.get(t.offset)! : t.offset;
      this.f32.write(this.rt, at + r, data);
      return;
    }
    let k = this.kept.get(t.offset);
    const m = maxAbs(data);
    if (!k && m > F16_MAX) k = this.keep(t, m);
    if (k) {
      k.maxAbs = Math.max(k.maxAbs, m);
      if (k.buf) k.buf.write(this.rt, r, data);
      else this.f32.write(this.rt, t.offset + r, data);
      return;
    }
    this.written.add(t.offset);
    if (this.storage === "f32") this.f32.write(this.rt, t.offset + r, roundHalfArray(data));
    else this.writeHalf(this.at16.get(t.offset)!, r, data);
  }

  /** f16 values [r, r + n) of the tensor at float `base` of the half store (value i: half i of word i/2). */
  private writeHalf(base: number, r: number, data: Float32Array): void {
    const n = data.length;
    const w0 = r >> 1;
    const w1 = (r + n + 1) >> 1;
    const words = new Uint32Array(w1 - w0);
    const halves = new Uint16Array(words.buffer);
    const first = r - 2 * w0; // 1: the piece starts in a word's high half
    for (let i = 0; i < n; i++) halves[first + i] = halfBits(data[i]);
    const endsMid = (r + n) % 2 === 1;
    // A word a piece fills only half of keeps the other half another piece wrote; the words it
    // fills whole forget what earlier pieces left there.
    if (first === 1) halves[0] = (this.edges.get(base + w0) ?? 0) & 0xffff;
    if (endsMid) halves[halves.length - 1] = (this.edges.get(base + w1 - 1) ?? 0) >>> 16;
    for (const w of this.edges.keys()) if (w >= base + w0 && w < base + w1) this.edges.delete(w);
    if (first === 1) this.edges.set(base + w0, words[0]);
    if (endsMid) this.edges.set(base + w1 - 1, words[words.length - 1]);
    this.half!.write(this.rt, base + w0, new Float32Array(words.buffer));
  }

  private keep(t: TensorSpec, m: number): Kept {
    const k: Kept = {
      name: t.name,
      maxAbs: m,
      buf: this.storage === "f16" ? new FlatBuffer(this.rt, t.size, `params-f32-${t.name}`, []) : null,
    };
    this.kept.set(t.offset, k);
    if (this.written.has(t.offset)) this.stale.add(t.offset);
    this.cached = null;
    return k;
  }

  /**
   * Whether float `offset` of the layout lies in an f16 tensor found beyond f16's range after
   * some of it was written rounded (model/gpu.ts fromHf reads those again); takeStale() clears.
   */
  isStale(offset: number): boolean {
    for (const s of this.stale) {
      const t = this.halfSpecs.get(s)!;
      if (offset >= t.offset && offset < t.offset + t.size) return true;
    }
    return false;
  }

  get hasStale(): boolean {
    return this.stale.size > 0;
  }

  clearStale(): void {
    this.stale.clear();
  }

  /** The flat layout in f32 (f16 tensors widened exactly). */
  async read(): Promise<Float32Array> {
    if (this.storage === "f32") return this.f32.read(this.rt);
    const f = await this.f32.read(this.rt);
    const h = new Uint16Array((await this.half!.read(this.rt)).buffer);
    const out = new Float32Array(this.layout.total);
    for (const t of this.sorted) {
      const k = this.kept.get(t.offset);
      const h0 = this.at16.get(t.offset);
      if (k) out.set(await k.buf!.read(this.rt), t.offset);
      else if (h0 !== undefined)
        for (let i = 0; i < t.size; i++) out[t.offset + i] = halfValue(h[2 * h0 + i]);
      else out.set(f.subarray(this.at32.get(t.offset)!, this.at32.get(t.offset)! + t.size), t.offset);
    }
    return out;
  }

  /** GPUBuffers holding the base (the stores' segments and the kept tensors'). */
  get bufferCount(): number {
    return this.f32.segments.length + (this.half?.segments.length ?? 0) + this.kept.size;
  }

  report(requested: "f32" | "f16"): BaseStorage {
    let bytes = (this.f32.total + (this.half?.total ?? 0)) * 4;
    for (const k of this.kept.values()) bytes += (k.buf?.total ?? 0) * 4;
    return {
      requested,
      storage: this.storage,
      reason: this.reason,
      halfTensors: this.halfSpecs.size - this.kept.size,
      keptF32: [...this.kept.values()].map(({ name, maxAbs }) => ({ name, maxAbs })),
      bytes,
    };
  }

  destroy(): void {
    this.f32.destroy();
    this.half?.destroy();
    for (const k of this.kept.values()) k.buf?.destroy();
  }
}
