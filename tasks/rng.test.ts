// Tests for tasks/rng.ts: determinism, ranges, fork independence.
import { describe, expect, it } from "vitest";
import { hash32, Rng } from "./rng.ts";

describe("Rng", () => {
  it("is deterministic per seed and differs across seeds", () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const xs = Array.from({ length: 20 }, () => a.next());
    expect(Array.from({ length: 20 }, () => b.next())).toEqual(xs);
    expect(Array.from({ length: 20 }, () => c.next())).not.toEqual(xs);
  });

  it("int covers the inclusive range roughly uniformly", () => {
    const r = new Rng(1);
    const counts = new Array(6).fill(0);
    for (let i = 0; i < 6000; i++) counts[r.int(0, 5)]++;
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
    expect(() => r.int(3, 2)).toThrow();
  });

  it("fork depends on the label and not on the parent's position", () => {
    const a = new Rng(7);
    const f1 = a.fork("x").next();
    a.next();
    a.next();
    expect(a.fork("x").next()).toBe(f1);
    expect(a.fork("y").next()).not.toBe(f1);
  });

  it("shuffle is a permutation", () => {
    const r = new Rng(3);
    const s = r.shuffle([1, 2, 3, 4, 5, 6, 7]);
    expect([...s].sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("hash32 is stable", () => {
    expect(hash32("abc")).toBe(hash32("abc"));
    expect(hash32("abc")).not.toBe(hash32("abd"));
  });
});
