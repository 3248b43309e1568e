// Seeded pseudo-random numbers for task sampling, demos and environments.
// mulberry32 core (32-bit state, fast, good enough for data generation), seeds mixed by
// hash32 so nearby seeds give unrelated streams; fork(label) derives an independent child
// stream without disturbing the parent, so adding a consumer does not shift the others.
// Tested by tasks/rng.test.ts (`npx vitest run tasks/rng.test.ts`).

/** FNV-1a over UTF-16 code units, finished with a murmur3 avalanche: stable string -> uint32. */
export function hash32(text: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

/** A uniform number in [0, 1) derived only from `text`: used for hash-based train/eval splits. */
export function hashUnit(text: string): number {
  return hash32(text) / 4294967296;
}

export class Rng {
  private state: number;
  /** The seed this stream was made from (after mixing); fork() derives children from it. */
  readonly seed: number;

  constructor(seed: number | string) {
    this.seed =
      typeof seed === "string" ? hash32(seed) : hash32(`seed:${seed >>> 0}:${Math.floor(seed / 4294967296)}`);
    this.state = this.seed;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer uniform in [lo, hi], both inclusive. */
  int(lo: number, hi: number): number {
    if (hi < lo) throw new Error(`Rng.int: empty range [${lo}, ${hi}]`);
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability p. */
  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick: empty list");
    return items[Math.floor(this.next() * items.length)];
  }

  /** Fisher-Yates on a copy. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** A uint32, e.g. to seed an environment reset. */
  uint32(): number {
    return Math.floor(this.next() * 4294967296) >>> 0;
  }

  /** An independent stream named by `label`; depends only on this stream's seed, not its position. */
  fork(label: string): Rng {
    return new Rng(`${this.seed}/${label}`);
  }
}

export function createRng(seed: number | string): Rng {
  return new Rng(seed);
}
