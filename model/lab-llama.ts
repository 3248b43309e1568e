// The files of the lab-made Llama-family model (cli/make-lab-llama.ts makes the model): a
// byte-level BPE tokenizer trained here on the conversations it will read, written as a
// Hugging Face tokenizer.json (Qwen2's pre-tokenizer: digits one by one, GPT-2's byte alphabet)
// with ChatML's special tokens and the Hermes tags as added tokens; tokenizer_config.json with a
// ChatML chat template in Qwen2.5's shape that takes `tools` and renders assistant `tool_calls`
// as Hermes `<tool_call>` JSON and tool results as `<tool_response>` user turns; config.json of
// a small LlamaForCausalLM (RMSNorm, SwiGLU, rotate-half RoPE, grouped-query attention); and
// generation_config.json. Pure: files as bytes and JSON, no Node.
// Tested by cli/make-lab-llama.test.ts (@huggingface/tokenizers loads the tokenizer, the
// lab's JinjaChat renders the template under the strict tokenization check).

/** The added tokens, in id order after the BPE vocabulary (Qwen2's names; the first three are special). */
export const LAB_LLAMA_ADDED = [
  { content: "<|endoftext|>", special: true },
  { content: "<|im_start|>", special: true },
  { content: "<|im_end|>", special: true },
  { content: "<tool_call>", special: false },
  { content: "</tool_call>", special: false },
  { content: "<tool_response>", special: false },
  { content: "</tool_response>", special: false },
  { content: "<think>", special: false },
  { content: "</think>", special: false },
] as const;

/**
 * ChatML with tools, as Qwen2.5's template (without its default system message), but with the
 * tool list as one compact signature line per tool (`name(arg: type, ..): description`, a third
 * of the tokens of Qwen's JSON lines, which a model this small pays for in every step),
 * assistant tool calls as `<tool_call>\n{"name": .., "arguments": ..}\n</tool_call>`,
 * consecutive tool results in one user turn of `<tool_response>` blocks.
 */
export const LAB_LLAMA_CHAT_TEMPLATE = `{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n" }}
    {%- for tool in tools %}
        {%- set f = tool.function if tool.function is defined else tool %}
        {{- f.name + "(" }}
        {%- if f.parameters is defined and f.parameters.properties is defined %}
            {%- for name, p in f.parameters.properties.items() %}
                {{- (", " if not loop.first else "") + name + ": " + (p.type if p.type is defined else "any") }}
            {%- endfor %}
        {%- endif %}
        {{- "): " + f.description + "\\n" }}
    {%- endfor %}
    {{- "Call a tool as <tool_call>\\n{\\"name\\": <name>, \\"arguments\\": {...}}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {%- if tool_call.arguments is string %}
                {{- tool_call.arguments }}
            {%- else %}
                {{- tool_call.arguments | tojson }}
            {%- endif %}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
`;

// Qwen2's pre-tokenizer (tokenizer.json's Split regex), and the same split in JavaScript's
// syntax for training (JS has no inline (?i:...)).
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const SPLIT_JS =
  /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

// GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes are
// shifted to code points 256.. in byte order.
function byteAlphabet(): string[] {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out: string[] = [];
  let shifted = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : 256 + shifted++));
  return out;
}
const BYTE_CHAR = byteAlphabet();

/** A text as GPT-2 byte-level symbols, one per UTF-8 byte. */
function byteSymbols(text: string): string[] {
  return Array.from(new TextEncoder().encode(text), (b) => BYTE_CHAR[b]);
}

export interface Bpe {
  /** token -> id: the 256 bytes in byte order, then each merge's result in merge order. */
  vocab: Record<string, number>;
  merges: [string, string][];
}

/**
 * Byte-level BPE trained on `texts` until the vocabulary has `vocabSize` entries: the texts are
 * cut at the added tokens, pre-tokenized with Qwen2's split, and the most frequent adjacent
 * pair is merged each round (ties: the pair that sorts first), so the same texts give the same
 * tokenizer.
 */
export function trainBpe(texts: readonly string[], vocabSize: number, added: readonly string[]): Bpe {
  const counts = new Map<string, number>();
  const cut = new RegExp(added.map((a) => a.replace(/[|\\/[\]()<>]/g, (c) => `\\${c}`)).join("|"), "g");
  for (const text of texts)
    for (const part of text.split(cut))
      for (const m of part.matchAll(SPLIT_JS)) counts.set(m[0], (counts.get(m[0]) ?? 0) + 1);
  const words = [...counts].map(([w, n]) => ({ syms: byteSymbols(w), n }));
  const vocab: Record<string, number> = {};
  BYTE_CHAR.forEach((c, i) => {
    vocab[c] = i;
  });
  const merges: [string, string][] = [];
  let size = BYTE_CHAR.length;
  while (size < vocabSize) {
    const pairs = new Map<string, number>();
    for (const w of words)
      for (let i = 0; i + 1 < w.syms.length; i++) {
        const k = `${w.syms[i]}\u0000${w.syms[i + 1]}`;
        pairs.set(k, (pairs.get(k) ?? 0) + w.n);
      }
    let best: string | null = null;
    let bestN = 1;
    for (const [k, n] of pairs)
      if (n > bestN || (n === bestN && best !== null && k < best)) [best, bestN] = [k, n];
    if (best === null) break;
    const [a, b] = best.split("\u0000");
    const ab = a + b;
    merges.push([a, b]);
    if (!(ab in vocab)) vocab[ab] = size++;
    for (const w of words) {
      const s = w.syms;
      const out: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(ab);
          i++;
        } else out.push(s[i]);
      }
      w.syms = out;
    }
  }
  return { vocab, merges };
}

/** tokenizer.json: the BPE with Qwen2's normalizer, pre-tokenizer and decoder, and the added tokens after it. */
export function labTokenizerJson(bpe: Bpe): Record<string, unknown> {
  const first = Object.keys(bpe.vocab).length;
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: LAB_LLAMA_ADDED.map((t, i) => ({
      id: first + i,
      content: t.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: t.special,
    })),
    normalizer: { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: QWEN2_SPLIT }, behavior: "Isolated", invert: false },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: bpe.vocab,
      merges: bpe.merges,
    },
  };
}

/** The id of an added token in a tokenizer of `bpeSize` BPE entries. */
export function addedId(bpeSize: number, content: (typeof LAB_LLAMA_ADDED)[number]["content"]): number {
  return bpeSize + LAB_LLAMA_ADDED.findIndex((t) => t.content === content);
}

/** tokenizer_config.json: the chat template, eos `<|im_end|>`, pad `<|endoftext|>`, no bos (as Qwen2). */
export function labTokenizerConfig(bpeSize: number, maxLength: number): Record<string, unknown> {
  const decoder: Record<string, unknown> = {};
  LAB_LLAMA_ADDED.forEach((t, i) => {
    decoder[String(bpeSize + i)] = {
      content: t.content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: t.special,
    };
  });
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: decoder,
    additional_special_tokens: ["<|im_start|>", "<|im_end|>"],
    bos_token: null,
    chat_template: LAB_LLAMA_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: "<|im_end|>",
    errors: "replace",
    model_max_length: maxLength,
    pad_token: "<|endoftext|>",
    split_special_tokens: false,
    tokenizer_class: "PreTrainedTokenizerFast",
    unk_token: null,
  };
}

/** The architecture of a lab-made model: a LlamaForCausalLM config.json's sizes. */
export interface LabLlamaShape {
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
  maxPositions: number;
  tied: boolean;
}

/** config.json of the LlamaForCausalLM (bos/eos/pad ids: Qwen2's choice of <|endoftext|> and <|im_end|>). */
export function labLlamaConfig(shape: LabLlamaShape, bpeSize: number): Record<string, unknown> {
  return {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    vocab_size: bpeSize + LAB_LLAMA_ADDED.length,
    hidden_size: shape.hidden,
    intermediate_size: shape.intermediate,
    num_hidden_layers: shape.layers,
    num_attention_heads: shape.heads,
    num_key_value_heads: shape.kvHeads,
    head_dim: shape.hidden / shape.heads,
    hidden_act: "silu",
    max_position_embeddings: shape.maxPositions,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    rope_scaling: null,
    tie_word_embeddings: shape.tied,
    attention_bias: false,
    attention_dropout: 0,
    mlp_bias: false,
    bos_token_id: addedId(bpeSize, "<|endoftext|>"),
    eos_token_id: addedId(bpeSize, "<|im_end|>"),
    pad_token_id: addedId(bpeSize, "<|endoftext|>"),
    torch_dtype: "float32",
  };
}

/** generation_config.json: stop at <|im_end|> or <|endoftext|>. */
export function labGenerationConfig(bpeSize: number): Record<string, unknown> {
  return {
    bos_token_id: addedId(bpeSize, "<|endoftext|>"),
    eos_token_id: [addedId(bpeSize, "<|im_end|>"), addedId(bpeSize, "<|endoftext|>")],
    pad_token_id: addedId(bpeSize, "<|endoftext|>"),
    do_sample: true,
    temperature: 1.0,
  };
}
