// Unit tests of the character tokenizer: ids, round trip, special tokens, unknown characters.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decode,
  EOS_ID,
  encode,
  IM_END_ID,
  NEWLINE_ID,
  PAD_ID,
  SPECIAL_IDS,
  SPECIAL_TOKENS,
  tokenText,
  UnknownCharacterError,
  VOCAB_SIZE,
} from "./tokenizer";

const alphabet = [
  "\n",
  ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)),
  ...SPECIAL_TOKENS,
];

describe("tokenizer", () => {
  it("has the demo's 107 ids, each special token one id, all ids distinct", () => {
    expect(VOCAB_SIZE).toBe(107);
    const texts = Array.from({ length: VOCAB_SIZE }, (_, i) => tokenText(i));
    expect(new Set(texts).size).toBe(VOCAB_SIZE);
    for (const s of SPECIAL_TOKENS) expect(encode(s)).toEqual([SPECIAL_IDS[s]]);
    expect(encode("\n")).toEqual([NEWLINE_ID]);
    expect(EOS_ID).toBe(IM_END_ID);
    expect(() => tokenText(VOCAB_SIZE)).toThrow(RangeError);
  });

  it("round-trips any string over the alphabet exactly", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 60 }), (parts) => {
        const s = parts.join("");
        expect(decode(encode(s))).toBe(s);
      }),
    );
  });

  it("encodes a transcript with special tokens as single ids", () => {
    const s = "<|im_start|>user\nWhat is 347*29?<|im_end|>\n<tool_call>347*29</tool_call>";
    const ids = encode(s);
    expect(ids[0]).toBe(SPECIAL_IDS["<|im_start|>"]);
    expect(ids.filter((i) => i >= 97).length).toBe(4);
    expect(ids.length).toBe(s.length - (12 + 10 + 11 + 12) + 4);
    expect(decode(ids)).toBe(s);
    // A "<" that starts no special token is a plain character.
    expect(decode(encode("a<b <think"))).toBe("a<b <think");
  });

  it("rejects unknown characters by default and replaces them on request", () => {
    expect(() => encode("a\tb")).toThrow(UnknownCharacterError);
    expect(() => encode("é")).toThrow(/index 0/);
    expect(decode(encode("a\tb€😀", { unknown: "replace" }))).toBe("a?b??");
  });

  it("decodes pad to nothing", () => {
    expect(decode([PAD_ID, ...encode("hi"), PAD_ID])).toBe("hi");
    expect(tokenText(PAD_ID)).toBe("<|pad|>");
  });
});
