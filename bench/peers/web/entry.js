// The transformers.js side of the peers bench's decode row (bench/peers-tjs.ts bundles this file
// with Vite from this folder, where npm run peers:setup installed transformers.js): greedy KV-cache
// generation with the lab-made model exported to ONNX (bench/peers/export_onnx.py) on
// onnxruntime-web's WebGPU backend, every file served by the bench's own server (no CDN, no Hub).
// Exposes globalThis.tjsDecode({ model, prompt, n }).
import { AutoModelForCausalLM, env, Tensor } from "@huggingface/transformers";

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = "/";
env.useBrowserCache = false;
env.backends.onnx.wasm.wasmPaths = "/ort/";
env.backends.onnx.wasm.proxy = false;

const loaded = new Map();

async function modelOf(name) {
  if (!loaded.has(name)) {
    loaded.set(name, await AutoModelForCausalLM.from_pretrained(name, { device: "webgpu", dtype: "fp32" }));
  }
  return loaded.get(name);
}

/** Greedy tokens after the prompt, and the seconds generate() took for them. */
async function generate(model, prompt, n) {
  const ids = new Tensor("int64", BigInt64Array.from(prompt.map(BigInt)), [1, prompt.length]);
  const t = performance.now();
  const out = await model.generate({
    input_ids: ids,
    max_new_tokens: n,
    min_new_tokens: n,
    do_sample: false,
  });
  const s = (performance.now() - t) / 1000;
  const all = Array.from(out.data, Number);
  return { s, tokens: all.slice(prompt.length) };
}

/**
 * One rep: generate() of 1 token (the prompt's prefill and a first decode) and of 1 + n; their
 * difference is n decodes. Returns those seconds and the 1 + n greedy tokens.
 */
globalThis.tjsDecode = async ({ model: name, prompt, n }) => {
  const model = await modelOf(name);
  const one = await generate(model, prompt, 1);
  const many = await generate(model, prompt, 1 + n);
  return { s: many.s - one.s, tokens: many.tokens, adapter: "onnxruntime-web webgpu" };
};
