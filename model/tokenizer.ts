// The character tokenizer of the lab: one id per character (printable ASCII and "\n"),
// one id per special token of the chat templates, and a pad id. 107 ids in all, the
// vocabulary of ALGORITHMS §14.
//
// Ids: 0 pad, 1 "\n", 2..96 the printable ASCII characters " ".."~" (code 32..126) in order,
// 97..106 the ten special tokens in SPECIAL_TOKENS order.
// End of sequence is `<|im_end|>` (EOS_ID): every transcript ends a turn with it and
// decoding stops on it, so a separate eos id would never be produced or trained.
// Text that spells a special token (e.g. "<think>") always encodes to its one special id.
// Characters outside the alphabet (tab, non-ASCII) throw by default; with
// `{ unknown: "replace" }` each becomes "?" (REPLACEMENT_CHAR), so decode(encode(s)) == s
// holds exactly for every string made of the alphabet and special tokens.
// Pad decodes to "" (it is not text); tokenText(PAD_ID) shows it as "<|pad|>".
//
// `Tokenizer` is the one interface the rollout, the trainer and the inspector's pieces use;
// CHAR_TOKENIZER is this character tokenizer behind it, model/hf/tokenizer.ts a model's own
// tokenizer.json. Tested by model/tokenizer.test.ts.

/** What the engine needs of a tokenizer: ids in, text out, and a readable piece per id. */
export interface Tokenizer {
  /** "char" for the lab's character tokenizer, "hf" for a tokenizer.json. */
  readonly kind: "char" | "hf";
  /** Ids run 0..vocabSize-1 (the model's embedding must have at least this many rows). */
  readonly vocabSize: number;
  /** The id rows are padded with (never trained, never shown as text). */
  readonly padId: number;
  /** The id that ends a turn (`<|im_end|>` in ChatML): decoding stops there. */
  readonly eosId: number;
  /** Special and added tokens in the text become their one id. */
  encode(text: string): number[];
  /** Special tokens are kept as their text; pad decodes to "". */
  decode(ids: ArrayLike<number>): string;
  /** The text of one id as a person should read it: byte-level pieces decoded, `<0xNN>` for a byte that is not a whole character. */
  piece(id: number): string;
  /** The id of a special or added token spelled exactly `text`, or undefined. */
  specialId(text: string): number | undefined;
}

export const SPECIAL_TOKENS = [
  "<|im_start|>",
  "<|im_end|>",
  "<think>",
  "</think>",
  "<tool_call>",
  "</tool_call>",
  "<tool_response>",
  "</tool_response>",
  "<answer>",
  "</answer>",
] as const;
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

export const PAD_ID = 0;
export const NEWLINE_ID = 1;
const FIRST_PRINTABLE_ID = 2;
const FIRST_SPECIAL_ID = FIRST_PRINTABLE_ID + 95;
export const VOCAB_SIZE = FIRST_SPECIAL_ID + SPECIAL_TOKENS.length; // 107

export const SPECIAL_IDS: Record<SpecialToken, number> = Object.fromEntries(
  SPECIAL_TOKENS.map((s, i) => [s, FIRST_SPECIAL_ID + i]),
) as Record<SpecialToken, number>;
export const IM_START_ID = SPECIAL_IDS["<|im_start|>"];
export const IM_END_ID = SPECIAL_IDS["<|im_end|>"];
export const EOS_ID = IM_END_ID;

export const REPLACEMENT_CHAR = "?";

export class UnknownCharacterError extends Error {
  constructor(
    readonly char: string,
    readonly index: number,
  ) {
    super(
      `The tokenizer has no id for character ${JSON.stringify(char)} (code ${char.codePointAt(0)}) at index ${index}; ` +
        `only printable ASCII and "\\n" are in the vocabulary (encode with { unknown: "replace" } to map it to "?")`,
    );
    this.name = "UnknownCharacterError";
  }
}

export interface EncodeOptions {
  /** "error" (default) throws UnknownCharacterError; "replace" encodes the character as "?". */
  unknown?: "error" | "replace";
}

function charId(code: number): number {
  if (code === 10) return NEWLINE_ID;
  if (code >= 32 && code <= 126) return FIRST_PRINTABLE_ID + (code - 32);
  return -1;
}

export function encode(text: string, options: EncodeOptions = {}): number[] {
  const ids: number[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) === 60 /* "<" */) {
      const sp = SPECIAL_TOKENS.find((s) => text.startsWith(s, i));
      if (sp) {
        ids.push(SPECIAL_IDS[sp]);
        i += sp.length;
        continue;
      }
    }
    const cp = text.codePointAt(i)!;
    const id = charId(cp);
    const width = cp > 0xffff ? 2 : 1;
    if (id < 0) {
      if (options.unknown !== "replace") throw new UnknownCharacterError(String.fromCodePoint(cp), i);
      ids.push(charId(REPLACEMENT_CHAR.charCodeAt(0)));
    } else {
      ids.push(id);
    }
    i += width;
  }
  return ids;
}

/** The text of one id; pad shows as "<|pad|>". Throws for ids outside the vocabulary. */
export function tokenText(id: number): string {
  if (id === PAD_ID) return "<|pad|>";
  if (id === NEWLINE_ID) return "\n";
  if (id >= FIRST_PRINTABLE_ID && id < FIRST_SPECIAL_ID)
    return String.fromCharCode(32 + id - FIRST_PRINTABLE_ID);
  if (id >= FIRST_SPECIAL_ID && id < VOCAB_SIZE) return SPECIAL_TOKENS[id - FIRST_SPECIAL_ID];
  throw new RangeError(`token id ${id} is outside the vocabulary 0..${VOCAB_SIZE - 1}`);
}

export function decode(ids: ArrayLike<number>): string {
  let out = "";
  for (let i = 0; i < ids.length; i++) if (ids[i] !== PAD_ID) out += tokenText(ids[i]);
  return out;
}

export function isSpecial(id: number): boolean {
  return id >= FIRST_SPECIAL_ID && id < VOCAB_SIZE;
}

/** The character tokenizer behind the Tokenizer interface. */
export const CHAR_TOKENIZER: Tokenizer = {
  kind: "char",
  vocabSize: VOCAB_SIZE,
  padId: PAD_ID,
  eosId: EOS_ID,
  encode: (text) => encode(text),
  decode,
  piece: tokenText,
  specialId: (text) =>
    (SPECIAL_TOKENS as readonly string[]).includes(text) ? SPECIAL_IDS[text as SpecialToken] : undefined,
};
