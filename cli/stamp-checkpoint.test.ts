// Every committed checkpoint says what made it: public/checkpoints/*.safetensors carry
// __metadata__.made_by naming a committed recipe whose model (and seed and SFT steps, where
// recorded) is the checkpoint's. And cli/stamp-checkpoint.ts, which added made_by to the two
// saved before it was recorded, changes nothing but the metadata.
// Run: npx vitest run --project unit cli/stamp-checkpoint.test.ts
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadRecipeFile } from "../config/recipe-file";
import { loadCheckpoint, saveCheckpoint } from "../model/checkpoint";
import { modelConfig, modelConfigOf, paramLayout } from "../model/config";
import { splitSafetensors, stampCheckpoint } from "./stamp-checkpoint";

const DIR = "public/checkpoints";
const SHAPE_KEYS = [
  "layers",
  "dModel",
  "heads",
  "context",
  "vocab",
  "norm",
  "mlp",
  "positional",
  "tiedEmbeddings",
] as const;

describe("committed checkpoints", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".safetensors"));
  it("there are some", () => expect(files.length).toBeGreaterThanOrEqual(4));
  for (const f of files) {
    it(`${f} names the committed recipe that made it`, async () => {
      const ck = loadCheckpoint(new Uint8Array(readFileSync(`${DIR}/${f}`)));
      const madeBy = ck.metadata?.made_by;
      expect(madeBy, `${f}: __metadata__.made_by`).toMatch(
        /^npm run train -- public\/recipes\/[\w.-]+\.json/,
      );
      const recipe = madeBy!.match(/public\/recipes\/[\w.-]+\.json/)![0];
      expect(existsSync(recipe), `${f}: ${recipe} is not committed`).toBe(true);
      const r = await loadRecipeFile(recipe, async (p) => readFileSync(p, "utf8"));
      if (!r.ok) throw new Error(r.error);
      const want = modelConfigOf(r.config);
      for (const k of SHAPE_KEYS) expect(ck.config[k], `${f}: model ${k} vs ${recipe}`).toBe(want[k]);
      if (ck.metadata?.seed !== undefined) expect(ck.metadata.seed).toBe(String(r.config.seed));
      if (ck.metadata?.sft_steps !== undefined)
        expect(ck.metadata.sft_steps).toBe(String(r.config.sft.steps));
    });
  }
});

describe("stampCheckpoint", () => {
  const config = modelConfig({ layers: 1, dModel: 8, heads: 2, context: 8, vocab: 11 });
  const weights = Float32Array.from({ length: paramLayout(config).total }, (_, i) => Math.sin(i) * 1e-3);
  const file = saveCheckpoint({ config, weights, metadata: { seed: "3" } });

  it("adds metadata and keeps the rest of the header and every data byte", () => {
    const out = stampCheckpoint(file, { made_by: "npm run train -- x.json" });
    const a = splitSafetensors(file);
    const b = splitSafetensors(out);
    expect(Buffer.from(b.data).equals(Buffer.from(a.data))).toBe(true);
    const meta = b.header.__metadata__ as Record<string, string>;
    expect(meta).toMatchObject({ seed: "3", made_by: "npm run train -- x.json" });
    expect(meta.config).toBe((a.header.__metadata__ as Record<string, string>).config);
    const { __metadata__: _a, ...ta } = a.header;
    const { __metadata__: _b, ...tb } = b.header;
    expect(tb).toEqual(ta);
    expect((8 + (out.length - b.data.length - 8)) % 8).toBe(0);
    expect(loadCheckpoint(out).weights).toEqual(loadCheckpoint(file).weights);
  });

  it("refuses to overwrite a recorded value and names a bad file", () => {
    expect(() => stampCheckpoint(file, { seed: "4" })).toThrow(/__metadata__\.seed is already "3"/);
    expect(stampCheckpoint(file, { seed: "3" }).length).toBe(file.length);
    expect(() => stampCheckpoint(new Uint8Array(4), { a: "b" })).toThrow(/fewer than 8 bytes/);
  });
});
