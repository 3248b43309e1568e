// The kernels' runtime: buffer views, upload/readback, a pipeline cache keyed by (shader, entry,
// overrides), a uniform arena that is safe when one op is recorded many times in one encoder, and
// the one `dispatch` every op goes through. Tested by every kernels/*.gpu.test.ts.
//
// Conventions every op follows:
// - A tensor is a `View` {buffer, offset (bytes), size (bytes)} into some buffer, so parameters and
//   gradients can each live in one flat buffer with named offsets. Storage-binding offsets must be
//   multiples of `minStorageBufferOffsetAlignment` (256 bytes = 64 floats): lay tensors out with
//   `alignFloats` (see `layout`).
// - Ops record into a GPUCommandEncoder (a compute pass per dispatch) or into an open compute pass;
//   they never submit or read back. Call `rt.submit(enc)` (or `rt.resetUniforms()` after your own
//   submit) so the uniform arena is reused; keep one encoder open at a time between those calls
//   (a reset while a second encoder is half recorded would hand its slots out again).
// - Every storage binding is declared `read_write` in WGSL: WebGPU forbids a buffer being bound
//   read-only and writable in the same dispatch, but allows disjoint writable views of one buffer,
//   so the model may read and write views of the same activation buffer in one op. The views bound
//   to one dispatch must not OVERLAP (a validation error): ops are not in place unless they say so.
// - No float atomics anywhere: every output element has exactly one writer, so results are bit-identical
//   across runs on one device.
// - Round trips are counted (`counters`: submits, readbacks, dispatches, bytes read back), because on
//   a real GPU each submit + mapAsync costs far more than the arithmetic of these small models; the
//   RL step reports them per phase (perf/* in metrics.jsonl). Staging buffers for readbacks are pooled.
// - Limits: one binding holds at most `rt.maxBindingBytes` (the device's maxStorageBufferBindingSize,
//   128 MiB on lavapipe) and one buffer at most `rt.maxBufferBytes` (maxBufferSize). `dispatch` and
//   `buffer` refuse anything larger with a message naming it; tensors that can be larger (the
//   parameter buffers, the embedding, the head's logits) are bound in windows (`windows`, and
//   `FlatBuffer` for a flat array split over several buffers). Tests lower both limits through
//   RuntimeOptions so the windowed paths run at tiny sizes.
// - Pipelines are cached per device (every Runtime on it shares them).
// - Row reductions (norms, the log-softmax head, the grad norm) use subgroup operations where the
//   device's plan says so (kernels/plan.ts, kernels/reduce.ts), a workgroup tree elsewhere.
// - Which variant of an op runs is the device's kernel plan (`plan`, kernels/plan.ts), read-only.

import { canUseSubgroups, isSoftwareAdapter } from "./device";
import { devicePlan, type KernelPlan, PLANS, type PlanChoice, type PlanName, resolvePlan } from "./plan";
import { withReductions } from "./reduce";

export interface View {
  buffer: GPUBuffer;
  /** Byte offset into `buffer`; a multiple of 256 when bound as storage. */
  offset: number;
  /** Byte size. */
  size: number;
}

/** Where ops record: a command encoder (each dispatch gets its own pass) or an open compute pass. */
export type Recorder = GPUCommandEncoder | GPUComputePassEncoder;

export const FLOAT_ALIGN = 64; // 256 bytes / 4

/** Rounds a float count up to the storage offset alignment (64 floats = 256 bytes). */
export function alignFloats(n: number): number {
  return Math.ceil(n / FLOAT_ALIGN) * FLOAT_ALIGN;
}

/** Lays named tensors (sizes in floats) one after another at aligned offsets (in floats). */
export function layout<K extends string>(
  sizes: Record<K, number>,
): { offsets: Record<K, number>; total: number } {
  const offsets = {} as Record<K, number>;
  let total = 0;
  for (const k of Object.keys(sizes) as K[]) {
    offsets[k] = total;
    total += alignFloats(sizes[k]);
  }
  return { offsets, total };
}

/** A view of `n` elements (4 bytes each) starting at element `at` of `buffer`. */
export function view(buffer: GPUBuffer, at = 0, n?: number): View {
  const size = n === undefined ? buffer.size - at * 4 : n * 4;
  return { buffer, offset: at * 4, size };
}

/** A view of `n` elements starting at element `at` inside another view. */
export function subview(v: View, at: number, n: number): View {
  if ((at + n) * 4 > v.size) throw new Error(`subview [${at}, ${at + n}) is outside a view of ${v.size / 4}`);
  return { buffer: v.buffer, offset: v.offset + at * 4, size: n * 4 };
}

type Field = ["u32" | "i32" | "f32", number];

/** Packs scalar uniform fields in declaration order (WGSL structs of scalars: 4 bytes each). */
export function packUniform(fields: Field[]): ArrayBuffer {
  const bytes = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
  const buf = new ArrayBuffer(bytes);
  const dv = new DataView(buf);
  fields.forEach(([t, x], i) => {
    if (t === "u32") dv.setUint32(i * 4, x >>> 0, true);
    else if (t === "i32") dv.setInt32(i * 4, x | 0, true);
    else dv.setFloat32(i * 4, x, true);
  });
  return buf;
}

/** Cumulative round-trip counts of one Runtime (every model on it shares them). */
export interface RuntimeCounters {
  /** queue.submit calls, the readbacks' copy submits included. */
  submits: number;
  /** mapAsync round trips. */
  readbacks: number;
  /** compute dispatches recorded. */
  dispatches: number;
  /** bytes copied back to the CPU. */
  readbackBytes: number;
}

export function zeroCounters(): RuntimeCounters {
  return { submits: 0, readbacks: 0, dispatches: 0, readbackBytes: 0 };
}

/** after - before, field by field. */
export function countersSince(after: RuntimeCounters, before: RuntimeCounters): RuntimeCounters {
  return {
    submits: after.submits - before.submits,
    readbacks: after.readbacks - before.readbacks,
    dispatches: after.dispatches - before.dispatches,
    readbackBytes: after.readbackBytes - before.readbackBytes,
  };
}

/**
 * The work of one dispatch as its op counts it from the shapes: floating-point operations (a
 * multiply-add is 2) and bytes of global memory read and written once each (the least traffic
 * the op can have: re-reads a kernel makes from its cache or workgroup memory are not counted).
 * An op that gives no `bytes` is counted at the sizes of the storage views it binds (not the
 * uniforms or the placeholder views bound for absent inputs); one that gives no `flops` at 0.
 */
export interface DispatchWork {
  flops?: number;
  bytes?: number;
}

/** Cumulative counted work of one Runtime's dispatches (read, never reset: take differences). */
export interface WorkCounters {
  dispatches: number;
  flops: number;
  bytes: number;
}

/** after - before, field by field. */
export function workSince(after: WorkCounters, before: WorkCounters): WorkCounters {
  return {
    dispatches: after.dispatches - before.dispatches,
    flops: after.flops - before.flops,
    bytes: after.bytes - before.bytes,
  };
}

/** The tiled matmul's workgroup (x, y threads) where nothing was tuned. */
export const DEFAULT_MATMUL_TILE: readonly [number, number] = [8, 8];

const tiles = new WeakMap<GPUDevice, readonly [number, number]>();

/** Each device's compiled shaders and pipelines, for all its Runtimes (tests make many). */
const compiled = new WeakMap<
  GPUDevice,
  { pipelines: Map<string, Map<string, GPUComputePipeline>>; modules: Map<string, GPUShaderModule> }
>();

/** Each pipeline's bind group layout (getBindGroupLayout makes a new object per call). */
const layouts = new WeakMap<GPUComputePipeline, GPUBindGroupLayout>();

/** Makes `tile` the matmul workgroup of every Runtime made on `device` from now on (autotune.ts). */
export function setDeviceMatmulTile(device: GPUDevice, tile: readonly [number, number]): void {
  tiles.set(device, tile);
}

const ARENA_CHUNK = 64 * 1024;
const UNIFORM_SLOT = 256;
/** Uploads and readbacks move at most this many bytes per writeBuffer / staging buffer. */
const TRANSFER_PIECE = 64 * 1024 * 1024;

export interface RuntimeOptions {
  /** Binds at most this many bytes per storage binding (default and ceiling: the device's limit). */
  maxBindingBytes?: number;
  /** Creates buffers of at most this many bytes (default and ceiling: the device's maxBufferSize). */
  maxBufferBytes?: number;
  /** Workgroup memory a kernel may use (default and ceiling: maxComputeWorkgroupStorageSize). */
  maxWorkgroupStorageBytes?: number;
  /**
   * The kernel plan (default: the device's, kernels/plan.ts devicePlan): a name from the table, or
   * a variant of one (plan.ts planWith; tests and kernels/dev comparisons). A plan given here
   * uses its own matmulTile, not the device's tuned one.
   */
  plan?: PlanName | KernelPlan;
  /** Threads of every row reduction (a power of two <= 256): tests run them over several subgroups. */
  reductionThreads?: number;
}

export class Runtime {
  /**
   * Shared by every Runtime on the device (pipelines are immutable): made once per device. Keyed
   * by the shader's source, then entry point and constants: a lookup per dispatch, where a key
   * joined from the source would build and hash a string of kilobytes each time.
   */
  private pipelines: Map<string, Map<string, GPUComputePipeline>>;
  /** minStorageBufferOffsetAlignment (reading device.limits makes an object per read in Dawn's Node binding). */
  private readonly offsetAlign: number;
  private modules: Map<string, GPUShaderModule>;
  private chunks: GPUBuffer[] = [];
  private chunk = 0;
  private used = 0;
  /** Idle MAP_READ staging buffers by size (powers of two from 256 bytes). */
  private staging = new Map<number, GPUBuffer[]>();

  /**
   * Per-dispatch GPU time (timestamp-query), on only while a profiling script asks for it
   * (startProfile / readProfile; bench/profile-update.ts): every dispatch recorded into an
   * encoder gets its own timed pass. Null: off (no cost, no extra queries).
   */
  private profile: { sets: GPUQuerySet[]; labels: string[]; groups: [number, number, number][] } | null =
    null;

  /** Cumulative round trips since this Runtime was made (read, never reset: take differences). */
  readonly counters: RuntimeCounters = zeroCounters();
  /** Cumulative counted work (DispatchWork) of every dispatch recorded on this Runtime. */
  readonly work: WorkCounters = { dispatches: 0, flops: 0, bytes: 0 };

  /** Bound where an op's optional input is absent (binding `out` twice would overlap). */
  readonly dummy: View;
  private sinks: View[] = [];

  /**
   * The i-th of a set of 64-byte buffers that absent optional inputs bind where a dispatch has
   * several (writable bindings of one dispatch must not share a buffer, so rt.dummy alone will
   * not do); made on first use.
   */
  sink(i: number): View {
    this.sinks[i] ??= view(this.buffer(64, `sink-${i}`), 0, 64);
    return this.sinks[i];
  }

  /** The kernel plan every op of this runtime reads (kernels/plan.ts): the only selector of a variant. */
  readonly plan: KernelPlan;
  /** How the plan was chosen (the device's choice, or the RuntimeOptions that gave it). */
  readonly planChoice: PlanChoice;
  /** The plan came from RuntimeOptions as an object: its matmulTile holds, not the device's tuned one. */
  private readonly fixedTile: boolean;
  private readonly reductionThreads: number | undefined;

  /**
   * Threads (x, y) of a tiled-matmul workgroup (matmul.wgsl: each thread an 8x8 block of out, so
   * a (8y, 8x) tile): the device's autotuned shape (kernels/autotune.ts, measured at the first
   * model where the plan tunes it), else the plan's. Results do not depend on it.
   */
  get matmulTile(): readonly [number, number] {
    if (this.fixedTile || !this.plan.tuneMatmulTile) return this.plan.matmulTile;
    return tiles.get(this.device) ?? this.plan.matmulTile;
  }

  /** A CPU rasteriser (an adapter fact, not a kernel choice: the autotune measures smaller products there). */
  readonly software: boolean;

  /** Whether the row reductions use subgroup operations (plan.reductions). */
  get subgroups(): boolean {
    return this.plan.reductions === "subgroup";
  }

  /** Workgroup memory a kernel may use, in bytes (see RuntimeOptions). */
  readonly maxWorkgroupStorageBytes: number;

  /** Largest storage binding in bytes, a multiple of 256 (see RuntimeOptions). */
  readonly maxBindingBytes: number;
  /** Largest buffer in bytes, a multiple of 256. */
  readonly maxBufferBytes: number;

  constructor(
    readonly device: GPUDevice,
    options: RuntimeOptions = {},
  ) {
    const lim = (asked: number | undefined, has: number, name: string) => {
      if (asked !== undefined && !(asked >= 1024))
        throw new Error(`RuntimeOptions.${name} must be >= 1024, got ${asked}`);
      return Math.floor(Math.min(asked ?? has, has) / 256) * 256;
    };
    this.maxBindingBytes = lim(
      options.maxBindingBytes,
      device.limits.maxStorageBufferBindingSize,
      "maxBindingBytes",
    );
    this.maxBufferBytes = lim(options.maxBufferBytes, device.limits.maxBufferSize, "maxBufferBytes");
    this.offsetAlign = device.limits.minStorageBufferOffsetAlignment;
    const wgs = device.limits.maxComputeWorkgroupStorageSize;
    this.maxWorkgroupStorageBytes = Math.min(options.maxWorkgroupStorageBytes ?? wgs, wgs);
    let cache = compiled.get(device);
    if (!cache) {
      cache = { pipelines: new Map(), modules: new Map() };
      compiled.set(device, cache);
    }
    this.pipelines = cache.pipelines;
    this.modules = cache.modules;
    this.dummy = view(this.buffer(64, "dummy"), 0, 64);
    const info = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
    const asked = options.plan;
    const own = devicePlan(device);
    if (asked === undefined) this.planChoice = own;
    else if (typeof asked === "string") {
      const c = resolvePlan({ info, subgroups: canUseSubgroups(device) }, asked);
      this.planChoice = Object.freeze({ ...c, why: `RuntimeOptions.plan ${asked}` });
    } else
      this.planChoice = Object.freeze({
        plan: asked,
        why: `RuntimeOptions.plan (a variant of ${asked.name})`,
        dropped: [],
      });
    this.plan = this.planChoice.plan;
    this.fixedTile = typeof asked === "object";
    if (!PLANS[this.plan.name]) throw new Error(`RuntimeOptions.plan: unknown plan ${this.plan.name}`);
    this.reductionThreads = options.reductionThreads;
    this.software = isSoftwareAdapter(info);
    const sizes = info as { subgroupMinSize?: number; subgroupMaxSize?: number } | undefined;
    this.subgroupSizes = [sizes?.subgroupMinSize ?? 0, sizes?.subgroupMaxSize ?? 0];
  }

  /**
   * The tiled matmul's threads (x, y) for an out of N columns (the new path): matmulTile, except
   * where its tiles would pad N by more than a tenth, leaving those columns' threads idle; then
   * N is cut into ceil(N/64) equal column blocks, each one workgroup of ceil(width/8) x 8 threads
   * (N = 48: 6x8, a 64x48 tile). The quick-demo update's matmuls have N of 48-192 at 2560 rows,
   * where the 16x8 that the autotune picks at 256³ on lavapipe ran up to 2x slower than a fitted
   * tile (kernels/dev/update-shapes.ts). Likewise a tile taller than M rows has fewer rows of
   * threads, the power of two that covers ceil(M/8), where M·N·K is at least 2^20 (a decode step
   * of 9-64 rows ran whole 64- or 128-row tiles: 1.6x at 32 rows of d 256; below that size the
   * idle rows cost less than compiling another pipeline, ~3 s each on lavapipe).
   * Which thread computes which block of out changes, never the order of the K sum: results are
   * bit-identical.
   */
  matmulTileFor(N: number, M = Number.POSITIVE_INFINITY, K = Number.POSITIVE_INFINITY): [number, number] {
    const [tx, ty] = this.matmulTile;
    const span = 8 * tx;
    // rows of threads: a power of two (few pipelines to compile), at most the tuned tile's; only
    // where the product is big enough for idle rows to cost more than a compile (2^20 FMAs)
    const fit = M * N * K >= 2 ** 20;
    const rows = (y: number) =>
      fit ? Math.min(y, 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(M / 8))))) : y;
    // padded columns under a tenth of N: keep the tuned tile
    if (Math.ceil(N / span) * span - N <= N / 10) return [tx, rows(ty)];
    const width = Math.ceil(N / Math.ceil(N / 64));
    return [Math.ceil(width / 8), rows(8)];
  }

  /** [min, max] subgroup size of the adapter (0 when it does not say). */
  readonly subgroupSizes: [number, number];

  /** A reducing kernel's source with this runtime's wgSum/wgSum2/wgMax (kernels/reduce.ts). */
  reducing(src: string): string {
    return withReductions(src, this.subgroups, this.subgroupSizes[0]);
  }

  /**
   * Threads of a one-workgroup-per-row reduction over rows of n: a power of two near n/3, from
   * 16 (software adapters; 32 on GPUs, a warp) to 256. On lavapipe every workgroup barrier
   * switches each SIMD-wide slice of the workgroup, so a 256-thread tree over a 107-wide row
   * cost 12x a 32-thread one (the log-softmax head; 8x for LayerNorm at C = 48 with 16 threads).
   * The plan's minRowThreads is the floor.
   */
  rowWorkgroup(n: number): number {
    let wg = this.plan.minRowThreads;
    while (wg * 2 <= n / 3 && wg < 256) wg *= 2;
    return wg;
  }

  /**
   * Threads of a row reduction through kernels/reduce.ts (norms, log-softmax head): rowWorkgroup,
   * except where the plan's rowThreads is "subgroup" (CPU rasterisers): one subgroup (lavapipe's 8): there a
   * workgroup runs on one CPU thread, its lanes are the SIMD lanes, and a single-subgroup
   * reduction has no barrier at all (LayerNorm forward + backward at 1920x48: about 2x faster
   * than 16 threads with the tree; the log-softmax head at V 107: about 3-5x).
   */
  reductionWorkgroup(n: number): number {
    if (this.reductionThreads) return this.reductionThreads;
    const min = this.subgroupSizes[0];
    if (this.subgroups && this.plan.rowThreads === "subgroup" && min >= 4 && min <= 256) return min;
    return this.rowWorkgroup(n);
  }

  /** A storage buffer of `n` floats (or 4-byte ints), zero-filled. */
  buffer(n: number, label?: string, extraUsage = 0): GPUBuffer {
    const size = Math.max(16, alignFloats(n) * 4);
    if (size > this.maxBufferBytes)
      throw new Error(
        `buffer ${label ?? "(unnamed)"} needs ${size} bytes, over this device's buffer limit of ${this.maxBufferBytes}`,
      );
    return this.device.createBuffer({
      label,
      size,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST | extraUsage,
    });
  }

  /** A whole-buffer-backed tensor of `n` elements with `data` uploaded. */
  tensor(data: Float32Array | Int32Array | Uint32Array | number, label?: string): View {
    const n = typeof data === "number" ? data : data.length;
    const buf = this.buffer(n, label);
    if (typeof data !== "number") this.upload(view(buf, 0, n), data);
    return view(buf, 0, n);
  }

  /** Queues `data` into the view, in pieces of at most 64 MiB. */
  upload(v: View, data: Float32Array | Int32Array | Uint32Array): void {
    if (data.byteLength > v.size)
      throw new Error(`upload of ${data.byteLength} bytes into a view of ${v.size}`);
    for (let at = 0; at < data.byteLength; at += TRANSFER_PIECE) {
      const n = Math.min(TRANSFER_PIECE, data.byteLength - at);
      this.device.queue.writeBuffer(v.buffer, v.offset + at, data.buffer, data.byteOffset + at, n);
    }
  }

  /** Submits whatever is pending, then copies the view back. For tests, metrics and decoding. */
  async readBytes(v: View): Promise<ArrayBuffer> {
    const size = Math.ceil(v.size / 4) * 4;
    if (size > Math.min(TRANSFER_PIECE, this.maxBufferBytes)) {
      const out = new Uint8Array(size);
      await this.readInto(v, out);
      return out.buffer;
    }
    const enc = this.device.createCommandEncoder();
    const done = this.recordRead(enc, v);
    // not this.submit: an encoder still being recorded may hold uniform slots
    this.device.queue.submit([enc.finish()]);
    this.counters.submits++;
    return done();
  }

  /** Copies the view back into `dst` (at least v.size bytes), through staging buffers of at most 64 MiB. */
  async readInto(v: View, dst: Uint8Array): Promise<void> {
    if (dst.byteLength < v.size)
      throw new Error(`readInto: a view of ${v.size} bytes into ${dst.byteLength}`);
    const size = Math.ceil(v.size / 4) * 4;
    const piece = Math.min(TRANSFER_PIECE, this.maxBufferBytes);
    for (let at = 0; at < size; at += piece) {
      const n = Math.min(piece, size - at);
      const staging = this.device.createBuffer({
        size: n,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      });
      const enc = this.device.createCommandEncoder();
      enc.copyBufferToBuffer(v.buffer, v.offset + at, staging, 0, n);
      // not this.submit: an encoder still being recorded may hold uniform slots
      this.device.queue.submit([enc.finish()]);
      this.counters.submits++;
      await staging.mapAsync(GPUMapMode.READ);
      this.counters.readbacks++;
      this.counters.readbackBytes += n;
      dst.set(new Uint8Array(staging.getMappedRange(), 0, Math.min(n, dst.byteLength - at)), at);
      staging.unmap();
      staging.destroy();
    }
  }

  /** Floats one binding may hold, rounded down to the 64-float offset alignment. */
  get bindingFloats(): number {
    return Math.floor(this.maxBindingBytes / 4 / FLOAT_ALIGN) * FLOAT_ALIGN;
  }

  /**
   * Records the copy of `v` into a pooled staging buffer at the end of `enc`; after `enc` is
   * submitted, the returned function maps it and gives the bytes (one readback). This is how a
   * pass and its readback share one submit.
   */
  recordRead(enc: GPUCommandEncoder, v: View): () => Promise<ArrayBuffer> {
    const size = Math.ceil(v.size / 4) * 4;
    const staging = this.takeStaging(size);
    enc.copyBufferToBuffer(v.buffer, v.offset, staging, 0, size);
    return async () => {
      await staging.mapAsync(GPUMapMode.READ, 0, size);
      const out = staging.getMappedRange(0, size).slice(0);
      staging.unmap();
      this.staging.get(staging.size)!.push(staging);
      this.counters.readbacks++;
      this.counters.readbackBytes += size;
      return out;
    };
  }

  private takeStaging(size: number): GPUBuffer {
    const cap = Math.max(256, 2 ** Math.ceil(Math.log2(size)));
    let free = this.staging.get(cap);
    if (!free) {
      free = [];
      this.staging.set(cap, free);
    }
    return (
      free.pop() ??
      this.device.createBuffer({
        label: `staging-${cap}`,
        size: cap,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      })
    );
  }

  /** Staging buffers made so far (idle ones; tests check the pool is reused). */
  stagingBuffers(): number {
    let n = 0;
    for (const f of this.staging.values()) n += f.length;
    return n;
  }

  async read(v: View): Promise<Float32Array> {
    return new Float32Array(await this.readBytes(v));
  }

  async readU32(v: View): Promise<Uint32Array> {
    return new Uint32Array(await this.readBytes(v));
  }

  /** Submits one encoder and recycles the uniform arena (its writes are queued before later ones). */
  submit(enc: GPUCommandEncoder): void {
    this.device.queue.submit([enc.finish()]);
    this.counters.submits++;
    this.resetUniforms();
  }

  /**
   * Slots written with queue.writeBuffer before the submit that uses them; every dispatch gets its
   * own slot, so recording the same op many times in one encoder sees each its own parameters.
   * Reset only after the submit: later writeBuffers are ordered after that submit on the queue.
   */
  resetUniforms(): void {
    this.chunk = 0;
    this.used = 0;
  }

  uniform(data: ArrayBuffer): GPUBufferBinding {
    if (data.byteLength > UNIFORM_SLOT) throw new Error("uniform block larger than 256 bytes");
    if (this.used + UNIFORM_SLOT > ARENA_CHUNK) {
      this.chunk++;
      this.used = 0;
    }
    if (this.chunk === this.chunks.length) {
      this.chunks.push(
        this.device.createBuffer({
          label: `uniform-arena-${this.chunk}`,
          size: ARENA_CHUNK,
          usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
        }),
      );
    }
    const buffer = this.chunks[this.chunk];
    const offset = this.used;
    this.used += UNIFORM_SLOT;
    this.device.queue.writeBuffer(buffer, offset, data);
    return { buffer, offset, size: data.byteLength };
  }

  /** The compute pipeline for (shader, entry point, override constants), built once. */
  pipeline(code: string, entryPoint: string, constants: Record<string, number> = {}): GPUComputePipeline {
    let forCode = this.pipelines.get(code);
    if (!forCode) {
      forCode = new Map();
      this.pipelines.set(code, forCode);
    }
    let key = entryPoint;
    for (const c in constants) key += ` ${c}=${constants[c]}`;
    let p = forCode.get(key);
    if (!p) {
      let module = this.modules.get(code);
      if (!module) {
        module = this.device.createShaderModule({ code });
        this.modules.set(code, module);
      }
      // the label names the kernel in profiles: the shader's first word (its header, after any
      // `enable` directives put before it) and the entry point
      const word = /^(?:enable [^;]*;\s*)*\/\/\s*([A-Za-z0-9'-]+)/.exec(code)?.[1]?.toLowerCase();
      p = this.device.createComputePipeline({
        label: word ? `${word}/${entryPoint}` : entryPoint,
        layout: "auto",
        compute: { module, entryPoint, constants },
      });
      forCode.set(key, p);
    }
    return p;
  }

  /** Bytes of the storage views bound (not uniforms, rt.dummy or the sinks): DispatchWork's default. */
  private boundBytes(bindings: (View | GPUBufferBinding | null)[]): number {
    let n = 0;
    for (const b of bindings) {
      if (!b || b === this.dummy || this.sinks.includes(b as View)) continue;
      if (b.buffer.usage & UNIFORM_USAGE) continue;
      n += b.size ?? b.buffer.size - (b.offset ?? 0);
    }
    return n;
  }

  /** Starts timing every dispatch recorded into an encoder (needs the timestamp-query feature). */
  startProfile(): void {
    if (!this.device.features.has("timestamp-query"))
      throw new Error("startProfile: the device was made without the timestamp-query feature");
    this.profile = { sets: [], labels: [], groups: [] };
  }

  /** The timed-pass descriptor of one dispatch while profiling (undefined otherwise). */
  private timedPass(label: string, groups: [number, number, number]): GPUComputePassDescriptor | undefined {
    const p = this.profile;
    if (!p) return undefined;
    const i = p.labels.length % (PROFILE_SET / 2);
    if (i === 0) p.sets.push(this.device.createQuerySet({ type: "timestamp", count: PROFILE_SET }));
    p.labels.push(label);
    p.groups.push(groups);
    const querySet = p.sets[p.sets.length - 1];
    return {
      timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 },
    };
  }

  /** Stops profiling and reads every timed dispatch since startProfile back (after the work is submitted). */
  async readProfile(): Promise<ProfiledDispatch[]> {
    const p = this.profile;
    if (!p) throw new Error("readProfile: startProfile was not called");
    this.profile = null;
    const out: ProfiledDispatch[] = [];
    for (let s = 0; s < p.sets.length; s++) {
      const bytes = PROFILE_SET * 8;
      const resolve = this.device.createBuffer({
        size: bytes,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      });
      const read = this.device.createBuffer({
        size: bytes,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      });
      const enc = this.device.createCommandEncoder();
      enc.resolveQuerySet(p.sets[s], 0, PROFILE_SET, resolve, 0);
      enc.copyBufferToBuffer(resolve, 0, read, 0, bytes);
      this.device.queue.submit([enc.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const t = new BigUint64Array(read.getMappedRange().slice(0));
      read.unmap();
      read.destroy();
      resolve.destroy();
      p.sets[s].destroy();
      const n = Math.min(PROFILE_SET / 2, p.labels.length - s * (PROFILE_SET / 2));
      for (let i = 0; i < n; i++) {
        const k = s * (PROFILE_SET / 2) + i;
        out.push({ label: p.labels[k], groups: p.groups[k], ns: Number(t[2 * i + 1] - t[2 * i]) });
      }
    }
    return out;
  }

  /**
   * Records one dispatch. `bindings[i]` goes to @binding(i) of group 0 (null: a binding this entry
   * point does not use); `groups` may exceed 65535 in x, it is then folded into y. `work` is the
   * op's count of its FLOPs and bytes (DispatchWork), added to `work`.
   */
  dispatch(
    rec: Recorder,
    pipeline: GPUComputePipeline,
    bindings: (View | GPUBufferBinding | null)[],
    groups: [number, number?, number?],
    work?: DispatchWork,
  ): void {
    const align = this.offsetAlign;
    bindings.forEach((b, i) => {
      if (b && (b.size ?? 0) > this.maxBindingBytes) {
        throw new Error(
          `binding ${i} of ${pipeline.label || "a dispatch"} is ${b.size} bytes, over the binding limit of ${this.maxBindingBytes}: bind it in windows`,
        );
      }
      if (b && (b.offset ?? 0) % align !== 0) {
        throw new Error(
          `binding ${i} starts at byte ${b.offset}, not a multiple of ${align}: lay tensors out with alignFloats/layout`,
        );
      }
      if (b && b.size === 0) throw new Error(`binding ${i} is an empty view`);
    });
    let layout = layouts.get(pipeline);
    if (!layout) {
      layout = pipeline.getBindGroupLayout(0);
      layouts.set(pipeline, layout);
    }
    const bindGroup = this.device.createBindGroup({
      layout,
      entries: bindings.flatMap((b, i) => (b ? [{ binding: i, resource: b as GPUBufferBinding }] : [])),
    });
    let [x, y = 1, z = 1] = groups;
    if (x === 0 || y === 0 || z === 0) return;
    if (x > 65535) {
      if (y !== 1) throw new Error("dispatch folds only a 1-D grid");
      y = Math.ceil(x / 65535);
      x = 65535;
    }
    const isPass = "dispatchWorkgroups" in rec;
    const pass = isPass
      ? (rec as GPUComputePassEncoder)
      : (rec as GPUCommandEncoder).beginComputePass(this.timedPass(pipeline.label, [x, y, z]));
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y, z);
    this.counters.dispatches++;
    this.work.dispatches++;
    this.work.flops += work?.flops ?? 0;
    this.work.bytes += work?.bytes ?? this.boundBytes(bindings);
    if (!isPass) pass.end();
  }
}

const PROFILE_SET = 4096;
/** GPUBufferUsage.UNIFORM (the constant, for where the global is not defined). */
const UNIFORM_USAGE = 0x40;

export interface ProfiledDispatch {
  /** The entry point. */
  label: string;
  /** Workgroups dispatched (x, y, z). */
  groups: [number, number, number];
  /** GPU time of its pass, ns. */
  ns: number;
}

/** [start, length) pieces of [0, n) (floats) of at most `max` floats each, every start a multiple of `unit`. */
export function windows(n: number, max: number, unit = FLOAT_ALIGN): [number, number][] {
  const w = Math.floor(max / unit) * unit;
  if (w <= 0) throw new Error(`windows: a window of ${max} floats cannot hold a unit of ${unit}`);
  const out: [number, number][] = [];
  for (let at = 0; at < n; at += w) out.push([at, Math.min(w, n - at)]);
  return out;
}

/**
 * A flat array of `total` floats (the parameter layout, its gradients, the Adam moments) kept in
 * one buffer or, past the runtime's buffer limit, in several, cut only at the given offsets (the
 * tensor starts) so every tensor lies inside one buffer. `view(at, n)` addresses it in the flat
 * offsets as if it were one buffer; `windows(max)` lists views of at most `max` floats covering it
 * (each inside one buffer), for passes over the whole array (AdamW, zeroing, the grad norm).
 */
export class FlatBuffer {
  /** Each buffer and the flat range [start, start + length) (floats) it holds. */
  readonly segments: { buffer: GPUBuffer; start: number; length: number }[] = [];

  constructor(
    rt: Runtime,
    readonly total: number,
    label: string,
    cuts: number[],
  ) {
    const maxFloats = Math.floor(rt.maxBufferBytes / 4 / FLOAT_ALIGN) * FLOAT_ALIGN;
    const points = [...new Set([...cuts.filter((c) => c > 0 && c < total), total])].sort((a, b) => a - b);
    let start = 0;
    let i = 0;
    while (start < total) {
      let end = -1;
      while (i < points.length && points[i] - start <= maxFloats) end = points[i++];
      if (end < 0)
        throw new Error(
          `${label}: the tensor at float ${start} needs ${(points[i] - start) * 4} bytes, over this device's buffer limit of ${rt.maxBufferBytes}`,
        );
      const length = end - start;
      this.segments.push({ buffer: rt.buffer(length, `${label}-${this.segments.length}`), start, length });
      start = end;
    }
  }

  /** The view of floats [at, at + n); it must lie inside one segment. */
  view(at: number, n: number): View {
    for (const s of this.segments) {
      if (at >= s.start && at < s.start + s.length) {
        if (at + n > s.start + s.length)
          throw new Error(
            `FlatBuffer view [${at}, ${at + n}) crosses the segment ending at ${s.start + s.length}`,
          );
        return view(s.buffer, at - s.start, n);
      }
    }
    throw new Error(`FlatBuffer view at ${at} is outside [0, ${this.total})`);
  }

  /** [flat start, length] of windows of at most `max` floats (starts multiples of `unit` inside a segment). */
  windows(max: number, unit = FLOAT_ALIGN): [number, number][] {
    return this.segments.flatMap((s) =>
      windows(s.length, max, unit).map(([a, n]) => [s.start + a, n] as [number, number]),
    );
  }

  /** Writes `data` at flat float `at` (it may span segments). */
  write(rt: Runtime, at: number, data: Float32Array): void {
    if (at < 0 || at + data.length > this.total)
      throw new Error(`FlatBuffer write [${at}, ${at + data.length}) is outside [0, ${this.total})`);
    for (const s of this.segments) {
      const lo = Math.max(at, s.start);
      const hi = Math.min(at + data.length, s.start + s.length);
      if (lo < hi) rt.upload(view(s.buffer, lo - s.start, hi - lo), data.subarray(lo - at, hi - at));
    }
  }

  upload(rt: Runtime, data: Float32Array): void {
    if (data.length !== this.total)
      throw new Error(`FlatBuffer upload: ${data.length} floats, expected ${this.total}`);
    for (const s of this.segments)
      rt.upload(view(s.buffer, 0, s.length), data.subarray(s.start, s.start + s.length));
  }

  async read(rt: Runtime): Promise<Float32Array> {
    const out = new Float32Array(this.total);
    for (const s of this.segments)
      await rt.readInto(view(s.buffer, 0, s.length), new Uint8Array(out.buffer, s.start * 4, s.length * 4));
    return out;
  }

  destroy(): void {
    for (const s of this.segments) s.buffer.destroy();
  }
}

/** A weight stored as IEEE half floats (2 bytes each, `size` rounded up to 4): the f16 variants' weight operand (matmul, matvec, linear-rows). */
export interface HalfView extends View {
  dtype: "f16";
}

export function isHalf(v: View): v is HalfView {
  return (v as Partial<HalfView>).dtype === "f16";
}

/** The half view of `n` f16 values at byte `offset` of `buffer` (a multiple of 256 to be bound). */
export function halfView(buffer: GPUBuffer, offset: number, n: number): HalfView {
  return { buffer, offset, size: Math.ceil(n / 2) * 4, dtype: "f16" };
}
