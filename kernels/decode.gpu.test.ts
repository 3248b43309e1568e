// GPU test: the fused decode kernels (kernels/decode.ts) against the CPU references: linearRows
// with the RMSNorm before it, the residual after it, SwiGLU's gate and up, a bias and the normed
// rows written, at 5 and 1 rows and odd sizes (K/4 odd, N odd), and the same with A staged in
// workgroup memory, shared by subgroupShuffle (lavapipe) or neither; ropeAppend against ropeForwardRef
// and the cache layout, and bit-identical to the RoPE + kv_write dispatches it replaces; loraRows
// (three targets and columns of none) against matmulRef twice.
// Run: npx vitest run --project gpu kernels/decode
import { describe, expect, it } from "vitest";
import { kvCacheWrite } from "./attention";
import { linearRows, linearRowsShuffle, linearRowsStage, loraRows, ropeAppend } from "./decode";
import { fixedSubgroupSize } from "./matmul-subgroup";
import { matmulRef, rmsnormForwardRef, ropeForwardRef, swigluForwardRef } from "./reference";
import { ropeForward } from "./rope";
import type { Runtime } from "./runtime";
import { assertClose, bitEqual, gpuRuntime, planRuntime, randn, TOL } from "./testing";

describe("linearRows (the small-M linear layer with its neighbours fused in)", () => {
  // two pipelines only (each compiles for seconds on lavapipe); the plain product at 1, 3 and 8
  // rows is matmul.gpu.test.ts's matvec case
  it("norm + product + bias + residual (5 rows) and norm + SwiGLU (1 row) match the references", async () => {
    const rt = await gpuRuntime();
    const K = 52; // 13 vec4s: the loop's odd tail
    for (const [M, mode] of [
      [5, "norm+resid"],
      [1, "norm+glu"],
    ] as const) {
      const seed = 10 * M + mode.length;
      const N = mode === "norm+glu" ? 2 * 19 : 37;
      const x = randn(M * K, seed);
      const w = randn(N * K, seed + 1, 1 / Math.sqrt(K));
      const bias = randn(N, seed + 2);
      const gain = randn(K, seed + 3);
      const res = randn(M * N, seed + 4);
      const norm = true;
      // reference: rmsnorm, then x·wᵀ + bias, then + res or SwiGLU
      const normed = new Float32Array(M * K);
      if (norm) rmsnormForwardRef(normed, new Float32Array(M), x, gain, M, K, 1e-5);
      else normed.set(x);
      const lin = new Float32Array(M * N);
      matmulRef(lin, normed, w, bias, { M, N, K, transB: true });
      let ref = lin;
      if (mode === "norm+resid") ref = lin.map((v, i) => v + res[i]);
      if (mode === "norm+glu") {
        ref = new Float32Array((M * N) / 2);
        swigluForwardRef(ref, lin, M, N / 2);
      }
      const out = rt.tensor(ref.length);
      const normedOut = rt.tensor(M * K);
      const enc = rt.device.createCommandEncoder();
      linearRows(rt, enc, out, rt.tensor(x), rt.tensor(w), rt.tensor(bias), M, K, N, {
        norm: norm ? { gain: rt.tensor(gain), eps: 1e-5, normed: normedOut } : undefined,
        residual: mode === "norm+resid" ? rt.tensor(res) : undefined,
        glu: mode === "norm+glu",
      });
      rt.submit(enc);
      assertClose(`linearRows ${mode} M ${M}`, await rt.read(out), ref, {
        atol: TOL.fwd.atol * Math.sqrt(K) * 10,
        rtol: TOL.fwd.rtol,
      });
      if (norm) assertClose(`linearRows ${mode} M ${M} normed`, await rt.read(normedOut), normed, TOL.fwd);
    }
  });

  it("copies A into workgroup memory from 3 rows up where it fits, or shares its rows by subgroupShuffle: the same values as neither", async () => {
    const rt = await planRuntime({ rowsShuffle: false });
    const small = await planRuntime({ rowsShuffle: false }, { maxWorkgroupStorageBytes: 1024 }); // 5 x 52 floats do not fit
    const shuffling = await planRuntime({ rowsShuffle: true });
    const [M, K, N] = [5, 52, 37];
    const [x, w, gain, res] = [randn(M * K, 1), randn(N * K, 2), randn(K, 3), randn(M * N, 4)];
    const run = async (r: Runtime) => {
      const out = r.tensor(M * N);
      const enc = r.device.createCommandEncoder();
      linearRows(r, enc, out, r.tensor(x), r.tensor(w), null, M, K, N, {
        norm: { gain: r.tensor(gain), eps: 1e-5 },
        residual: r.tensor(res),
      });
      r.submit(enc);
      return r.read(out);
    };
    expect([linearRowsStage(rt, M, K).STAGE, linearRowsStage(small, M, K).STAGE]).toEqual([1, 0]);
    const [staged, plain] = [await run(rt), await run(small)];
    expect(bitEqual(staged, plain)).toBe(true);
    // the shuffle runs where the adapter's subgroups are SIMD lanes (lavapipe); elsewhere this
    // runs the staged kernel again
    const shuffled = await run(shuffling);
    expect(linearRowsShuffle(shuffling, M)).toBe(fixedSubgroupSize(shuffling) >= M);
    expect(linearRowsShuffle(rt, M)).toBe(false);
    expect(bitEqual(shuffled, staged)).toBe(true);
  });

  it("refuses shapes it cannot run", async () => {
    const rt = await gpuRuntime();
    const v = rt.tensor(64);
    const enc = rt.device.createCommandEncoder();
    expect(() => linearRows(rt, enc, v, v, v, null, 9, 4, 4)).toThrow(/9 rows of 4/);
    expect(() => linearRows(rt, enc, v, v, v, null, 1, 6, 4)).toThrow(/K a multiple of 4/);
  });
});

describe("ropeAppend (RoPE and the KV-cache append in one dispatch)", () => {
  it("equals ropeForward on q and k plus kv_write bit for bit, and the CPU reference within tolerance", async () => {
    const rt = await gpuRuntime();
    const [B, NH, KVH, hs, Tmax] = [3, 6, 2, 10, 5];
    const Q = NH * hs;
    const KV = KVH * hs;
    const QKV = Q + 2 * KV;
    const qkv = randn(B * QKV, 7);
    const pos = Uint32Array.from([4, 1000, 0]);
    const slot = Uint32Array.from([4, 0xffffffff, 2]); // row 1 writes no cache
    const kc0 = randn(B * Tmax * KV, 8);
    const vc0 = randn(B * Tmax * KV, 9);
    const run = async (fused: boolean) => {
      const [x, kc, vc, p, sl] = [
        rt.tensor(qkv),
        rt.tensor(kc0),
        rt.tensor(vc0),
        rt.tensor(pos),
        rt.tensor(slot),
      ];
      const enc = rt.device.createCommandEncoder();
      if (fused)
        ropeAppend(rt, enc, x, kc, vc, p, sl, {
          B,
          Tmax,
          NH,
          KVH,
          headDim: hs,
          ropeBase: 10000,
          positions: 1024,
        });
      else {
        ropeForward(
          rt,
          enc,
          x,
          p,
          {
            N: B,
            nHeads: NH,
            headDim: hs,
            rowStride: QKV,
            colOffset: 0,
            base: 10000,
          },
          1024,
        );
        ropeForward(
          rt,
          enc,
          x,
          p,
          {
            N: B,
            nHeads: KVH,
            headDim: hs,
            rowStride: QKV,
            colOffset: Q,
            base: 10000,
          },
          1024,
        );
        kvCacheWrite(rt, enc, kc, vc, x, sl, B, Tmax, Q, NH, undefined, KVH);
      }
      rt.submit(enc);
      return [await rt.read(x), await rt.read(kc), await rt.read(vc)];
    };
    const fused = await run(true);
    const apart = await run(false);
    for (let i = 0; i < 3; i++)
      expect(bitEqual(fused[i], apart[i]), ["qkv", "kcache", "vcache"][i]).toBe(true);
    const ref = qkv.slice();
    ropeForwardRef(ref, pos, { N: B, nHeads: NH, headDim: hs, rowStride: QKV, colOffset: 0, base: 10000 });
    ropeForwardRef(ref, pos, { N: B, nHeads: KVH, headDim: hs, rowStride: QKV, colOffset: Q, base: 10000 });
    assertClose("ropeAppend qkv", fused[0], ref, TOL.fwd);
    const kref = kc0.slice();
    const vref = vc0.slice();
    for (let b = 0; b < B; b++) {
      if (slot[b] >= Tmax) continue;
      const at = (b * Tmax + slot[b]) * KV;
      kref.set(ref.subarray(b * QKV + Q, b * QKV + Q + KV), at);
      vref.set(qkv.subarray(b * QKV + Q + KV, b * QKV + QKV), at);
    }
    assertClose("ropeAppend kcache", fused[1], kref, TOL.fwd);
    assertClose("ropeAppend vcache", fused[2], vref, TOL.fwd);
  });
});

describe("loraRows (a fused weight's LoRA term for decode rows, two dispatches)", () => {
  it("adds scale * (x·Aᵀ)·Bᵀ on each target's columns, nothing elsewhere", async () => {
    const rt = await gpuRuntime();
    const [M, K, r, outStride, scale] = [3, 21, 4, 50, 0.5];
    const targets = [
      { start: 0, rows: 20 },
      { start: 20, rows: 10 },
      { start: 30, rows: 12 }, // columns 42..49: no target
    ].map((t, j) => ({ ...t, a: j * 256, b: j * 256 + 128 }));
    const W = randn(3 * 256, 41);
    const x = randn(M * K, 42);
    const out0 = randn(M * outStride, 43);
    const ref = out0.slice();
    for (const t of targets) {
      const U = new Float32Array(M * r);
      matmulRef(U, x, W.subarray(t.a, t.a + r * K), null, { M, N: r, K, transB: true });
      const delta = new Float32Array(M * t.rows);
      matmulRef(delta, U, W.subarray(t.b, t.b + t.rows * r), null, { M, N: t.rows, K: r, transB: true });
      for (let m = 0; m < M; m++)
        for (let c = 0; c < t.rows; c++) ref[m * outStride + t.start + c] += scale * delta[m * t.rows + c];
    }
    const out = rt.tensor(out0);
    const enc = rt.device.createCommandEncoder();
    loraRows(rt, enc, out, rt.tensor(x), rt.tensor(W), rt.tensor(M * 3 * r), {
      M,
      K,
      r,
      scale,
      outStride,
      targets,
    });
    rt.submit(enc);
    const got = await rt.read(out);
    assertClose("loraRows", got, ref, { atol: TOL.fwd.atol * Math.sqrt(K) * 10, rtol: TOL.fwd.rtol });
    for (let m = 0; m < M; m++)
      for (let c = 42; c < outStride; c++) expect(got[m * outStride + c]).toBe(out0[m * outStride + c]);
  });
});
