// Kernel experiments for matmul (llm.c dev/cuda style): numbered variants of out = A·B, each
// checked against matmulRef and timed (ms, GFLOP/s) by `runMatmulVariants`. The winner is what
// kernels/matmul.wgsl holds. Run in Node (Dawn): npx tsx --import ./cli/raw-loader.mjs kernels/dev/matmul-bench.ts
// Variants 3 and 4 are the production shader (4x4 register tile) and the same shader with an
// 8x8 register tile and an 8-deep k slab, made by rewriting its tile constants.
import src03 from "../matmul.wgsl?raw";
import { matmulRef } from "../reference";
import { packUniform, type Runtime, type View } from "../runtime";
import { randn } from "../testing";
import src01 from "./01-naive.wgsl?raw";
import src02 from "./02-shared-tiled.wgsl?raw";

export interface MatmulVariant {
  name: string;
  src: string;
  /** outputs per workgroup along N and M */
  tile: [number, number];
}

const src04 = src03
  .replace("const TM = 4u;", "const TM = 8u;")
  .replace("const TN = 4u;", "const TN = 8u;")
  .replace("const BK = 16u;", "const BK = 8u;");

export const VARIANTS: MatmulVariant[] = [
  { name: "01-naive", src: src01, tile: [16, 16] },
  { name: "02-shared-tiled", src: src02, tile: [16, 16] },
  { name: "03-register-tiled-4x4 (matmul.wgsl)", src: src03, tile: [64, 64] },
  { name: "04-register-tiled-8x8", src: src04, tile: [128, 128] },
];

export function recordVariant(rt: Runtime, enc: GPUCommandEncoder, v: MatmulVariant, out: View, a: View, b: View, M: number, N: number, K: number) {
  const pipeline = rt.pipeline(v.src, "main", { WG_X: 16, WG_Y: 16 });
  const u = rt.uniform(packUniform([["u32", M], ["u32", N], ["u32", K], ["u32", 0], ["u32", 0], ["u32", 0], ["u32", 0], ["u32", 0], ["f32", 1]]));
  const usesBias = v.src === src03 || v.src === src04;
  rt.dispatch(enc, pipeline, [out, a, b, usesBias ? rt.dummy : null, u], [Math.ceil(N / v.tile[0]), Math.ceil(M / v.tile[1]), 1]);
}

export interface VariantResult {
  name: string;
  size: number;
  ok: boolean;
  maxDiff: number;
  ms: number;
  gflops: number;
}

/** Checks each variant on a 45x65·65x33 product, then times square products of each size. */
export async function runMatmulVariants(rt: Runtime, sizes: number[], reps: number): Promise<VariantResult[]> {
  const results: VariantResult[] = [];
  const [M0, N0, K0] = [45, 33, 65];
  const a0 = randn(M0 * K0, 1);
  const b0 = randn(K0 * N0, 2);
  const ref = new Float32Array(M0 * N0);
  matmulRef(ref, a0, b0, null, { M: M0, N: N0, K: K0 });
  for (const v of VARIANTS) {
    const out = rt.tensor(M0 * N0);
    const enc = rt.device.createCommandEncoder();
    recordVariant(rt, enc, v, out, rt.tensor(a0), rt.tensor(b0), M0, N0, K0);
    rt.submit(enc);
    const got = await rt.read(out);
    let maxDiff = 0;
    for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ref[i] - got[i]));
    const ok = maxDiff <= 1e-5 * Math.sqrt(K0) * 10;
    for (const n of sizes) {
      const [a, b, o] = [rt.tensor(randn(n * n, 3)), rt.tensor(randn(n * n, 4)), rt.tensor(n * n)];
      const time = async (count: number) => {
        const e = rt.device.createCommandEncoder();
        for (let r = 0; r < count; r++) recordVariant(rt, e, v, o, a, b, n, n, n);
        const t0 = performance.now();
        rt.submit(e);
        await rt.device.queue.onSubmittedWorkDone();
        return performance.now() - t0;
      };
      await time(1); // warm-up: pipeline creation and first-use costs
      const samples: number[] = [];
      for (let r = 0; r < reps; r++) samples.push(await time(1));
      samples.sort((x, y) => x - y);
      const ms = samples[samples.length >> 1];
      results.push({ name: v.name, size: n, ok, maxDiff, ms, gflops: (2 * n * n * n) / (ms * 1e6) });
      for (const t of [a, b, o]) t.buffer.destroy();
    }
  }
  return results;
}
