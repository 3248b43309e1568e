// Browser side of the kernels benchmark (bundled by bench/kernels.ts with Vite, loaded in headless
// Chromium): our matmul and tfjs-backend-webgpu's tf.matMul on the same adapter, square f32
// matrices, each timed to GPU completion (submit, then queue.onSubmittedWorkDone) over the same
// sizes and repetition counts, interleaved so load changes hit both alike. Exposes
// globalThis.kernelsBench (and kernelsDev, the kernels/dev variant harness).
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-webgpu";
import type { WebGPUBackend } from "@tensorflow/tfjs-backend-webgpu";
import { randomMatrix as randomSquare, runMatmulVariants } from "../kernels/dev/matmul-variants";
import { browserGpu, createGpu } from "../kernels/device";
import { matmul } from "../kernels/matmul";
import { Runtime } from "../kernels/runtime";

export interface PageResult {
  adapter: { vendor: string; architecture: string; description: string; isFallback: boolean };
  /** maxDiff: max |ours - tfjs| over the product; refErr: max |ours - float64| on 64 sampled entries */
  sizes: { n: number; inner: number; ours: number[]; tfjs: number[]; maxDiff: number; refErr: number }[];
}

function randomMatrix(n: number, seed: number): Float32Array {
  return randomSquare(n * n, seed);
}

async function bench(sizes: number[], reps: number): Promise<PageResult> {
  const { device, adapter } = await createGpu(browserGpu());
  const rt = new Runtime(device);
  await tf.setBackend("webgpu");
  await tf.ready();
  const backend = tf.backend() as WebGPUBackend;
  const flushTf = async () => {
    backend.ensureCommandEncoderReady();
    backend.endComputePassEncoder();
    backend.submitQueue();
    await backend.device.queue.onSubmittedWorkDone();
  };
  const result: PageResult = {
    adapter: {
      vendor: adapter.vendor,
      architecture: adapter.architecture,
      description: adapter.description,
      isFallback: adapter.isFallback,
    },
    sizes: [],
  };
  let predicted: { n: number; ms: number } | undefined;
  for (const n of sizes) {
    const [ha, hb] = [randomMatrix(n, 1), randomMatrix(n, 2)];
    const [a, b, out] = [rt.tensor(ha), rt.tensor(hb), rt.tensor(n * n)];
    const [ta, tb] = [tf.tensor2d(ha, [n, n]), tf.tensor2d(hb, [n, n])];
    const ours = async (inner: number) => {
      const enc = device.createCommandEncoder();
      for (let i = 0; i < inner; i++) matmul(rt, enc, out, a, b, null, { M: n, N: n, K: n });
      const t0 = performance.now();
      rt.submit(enc);
      await device.queue.onSubmittedWorkDone();
      return performance.now() - t0;
    };
    let last: tf.Tensor | undefined; // tfjs's latest product, kept for the comparison below
    const theirs = async (inner: number) => {
      const t0 = performance.now();
      const cs: tf.Tensor[] = [];
      for (let i = 0; i < inner; i++) cs.push(tf.matMul(ta, tb));
      await flushTf();
      const ms = performance.now() - t0;
      last?.dispose();
      last = cs.pop();
      for (const c of cs) c.dispose();
      return ms;
    };
    // A warm-up of each at the first size compiles the pipelines (both are size-independent);
    // later sizes predict one product's time from the previous size (n^3). Enough products are
    // batched per sample to hide submit latency on fast GPUs; a product over 2 s (software
    // adapters) gets at most 2 samples, so the quick bench stays within minutes there.
    const t1 = predicted ? predicted.ms * (n / predicted.n) ** 3 : Math.min(await ours(1), await theirs(1));
    const inner = Math.max(1, Math.min(32, Math.round(20 / Math.max(t1, 1e-3))));
    const flops = 2 * n * n * n * inner;
    const row = { n, inner, ours: [] as number[], tfjs: [] as number[], maxDiff: 0, refErr: 0 };
    const count = t1 * inner > 2000 ? Math.min(reps, 2) : reps;
    const times: number[] = [];
    for (let r = 0; r < count; r++) {
      const [a1, b1] = [await ours(inner), await theirs(inner)];
      times.push(Math.min(a1, b1) / inner);
      row.ours.push(flops / (a1 * 1e6));
      row.tfjs.push(flops / (b1 * 1e6));
    }
    predicted = { n, ms: Math.min(...times) };
    const got = await rt.read(out);
    const ref = await last!.data();
    last!.dispose();
    last = undefined;
    for (let i = 0; i < got.length; i++) row.maxDiff = Math.max(row.maxDiff, Math.abs(got[i] - ref[i]));
    for (let s = 0; s < 64; s++) {
      const [m, j] = [(s * 7919) % n, (s * 104729) % n];
      let dot = 0;
      for (let k = 0; k < n; k++) dot += ha[m * n + k] * hb[k * n + j];
      row.refErr = Math.max(row.refErr, Math.abs(got[m * n + j] - dot));
    }
    result.sizes.push(row);
    for (const t of [a, b, out]) t.buffer.destroy();
    tf.dispose([ta, tb]);
  }
  device.destroy();
  return result;
}

/** The dev harness in the browser: every matmul variant checked and timed (kernels/dev). */
async function dev(sizes: number[], reps: number, only?: string) {
  const { device } = await createGpu(browserGpu());
  const rows = await runMatmulVariants(new Runtime(device), sizes, reps, only ? new RegExp(only) : undefined);
  device.destroy();
  return rows;
}

const g = globalThis as unknown as { kernelsBench: typeof bench; kernelsDev: typeof dev };
g.kernelsBench = bench;
g.kernelsDev = dev;
