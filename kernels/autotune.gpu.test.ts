// The matmul tile autotune (kernels/autotune.ts) on the GPU: every candidate shape gives the
// reference's products (and the default's, bit for bit: the shape never reorders the K sum) on
// odd shapes in each form, and so does the tile fitted to a narrow N or few rows (Runtime.matmulTileFor);
// tuneMatmulTile measures once and then uses its cache (memory, then a
// store), honours an override, hands the choice to Runtimes made afterwards, and its measuring
// dispatches never show in another Runtime's counters. Chooser unit tests: autotune.test.ts.
// Run: npx vitest run --project gpu kernels/autotune
import { afterEach, describe, expect, it } from "vitest";
import {
  clearTileMemory,
  deviceTileChoice,
  MATMUL_TILES,
  measureTiles,
  type TileStore,
  tileName,
  tuneMatmulTile,
} from "./autotune";
import { matmul } from "./matmul";
import { type MatmulShape, matmulRef } from "./reference";
import { DEFAULT_MATMUL_TILE, Runtime } from "./runtime";
import { assertClose, bitEqual, gpuRuntime, planRuntime, randn, TOL } from "./testing";

afterEach(() => clearTileMemory());

const SHAPES: MatmulShape[] = [
  { M: 45, N: 65, K: 37 },
  { M: 70, N: 33, K: 129, transB: true },
  { M: 9, N: 130, K: 20, transA: true, accumulate: true },
  { M: 17, N: 19, K: 5, transA: true, transB: true, batch: 3, alpha: 0.5 },
];

describe("every candidate tile", () => {
  it("gives the reference's products in every form, bit-identical to the default's", async () => {
    const rt = await gpuRuntime();
    const tiled = { matmul: "tiled", subgroupMatmul: false } as const;
    for (const [i, s] of SHAPES.entries()) {
      const batch = s.batch ?? 1;
      const shape = { ...s, strideA: s.M * s.K, strideB: s.K * s.N, strideOut: s.M * s.N };
      const [a, b, out0] = [
        randn(batch * s.M * s.K, i),
        randn(batch * s.K * s.N, i + 1),
        randn(batch * s.M * s.N, i + 2),
      ];
      const ref = out0.slice();
      matmulRef(ref, a, b, null, shape);
      const [ga, gb] = [rt.tensor(a), rt.tensor(b)];
      let first: Float32Array | undefined;
      for (const tile of MATMUL_TILES) {
        const tr = await planRuntime({ ...tiled, matmulTile: tile });
        const out = rt.tensor(out0);
        const enc = rt.device.createCommandEncoder();
        matmul(tr, enc, out, ga, gb, null, shape);
        tr.submit(enc);
        const got = (await rt.read(out)).subarray(0, ref.length);
        assertClose(`${tileName(tile)} ${JSON.stringify(s)}`, got, ref, {
          atol: TOL.fwd.atol * Math.sqrt(s.K),
        });
        first ??= got;
        expect(bitEqual(got, first), `${tileName(tile)} vs ${tileName(MATMUL_TILES[0])}`).toBe(true);
      }
    }
  });
});

describe("the tile fitted to a narrow N or few rows (new path)", () => {
  it("gives the reference's products, bit-identical to the tuned tile's, at N = 13, 48, 107, 144 and 9 rows", async () => {
    const tiled = { matmul: "tiled", subgroupMatmul: false } as const;
    const rt = await planRuntime({ ...tiled, matmulTile: [16, 8] });
    const plain = await planRuntime({ ...tiled, matmulTile: DEFAULT_MATMUL_TILE });
    const shapes: MatmulShape[] = [
      { M: 70, N: 13, K: 29, transB: true },
      { M: 130, N: 48, K: 20 },
      { M: 66, N: 107, K: 9, transB: true, accumulate: true },
      { M: 21, N: 144, K: 150, transA: true, accumulate: true },
      // 9 rows (a decode step): 2 rows of threads, where the product is big enough to fit them
      { M: 9, N: 144, K: 1024, transB: true },
    ];
    expect(shapes.map((s) => rt.matmulTileFor(s.N, s.M, s.K).join("x"))).toEqual([
      "2x8",
      "6x8",
      "7x8",
      "6x8",
      "6x2",
    ]);
    for (const [i, s] of shapes.entries()) {
      const [a, b, out0] = [randn(s.M * s.K, i), randn(s.K * s.N, i + 1), randn(s.M * s.N, i + 2)];
      const ref = out0.slice();
      matmulRef(ref, a, b, null, s);
      const [ga, gb] = [rt.tensor(a), rt.tensor(b)];
      const run = async (r: Runtime) => {
        const out = rt.tensor(out0);
        const enc = rt.device.createCommandEncoder();
        matmul(r, enc, out, ga, gb, null, s);
        r.submit(enc);
        return (await rt.read(out)).subarray(0, ref.length);
      };
      const fitted = await run(rt);
      const other = await run(plain);
      assertClose(`fitted ${JSON.stringify(s)}`, fitted, ref, { atol: TOL.fwd.atol * Math.sqrt(s.K) });
      expect(bitEqual(fitted, other), `fitted 16x8 vs 8x8 at N = ${s.N}, M = ${s.M}`).toBe(true);
    }
    expect(rt.matmulTileFor(256)).toEqual([16, 8]);
  });
});

/** An in-memory TileStore that counts its calls. */
function fakeStore(initial?: string) {
  const data = new Map<string, string>();
  const calls = { get: 0, set: 0 };
  const store: TileStore = {
    get: async (k) => {
      calls.get++;
      return initial ?? data.get(k);
    },
    set: async (k, v) => {
      calls.set++;
      data.set(k, v);
    },
  };
  return { store, calls, data };
}

describe("tuneMatmulTile", () => {
  it("measures once, then answers from memory; a store is written and read; Runtimes take the choice", async () => {
    const { device } = await gpuRuntime();
    let measured = 0;
    // injected times: 8x16 (the third candidate) clearly fastest
    const measure = async () => {
      measured++;
      return MATMUL_TILES.map((tile, i) => ({ tile, ms: i === 2 ? [2, 2.1, 2] : [5, 5, 5.2] }));
    };
    const { store, calls, data } = fakeStore();
    const a = await tuneMatmulTile(device, { override: null, store, measure });
    expect([a.source, tileName(a.tile), measured]).toEqual(["measured", "8x16", 1]);
    expect([...data.values()]).toEqual(["8x16"]);
    expect(new Runtime(device).matmulTile).toEqual([8, 16]);
    expect(deviceTileChoice(device)?.tile).toEqual([8, 16]);
    const b = await tuneMatmulTile(device, { override: null, store, measure });
    expect([b.source, tileName(b.tile), measured, calls.get]).toEqual(["memory", "8x16", 1, 1]);
    // a new process (memory cleared) with the store: no measuring
    clearTileMemory();
    const c = await tuneMatmulTile(device, { override: null, store, measure });
    expect([c.source, tileName(c.tile), measured]).toEqual(["stored", "8x16", 1]);
    // a stored value that is no candidate is measured again
    clearTileMemory();
    const d = await tuneMatmulTile(device, { override: null, store: fakeStore("3x3").store, measure });
    expect([d.source, measured]).toEqual(["measured", 2]);
    // the override wins and measures nothing; LAB_MATMUL_TILE (8x8 in the test projects) is one
    const e = await tuneMatmulTile(device, { override: "16x8", store, measure });
    expect([e.source, tileName(e.tile), measured]).toEqual(["override", "16x8", 2]);
    expect(new Runtime(device).matmulTile).toEqual([16, 8]);
    expect((await tuneMatmulTile(device, { measure })).source).toBe(
      process.env.LAB_MATMUL_TILE ? "override" : "memory",
    );
    await expect(tuneMatmulTile(device, { override: "5x5" })).rejects.toThrow(/not one of the candidates/);
    await tuneMatmulTile(device, { override: tileName(DEFAULT_MATMUL_TILE) });
  });

  it("times every candidate on this adapter without touching another Runtime's counters", async () => {
    const rt = await gpuRuntime();
    const before = { ...rt.counters };
    const times = await measureTiles(rt.device, 1);
    expect(times.map((t) => tileName(t.tile))).toEqual(MATMUL_TILES.map(tileName));
    for (const t of times) expect(t.ms.every((x) => Number.isFinite(x) && x > 0)).toBe(true);
    expect(rt.counters).toEqual(before);
  });
});
