// Hugging Face checkpoints of the Llama family (model_type llama: Llama, SmolLM2; qwen2:
// Qwen2/Qwen2.5; qwen3: Qwen3) as the lab's one model: config.json through model/hf/config.ts,
// the parameter-name map onto the flat layout, and a loader that reads safetensors (single file or
// sharded with model.safetensors.index.json) tensor by tensor, in bounded pieces, into the layout.
//
// Tested by model/hf/read.test.ts (configs, names, bad files) and the golden tests of each family.
import {
  type AttnDims,
  attnDims,
  type ModelConfig,
  mlpHidden,
  type ParamLayout,
  paramLayout,
} from "../config";
import { checkFileSize } from "../file-caps";
import {
  type ByteSource,
  blobSource,
  openSafetensors,
  readableEntry,
  readTensorChunks,
  type SafetensorsFile,
} from "../safetensors";
import { type HfOptions, hfModelConfig } from "./config";

type Json = Record<string, unknown>;

/** A directory of model files: config.json, *.safetensors, the shard index. */
export interface ModelDir {
  /** For error messages (a path, a repo id). */
  readonly name: string;
  /** The file at `path` in the directory, or null when there is none. */
  open(path: string): Promise<ByteSource | null>;
}

/** A ModelDir over Blobs or Files (the browser's picked files; tests' bytes). */
export function blobModelDir(name: string, files: Map<string, Blob>): ModelDir {
  return {
    name,
    open: async (path) => {
      const b = files.get(path);
      return b ? blobSource(b, `${name}/${path}`) : null;
    },
  };
}

// ---------------------------------------------------------------------------------------
// Parameter names

/** One Hugging Face tensor and where it lands in the flat layout (a contiguous range). */
export interface HfTensor {
  name: string;
  shape: number[];
  /** Offset in floats into the flat buffer. */
  offset: number;
  size: number;
}

/**
 * Every tensor the checkpoint must hold for this config, in file order of a typical export.
 * q, k, v land in consecutive rows of c_attn, gate and up in those of c_fc.
 */
export function hfTensors(c: ModelConfig, layout: ParamLayout = paramLayout(c)): HfTensor[] {
  const C = c.dModel;
  const H = mlpHidden(c);
  const { hs, Q, KV }: AttnDims = attnDims(c);
  const out: HfTensor[] = [];
  const add = (name: string, shape: number[], offset: number) => {
    if (offset < 0) throw new Error(`hfTensors: the layout has no tensor for ${name}`);
    out.push({ name, shape, offset, size: shape.reduce((a, b) => a * b, 1) });
  };
  add("model.embed_tokens.weight", [c.vocab, C], layout.wte);
  layout.layers.forEach((o, l) => {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, [C], o.ln1w);
    add(`${p}self_attn.q_proj.weight`, [Q, C], o.qkvw);
    add(`${p}self_attn.k_proj.weight`, [KV, C], o.qkvw + Q * C);
    add(`${p}self_attn.v_proj.weight`, [KV, C], o.qkvw + (Q + KV) * C);
    if (c.qkvBias) {
      add(`${p}self_attn.q_proj.bias`, [Q], o.qkvb);
      add(`${p}self_attn.k_proj.bias`, [KV], o.qkvb + Q);
      add(`${p}self_attn.v_proj.bias`, [KV], o.qkvb + Q + KV);
    }
    if (c.qkNorm) {
      add(`${p}self_attn.q_norm.weight`, [hs], o.qnormw);
      add(`${p}self_attn.k_norm.weight`, [hs], o.knormw);
    }
    add(`${p}self_attn.o_proj.weight`, [C, Q], o.projw);
    if (c.projBias) add(`${p}self_attn.o_proj.bias`, [C], o.projb);
    add(`${p}post_attention_layernorm.weight`, [C], o.ln2w);
    add(`${p}mlp.gate_proj.weight`, [H, C], o.fcw);
    add(`${p}mlp.up_proj.weight`, [H, C], o.fcw + H * C);
    add(`${p}mlp.down_proj.weight`, [C, H], o.fcprojw);
    if (c.mlpBias) {
      add(`${p}mlp.gate_proj.bias`, [H], o.fcb);
      add(`${p}mlp.up_proj.bias`, [H], o.fcb + H);
      add(`${p}mlp.down_proj.bias`, [C], o.fcprojb);
    }
  });
  add("model.norm.weight", [C], layout.lnfw);
  if (!c.tiedEmbeddings) add("lm_head.weight", [c.vocab, C], layout.lmHead);
  return out;
}

// ---------------------------------------------------------------------------------------
// Loading

const INDEX = "model.safetensors.index.json";
const SINGLE = "model.safetensors";

async function readText(src: ByteSource): Promise<string> {
  checkFileSize(src.name, src.size);
  return new TextDecoder().decode(await src.read(0, src.size));
}

async function readJson(dir: ModelDir, path: string): Promise<unknown> {
  const src = await dir.open(path);
  if (!src) throw new Error(`${dir.name}: no ${path}`);
  try {
    return JSON.parse(await readText(src));
  } catch (e) {
    throw new Error(`${src.name}: not valid JSON (${(e as Error).message})`);
  }
}

/** The ModelConfig of the directory's config.json. */
export async function readHfConfig(dir: ModelDir, opts: HfOptions = {}): Promise<ModelConfig> {
  return hfModelConfig(await readJson(dir, "config.json"), `${dir.name}/config.json`, opts);
}

/** tensor name -> file holding it: the shard index's weight_map, else everything in model.safetensors. */
async function weightFiles(dir: ModelDir): Promise<(name: string) => string> {
  const index = await dir.open(INDEX);
  if (!index) {
    if (!(await dir.open(SINGLE))) throw new Error(`${dir.name}: neither ${SINGLE} nor ${INDEX}`);
    return () => SINGLE;
  }
  let map: unknown;
  try {
    map = (JSON.parse(await readText(index)) as Json).weight_map;
  } catch (e) {
    throw new Error(`${index.name}: not valid JSON (${(e as Error).message})`);
  }
  if (typeof map !== "object" || map === null || Array.isArray(map))
    throw new Error(`${index.name}: no weight_map`);
  const m = map as Record<string, unknown>;
  for (const [tensor, file] of Object.entries(m)) checkShardName(file, tensor, index.name);
  return (name) => {
    const f = m[name];
    if (typeof f !== "string") throw new Error(`${index.name}: weight_map names no file for tensor ${name}`);
    return f;
  };
}

/**
 * A shard the index names must be a safetensors file beside the index: no folder, no `..`, no
 * absolute path, not the index itself (the name is opened in the model's folder or cache).
 */
export function checkShardName(file: unknown, tensor: string, indexName = INDEX): string {
  if (
    typeof file !== "string" ||
    !/^[A-Za-z0-9_][A-Za-z0-9._-]*\.safetensors$/.test(file) ||
    file.includes("..") ||
    file === INDEX
  )
    throw new Error(
      `${indexName}: weight_map names ${JSON.stringify(file)} for tensor ${tensor}; a shard must be a *.safetensors file name beside the index (no folders, "..", or absolute paths)`,
    );
  return file;
}

/** Values read per piece of a tensor (16 MB as float32): Qwen2.5-0.5B's embedding alone is 545 MB. */
export const HF_READ_CHUNK = 1 << 22;

/**
 * Reads every tensor of the config from the directory's safetensors, one at a time (a large one
 * in pieces of `chunk` values), checking its shape, and hands each piece to `write(offset, data)`
 * (offset in floats into the flat layout; a piece never crosses a tensor's end): the CPU copies
 * it into its array, the GPU uploads it into its parameter buffer. Host memory peaks near one
 * piece. Tensors the config does not use (a stored lm_head of a tied model, rotary caches) are
 * skipped, and so are those `only` (when given) refuses (a second pass over some tensors).
 */
export async function loadHfWeights(
  dir: ModelDir,
  config: ModelConfig,
  write: (offset: number, data: Float32Array) => void | Promise<void>,
  chunk = HF_READ_CHUNK,
  only?: (t: HfTensor) => boolean,
): Promise<void> {
  for (const { t, file } of await openHfTensors(dir, config, only))
    await readTensorChunks(file, t.name, chunk, (start, data) => write(t.offset + start, data));
}

/**
 * Every tensor of the config (those `only` keeps) with the safetensors file holding it, its
 * shape and dtype checked against the config: the headers are read, no tensor data. A model's
 * files are checked with this before anything is loaded (model/untrusted.ts).
 */
export async function openHfTensors(
  dir: ModelDir,
  config: ModelConfig,
  only?: (t: HfTensor) => boolean,
): Promise<{ t: HfTensor; file: SafetensorsFile }[]> {
  const fileOf = await weightFiles(dir);
  const opened = new Map<string, SafetensorsFile>();
  const open = async (path: string): Promise<SafetensorsFile> => {
    let f = opened.get(path);
    if (!f) {
      const src = await dir.open(path);
      if (!src) throw new Error(`${dir.name}: no ${path} (named by ${INDEX})`);
      f = await openSafetensors(src);
      opened.set(path, f);
    }
    return f;
  };
  const out: { t: HfTensor; file: SafetensorsFile }[] = [];
  for (const t of hfTensors(config)) {
    if (only && !only(t)) continue;
    const file = await open(fileOf(t.name));
    const e = file.tensors.get(t.name);
    if (!e) throw new Error(`${file.source.name}: missing tensor ${t.name}`);
    if (e.shape.join(",") !== t.shape.join(","))
      throw new Error(
        `${file.source.name}: tensor ${t.name} has shape [${e.shape}], config.json needs [${t.shape}]`,
      );
    readableEntry(file, t.name);
    out.push({ t, file });
  }
  return out;
}

/** config.json and the weights as one flat Float32Array of the layout (the CPU model's way). */
export async function loadHfModel(
  dir: ModelDir,
  opts: HfOptions = {},
): Promise<{ config: ModelConfig; weights: Float32Array }> {
  const config = await readHfConfig(dir, opts);
  const layout = paramLayout(config);
  const weights = new Float32Array(layout.total);
  await loadHfWeights(dir, config, (offset, data) => weights.set(data, offset));
  return { config, weights };
}
