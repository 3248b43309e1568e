// A tokenizer.json's regex patterns (Split pre-tokenizers, Replace normalizers and decoders) are
// untrusted: JavaScript's backtracking matcher takes time exponential in the text's length on
// a pattern such as `(.|.)*\u0000` or `(a+)+b`, and tokenization cannot be interrupted. So
// each pattern is parsed and refused, before the tokenizer is built, when it can backtrack
// exponentially:
// - a repeated part (`*`, `+`, `{n,m}` with m > 1) inside another repeated part, where the
//   inner part matches some text (star height above 1: `(a+)+`, `(\d{1,3})*`);
// - alternatives under a repetition that can start with the same character (`(.|.)*`,
//   `(a|ab)+`, `(\s|\n)*`): disjointness is proved only for literal characters, anything else
//   (a class, `.`, `\p{..}`) counts as overlapping;
// - backreferences, whose cost no such rule bounds.
// The patterns real tokenizers use (GPT-2's, Llama 3's, Qwen2.5's and Qwen3's, SmolLM2's, the
// lab's own Llama's) repeat single characters and classes only, side by side, and pass; their
// worst case is quadratic. Tested by model/hf/regex-check.test.ts.

type Node =
  | { t: "alt"; items: Node[] }
  | { t: "seq"; items: Node[] }
  | { t: "rep"; min: number; max: number; body: Node }
  | { t: "group"; body: Node; look: boolean }
  /** One character: `lits` lists it when it is a known literal (both cases in an (?i) scope). */
  | { t: "char"; lits?: number[] }
  | { t: "empty" };

/** The longest pattern read, and the deepest group nesting (the parser recurses per group). */
export const MAX_PATTERN_CHARS = 10_000;
const MAX_GROUP_DEPTH = 64;

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly src: string) {}

  fail(why: string): never {
    throw new Error(`${why} at character ${this.i}`);
  }

  parse(): Node {
    const node = this.alt(false);
    if (this.i < this.src.length) this.fail("unbalanced )");
    return node;
  }

  private alt(fold: boolean): Node {
    const items = [this.seq(fold)];
    while (this.src[this.i] === "|") {
      this.i++;
      items.push(this.seq(fold));
    }
    return items.length === 1 ? items[0] : { t: "alt", items };
  }

  private seq(fold: boolean): Node {
    const items: Node[] = [];
    while (this.i < this.src.length && this.src[this.i] !== "|" && this.src[this.i] !== ")") {
      const atom = this.atom(fold);
      items.push(this.quantified(atom));
    }
    return items.length === 1 ? items[0] : { t: "seq", items };
  }

  private quantified(atom: Node): Node {
    const s = this.src;
    let node = atom;
    for (;;) {
      const c = s[this.i];
      let min: number;
      let max: number;
      if (c === "*" || c === "+" || c === "?") {
        this.i++;
        [min, max] = c === "*" ? [0, Infinity] : c === "+" ? [1, Infinity] : [0, 1];
      } else if (c === "{") {
        const m = /^\{(\d*)(,(\d*))?\}/.exec(s.slice(this.i));
        if (!m || (m[1] === "" && m[3] === undefined)) return node;
        this.i += m[0].length;
        min = m[1] === "" ? 0 : Number(m[1]);
        max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      } else return node;
      // Lazy (?) and possessive (+) forms match the same texts.
      if (s[this.i] === "?" || s[this.i] === "+") this.i++;
      node = { t: "rep", min, max, body: node };
    }
  }

  private atom(fold: boolean): Node {
    const s = this.src;
    const c = s[this.i];
    if (c === "(") return this.group(fold);
    if (c === "[") return this.charClass();
    if (c === "\\") return this.escape(fold);
    this.i++;
    if (c === ".") return { t: "char" };
    if (c === "^" || c === "$") return { t: "empty" };
    const cp = s.codePointAt(this.i - 1) as number;
    if (cp > 0xffff) this.i++;
    return literal(cp, fold);
  }

  private group(fold: boolean): Node {
    if (++this.depth > MAX_GROUP_DEPTH) this.fail(`groups nested deeper than ${MAX_GROUP_DEPTH}`);
    const s = this.src;
    this.i++;
    let look = false;
    let inner = fold;
    if (s[this.i] === "?") {
      const rest = s.slice(this.i + 1);
      const flags = /^([imsx]*)(-[imsx]*)?(:|\))/.exec(rest);
      if (rest.startsWith(":")) this.i += 2;
      else if (/^(=|!|<=|<!)/.test(rest)) {
        look = true;
        this.i += rest.startsWith("<") ? 3 : 2;
      } else if (/^(<|P<|')[A-Za-z_]\w*[>']/.test(rest))
        this.i = s.indexOf(rest.startsWith("'") ? "'" : ">", this.i + 3) + 1;
      else if (flags) {
        this.i += 1 + flags[0].length;
        inner = flags[1].includes("i") ? true : flags[2]?.includes("i") ? false : fold;
        // `(?i)` without a colon sets the flags for the rest of the enclosing group.
        if (flags[3] === ")") {
          this.depth--;
          const restOf = this.alt(inner);
          return restOf;
        }
      } else this.fail("unsupported group syntax");
    }
    const body = this.alt(inner);
    if (s[this.i] !== ")") this.fail("unclosed group");
    this.i++;
    this.depth--;
    return { t: "group", body, look };
  }

  private charClass(): Node {
    const s = this.src;
    let depth = 0;
    for (this.i++; this.i < s.length; this.i++) {
      const c = s[this.i];
      if (c === "\\") this.i++;
      else if (c === "[") depth++;
      else if (c === "]") {
        if (depth === 0) {
          this.i++;
          return { t: "char" };
        }
        depth--;
      }
    }
    return this.fail("unclosed character class");
  }

  private escape(fold: boolean): Node {
    const s = this.src;
    this.i++;
    const c = s[this.i++];
    if (c === undefined) this.fail("a pattern ending in \\");
    if (/[1-9]/.test(c) || c === "k") this.fail("a backreference");
    if ("bBAzZG".includes(c)) return { t: "empty" };
    if ("pP".includes(c)) {
      if (s[this.i] === "{") this.i = s.indexOf("}", this.i) + 1 || this.fail("unclosed \\p{");
      else this.i++;
      return { t: "char" };
    }
    if ("dDwWsShHvVXRN".includes(c)) return { t: "char" };
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11, "0": 0, a: 7, e: 27 };
    if (Object.hasOwn(simple, c)) return literal(simple[c], fold);
    const hex =
      c === "x"
        ? /^(\{[0-9a-fA-F]+\}|[0-9a-fA-F]{2})/
        : c === "u"
          ? /^(\{[0-9a-fA-F]+\}|[0-9a-fA-F]{4})/
          : null;
    if (hex) {
      const m = hex.exec(s.slice(this.i)) ?? this.fail(`a malformed \\${c} escape`);
      this.i += m[0].length;
      return literal(Number.parseInt(m[0].replace(/[{}]/g, ""), 16), fold);
    }
    return literal(c.codePointAt(0) as number, fold);
  }
}

function literal(cp: number, fold: boolean): Node {
  if (!fold) return { t: "char", lits: [cp] };
  const ch = String.fromCodePoint(cp);
  return {
    t: "char",
    lits: [...new Set([ch, ch.toLowerCase(), ch.toUpperCase()].map((x) => x.codePointAt(0) as number))],
  };
}

/** Whether a node can match the empty text. */
function nullable(n: Node): boolean {
  switch (n.t) {
    case "empty":
      return true;
    case "char":
      return false;
    case "rep":
      return n.min === 0 || nullable(n.body);
    case "group":
      return n.look || nullable(n.body);
    case "alt":
      return n.items.some(nullable);
    case "seq":
      return n.items.every(nullable);
  }
}

/** The characters a match can start with: literals, or `any` for a class. */
function first(n: Node, out: { lits: Set<number>; any: boolean }): void {
  switch (n.t) {
    case "char":
      if (n.lits) for (const c of n.lits) out.lits.add(c);
      else out.any = true;
      return;
    case "rep":
      if (n.max > 0) first(n.body, out);
      return;
    case "group":
      if (!n.look) first(n.body, out);
      return;
    case "alt":
      for (const x of n.items) first(x, out);
      return;
    case "seq":
      for (const x of n.items) {
        first(x, out);
        if (!nullable(x)) return;
      }
      return;
    default:
      return;
  }
}

function overlaps(a: Node, b: Node): boolean {
  const fa = { lits: new Set<number>(), any: false };
  const fb = { lits: new Set<number>(), any: false };
  first(a, fa);
  first(b, fb);
  // A branch that can match nothing is as ambiguous as two that start alike.
  if (nullable(a) || nullable(b)) return true;
  if ((fa.any && (fb.any || fb.lits.size > 0)) || (fb.any && fa.lits.size > 0)) return true;
  for (const c of fa.lits) if (fb.lits.has(c)) return true;
  return false;
}

/** Whether a node can match some non-empty text. */
function consumes(n: Node): boolean {
  switch (n.t) {
    case "char":
      return true;
    case "empty":
      return false;
    case "rep":
      return n.max > 0 && consumes(n.body);
    case "group":
      return !n.look && consumes(n.body);
    default:
      return n.items.some(consumes);
  }
}

/** The first construct that can backtrack exponentially, in words; undefined when none. */
function danger(n: Node, repeated: boolean): string | undefined {
  switch (n.t) {
    case "rep": {
      const repeats = n.max > 1;
      if (repeats && repeated && consumes(n.body)) return "a repeated part inside another repeated part";
      return danger(n.body, repeated || repeats);
    }
    case "alt":
      if (repeated)
        for (let i = 0; i < n.items.length; i++)
          for (let j = i + 1; j < n.items.length; j++)
            if (overlaps(n.items[i], n.items[j]))
              return "alternatives under a repetition that can match the same text";
      for (const x of n.items) {
        const d = danger(x, repeated);
        if (d) return d;
      }
      return undefined;
    case "seq":
      for (const x of n.items) {
        const d = danger(x, repeated);
        if (d) return d;
      }
      return undefined;
    case "group":
      return danger(n.body, repeated);
    default:
      return undefined;
  }
}

/**
 * Why a tokenizer's regex pattern is refused (it can backtrack exponentially, or cannot be
 * read), or undefined for a pattern the lab accepts.
 */
export function regexProblem(pattern: string): string | undefined {
  if (pattern.length > MAX_PATTERN_CHARS)
    return `is ${pattern.length} characters long; at most ${MAX_PATTERN_CHARS} are read`;
  let tree: Node;
  try {
    tree = new Parser(pattern).parse();
  } catch (err) {
    return `cannot be checked: ${(err as Error).message}`;
  }
  const d = danger(tree, false);
  return d ? `can backtrack exponentially (${d})` : undefined;
}

/**
 * Every regex pattern of a tokenizer.json's normalizer, pre-tokenizer, post-processor and
 * decoder, with its place (`pre_tokenizer.pretokenizers[0].pattern.Regex`).
 */
export function tokenizerPatterns(tok: Record<string, unknown>): { path: string; pattern: string }[] {
  const found: { path: string; pattern: string }[] = [];
  const stack: { v: unknown; path: string; depth: number }[] = [];
  for (const key of ["normalizer", "pre_tokenizer", "post_processor", "decoder"])
    if (Object.hasOwn(tok, key)) stack.push({ v: tok[key], path: key, depth: 0 });
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop() as (typeof stack)[number];
    if (v === null || typeof v !== "object" || depth > MAX_GROUP_DEPTH) continue;
    for (const [k, x] of Object.entries(v)) {
      const at = Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`;
      if (k === "Regex" && typeof x === "string") found.push({ path: at, pattern: x });
      else stack.push({ v: x, path: at, depth: depth + 1 });
    }
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
