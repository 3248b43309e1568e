// The tiled matmul's workgroup shape per adapter (as the llama.cpp and ONNX Runtime WebGPU
// backends pick theirs): at the first model on a device, each shape of MATMUL_TILES is timed five
// times at tuneShape (in turn with the others) and the fastest median wins (chooseTile; the
// default 8x8 unless another is clearly faster). The choice is cached per adapter description in
// memory, and in the browser in IndexedDB (Node: memory only, a process measures once), and
// becomes the `matmulTile` of every Runtime made on that device afterwards. The shape changes
// which thread computes which block of out, never the order of the K sum, so results are
// bit-identical whatever is chosen.
// Override: `override` ("16x8"), or LAB_MATMUL_TILE in Node (the test projects set 8x8 so each
// test file does not spend a second measuring). SwiftShader runs the unrolled kernels
// (matmul-gen.ts), whose shape is fixed: nothing is measured there.
// The measuring runs on a Runtime of its own, so a model's counters (submits, readbacks,
// dispatches) never include it. Tested by kernels/autotune.gpu.test.ts.
import { adapterKey } from "./device";
import { matmul } from "./matmul";
import { devicePlan, planWith } from "./plan";
import type { MatmulShape } from "./reference";
import { DEFAULT_MATMUL_TILE, Runtime, setDeviceMatmulTile } from "./runtime";

export type Tile = readonly [number, number];

/** Candidate (x, y) thread shapes, the default first. 16x16 fills the 16 KiB of workgroup memory. */
export const MATMUL_TILES: readonly Tile[] = [
  DEFAULT_MATMUL_TILE,
  [16, 8],
  [8, 16],
  [16, 16],
  [4, 8],
  [8, 4],
];

/**
 * A linear layer's form (A·Bᵀ) at a size every candidate tiles many times over: 1024³ (a
 * pretrained model's layer at a few hundred tokens) on a GPU, 256³ on a software adapter, where
 * that already takes 10-30 ms.
 */
export function tuneShape(software: boolean): MatmulShape {
  const n = software ? 256 : 1024;
  return { M: n, N: n, K: n, transB: true };
}

/** Each timing records enough dispatches in one submit to last about this long (submit latency). */
export const TUNE_TARGET_MS = 10;

/** Another shape must beat the default's median by this fraction to replace it (timing noise). */
export const TUNE_MARGIN = 0.1;

export interface TileChoice {
  tile: Tile;
  /** Where it came from. "fixed": the adapter runs the unrolled kernels, whose shape is fixed. */
  source: "override" | "memory" | "stored" | "measured" | "fixed";
  /** Median ms per candidate ("8x8" -> ms) when measured here. */
  medians?: Record<string, number>;
}

export const tileName = (t: Tile) => `${t[0]}x${t[1]}`;

/** "16x8" -> [16, 8], or an error naming what is wrong. */
export function parseTile(text: string, what = "matmul tile"): Tile {
  const m = /^\s*(\d+)\s*x\s*(\d+)\s*$/.exec(text);
  const t = m ? ([Number(m[1]), Number(m[2])] as const) : null;
  if (!t || !MATMUL_TILES.some((c) => c[0] === t[0] && c[1] === t[1]))
    throw new Error(
      `${what} "${text}" is not one of the candidates ${MATMUL_TILES.map(tileName).join(", ")}`,
    );
  return t;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * The shape to use given measured times (ms per dispatch, several per candidate, in MATMUL_TILES
 * order; a candidate left out or with no times is skipped): the smallest median, but the first
 * (the default) unless that median is below the default's by more than `margin`; ties go to the
 * earlier candidate. Deterministic in its input.
 */
export function chooseTile(
  times: { tile: Tile; ms: number[] }[],
  margin = TUNE_MARGIN,
): { tile: Tile; medians: Record<string, number> } {
  const measured = times.filter((t) => t.ms.length > 0 && t.ms.every(Number.isFinite));
  if (measured.length === 0) throw new Error("chooseTile: no candidate has a finite time");
  const medians: Record<string, number> = {};
  for (const t of measured) medians[tileName(t.tile)] = median(t.ms);
  const first = measured[0];
  let best = first;
  for (const t of measured.slice(1)) if (medians[tileName(t.tile)] < medians[tileName(best.tile)]) best = t;
  if (best !== first && medians[tileName(best.tile)] >= medians[tileName(first.tile)] * (1 - margin))
    best = first;
  return { tile: best.tile, medians };
}

/** Where a choice outlives the page: get/set by adapter key. */
export interface TileStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, tile: string): Promise<void>;
}

/** IndexedDB where the platform has it (browser window or worker), else undefined. */
export function browserTileStore(): TileStore | undefined {
  const idb = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (!idb) return undefined;
  const open = () =>
    new Promise<IDBDatabase>((resolve, reject) => {
      const req = idb.open("agentic-rl-lab-tuning", 1);
      req.onupgradeneeded = () => req.result.createObjectStore("matmul-tile");
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  const run = async <T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T>) => {
    const db = await open();
    try {
      return await new Promise<T>((resolve, reject) => {
        const req = f(db.transaction("matmul-tile", mode).objectStore("matmul-tile"));
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    } finally {
      db.close();
    }
  };
  return {
    get: async (key) => {
      const v = await run("readonly", (s) => s.get(key));
      return typeof v === "string" ? v : undefined;
    },
    set: async (key, tile) => {
      await run("readwrite", (s) => s.put(tile, key));
    },
  };
}

/** The adapter as a cache key (kernels/device.ts: info, fallback, features and limits). */
export { adapterKey };

const memory = new Map<string, TileChoice>();
const chosen = new WeakMap<GPUDevice, TileChoice>();

/** What tuneMatmulTile chose for this device (undefined before it ran). */
export function deviceTileChoice(device: GPUDevice): TileChoice | undefined {
  return chosen.get(device);
}

/** "8x8 (measured)": the choice as the bench report and logs show it. */
export function describeTileChoice(c: TileChoice | undefined): string {
  if (!c) return `${tileName(DEFAULT_MATMUL_TILE)} (not tuned)`;
  return `${tileName(c.tile)} (${c.source})`;
}

/** Forgets the in-memory choices (tests). */
export function clearTileMemory(): void {
  memory.clear();
}

/**
 * ms per dispatch of tuneShape at each candidate, `reps` timings each, after one untimed (it
 * compiles). A timing is one submit of as many dispatches as make the default last about
 * TUNE_TARGET_MS (at most 32: on a GPU one 1024³ product takes well under a millisecond, less
 * than a submit's round trip), the same count for every candidate; the reps go round the
 * candidates in turn, so a change in load hits them alike.
 */
export async function measureTiles(device: GPUDevice, reps = 5): Promise<{ tile: Tile; ms: number[] }[]> {
  // its own runtimes: no model's counts include these; the tiles are what is measured
  const base = planWith(devicePlan(device).plan, { matmul: "tiled", subgroupMatmul: false });
  const runtimes = new Map(
    MATMUL_TILES.map((t) => [t, new Runtime(device, { plan: planWith(base, { matmulTile: t }) })]),
  );
  const rt = runtimes.get(MATMUL_TILES[0])!;
  const shape = tuneShape(rt.software);
  const { M, N, K } = shape;
  const fill = (n: number, k: number) =>
    Float32Array.from({ length: n }, (_, i) => ((i * k) % 17) / 17 - 0.5);
  const a = rt.tensor(fill(M * K, 7));
  const b = rt.tensor(fill(N * K, 11));
  const out = rt.tensor(M * N);
  const timed = async (tile: Tile, count: number) => {
    const tr = runtimes.get(tile)!;
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    for (let i = 0; i < count; i++) matmul(tr, enc, out, a, b, null, shape);
    tr.submit(enc);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / count;
  };
  const times = MATMUL_TILES.map((tile) => ({ tile, ms: [] as number[] }));
  try {
    for (const t of times) await timed(t.tile, 1);
    const one = await timed(MATMUL_TILES[0], 1);
    const count = Math.min(32, Math.max(1, Math.round(TUNE_TARGET_MS / Math.max(one, 1e-3))));
    for (let r = 0; r < reps; r++) for (const t of times) t.ms.push(await timed(t.tile, count));
  } finally {
    for (const v of [a, b, out]) v.buffer.destroy();
  }
  return times;
}

export interface TuneOptions {
  /** A shape ("16x8") to use without measuring; default LAB_MATMUL_TILE in Node; null: none. */
  override?: string | null;
  /** Default: browserTileStore() (undefined in Node). */
  store?: TileStore;
  /** Default: measureTiles. Tests inject times here. */
  measure?: (device: GPUDevice) => Promise<{ tile: Tile; ms: number[] }[]>;
}

function envOverride(): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.LAB_MATMUL_TILE || undefined;
}

/**
 * Picks the matmul tile for `device` (override, else this process's memory, else the store, else
 * measured and remembered) and makes it the matmulTile of every Runtime made on it afterwards.
 */
export async function tuneMatmulTile(device: GPUDevice, opts: TuneOptions = {}): Promise<TileChoice> {
  const key = adapterKey(device);
  const done = (c: TileChoice) => {
    setDeviceMatmulTile(device, c.tile);
    chosen.set(device, c);
    return c;
  };
  const override = opts.override === undefined ? envOverride() : opts.override;
  if (override)
    return done({ tile: parseTile(override, "LAB_MATMUL_TILE / the tile override"), source: "override" });
  if (!devicePlan(device).plan.tuneMatmulTile) return done({ tile: DEFAULT_MATMUL_TILE, source: "fixed" });
  const known = memory.get(key);
  if (known) return done({ ...known, source: "memory" });
  const store = opts.store ?? browserTileStore();
  const stored = await store?.get(key).catch(() => undefined);
  if (stored) {
    try {
      const c: TileChoice = { tile: parseTile(stored), source: "stored" };
      memory.set(key, c);
      return done(c);
    } catch {
      // a stored value from another version's table: measure again
    }
  }
  const { tile, medians } = chooseTile(await (opts.measure ?? measureTiles)(device));
  const c: TileChoice = { tile, source: "measured", medians };
  memory.set(key, c);
  await store?.set(key, tileName(tile)).catch(() => undefined);
  const list = Object.entries(medians)
    .map(([t, ms]) => `${t} ${ms.toFixed(2)} ms`)
    .join(", ");
  console.info(`matmul tile for ${key.replace(/\|+/g, " ").trim()}: ${tileName(tile)} (${list})`);
  return done(c);
}
