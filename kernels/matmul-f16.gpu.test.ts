// GPU test: the f16 variant of the matmul kernels (a weight operand B stored as f16, f32
// accumulation) against matmulRef on the weight rounded to f16 (kernels/half.ts), at odd shapes:
// the linear layer's forward A·Bᵀ (tiled and matvec), its input gradient A·B (accumulating), bias,
// a view at an offset; and the refusals: a half A operand, a half weight's gradient, a device
// without shader-f16. Run: npx vitest run --project gpu kernels/matmul-f16
import { beforeAll, describe, expect, it } from "vitest";
import { createGpu } from "./device";
import { halfWords, roundHalfArray } from "./half";
import { HALF_FEATURE, type HalfView, halfView, hasHalf, matmul, matmulBackward } from "./matmul";
import { subgroupMatmulFits, subgroupMatmulSize } from "./matmul-subgroup";
import { nodeGpu } from "./node-gpu";
import { type MatmulShape, matmulRef } from "./reference";
import { Runtime } from "./runtime";
import { assertClose, gpuRuntime, planRuntime, randn, TOL } from "./testing";

let rt: Runtime;

beforeAll(async () => {
  rt = await gpuRuntime();
});

/** `data` as f16 in a fresh buffer, `at` bytes in (a multiple of 256). */
function halfTensor(data: Float32Array, at = 0): HalfView {
  const words = halfWords(data);
  const buf = rt.buffer(at / 4 + words.length, "f16-weight");
  const v = halfView(buf, at, data.length);
  rt.upload(v, words);
  return v;
}

async function check(s: MatmulShape, withBias: boolean, seed: number, at = 0, on = rt) {
  const nb = s.K * s.N;
  const a = randn(s.M * s.K, seed);
  const b = randn(nb, seed + 1, 3); // |b| up to ~12: f16 steps of 2^-7 there
  const bias = withBias ? randn(s.N, seed + 2) : null;
  const out0 = randn(s.M * s.N, seed + 3);
  const ref = out0.slice();
  matmulRef(ref, a, roundHalfArray(b), bias, s);
  const out = rt.tensor(out0);
  const enc = rt.device.createCommandEncoder();
  matmul(on, enc, out, rt.tensor(a), halfTensor(b, at), bias ? rt.tensor(bias) : null, s);
  on.submit(enc);
  const got = await rt.read(out);
  assertClose(`f16 matmul ${JSON.stringify(s)}`, got, ref, {
    atol: TOL.fwd.atol * 3 * Math.sqrt(s.K),
    rtol: TOL.fwd.rtol,
  });
}

describe("f16 weight matmul (shader-f16, f32 accumulation)", () => {
  it("the device here has shader-f16 (lavapipe), so these run rather than skip", () => {
    expect(hasHalf(rt)).toBe(true);
  });

  it("A·Bᵀ (a linear layer's forward) at odd shapes, with bias, a weight at an offset, tiled and matvec", async () => {
    await check({ M: 45, N: 65, K: 37, transB: true }, true, 1);
    await check({ M: 70, N: 33, K: 129, transB: true }, false, 2, 512);
    for (const M of [1, 3, 8]) await check({ M, N: 77, K: 45, transB: true }, M === 3, 10 + M, 256);
    // the tiled kernel at a decode shape too
    await check({ M: 3, N: 77, K: 45, transB: true }, true, 20, 0, await planRuntime({ smallRows: 0 }));
  });

  it("A·B accumulating (the input gradient dX += dY·W) and matmulBackward's dinp", async () => {
    await check({ M: 45, N: 37, K: 65, accumulate: true }, false, 3);
    const [N, C, OC] = [19, 33, 41];
    const dout = randn(N * OC, 4);
    const w = randn(OC * C, 5);
    const dinp0 = randn(N * C, 6);
    const ref = dinp0.slice();
    matmulRef(ref, dout, roundHalfArray(w), null, { M: N, N: C, K: OC, accumulate: true });
    const dinp = rt.tensor(dinp0);
    const enc = rt.device.createCommandEncoder();
    matmulBackward(rt, enc, dinp, null, null, rt.tensor(dout), rt.tensor(N * C), halfTensor(w), N, C, OC);
    rt.submit(enc);
    assertClose("dinp", await rt.read(dinp), ref, {
      atol: TOL.grad.atol * Math.sqrt(OC),
      rtol: TOL.grad.rtol,
    });
  });

  it("the subgroup kernel reads an f16 B too, bit-identical to the tiled f16 variant (forward, dX, dW's forms)", async () => {
    // shapes whose K and contiguous dimensions are multiples of 4 run as matmul-subgroup.ts's
    // kernel where the plan has it (lavapipe's cpu plan): the lab-made Llama's layer widths
    const tiled = await planRuntime({ subgroupMatmul: false });
    const shapes: MatmulShape[] = [
      { M: 70, N: 48, K: 48, transB: true },
      { M: 37, N: 128, K: 48, transB: true },
      { M: 45, N: 48, K: 128, accumulate: true },
      { M: 9, N: 24, K: 48, transB: true, alpha: 0.5 },
    ];
    const sg = subgroupMatmulSize(rt);
    for (const [i, s] of shapes.entries()) {
      const a = rt.tensor(randn(s.M * s.K, 30 + i));
      const b = halfTensor(randn(s.K * s.N, 40 + i, 3));
      if (sg) expect(subgroupMatmulFits(s, a, b), JSON.stringify(s)).toBe(true);
      const out0 = randn(s.M * s.N, 50 + i);
      const run = async (on: Runtime) => {
        const out = rt.tensor(out0);
        const enc = rt.device.createCommandEncoder();
        matmul(on, enc, out, a, b, null, s);
        on.submit(enc);
        return rt.read(out);
      };
      expect(Array.from(await run(rt)), JSON.stringify(s)).toEqual(Array.from(await run(tiled)));
      await check(s, false, 60 + i);
    }
  });

  it("refuses a half A operand and a half weight's gradient", () => {
    const w = halfTensor(randn(12, 7));
    const enc = rt.device.createCommandEncoder();
    expect(() => matmul(rt, enc, rt.tensor(9), w, rt.tensor(12), null, { M: 3, N: 3, K: 4 })).toThrow(
      /only the B operand/,
    );
    expect(() =>
      matmulBackward(rt, enc, null, rt.tensor(12), null, rt.tensor(9), rt.tensor(12), w, 3, 4, 3),
    ).toThrow(/stored as f16.*no gradient/);
  });

  it("a device requested without shader-f16 refuses the f16 weight with the feature named", async () => {
    const { device } = await createGpu(await nodeGpu(), { optionalFeatures: [] });
    const plain = new Runtime(device);
    expect(hasHalf(plain)).toBe(false);
    const w = halfWords(randn(12, 8));
    const buf = plain.buffer(w.length, "w");
    const enc = device.createCommandEncoder();
    expect(() =>
      matmul(plain, enc, plain.tensor(9), plain.tensor(12), halfView(buf, 0, 12), null, {
        M: 3,
        N: 3,
        K: 4,
        transB: true,
      }),
    ).toThrow(new RegExp(`needs the ${HALF_FEATURE} feature`));
    device.destroy();
  });
});
