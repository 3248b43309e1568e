// A stored run's trained weights in Hugging Face formats, built in the trainer worker: the page
// asks for one zip (TrainerApi.exportWeights) and only saves the Blob, so checkpoints and the
// weights writer never load on the main thread. kind "peft": the LoRA adapter
// (adapter_config.json + adapter_model.safetensors); "hf": the model with the adapter merged
// (config.json + model.safetensors) and the source model's tokenizer, chat template and
// generation files copied through from the model cache (model/hf/write.ts).
// Tested by e2e/runs.e2e.test.ts (both kinds of a stored LoRA run, read back with python3).
import type { RunConfig } from "../config";
import { zipFiles } from "../export/zip";
import { loadCheckpoint } from "../model/checkpoint";
import {
  type HfSource,
  hfFiles,
  hfSourceOf,
  peftFiles,
  TOKENIZER_FILES,
  tokenizerFiles,
  tokenizerSource,
} from "../model/hf/write";

export type WeightsKind = "peft" | "hf";

/**
 * The page's PEFT base for a run: a Hub id as it is, a picked folder by its name (its README says
 * so), and a preset's model, which the page serves from the lab's public/ folder, as the lab's
 * repository holds it ("public/models/lab-llama": what `npm run export -- peft` writes from the
 * repository's root), not by the page's URL path, which nothing outside the page loads.
 */
export function peftSource(config: RunConfig): HfSource | null {
  const src = hfSourceOf(config);
  if (!src || src.picked || config.model.pretrained?.startsWith("hf:")) return src;
  return { ...src, served: src.name, name: `public/${src.name}` };
}

/**
 * The zip of a run's checkpoint (`weights`, a safetensors checkpoint) as `kind`; `read(root,
 * name)` is a file of the run's model folder or null. Throws, for the page to show, when the run
 * has no checkpoint yet, has no adapter for "peft", or its model has no Hugging Face architecture.
 */
export async function weightsZip(
  config: RunConfig,
  weights: Uint8Array | undefined,
  kind: WeightsKind,
  read: (root: string, name: string) => Promise<Uint8Array | null>,
): Promise<Blob> {
  if (!weights) throw new Error("the run has no checkpoint yet");
  const ck = loadCheckpoint(weights);
  let files: Record<string, Uint8Array>;
  // A pretrained run's source: the adapter's base_model_name_or_path, the merged model's config.json.
  const src = hfSourceOf(config);
  if (kind === "peft") {
    if (!ck.adapter)
      throw new Error("the run trains every weight (model.lora.rank 0): download the HF model");
    files = peftFiles(ck.config, ck.adapter, peftSource(config) ?? undefined);
  } else {
    const pretrained = config.model.pretrained;
    if (src && pretrained) {
      const bytes = await read(pretrained, "config.json");
      if (!bytes) throw new Error(`${pretrained}: the source model's config.json is not here`);
      src.config = JSON.parse(new TextDecoder().decode(bytes));
    }
    files = hfFiles(ck.config, ck.weights, ck.adapter ?? null, { source: src ?? undefined });
    const source = tokenizerSource(config);
    if (source) {
      const found: Record<string, Uint8Array> = {};
      for (const n of TOKENIZER_FILES) {
        const bytes = await read(source, n);
        if (bytes) found[n] = bytes;
      }
      Object.assign(files, (await tokenizerFiles(source, async (n) => found[n] ?? null)).files);
    }
  }
  return new Blob([zipFiles(files) as BlobPart], { type: "application/zip" });
}
