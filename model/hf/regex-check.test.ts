// The tokenizer regex check (model/hf/regex-check.ts): the patterns real tokenizers use pass,
// patterns that backtrack exponentially are refused naming the file and the pattern,
// and an unknown tokenizer model type is refused naming it.
// Run: `npx vitest run --project unit model/hf/regex-check.test.ts`.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { qwen3Files } from "../qwen3-fixture";
import { regexProblem, tokenizerPatterns } from "./regex-check";
import { checkTokenizerJson, HfTokenizer } from "./tokenizer";

// As published in each model's tokenizer.json (SmolLM2's ByteLevel pre-tokenizer runs GPT-2's).
const REAL = {
  gpt2: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  llama3:
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen25:
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  smollm2Digits: "\\p{N}",
  metaspace: " ",
  bloomLike: " ?[^(\\s|[.,!?…。，、।۔،])]+",
};

const EXPONENTIAL = [
  "(.|.)*\\u0000",
  "(a+)+b",
  "(a*)*b",
  "(\\d{1,3})+x",
  "(?:\\s|\\n)*$",
  "(a|ab)+c",
  "((a)|b)*(a|a)+",
  "(x+x+)+y",
  "(?i:(a|A)+)$",
  "(a)\\1+",
  "(?:[a-z]+\\s?)+$",
];

const labLlama = () => JSON.parse(readFileSync("public/models/lab-llama/tokenizer.json", "utf8"));

describe("tokenizer regex patterns", () => {
  it("accepts the patterns of real tokenizers", () => {
    for (const [name, pattern] of Object.entries(REAL)) expect(regexProblem(pattern), name).toBeUndefined();
    const files = [labLlama(), qwen3Files().tokenizer];
    for (const tok of files) {
      const patterns = tokenizerPatterns(tok);
      expect(patterns.length).toBeGreaterThan(0);
      for (const { path, pattern } of patterns)
        expect(regexProblem(pattern), `${path}: ${pattern}`).toBeUndefined();
    }
    expect(tokenizerPatterns(labLlama()).map((p) => p.path)).toEqual([
      "pre_tokenizer.pretokenizers[0].pattern.Regex",
    ]);
  });

  it("refuses patterns that backtrack exponentially", () => {
    for (const pattern of EXPONENTIAL)
      expect(regexProblem(pattern), pattern).toMatch(/backtrack|backreference/);
    expect(regexProblem("(".repeat(100) + ")".repeat(100))).toMatch(/nested deeper/);
    expect(regexProblem("[abc")).toMatch(/unclosed/);
    expect(regexProblem("a".repeat(20_000))).toMatch(/at most 10000/);
  });

  it("a tokenizer.json with such a Split pattern is refused naming the file and the pattern, before it is built", () => {
    const tok = labLlama();
    tok.pre_tokenizer.pretokenizers[0].pattern.Regex = "(.|.)*\\u0000";
    const config = JSON.parse(readFileSync("public/models/lab-llama/tokenizer_config.json", "utf8"));
    expect(() => new HfTokenizer({ tokenizer: tok, config }, "hostile")).toThrow(
      'hostile: tokenizer.json: the pattern pre_tokenizer.pretokenizers[0].pattern.Regex "(.|.)*\\\\u0000" can backtrack exponentially (alternatives under a repetition that can match the same text)',
    );
    // A normalizer's Replace pattern too.
    const norm = labLlama();
    norm.normalizer = { type: "Replace", pattern: { Regex: "(a+)+$" }, content: "" };
    expect(() => checkTokenizerJson(norm, "f/tokenizer.json")).toThrow(
      /normalizer\.pattern\.Regex "\(a\+\)\+\$"/,
    );
  });

  it("an unknown tokenizer model type is refused naming it", () => {
    const tok = labLlama();
    tok.model.type = "SentencePieceOfCake";
    expect(() => checkTokenizerJson(tok, "m/tokenizer.json")).toThrow(
      'm/tokenizer.json: model.type "SentencePieceOfCake" is not a tokenizer model the lab reads (BPE, Unigram, WordPiece)',
    );
    delete tok.model.type;
    expect(() => checkTokenizerJson(tok, "m/tokenizer.json")).not.toThrow();
  });
});
