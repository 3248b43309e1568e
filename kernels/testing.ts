// Test helpers shared by the kernel and model tests: seeded random inputs, the one tolerance rule
// of the project (assertClose(label, got, ref, { atol, rtol }): |got - ref| <= atol + rtol*|ref|, with
// the max difference and the first failing pairs on failure), float64 finite differences, and one
// shared GPU runtime per test file (created on first use only).
import { createGpu } from "./device";
import { nodeGpu } from "./node-gpu";
import { type KernelPlan, planWith } from "./plan";
import { Runtime, type RuntimeOptions } from "./runtime";

/** Mulberry32: a tiny seeded PRNG so tests are reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n standard normals (Box-Muller), times `scale`. */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u = Math.max(r(), 1e-12);
    out[i] = scale * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r());
  }
  return out;
}

export function randInt(n: number, hi: number, seed: number): Int32Array {
  const r = rng(seed);
  return Int32Array.from({ length: n }, () => Math.floor(r() * hi));
}

export const TOL = { fwd: { atol: 1e-5, rtol: 1e-3 }, grad: { atol: 1e-4, rtol: 1e-3 } };

export interface Tolerance {
  atol: number;
  /** default 1e-3 */
  rtol?: number;
}

/**
 * The tolerance rule: every element must satisfy |got - ref| <= atol + rtol*|ref|. Throws with the
 * max difference, where it is, and the first failing pairs; returns the max difference.
 */
export function assertClose(
  label: string,
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  tol: Tolerance,
): { maxDiff: number } {
  const { atol, rtol = 1e-3 } = tol;
  if (got.length !== ref.length) throw new Error(`${label}: length ${got.length}, expected ${ref.length}`);
  let maxDiff = 0;
  let worst = -1;
  let bad = 0;
  const pairs: string[] = [];
  for (let i = 0; i < ref.length; i++) {
    const d = Math.abs(got[i] - ref[i]);
    if (!(d <= atol + rtol * Math.abs(ref[i]))) {
      bad++;
      if (pairs.length < 5) pairs.push(`[${i}] got ${got[i]} ref ${ref[i]}`);
    }
    const dd = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d; // NaN counts as the worst
    if (dd > maxDiff) {
      maxDiff = dd;
      worst = i;
    }
  }
  if (bad > 0) {
    throw new Error(
      `${label}: ${bad}/${ref.length} elements off (atol ${atol}, rtol ${rtol}), max |diff| ${maxDiff} at [${worst}]; ${pairs.join("; ")}`,
    );
  }
  return { maxDiff };
}

export function bitEqual(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  const fa = new Float32Array(Array.from(a));
  const fb = new Float32Array(Array.from(b));
  const ua = new Uint32Array(fa.buffer);
  const ub = new Uint32Array(fb.buffer);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return false;
  return true;
}

/**
 * Central finite differences in float64 of loss(x) = sum(f(x) * dout) at `count` entries of x.
 * Returns [indices, numeric gradients].
 */
export function finiteDiff(
  x: Float64Array,
  loss: () => number,
  count: number,
  seed: number,
  h = 1e-6,
): [number[], number[]] {
  const r = rng(seed);
  const idx: number[] = [];
  const num: number[] = [];
  for (let c = 0; c < Math.min(count, x.length); c++) {
    const i = count >= x.length ? c : Math.floor(r() * x.length);
    const keep = x[i];
    x[i] = keep + h;
    const lp = loss();
    x[i] = keep - h;
    const lm = loss();
    x[i] = keep;
    idx.push(i);
    num.push((lp - lm) / (2 * h));
  }
  return [idx, num];
}

export const f64 = (a: ArrayLike<number>) => Float64Array.from(a as ArrayLike<number>);

let shared: Promise<Runtime> | undefined;

/** One device per test file (vitest isolates files, so this is per file). */
export function gpuRuntime(): Promise<Runtime> {
  shared ??= (async () => {
    const { device } = await createGpu(await nodeGpu());
    device.onuncapturederror = (e) => console.error(`WebGPU error: ${e.error.message}`);
    return new Runtime(device);
  })();
  return shared;
}

/**
 * A runtime on the shared device running a variant of its plan (kernels/plan.ts planWith), with
 * any RuntimeOptions: each variant a test compares gets its own read-only runtime.
 */
export async function planRuntime(
  changes: Partial<Omit<KernelPlan, "name">>,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  const base = await gpuRuntime();
  return new Runtime(base.device, { ...options, plan: planWith(base.plan, changes) });
}

/** A runtime on the shared device with lowered limits, so windowed paths run at tiny sizes. */
export async function limitedRuntime(options: RuntimeOptions): Promise<Runtime> {
  return new Runtime((await gpuRuntime()).device, options);
}
