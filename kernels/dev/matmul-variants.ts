// Kernel experiments for matmul (llm.c dev/cuda style): numbered variants of out = A·B, each
// checked against matmulRef and timed (ms, GFLOP/s) by `runMatmulVariants`.
// Run in Node (Dawn): npx tsx --import ./cli/raw-loader.mjs kernels/dev/matmul-bench.ts [sizes] [reps] [regex]
// (lavapipe; VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json for SwiftShader), or in
// Chromium (SwiftShader): npx tsx bench/kernels.ts --variants [regex] [sizes].
// 01-07 loop over arrays: 3/4 scalar register tiles, 5 vec4 register tiles (matmul.wgsl, "tiled"),
// 6 no workgroup memory, 7 vec4 global loads; their constants are rewritten to vary the tile.
// 08-10 are matmul-gen.ts's unrolled kernels (register tile as named variables, k unrolled by 4,
// no workgroup memory): 08 scalar loads (any shape), 09 vec4 loads (aligned), 10 with fma().
// Measured 2026-11-29 on 2 busy cores (load 3-6), square n = 256 / 512, GFLOP/s:
//   SwiftShader (Node): 05 0.12 / 0.07-0.10, 06 0.08 / 0.08, 07 0.09 / 0.09;
//     08a 8x8 0.46-0.76 / 0.65-0.93, 08e 8x8 on 4x4 threads 0.79-1.05 / 0.86-0.99,
//     09a vec4 8x8 0.75-1.08 / 0.95-1.09, 09c vec4 8x16 0.98-1.20 / 1.11-1.34,
//     10e vec4 16x16 1.14 / 1.24; fma() no different from a * b + c.
//   SwiftShader (Chromium, --variants, load 3), n = 256 / 512 / 1024: 05 0.18 / 0.16, 06 0.14 / 0.13,
//     07 0.14 / 0.18; 08a 0.62 / 1.00, 08e 1.13 / 0.96-1.22 / 0.92, 09a 1.40 / 0.91-1.54 / 1.36,
//     09c 1.17 / 1.92-2.27 / 1.61, 10e 2.11 / 1.21-1.72 / 1.69, 10g 1.52 / 1.96.
//   lavapipe (Node), n = 256: 05 2.17, 05f 2.56, 07 2.42, 08a 1.84, 08h 16x8 3.40, 09c 1.71.
//   Pipeline compile per form: SwiftShader 05 2.0 s, unrolled 8x8 1.1-1.5 s, 16x8 or 8x16 2.4-3.5 s,
//     16x16 5.5-9.5 s; lavapipe (shader cache off) 05 4.4 s, unrolled 8x8 20-27 s.
// So matmul.ts runs the unrolled 8x8 (vec4 loads when aligned, 09a; else 08a) on SwiftShader, 8-10x
// variant 05 there, and keeps 05 elsewhere (as fast on lavapipe, and 5x quicker to compile).
// 8x16 and 16x16 (09c, 10e) were up to 20% faster in Chromium but compile 2-5x slower per form.
import src05 from "../matmul.wgsl?raw";
import { matmulSource } from "../matmul-gen";
import { matmulRef } from "../reference";
import { packUniform, type Runtime, type View } from "../runtime";
import src01 from "./01-naive.wgsl?raw";
import src02 from "./02-shared-tiled.wgsl?raw";
import src03 from "./03-register-tiled.wgsl?raw";
import src06 from "./06-register-tiled-no-shared.wgsl?raw";
import src07 from "./07-vec4-global-loads.wgsl?raw";

/** Uniform [-0.5, 0.5) matrices from an LCG: this file also runs in the browser bench page. */
export function randomMatrix(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 4294967296 - 0.5;
  }
  return out;
}

export interface MatmulVariant {
  name: string;
  src: string;
  /** outputs per workgroup along N and M */
  tile: [number, number];
  /** threads per workgroup along N and M */
  wg?: [number, number];
  /** needs K and N multiples of 4 (checked on 45x64·64x32 instead of 45x65·65x33) */
  aligned?: boolean;
}

/** Variant 3's shader with other register-tile and k-slab constants. */
function retile(tm: number, tn: number, bk: number): string {
  return src03
    .replace("const TM = 4u;", `const TM = ${tm}u;`)
    .replace("const TN = 4u;", `const TN = ${tn}u;`)
    .replace("const BK = 16u;", `const BK = ${bk}u;`);
}

function vec4(tm: number, tn4: number, bk: number): string {
  return src05
    .replace("const TM = 8u;", `const TM = ${tm}u;`)
    .replace("const TN4 = 2u;", `const TN4 = ${tn4}u;`)
    .replace("const BK = 16u;", `const BK = ${bk}u;`);
}

function noShared(tm: number, tn: number): string {
  return src06
    .replace("const TM = 8u;", `const TM = ${tm}u;`)
    .replace("const TN = 8u;", `const TN = ${tn}u;`);
}

/** An unrolled generated kernel (../matmul-gen.ts) for A·B: tm x tn per thread, wg threads. */
function gen(
  name: string,
  tm: number,
  tn: number,
  wg: [number, number],
  opts: { vec4?: boolean; fma?: boolean } = {},
) {
  return {
    name,
    src: matmulSource({ tm, tn, transA: false, transB: false, ...opts }),
    tile: [tn * wg[0], tm * wg[1]] as [number, number],
    wg,
    aligned: opts.vec4,
  };
}

export const VARIANTS: MatmulVariant[] = [
  { name: "01-naive", src: src01, tile: [16, 16] },
  { name: "02-shared-tiled", src: src02, tile: [16, 16] },
  { name: "03-regs 4x4, 16x16 thr, bk16", src: retile(4, 4, 16), tile: [64, 64] },
  { name: "03b-regs 4x4, 8x8 thr, bk16", src: retile(4, 4, 16), tile: [32, 32], wg: [8, 8] },
  { name: "04-regs 8x8, 16x16 thr, bk8", src: retile(8, 8, 8), tile: [128, 128] },
  { name: "04b-regs 8x8, 8x8 thr, bk8", src: retile(8, 8, 8), tile: [64, 64], wg: [8, 8] },
  { name: "04c-regs 8x8, 8x8 thr, bk16", src: retile(8, 8, 16), tile: [64, 64], wg: [8, 8] },
  { name: "04d-regs 8x8, 4x4 thr, bk32", src: retile(8, 8, 32), tile: [32, 32], wg: [4, 4] },
  { name: "04e-regs 8x4, 8x8 thr, bk16", src: retile(8, 4, 16), tile: [32, 64], wg: [8, 8] },
  { name: "05-vec4 regs 8x8, 8x8 thr, bk16 (matmul.wgsl, tiled)", src: src05, tile: [64, 64], wg: [8, 8] },
  { name: "05g-vec4 regs 8x8, 8x8 thr, bk32", src: vec4(8, 2, 32), tile: [64, 64], wg: [8, 8] },
  { name: "05h-vec4 regs 8x8, 8x8 thr, bk8", src: vec4(8, 2, 8), tile: [64, 64], wg: [8, 8] },
  { name: "05i-vec4 regs 8x8, 4x4 thr, bk16", src: vec4(8, 2, 16), tile: [32, 32], wg: [4, 4] },
  { name: "05b-vec4 regs 8x4, 8x8 thr, bk16", src: vec4(8, 1, 16), tile: [32, 64], wg: [8, 8] },
  { name: "05c-vec4 regs 4x4, 8x8 thr, bk32", src: vec4(4, 1, 32), tile: [32, 32], wg: [8, 8] },
  { name: "05d-vec4 regs 8x8, 16x16 thr, bk8", src: vec4(8, 2, 8), tile: [128, 128], wg: [16, 16] },
  { name: "05e-vec4 regs 8x8, 16x16 thr, bk16", src: vec4(8, 2, 16), tile: [128, 128], wg: [16, 16] },
  { name: "05f-vec4 regs 8x8, 8x16 thr, bk16", src: vec4(8, 2, 16), tile: [64, 128], wg: [8, 16] },
  { name: "07-vec4 global loads, regs 8x8, 8x8 thr", src: src07, tile: [64, 64], wg: [8, 8], aligned: true },
  { name: "06-no-shared regs 8x8, 8x8 thr", src: src06, tile: [64, 64], wg: [8, 8] },
  { name: "06b-no-shared regs 8x8, 4x4 thr", src: src06, tile: [32, 32], wg: [4, 4] },
  { name: "06c-no-shared regs 4x8, 8x8 thr", src: noShared(4, 8), tile: [64, 32], wg: [8, 8] },
  { name: "06d-no-shared regs 4x4, 8x8 thr", src: noShared(4, 4), tile: [32, 32], wg: [8, 8] },
  gen("08a-unrolled 8x8, 8x8 thr", 8, 8, [8, 8]),
  gen("08b-unrolled 4x4, 8x8 thr", 4, 4, [8, 8]),
  gen("08c-unrolled 4x8, 8x8 thr", 4, 8, [8, 8]),
  gen("08d-unrolled 8x8, 8x8 thr, fma", 8, 8, [8, 8], { fma: true }),
  gen("08e-unrolled 8x8, 4x4 thr", 8, 8, [4, 4]),
  gen("08f-unrolled 8x8, 16x16 thr", 8, 8, [16, 16]),
  gen("08g-unrolled 8x16, 8x8 thr", 8, 16, [8, 8]),
  gen("08h-unrolled 16x8, 8x8 thr", 16, 8, [8, 8]),
  gen("09a-unrolled vec4 8x8, 8x8 thr", 8, 8, [8, 8], { vec4: true }),
  gen("09b-unrolled vec4 4x8, 8x8 thr", 4, 8, [8, 8], { vec4: true }),
  gen("09c-unrolled vec4 8x16, 8x8 thr", 8, 16, [8, 8], { vec4: true }),
  gen("10a-unrolled 16x16, 4x4 thr, fma", 16, 16, [4, 4], { fma: true }),
  gen("10b-unrolled vec4 16x8, 8x8 thr, fma", 16, 8, [8, 8], { vec4: true, fma: true }),
  gen("10c-unrolled vec4 8x16, 4x4 thr, fma", 8, 16, [4, 4], { vec4: true, fma: true }),
  gen("10d-unrolled 16x8, 4x4 thr, fma", 16, 8, [4, 4], { fma: true }),
  gen("10e-unrolled vec4 16x16, 4x4 thr, fma", 16, 16, [4, 4], { vec4: true, fma: true }),
  gen("10f-unrolled 16x8, 8x8 thr, fma", 16, 8, [8, 8], { fma: true }),
  gen("10g-unrolled vec4 8x16, 8x8 thr, fma", 8, 16, [8, 8], { vec4: true, fma: true }),
  gen("10h-unrolled 8x8, 4x4 thr, fma", 8, 8, [4, 4], { fma: true }),
  gen("10i-unrolled vec4 8x8, 8x8 thr, fma", 8, 8, [8, 8], { vec4: true, fma: true }),
  gen("10j-unrolled vec4 8x8, 4x4 thr, fma", 8, 8, [4, 4], { vec4: true, fma: true }),
  gen("10k-unrolled 8x8, 16x4 thr, fma", 8, 8, [16, 4], { fma: true }),
];

export function recordVariant(
  rt: Runtime,
  enc: GPUCommandEncoder,
  v: MatmulVariant,
  out: View,
  a: View,
  b: View,
  M: number,
  N: number,
  K: number,
) {
  const [WG_X, WG_Y] = v.wg ?? [16, 16];
  const pipeline = rt.pipeline(v.src, "main", { WG_X, WG_Y });
  const u = rt.uniform(
    packUniform([
      ["u32", M],
      ["u32", N],
      ["u32", K],
      ["u32", 0],
      ["u32", 0],
      ["u32", 0],
      ["u32", 0],
      ["u32", 0],
      ["f32", 1],
    ]),
  );
  const usesBias = v.src !== src01 && v.src !== src02;
  rt.dispatch(
    enc,
    pipeline,
    [out, a, b, usesBias ? rt.dummy : null, u],
    [Math.ceil(N / v.tile[0]), Math.ceil(M / v.tile[1]), 1],
  );
}

export interface VariantResult {
  name: string;
  size: number;
  ok: boolean;
  maxDiff: number;
  ms: number;
  gflops: number;
}

/** Checks each variant on a 45x65·65x33 product (45x64·64x32 if aligned), then times square products. */
export async function runMatmulVariants(
  rt: Runtime,
  sizes: number[],
  reps: number,
  only?: RegExp,
): Promise<VariantResult[]> {
  const results: VariantResult[] = [];
  for (const v of VARIANTS.filter((x) => !only || only.test(x.name))) {
    const [M0, N0, K0] = v.aligned ? [45, 32, 64] : [45, 33, 65];
    const a0 = randomMatrix(M0 * K0, 1);
    const b0 = randomMatrix(K0 * N0, 2);
    const ref = new Float32Array(M0 * N0);
    matmulRef(ref, a0, b0, null, { M: M0, N: N0, K: K0 });
    const out = rt.tensor(M0 * N0);
    const enc = rt.device.createCommandEncoder();
    recordVariant(rt, enc, v, out, rt.tensor(a0), rt.tensor(b0), M0, N0, K0);
    rt.submit(enc);
    const got = await rt.read(out);
    let maxDiff = 0;
    for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ref[i] - got[i]));
    const ok = maxDiff <= 1e-5 * Math.sqrt(K0);
    for (const n of sizes) {
      const [a, b, o] = [
        rt.tensor(randomMatrix(n * n, 3)),
        rt.tensor(randomMatrix(n * n, 4)),
        rt.tensor(n * n),
      ];
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
