// A trained model leaving in Hugging Face formats: the LoRA adapter as PEFT files
// (adapter_config.json + adapter_model.safetensors, PEFT's tensor names) and the model with the
// adapter merged in the transformers layout (config.json + model.safetensors). Also the
// reverse (importGpt2) so a merged export can be read back and scored.
//
// The lab's tiny models have one Hugging Face architecture: pre-LayerNorm + GELU(tanh) +
// learned positions + tied head is GPT-2 (GPT2LMHeadModel, activation "gelu_new"), whose
// linears are Conv1D modules with (in, out) weights: every lab (out, in) weight is transposed.
// Other tiny variants are refused with the field named (gpt2Check).
// LoRA in PEFT terms: GPT-2's c_attn fuses q, k and v, and the lab's q/k/v adapters are
// separate, so on c_attn they are written as ONE adapter of rank k*r (k targets among q, k, v):
// lora_A stacks the k A's (k*r, C), lora_B is block diagonal (3C, k*r) with B_q in q's rows and
// columns, zeros elsewhere; rank_pattern/alpha_pattern give c_attn r' = k*r and alpha' = k*alpha
// so PEFT's scale alpha'/r' stays alpha/r. fan_in_fan_out is true (Conv1D), which changes only
// how PEFT merges (it transposes B A), not the lora_A (r, in) / lora_B (out, r) shapes.
// Used by cli/export.ts (peft|hf) and the page's download. Tested by export/hf.test.ts with a
// PyTorch GPT-2 forward written from the architecture (model/golden/make_gpt2_golden.py).
import type { ModelConfig } from "../model/config";
import { mlpHidden, modelConfig, paramLayout } from "../model/config";
import { type LoraLayout, type LoraTarget, loraLayout } from "../model/lora";

// ---------------------------------------------------------------------------------------
// safetensors (F32 only: every lab tensor is f32)

export interface NamedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export function writeSafetensors(tensors: NamedTensor[], metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let bytes = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length)
      throw new Error(`safetensors: ${t.name} has ${t.data.length} values, shape [${t.shape}]`);
    header[t.name] = { dtype: "F32", shape: t.shape, data_offsets: [bytes, bytes + 4 * n] };
    bytes += 4 * n;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + new TextEncoder().encode(json).length) % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + bytes);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const t of tensors) {
    for (let i = 0; i < t.data.length; i++) dv.setFloat32(at + 4 * i, t.data[i], true);
    at += 4 * t.data.length;
  }
  return out;
}

export function readSafetensors(bytes: Uint8Array, what = "safetensors"): Map<string, NamedTensor> {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = Number(dv.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len))) as Record<string, unknown>;
  const out = new Map<string, NamedTensor>();
  for (const [name, e] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const { dtype, shape, data_offsets } = e as {
      dtype: string;
      shape: number[];
      data_offsets: [number, number];
    };
    if (dtype !== "F32") throw new Error(`${what}: tensor ${name} is ${dtype}; this reader takes F32`);
    const n = shape.reduce((a, b) => a * b, 1);
    const at = 8 + len + data_offsets[0];
    out.set(name, {
      name,
      shape,
      data: Float32Array.from({ length: n }, (_, i) => dv.getFloat32(at + 4 * i, true)),
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Merging and the GPT-2 mapping

/** W' = W + (alpha/r) B A on every target's rows of its fused weight; the base layout's buffer. */
export function mergeLora(config: ModelConfig, weights: Float32Array, adapter: Float32Array): Float32Array {
  const layout = paramLayout(config);
  const lora = loraLayout(config, config.lora);
  if (adapter.length !== lora.total)
    throw new Error(`merge: adapter has ${adapter.length} floats, layout ${lora.total}`);
  const out = Float32Array.from(weights);
  const r = lora.rank;
  lora.layers.forEach((specs, l) => {
    const lo = layout.layers[l];
    for (const s of specs) {
      const w = lo[s.weight]; // (outStride, inDim)
      for (let i = 0; i < s.rows; i++) {
        for (let c = 0; c < s.inDim; c++) {
          let acc = 0;
          for (let k = 0; k < r; k++) acc += adapter[s.b + i * r + k] * adapter[s.a + k * s.inDim + c];
          out[w + (s.rowStart + i) * s.inDim + c] += lora.scale * acc;
        }
      }
    }
  });
  return out;
}

/** Refuses a tiny variant without a GPT-2 counterpart, naming the RunConfig field. */
export function gpt2Check(c: ModelConfig): void {
  const need: [boolean, string][] = [
    [c.norm === "layernorm", `model.norm is ${c.norm}; GPT-2 has layernorm`],
    [c.mlp === "gelu", `model.mlp is ${c.mlp}; GPT-2 has gelu`],
    [c.positional === "learned", `model.positional is ${c.positional}; GPT-2 has learned positions`],
    [c.tiedEmbeddings, "model.tied_embeddings is false; GPT-2 ties its head to wte"],
    [!c.valueHead, "the value head (rl.advantage gae) has no place in GPT2LMHeadModel"],
  ];
  for (const [ok, why] of need) {
    if (!ok)
      throw new Error(`export: the only Hugging Face architecture of the lab's tiny models is GPT-2: ${why}`);
  }
}

/** (rows, cols) row-major -> (cols, rows): the lab's (out, in) Linear weight as a Conv1D (in, out). */
function transpose(src: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = src[i * cols + j];
  return out;
}

/** config.json of GPT2LMHeadModel for this tiny model. */
export function gpt2ConfigJson(c: ModelConfig): Record<string, unknown> {
  gpt2Check(c);
  return {
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    vocab_size: c.vocab,
    n_positions: c.context,
    n_embd: c.dModel,
    n_layer: c.layers,
    n_head: c.heads,
    n_inner: mlpHidden(c),
    activation_function: "gelu_new",
    layer_norm_epsilon: c.normEps,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    scale_attn_weights: true,
    tie_word_embeddings: true,
    torch_dtype: "float32",
  };
}

/** The model (adapter merged when given) as config.json + model.safetensors in GPT-2's layout. */
export function hfGpt2Files(
  config: ModelConfig,
  weights: Float32Array,
  adapter: Float32Array | null,
): Record<string, Uint8Array> {
  gpt2Check(config);
  const merged = adapter ? mergeLora(config, weights, adapter) : weights;
  const base = modelConfig({ ...config, lora: { ...config.lora, rank: 0 } });
  const layout = paramLayout(base);
  const tensors: NamedTensor[] = [];
  for (const t of layout.tensors) {
    const data = merged.subarray(t.offset, t.offset + t.size);
    const linear = t.shape.length === 2 && /\.(c_attn|c_proj|c_fc)\.weight$/.test(t.name);
    tensors.push(
      linear
        ? {
            name: `transformer.${t.name}`,
            shape: [t.shape[1], t.shape[0]],
            data: transpose(data, t.shape[0], t.shape[1]),
          }
        : { name: `transformer.${t.name}`, shape: t.shape, data: Float32Array.from(data) },
    );
  }
  const text = (o: unknown) => new TextEncoder().encode(`${JSON.stringify(o, null, 2)}\n`);
  return {
    "config.json": text(gpt2ConfigJson(base)),
    "model.safetensors": writeSafetensors(tensors, { format: "pt" }),
  };
}

/** Reads a GPT-2 export back into the lab's config and layout (Conv1D weights transposed back). */
export function importGpt2(
  configJson: Record<string, unknown>,
  safetensors: Uint8Array,
): { config: ModelConfig; weights: Float32Array } {
  if (configJson.model_type !== "gpt2")
    throw new Error(`import: model_type ${configJson.model_type}, expected gpt2`);
  const num = (k: string) => {
    const v = configJson[k];
    if (typeof v !== "number") throw new Error(`import: config.json ${k} must be a number`);
    return v;
  };
  const C = num("n_embd");
  const config = modelConfig({
    layers: num("n_layer"),
    dModel: C,
    heads: num("n_head"),
    context: num("n_positions"),
    vocab: num("vocab_size"),
    mlpRatio: (configJson.n_inner as number | null | undefined) ? num("n_inner") / C : 4,
    normEps: num("layer_norm_epsilon"),
  });
  const layout = paramLayout(config);
  const file = readSafetensors(safetensors, "model.safetensors");
  const weights = new Float32Array(layout.total);
  for (const t of layout.tensors) {
    const e = file.get(`transformer.${t.name}`);
    if (!e) throw new Error(`import: model.safetensors lacks transformer.${t.name}`);
    const linear = t.shape.length === 2 && /\.(c_attn|c_proj|c_fc)\.weight$/.test(t.name);
    const want = linear ? [t.shape[1], t.shape[0]] : t.shape;
    if (e.shape.join(",") !== want.join(","))
      throw new Error(`import: transformer.${t.name} has shape [${e.shape}], expected [${want}]`);
    weights.set(linear ? transpose(e.data, want[0], want[1]) : e.data, t.offset);
  }
  return { config, weights };
}

// ---------------------------------------------------------------------------------------
// PEFT

/** GPT-2 module (under transformer.h.N.) of each lab target. */
const GPT2_MODULE: Record<Exclude<LoraTarget, "gate_proj">, string> = {
  q_proj: "attn.c_attn",
  k_proj: "attn.c_attn",
  v_proj: "attn.c_attn",
  o_proj: "attn.c_proj",
  up_proj: "mlp.c_fc",
  down_proj: "mlp.c_proj",
};

/** The adapter as PEFT files for a GPT-2 base (names base_model.model.transformer.h.N.<module>.lora_A.weight). */
export function peftGpt2Files(
  config: ModelConfig,
  adapter: Float32Array,
  baseModel = "the GPT-2 export of this run (npm run export -- hf)",
): Record<string, Uint8Array> {
  gpt2Check(config);
  const lora: LoraLayout = loraLayout(config, config.lora);
  if (lora.rank === 0) throw new Error("export peft: the run has no LoRA adapter (model.lora.rank is 0)");
  if (adapter.length !== lora.total)
    throw new Error(`export peft: adapter has ${adapter.length} floats, layout ${lora.total}`);
  const r = lora.rank;
  const tensors: NamedTensor[] = [];
  const modules = new Set<string>();
  const ranks: Record<string, number> = {};
  lora.layers.forEach((specs, l) => {
    const byModule = new Map<string, typeof specs>();
    for (const s of specs) {
      const m = GPT2_MODULE[s.target as Exclude<LoraTarget, "gate_proj">];
      byModule.set(m, [...(byModule.get(m) ?? []), s]);
    }
    for (const [m, ss] of byModule) {
      modules.add(m);
      const k = ss.length;
      const inDim = ss[0].inDim;
      const outDim = ss[0].outStride;
      const A = new Float32Array(k * r * inDim); // (k r, in)
      const Bm = new Float32Array(outDim * k * r); // (out, k r), block diagonal
      ss.forEach((s, j) => {
        A.set(adapter.subarray(s.a, s.a + r * inDim), j * r * inDim);
        for (let i = 0; i < s.rows; i++)
          for (let q = 0; q < r; q++) Bm[(s.rowStart + i) * k * r + j * r + q] = adapter[s.b + i * r + q];
      });
      if (k > 1) ranks[m] = k;
      const p = `base_model.model.transformer.h.${l}.${m}`;
      tensors.push({ name: `${p}.lora_A.weight`, shape: [k * r, inDim], data: A });
      tensors.push({ name: `${p}.lora_B.weight`, shape: [outDim, k * r], data: Bm });
    }
  });
  const rankPattern: Record<string, number> = {};
  const alphaPattern: Record<string, number> = {};
  for (const [m, k] of Object.entries(ranks)) {
    rankPattern[m] = k * r;
    alphaPattern[m] = k * lora.alpha;
  }
  const adapterConfig = {
    peft_type: "LORA",
    task_type: "CAUSAL_LM",
    base_model_name_or_path: baseModel,
    r,
    lora_alpha: lora.alpha,
    lora_dropout: 0,
    target_modules: [...modules].sort(),
    fan_in_fan_out: true,
    bias: "none",
    rank_pattern: rankPattern,
    alpha_pattern: alphaPattern,
    use_rslora: false,
    use_dora: false,
    modules_to_save: null,
    init_lora_weights: true,
    inference_mode: true,
  };
  return {
    "adapter_config.json": new TextEncoder().encode(`${JSON.stringify(adapterConfig, null, 2)}\n`),
    "adapter_model.safetensors": writeSafetensors(tensors, { format: "pt" }),
  };
}
