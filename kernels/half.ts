// IEEE 754 half precision on the host: float32 -> f16 bits with round-to-nearest-even (what a
// GPU's f32 -> f16 conversion and numpy's astype(float16) do), f16 bits -> float32 (exact), and
// the rounding of an array to f16 values kept as float32, the CPU reference of an f16 weight
// (kernels/matmul.ts's f16 variant reads the bits; model/half.ts decides which weights).
// Tested by kernels/half.test.ts (every f16 value round-trips, ties to even, subnormals, range).

/** The largest finite f16 (a weight beyond it cannot be stored in f16). */
export const F16_MAX = 65504;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The f16 bits nearest to x (as float32 first), ties to even; beyond the range: infinity. */
export function halfBits(x: number): number {
  f32[0] = x;
  const u = u32[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0); // inf, NaN
  const e = exp - 127 + 15; // the f16 exponent field
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // subnormal f16: m * 2^-24, m = the 24-bit significand shifted right by 14 - e
    if (e < -10) return sign;
    const sig = mant | 0x800000;
    const shift = 14 - e;
    let m = sig >>> shift;
    const rem = sig & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && (m & 1) === 1)) m++; // 0x3ff + 1 is the smallest normal
    return sign | m;
  }
  const h = sign | (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // a carry out of the mantissa bumps the exponent (up to infinity), as it should
  return rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1) ? h + 1 : h;
}

/** The value of f16 bits h. */
export function halfValue(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** x rounded to the nearest f16 value. */
export function roundHalf(x: number): number {
  return halfValue(halfBits(x));
}

/** A copy of `a` with every value rounded to f16 (the reference of a weight stored as f16). */
export function roundHalfArray(a: ArrayLike<number>): Float32Array {
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = roundHalf(a[i]);
  return out;
}

/** The f16 bits of every value of `a`. */
export function toHalfBits(a: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = halfBits(a[i]);
  return out;
}

/** Largest |x| of a (NaN counts as infinite: it cannot be an f16 weight either way). */
export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const v = Math.abs(a[i]);
    if (!(v <= m)) m = Number.isNaN(v) ? Number.POSITIVE_INFINITY : v;
  }
  return m;
}

/** The f16 bits of `a` packed two to a 32-bit word (the last padded with 0): an upload's data. */
export function halfWords(a: ArrayLike<number>): Uint32Array {
  const words = new Uint32Array(Math.ceil(a.length / 2));
  new Uint16Array(words.buffer).set(toHalfBits(a));
  return words;
}
