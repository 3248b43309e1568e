// Hugging Face config.json of the Llama family (model_type llama: Llama, SmolLM2; qwen2:
// Qwen2/Qwen2.5; qwen3: Qwen3) as the lab's one model: config.json -> ModelConfig, pure (no
// weights, no files: model/hf/read.ts reads the checkpoint), so the page's model picker and
// memory plan use it on the main thread.
//
// The network these configs describe (what model/cpu.ts and model/gpu.ts compute with these
// options): x = embed_tokens[tok]; per layer
//   h = RMSNorm(x) * input_layernorm;  q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)
//   (qwen3: q, k = RMSNorm over each head's hs values * q_norm, k_norm)
//   q, k = RoPE(q, k) (rotate-half, base rope_theta);  a = causal softmax(q k^T / sqrt(hs)) v,
//   query head h reading key/value head h / (NH/KVH) (grouped-query attention)
//   x = x + a Wo^T;  h = RMSNorm(x) * post_attention_layernorm
//   x = x + down(silu(gate(h)) * up(h));  then logits = RMSNorm(x) * norm @ lm_head^T
// (lm_head = embed_tokens when tie_word_embeddings). Qwen2 has biases on q, k, v only.
//
// Fields that do not change this computation are ignored (real configs carry many); a value that
// would change it and is not supported is an error naming config.json and the field.
// Tested by model/hf/read.test.ts (configs and their errors) and model/untrusted.test.ts (limits).
import { type LoraConfig, type ModelConfig, modelConfig } from "../config";

export const HF_FAMILIES = ["llama", "qwen2", "qwen3"] as const;
export type HfFamily = (typeof HF_FAMILIES)[number];

export interface HfOptions {
  /**
   * Longest sequence the lab uses (KV caches and positions are sized to it). Default: the
   * config's max_position_embeddings capped at 2048 (real models allow 32k+, which the caches
   * of a browser tab cannot hold).
   */
  context?: number;
  /** Add the lab's value head (PPO's critic), initialised to zero. Default false. */
  valueHead?: boolean;
  /** LoRA on the loaded base (ModelConfig.lora). Default: none. */
  lora?: Partial<LoraConfig>;
  /** Storage of the frozen base's linear weights (ModelConfig.baseDtype; f16 needs LoRA). Default f32. */
  baseDtype?: ModelConfig["baseDtype"];
}

export const HF_DEFAULT_CONTEXT = 2048;

type Json = Record<string, unknown>;

/**
 * The largest value config.json may give each size (config.json is untrusted input: an absurd
 * size is refused here, before the memory plan or any buffer is sized by it). Generous: the
 * largest published models of these families are far below each (Llama 3.1 405B: 126 layers,
 * width 16,384, MLP 53,248; vocabularies up to 262,144).
 */
export const HF_CONFIG_MAX: Readonly<Record<string, number>> = {
  num_hidden_layers: 1024,
  hidden_size: 65_536,
  num_attention_heads: 1024,
  num_key_value_heads: 1024,
  head_dim: 1024,
  intermediate_size: 262_144,
  vocab_size: 1 << 21,
  max_position_embeddings: 2 ** 31 - 1,
};

/**
 * A value as an error shows it: a number as written (1e999 parses to Infinity, which JSON would
 * show as null), anything else as JSON cut to 80 characters.
 */
function shown(v: unknown): string {
  if (typeof v === "number") return String(v);
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Readers of config.json's fields that refuse a bad value with an error naming the file and field. */
function fieldReader(j: Json, file: string) {
  const bad = (field: string, why: string): never => {
    throw new Error(`${file}: ${field} ${why}`);
  };
  const int = (field: string, dflt?: number): number => {
    const v = j[field] ?? dflt;
    if (v === undefined) return bad(field, "is missing");
    if (!Number.isInteger(v) || (v as number) <= 0)
      return bad(field, `must be a positive integer, got ${shown(v)}`);
    const max = HF_CONFIG_MAX[field];
    if (max !== undefined && (v as number) > max)
      return bad(field, `is ${v}; the lab reads at most ${max} (no real model of these families is larger)`);
    return v as number;
  };
  const num = (field: string, dflt: number): number => {
    const v = j[field] ?? dflt;
    if (typeof v !== "number" || !(v > 0) || !Number.isFinite(v))
      return bad(field, `must be a positive number, got ${shown(v)}`);
    return v;
  };
  const flag = (field: string, dflt: boolean): boolean => {
    const v = j[field] ?? dflt;
    if (typeof v !== "boolean") return bad(field, `must be true or false, got ${shown(v)}`);
    return v;
  };
  /** A field whose only supported value is `ok(v)` (absent or null counts as the default). */
  const only = (field: string, ok: (v: unknown) => boolean, supported: string) => {
    const v = j[field];
    if (v !== undefined && v !== null && !ok(v))
      bad(field, `is ${JSON.stringify(v)}; only ${supported} is supported`);
  };
  return { bad, int, num, flag, only };
}

type FieldReader = ReturnType<typeof fieldReader>;

/** Refuses the options the lab's model does not implement (activation, RoPE variants, sliding windows, dropout, quantization). */
function refuseUnsupported({ only }: FieldReader): void {
  only("hidden_act", (v) => v === "silu", '"silu"');
  only("rope_scaling", (v) => isDefaultRope(v), "null (no RoPE scaling)");
  only("rope_interleaved", (v) => v === false, "false (rotate-half RoPE)");
  only("partial_rotary_factor", (v) => v === 1, "1 (RoPE on the whole head)");
  only("use_sliding_window", (v) => v === false, "false (full attention in every layer)");
  only("use_mrope", (v) => v === false, "false");
  only("attention_dropout", (v) => v === 0, "0");
  only("quantization_config", () => false, "none (unquantized weights)");
  only("mlp_dropout", (v) => v === 0, "0");
  only(
    "layer_types",
    (v) => Array.isArray(v) && v.every((t) => t === "full_attention"),
    '"full_attention" in every layer',
  );
}

/** rope_theta, from the top level or from rope_parameters (where transformers >= 5 moves it). */
function ropeThetaOf(j: Json, { bad, num }: FieldReader): number {
  let ropeTheta = num("rope_theta", 10000);
  const rp = j.rope_parameters;
  if (rp !== undefined && rp !== null) {
    if (!isDefaultRope(rp))
      bad("rope_parameters", `is ${JSON.stringify(rp)}; only rope_type "default" is supported`);
    const t = (rp as Json).rope_theta;
    if (t !== undefined) {
      if (typeof t !== "number" || !(t > 0)) bad("rope_parameters.rope_theta", "must be a positive number");
      ropeTheta = t as number;
    }
  }
  return ropeTheta;
}

/** The ModelConfig of a Hugging Face config.json (parsed), or an error naming the field. */
export function hfModelConfig(json: unknown, file = "config.json", opts: HfOptions = {}): ModelConfig {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new Error(`${file}: not a JSON object`);
  const j = json as Json;
  const f = fieldReader(j, file);
  const { bad, int, num, flag } = f;
  const family = j.model_type;
  if (!HF_FAMILIES.includes(family as HfFamily)) {
    bad("model_type", `is ${JSON.stringify(family)}; supported are ${HF_FAMILIES.join(", ")}`);
  }

  const dModel = int("hidden_size");
  const heads = int("num_attention_heads");
  const kvHeads = int("num_key_value_heads", heads);
  const headDim = int("head_dim", dModel % heads === 0 ? dModel / heads : undefined);
  if (heads % kvHeads !== 0)
    bad("num_key_value_heads", `(${kvHeads}) must divide num_attention_heads (${heads})`);
  if (headDim % 2 !== 0) bad("head_dim", `(${headDim}) must be even for RoPE`);

  refuseUnsupported(f);
  const ropeTheta = ropeThetaOf(j, f);

  const maxPos = int("max_position_embeddings", HF_DEFAULT_CONTEXT);
  const context = opts.context ?? Math.min(maxPos, HF_DEFAULT_CONTEXT);
  if (!Number.isInteger(context) || context <= 0 || context > maxPos)
    throw new Error(
      `${file}: context ${context} must be a positive integer <= max_position_embeddings (${maxPos})`,
    );

  // Which linears carry biases: Qwen2 always q, k, v; Llama and Qwen3 q, k, v and o with attention_bias.
  const attnBias = family === "qwen2" ? false : flag("attention_bias", false);
  const qkvBias = family === "qwen2" ? true : attnBias;
  const mlpBias = family === "llama" ? flag("mlp_bias", false) : false;

  return modelConfig({
    layers: int("num_hidden_layers"),
    dModel,
    heads,
    kvHeads,
    headDim,
    context,
    vocab: int("vocab_size"),
    norm: "rmsnorm",
    mlp: "swiglu",
    mlpSize: int("intermediate_size"),
    qkvBias,
    projBias: attnBias,
    mlpBias,
    qkNorm: family === "qwen3",
    positional: "rope",
    tiedEmbeddings: flag("tie_word_embeddings", false),
    valueHead: opts.valueHead ?? false,
    normEps: num("rms_norm_eps", 1e-6),
    ropeTheta,
    ...(opts.lora ? { lora: opts.lora as LoraConfig } : {}),
    ...(opts.baseDtype ? { baseDtype: opts.baseDtype } : {}),
  });
}

function isDefaultRope(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return false;
  const t = (v as Json).rope_type ?? (v as Json).type;
  return t === "default";
}
