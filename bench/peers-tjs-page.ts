// The lab's side of the peers bench's transformers.js row (bench/peers-tjs.ts bundles it with
// Vite, loaded in headless Chromium beside bench/peers/web/entry.js): the lab-made model read
// from its Hugging Face folder (config.json, model.safetensors) as the page reads any model, then
// greedy KV-cache decoding at batch 1 the way a rollout decodes (decodeMany: a window of tokens a
// submit), and the same tokens one decode() each. Exposes globalThis.labDecode({ model, prompt, n }).
import { browserGpu, createGpu } from "../kernels/device";
import { GpuModel } from "../model/gpu";
import { blobModelDir, loadHfModel } from "../model/hf/read";

let made: { model: GpuModel; adapter: string } | null = null;

async function modelOf(name: string): Promise<{ model: GpuModel; adapter: string }> {
  if (made) return made;
  const files = new Map<string, Blob>();
  for (const f of ["config.json", "model.safetensors"]) {
    const r = await fetch(`/${name}/${f}`);
    if (!r.ok) throw new Error(`/${name}/${f}: HTTP ${r.status}`);
    files.set(f, await r.blob());
  }
  const { config, weights } = await loadHfModel(blobModelDir(name, files));
  const gpu = await createGpu(await browserGpu());
  const model = await GpuModel.create(gpu.device, config, weights, 1);
  const info = gpu.adapter;
  made = { model, adapter: `${info.description || info.vendor}${info.isFallback ? " (software)" : ""}` };
  return made;
}

/** One rep: the prompt's prefill and a first token untimed, then n greedy tokens timed. */
async function labDecode(spec: { model: string; prompt: number[]; n: number }) {
  const { model, adapter } = await modelOf(spec.model);
  const gen = model.startGeneration({ temperature: 0, seed: 1 });
  await gen.prefill([spec.prompt]);
  const first = await gen.decode([true]);
  if (!gen.decodeMany) throw new Error("the lab's generation session has no decodeMany");
  const t = performance.now();
  const run = await gen.decodeMany([true], spec.n, () => false);
  const s = (performance.now() - t) / 1000;
  gen.finish();
  // the same n tokens one decode() (one submit and readback) each, as transformers.js reads every token back
  const step = model.startGeneration({ temperature: 0, seed: 1 });
  await step.prefill([spec.prompt]);
  await step.decode([true]);
  const t1 = performance.now();
  for (let i = 0; i < spec.n; i++) await step.decode([true]);
  const sStep = (performance.now() - t1) / 1000;
  step.finish();
  return { s, sStep, tokens: [first.tokens[0], ...run.tokens[0]], adapter, plan: model.rt.plan.name };
}

(globalThis as { labDecode?: typeof labDecode }).labDecode = labDecode;
