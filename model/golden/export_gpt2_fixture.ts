// Writes the GPT-2 export fixture that model/golden/make_gpt2_golden.py scores with PyTorch:
// the lora-gpt golden's base as a GPT-2 (base/), its adapter as PEFT files (peft/) and the
// merged model (merged/), all by model/hf/write.ts. model/hf/write.test.ts checks that today's export
// still writes these exact bytes, so the PyTorch numbers are about the current code.
// Run: npx tsx model/golden/export_gpt2_fixture.ts && /usr/bin/python3 model/golden/make_gpt2_golden.py
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readLoraGolden } from "../golden";
import { hfGpt2Files, peftGpt2Files } from "../hf/write";

const here = new URL(".", import.meta.url).pathname;
const g = readLoraGolden(new Uint8Array(readFileSync(join(here, "lora-gpt.bin"))));
const sets: Record<string, Record<string, Uint8Array>> = {
  base: hfGpt2Files(g.config, g.weights, null),
  peft: peftGpt2Files(g.config, g.adapter, "../base"),
  merged: hfGpt2Files(g.config, g.weights, g.adapter),
};
for (const [dir, files] of Object.entries(sets)) {
  mkdirSync(join(here, "gpt2", dir), { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(here, "gpt2", dir, name), bytes);
}
console.log(`wrote ${join(here, "gpt2")}: ${Object.keys(sets).join(", ")}`);
