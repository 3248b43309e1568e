// The page's weight downloads name a base PEFT can load: a preset's model (served from the lab's
// public/ folder) as the lab's repository holds it, the same base `npm run export -- peft` writes
// from the repository's root (model/hf/export-pretrained.test.ts), with the README saying where
// the page served it; a Hub id as it is; a picked folder by its name, the README saying so.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { modelConfig } from "../model/config";
import { nodeModelDir } from "../model/hf/node";
import { readHfConfig } from "../model/hf/read";
import { peftFiles } from "../model/hf/write";
import { loraLayout } from "../model/lora";
import { peftSource } from "./weights-export";

const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

describe("the page's PEFT download", () => {
  it("names a preset's model by its folder in the lab's repository, which loads", async () => {
    const config = mergeConfig(defaultRunConfig(), {
      model: { pretrained: "models/lab-llama", lora: { rank: 2, alpha: 4, targets: "all-linear" } },
    });
    const src = peftSource(config);
    expect(src).toMatchObject({
      name: "public/models/lab-llama",
      served: "models/lab-llama",
      revision: null,
    });
    expect(
      existsSync(join(src?.name ?? "", "config.json")),
      "the base loads from the repository's root",
    ).toBe(true);
    const hf = await readHfConfig(nodeModelDir("public/models/lab-llama"), { context: 64 });
    const mc = modelConfig({ ...hf, lora: { rank: 2, alpha: 4, targets: ["q_proj", "v_proj"] } });
    const files = peftFiles(mc, new Float32Array(loraLayout(mc, mc.lora).total), src ?? undefined);
    expect(JSON.parse(text(files["adapter_config.json"])).base_model_name_or_path).toBe(
      "public/models/lab-llama",
    );
    expect(text(files["README.md"])).toMatch(/served the model from \(`models\/lab-llama\/`/);
  });

  it("keeps a Hub id and a picked folder's name as they are", () => {
    const hub = mergeConfig(defaultRunConfig(), {
      model: { pretrained: "hf:HuggingFaceTB/SmolLM2-135M", revision: "abc" },
    });
    expect(peftSource(hub)).toEqual({ name: "HuggingFaceTB/SmolLM2-135M", revision: "abc" });
    const picked = mergeConfig(defaultRunConfig(), {
      model: { pretrained: "local:my-model", sha256: { "config.json": "0".repeat(64) } },
    });
    expect(peftSource(picked)).toEqual({ name: "my-model", revision: null, picked: true });
    expect(peftSource(defaultRunConfig())).toBeNull();
  });
});
