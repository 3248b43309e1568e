// CPU test: aligned layouts and views, and uniform packing. Run: npx vitest run --project unit kernels/runtime
import { describe, expect, it } from "vitest";
import { alignFloats, layout, packUniform, subview, type View, windows } from "./runtime";

describe("runtime layout helpers", () => {
  it("aligns every tensor offset to 64 floats (256 bytes)", () => {
    expect(alignFloats(0)).toBe(0);
    expect(alignFloats(1)).toBe(64);
    expect(alignFloats(64)).toBe(64);
    expect(alignFloats(65)).toBe(128);
    const { offsets, total } = layout({ wte: 107 * 128, wpe: 128 * 128, lnw: 128, lnb: 128 });
    expect(offsets).toEqual({ wte: 0, wpe: 13696, lnw: 13696 + 16384, lnb: 13696 + 16384 + 128 });
    for (const o of Object.values(offsets)) expect((o * 4) % 256).toBe(0);
    expect(total).toBe(13696 + 16384 + 256);
  });

  it("subviews stay inside their view", () => {
    const v: View = { buffer: {} as GPUBuffer, offset: 256, size: 400 };
    expect(subview(v, 64, 36)).toEqual({ buffer: v.buffer, offset: 512, size: 144 });
    expect(() => subview(v, 64, 37)).toThrow(/outside/);
  });

  it("packs uniforms as 4-byte scalars in order, padded to 16 bytes", () => {
    const buf = packUniform([
      ["u32", 7],
      ["i32", -3],
      ["f32", 0.5],
      ["u32", 0xffffffff],
      ["f32", 2],
    ]);
    expect(buf.byteLength).toBe(32);
    const dv = new DataView(buf);
    expect(dv.getUint32(0, true)).toBe(7);
    expect(dv.getInt32(4, true)).toBe(-3);
    expect(dv.getFloat32(8, true)).toBe(0.5);
    expect(dv.getUint32(12, true)).toBe(0xffffffff);
    expect(dv.getFloat32(16, true)).toBe(2);
  });

  it("cuts [0, n) into windows of at most max floats starting at multiples of the unit", () => {
    expect(windows(1000, 300)).toEqual([
      [0, 256],
      [256, 256],
      [512, 256],
      [768, 232],
    ]);
    expect(windows(1000, 300, 100)).toEqual([
      [0, 300],
      [300, 300],
      [600, 300],
      [900, 100],
    ]);
    expect(windows(10, 1 << 20)).toEqual([[0, 10]]);
    expect(() => windows(10, 50, 64)).toThrow(/cannot hold/);
  });
});
