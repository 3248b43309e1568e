// The weights of a pretrained run leave the lab (`npm run export -- peft|hf <run folder>`):
// a LoRA run on model/golden/hf/llama (a tiny bf16, sharded, tied Llama with bos/eos ids and
// max_position_embeddings 32) with a seeded non-zero adapter. The PEFT adapter names the source
// folder as base_model_name_or_path; model/golden/apply_peft.py (PyTorch, written from the
// architecture) applies it to that folder and gives the lab's log-probs of base + adapter (live
// where /usr/bin/python3 has torch, and against model/golden/peft-llama/, which it made from the
// same bytes). The merged folder has the source's config.json unchanged, the source's dtype
// (bf16) unless --dtype asks, a README naming the source, and loaded back as model.pretrained
// gives the run's log-probs (exactly in f32, to bf16's rounding in bf16). An hf: source names
// its repo id and revision. A bundle of a pretrained run passes its weights check.
// Run: npx vitest run --project unit model/hf/export-pretrained.test.ts
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import { assertClose } from "../../kernels/testing";
import { saveCheckpoint } from "../checkpoint";
import { loraConfigOf, type ModelConfig, modelConfig, paramLayout } from "../config";
import { CpuModel } from "../cpu";
import { loraLayout } from "../lora";
import { nodeModelDir } from "./node";
import { loadHfWeights, readHfConfig } from "./read";
import { hfSourceOf, peftFiles, readSafetensors } from "./write";

const SRC = "model/golden/hf/llama";
const GOLDEN = "model/golden/peft-llama";
const TOKENS = [
  [1, 5, 9, 33, 2, 71, 14, 60, 8, 3],
  [7, 88, 41, 0, 19, 23, 95, 4, 12, 50],
];

function runConfig(): RunConfig {
  return mergeConfig(defaultRunConfig(), {
    model: { pretrained: SRC, context: 32, lora: { rank: 2, alpha: 4, targets: "all-linear" } },
    sampling: { max_new_tokens: 16 },
  });
}

// The run's model: the source's weights and an adapter with every A and B seeded (B = 0 at init would make it a no-op).
async function runModel(): Promise<{ mc: ModelConfig; weights: Float32Array; adapter: Float32Array }> {
  const rc = runConfig();
  const dir = nodeModelDir(SRC);
  const hf = await readHfConfig(dir, { context: rc.model.context });
  const mc = modelConfig({ ...hf, lora: loraConfigOf(rc, hf.mlp) });
  const weights = new Float32Array(paramLayout(mc).total);
  await loadHfWeights(dir, mc, (o, d) => weights.set(d, o));
  const adapter = new Float32Array(loraLayout(mc, mc.lora).total);
  let s = 12345;
  for (let i = 0; i < adapter.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    adapter[i] = (s / 2 ** 32 - 0.5) * 0.4;
  }
  return { mc, weights, adapter };
}

/** Per-token log p(next) of TOKENS under a model, as apply_peft.py writes them. */
async function logps(model: CpuModel): Promise<number[][]> {
  const B = TOKENS.length;
  const T = TOKENS[0].length - 1;
  const tokens = new Int32Array(TOKENS.flatMap((r) => r.slice(0, T)));
  const targets = new Int32Array(TOKENS.flatMap((r) => r.slice(1)));
  const out = await model.forwardScore({ B, T, tokens, targets });
  return Array.from({ length: B }, (_, b) => Array.from(out.logp.subarray(b * T, (b + 1) * T)));
}

const cli = (args: string[]) =>
  spawnSync("npx", ["tsx", "--import", "./cli/raw-loader.mjs", "cli/export.ts", ...args], {
    encoding: "utf8",
  });
const json = (p: string) => JSON.parse(readFileSync(p, "utf8"));
const hasTorch = spawnSync("/usr/bin/python3", ["-c", "import torch"]).status === 0;

let root: string;
let run: Awaited<ReturnType<typeof runModel>>;
let runLogp: number[][];
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "lab-pretrained-export-"));
  run = await runModel();
  runLogp = await logps(new CpuModel(run.mc, run.weights, 0, run.adapter));
  const dir = join(root, "run");
  mkdirSync(dir);
  writeFileSync(join(dir, "config.json"), JSON.stringify(runConfig()));
  writeFileSync(
    join(dir, "checkpoint.safetensors"),
    saveCheckpoint({ config: run.mc, weights: run.weights, adapter: run.adapter }),
  );
}, 240_000);

describe("npm run export -- peft on a pretrained run", () => {
  it("names the source as the base; PyTorch applies the adapter to it and gets the run's log-probs", () => {
    const out = join(root, "peft");
    const r = cli(["peft", join(root, "run"), "--out", out]);
    expect(r.status, r.stderr).toBe(0);
    const ac = json(join(out, "adapter_config.json"));
    expect(ac).toMatchObject({ base_model_name_or_path: SRC, r: 2, lora_alpha: 4, peft_type: "LORA" });
    expect(ac.revision).toBeUndefined();
    expect(readFileSync(join(out, "README.md"), "utf8")).toContain(`base_model_name_or_path: \`${SRC}\``);
    const t = readSafetensors(new Uint8Array(readFileSync(join(out, "adapter_model.safetensors"))));
    expect(t.size).toBe(2 * 7 * run.mc.layers);
    expect(t.get("base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight")?.shape).toEqual([16, 2]);
    expect(t.get("base_model.model.model.layers.0.mlp.down_proj.lora_A.weight")?.shape).toEqual([2, 48]);
    // The bytes the committed PyTorch numbers were made from (regenerate: the header of apply_peft.py).
    for (const f of ["adapter_config.json", "adapter_model.safetensors"])
      expect(readFileSync(join(out, f)).equals(readFileSync(join(GOLDEN, f))), f).toBe(true);
    const golden = json(join(GOLDEN, "logp.json"));
    expect(golden.base).toBe(SRC);
    assertClose("PyTorch (committed) vs lab log-probs", golden.logp.flat(), runLogp.flat(), {
      atol: 1e-4,
      rtol: 1e-4,
    });
    if (hasTorch) {
      const py = spawnSync("/usr/bin/python3", ["model/golden/apply_peft.py", out], {
        input: JSON.stringify({ tokens: TOKENS }),
        encoding: "utf8",
      });
      expect(py.status, py.stderr).toBe(0);
      const live = JSON.parse(py.stdout);
      expect(live.merged).toBe(2 * 7);
      assertClose("PyTorch (live) vs lab log-probs", live.logp.flat(), runLogp.flat(), {
        atol: 1e-4,
        rtol: 1e-4,
      });
    }
  }, 480_000);

  it("an hf: source is its repo id, with the revision in adapter_config.json and the README", () => {
    const c = mergeConfig(runConfig(), {
      model: { pretrained: "hf:HuggingFaceTB/SmolLM2-135M-Instruct", revision: "abc123" },
    });
    const src = hfSourceOf(c);
    expect(src).toEqual({ name: "HuggingFaceTB/SmolLM2-135M-Instruct", revision: "abc123" });
    const files = peftFiles(run.mc, run.adapter, src ?? undefined);
    const ac = JSON.parse(new TextDecoder().decode(files["adapter_config.json"]));
    expect(ac).toMatchObject({
      base_model_name_or_path: "HuggingFaceTB/SmolLM2-135M-Instruct",
      revision: "abc123",
    });
    expect(new TextDecoder().decode(files["README.md"])).toContain('revision="abc123"');
    expect(
      hfSourceOf(
        mergeConfig(c, {
          model: { pretrained: "local:SmolLM2-135M", sha256: { "config.json": "0".repeat(64) } },
        }),
      ),
    ).toEqual({ name: "SmolLM2-135M", revision: null, picked: true });
  });

  it("names a base PEFT can load: a public/ folder as found, a picked folder only with --base", () => {
    // The lab-made Llama's runs name models/lab-llama, a path inside public/.
    const lab = join(root, "lab-run");
    mkdirSync(lab);
    writeFileSync(
      join(lab, "config.json"),
      JSON.stringify(mergeConfig(runConfig(), { model: { pretrained: "models/lab-llama" } })),
    );
    writeFileSync(
      join(lab, "checkpoint.safetensors"),
      saveCheckpoint({ config: run.mc, weights: run.weights, adapter: run.adapter }),
    );
    const out = join(root, "peft-lab");
    const r = cli(["peft", lab, "--out", out]);
    expect(r.status, r.stderr).toBe(0);
    expect(json(join(out, "adapter_config.json")).base_model_name_or_path).toBe("public/models/lab-llama");
    // A folder picked in the page has no path the CLI knows: refused, naming --base; --base sets it.
    const picked = join(root, "picked-run");
    mkdirSync(picked);
    writeFileSync(
      join(picked, "config.json"),
      JSON.stringify(
        mergeConfig(runConfig(), {
          model: { pretrained: "local:lab-llama", sha256: { "config.json": "0".repeat(64) } },
        }),
      ),
    );
    writeFileSync(
      join(picked, "checkpoint.safetensors"),
      saveCheckpoint({ config: run.mc, weights: run.weights, adapter: run.adapter }),
    );
    const refused = cli(["peft", picked, "--out", join(root, "peft-picked-no")]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(
      /local:lab-llama, a folder picked in the page: name where it is with --base DIR/,
    );
    const given = cli(["peft", picked, "--out", join(root, "peft-picked"), "--base", "/models/lab-llama"]);
    expect(given.status, given.stderr).toBe(0);
    expect(json(join(root, "peft-picked", "adapter_config.json")).base_model_name_or_path).toBe(
      "/models/lab-llama",
    );
    expect(readFileSync(join(root, "peft-picked", "README.md"), "utf8")).not.toMatch(
      /picked in the lab's page/,
    );
    // The page's own download (no CLI) says so in the README instead.
    const page = peftFiles(run.mc, run.adapter, { name: "lab-llama", revision: null, picked: true });
    expect(new TextDecoder().decode(page["README.md"])).toMatch(
      /`lab-llama` is the name of a folder picked in the lab's page, not a path/,
    );
  }, 60_000);
});

describe("npm run export -- hf on a pretrained run", () => {
  it("writes the source's config.json in its dtype; loaded back as model.pretrained it gives the run's log-probs", async () => {
    const src = json(join(SRC, "config.json"));
    for (const dtype of ["bf16", "f32"] as const) {
      const out = join(root, `hf-${dtype}`);
      const r = cli(["hf", join(root, "run"), "--out", out, ...(dtype === "f32" ? ["--dtype", "f32"] : [])]);
      expect(r.status, r.stderr).toBe(0);
      const cfg = json(join(out, "config.json"));
      // Training changed the weights only: max_position_embeddings, bos/eos and the rest are the source's.
      expect(cfg).toEqual(dtype === "bf16" ? src : { ...src, torch_dtype: "float32" });
      expect(readFileSync(join(out, "README.md"), "utf8")).toContain(`# ${SRC}, fine-tuned`);
      const st = readFileSync(join(out, "model.safetensors"));
      const header = JSON.parse(st.subarray(8, 8 + Number(st.readBigUInt64LE(0))).toString());
      expect(header["model.layers.0.self_attn.q_proj.weight"]).toMatchObject({
        dtype: dtype === "bf16" ? "BF16" : "F32",
        shape: [32, 32],
      });
      expect(header["lm_head.weight"]).toBeUndefined(); // tied, as the source
      const dir = nodeModelDir(out);
      const mc = await readHfConfig(dir, { context: 32 });
      const w = new Float32Array(paramLayout(mc).total);
      await loadHfWeights(dir, mc, (o, d) => w.set(d, o));
      const back = await logps(new CpuModel(mc, w));
      // f32: the merge is the only rounding; bf16: each merged weight rounded to 8 bits of mantissa.
      assertClose(`merged (${dtype}) vs run log-probs`, back.flat(), runLogp.flat(), {
        atol: dtype === "f32" ? 1e-4 : 0.05,
        rtol: dtype === "f32" ? 1e-4 : 0.02,
      });
    }
  }, 480_000);

  it("refuses a checkpoint whose shape is not the source's config.json", () => {
    const other = join(root, "other");
    mkdirSync(other);
    writeFileSync(
      join(other, "config.json"),
      JSON.stringify(mergeConfig(runConfig(), { model: { pretrained: "model/golden/hf/qwen3" } })),
    );
    writeFileSync(
      join(other, "checkpoint.safetensors"),
      saveCheckpoint({ config: run.mc, weights: run.weights, adapter: run.adapter }),
    );
    const r = cli(["hf", other, "--out", join(root, "nope")]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/export hf: the checkpoint's model \(.*\) is not the source's config.json/);
  }, 240_000);
});
