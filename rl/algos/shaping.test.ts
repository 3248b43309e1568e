// Worked numbers of ALGORITHMS.md §8.3-§8.4 for tao-code and tao-additive, the switches
// (restrict, detach, fallback) and the tao-code entropy backward against finite
// differences. `npx vitest run rl/algos/`.
import { describe, expect, it } from "vitest";
import { SHAPING, type ShapingOptions } from "./shaping.ts";

const opts: ShapingOptions = {
  coef: 0.01,
  restrictToPostTool: true,
  detachEntropy: false,
  fallbackAllTokens: false,
  alpha: 0.4,
  kappa: 2,
  qH: 0.2,
};
const H = [0.5, 1.5, 1.0, 2.0];
const A = 0.866024;

describe("tao-code (§8.3, §8.4a)", () => {
  it("reproduces the worked numbers", () => {
    const pos = SHAPING["tao-code"](
      { advantages: [A, A, A, A], entropy: H, mask: [1, 1, 1, 1], postTool: [0, 0, 0, 1] },
      opts,
    );
    expect(pos.advantages[3]).toBeCloseTo(0.877643, 6);
    expect(Array.from(pos.advantages.slice(0, 3))).toEqual([A, A, A]);
    const neg = SHAPING["tao-code"](
      { advantages: [0, 0, 0, -A], entropy: H, mask: [1, 1, 1, 1], postTool: [0, 0, 0, 1] },
      opts,
    );
    expect(neg.advantages[3]).toBeCloseTo(-0.877643, 6);
  });

  it("zero tool calls: no shaping unless fallbackAllTokens; σ = 0 gives z = 0", () => {
    const input = { advantages: [A, A, A, A], entropy: H, mask: [1, 1, 1, 1], postTool: [0, 0, 0, 0] };
    expect(Array.from(SHAPING["tao-code"](input, opts).selected)).toEqual([0, 0, 0, 0]);
    const fb = SHAPING["tao-code"](input, { ...opts, fallbackAllTokens: true });
    expect(fb.advantages[3]).toBeCloseTo(0.877643, 6);
    expect(fb.advantages[0]).toBeLessThan(A);
    const flat = SHAPING["tao-code"]({ ...input, entropy: [1, 1, 1, 1], postTool: [1, 1, 1, 1] }, opts);
    expect(Array.from(flat.advantages)).toEqual([A, A, A, A]);
  });

  it("backward matches finite differences through μ and σ; detach gives zeros", () => {
    const adv = [0.3, -1.2, 0.7, 0.5, 2.0];
    const ent = [0.2, 1.1, 0.4, 1.9, 5.0];
    const mask = [1, 1, 1, 1, 0];
    const post = [0, 1, 1, 1, 1];
    const dAdv = [0.7, -0.4, 1.3, 0.9, 2.0];
    const o = { ...opts, coef: 0.3 };
    const lossOf = (e: number[]) =>
      SHAPING["tao-code"]({ advantages: adv, entropy: e, mask, postTool: post }, o).advantages.reduce(
        (s, a, i) => s + a * dAdv[i],
        0,
      );
    const dH = SHAPING["tao-code"]({ advantages: adv, entropy: ent, mask, postTool: post }, o).backward(dAdv);
    const h = 1e-6;
    ent.forEach((_, i) => {
      const up = [...ent];
      const dn = [...ent];
      up[i] += h;
      dn[i] -= h;
      expect(dH[i], `token ${i}`).toBeCloseTo((lossOf(up) - lossOf(dn)) / (2 * h), 6);
    });
    const det = SHAPING["tao-code"](
      { advantages: adv, entropy: ent, mask, postTool: post },
      { ...o, detachEntropy: true },
    );
    expect(Array.from(det.backward(dAdv))).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("tao-additive (§8.4b)", () => {
  const post = { entropy: H, mask: [1, 1, 1, 1], postTool: [1, 1, 1, 1] };
  it("reproduces the worked numbers", () => {
    const pos = SHAPING["tao-additive"]({ ...post, advantages: [A, A, A, A] }, opts);
    expect(Array.from(pos.selected)).toEqual([0, 0, 0, 1]);
    expect(pos.advantages[3]).toBeCloseTo(1.299036, 6);
    expect(pos.advantages[0]).toBe(A);
    const neg = SHAPING["tao-additive"]({ ...post, advantages: [A, A, A, -A] }, opts);
    expect(neg.advantages[3]).toBeCloseTo(-0.433012, 6);
    const all = SHAPING["tao-additive"]({ ...post, advantages: [A, A, A, A] }, { ...opts, qH: 1 });
    expect(all.advantages[0]).toBeCloseTo(1.066024, 6);
  });

  it("never flips the sign, A = 0 stays 0, zero tool calls give no bonus", () => {
    const r = SHAPING["tao-additive"]({ ...post, advantages: [-0.1, 0, -3, -0.01] }, { ...opts, qH: 1 });
    expect(r.advantages[0]).toBeLessThanOrEqual(0);
    expect(r.advantages[1]).toBe(0);
    expect(r.advantages[3]).toBeLessThanOrEqual(0);
    const none = SHAPING["tao-additive"]({ ...post, postTool: [0, 0, 0, 0], advantages: [A, A, A, A] }, opts);
    expect(Array.from(none.advantages)).toEqual([A, A, A, A]);
  });
});
