// Makes config/fixtures/bundle-v1.lab-run.json and config/fixtures/link-v1-run.txt: one tiny
// run (CPU model, SFT then RL) with live edits in both phases, recorded by the lab as it was
// when run-bundle format 1 and link format 1 were current (commit "fixtures: a bundle and a
// link of today's format"). The fixtures pin those formats: later labs must keep decoding
// them and replay them to the bundle's metrics (rl/run/record.test.ts). Rerunning this script
// with a later lab writes that lab's formats, so the committed files are not regenerated.
// Run: `npx tsx --import ./cli/raw-loader.mjs cli/make-run-fixture.ts`
import { writeFileSync } from "node:fs";
import { type ConfigEdit, defaultRunConfig, mergeConfig, type RunConfig } from "../config";
import { encodeLink } from "../config/link";
import { CpuModel } from "../model/cpu";
import { bundleJson, type RunEventRecord } from "../rl/run/run-bundle";
import { RunLoop } from "../rl/run/run-loop";
import { modelConfigOf, runTaskOf } from "../rl/run/run-parts";
import { type MetricsRow, type SampleRecord, Trainer } from "../rl/run/trainer";
import { InProcessSandbox } from "../sandbox/run-code";

export const FIXTURE_CONFIG: RunConfig = mergeConfig(defaultRunConfig(), {
  seed: 11,
  model: { layers: 1, d_model: 16, heads: 2, context: 96 },
  sft: { steps: 4, batch: 4, warmup_steps: 1, lr: 3e-3 },
  rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 2 },
  sampling: { max_new_tokens: 24 },
  task: { eval_size: 4, eval_every: 2 },
  stop: { max_steps: 3 },
  checkpoint_every: 1,
});

async function main() {
  const sandbox = await InProcessSandbox.create();
  const config = FIXTURE_CONFIG;
  const policy = new CpuModel(modelConfigOf(config), undefined, config.seed);
  const trainer = new Trainer(config, { policy, task: runTaskOf(config), sandbox, clock: () => 0 });
  const metrics: MetricsRow[] = [];
  const samples: SampleRecord[] = [];
  const events: RunEventRecord[] = [];
  const loop: RunLoop = new RunLoop(trainer, {
    row(row) {
      metrics.push(row);
      // Live edits, as a person makes them while the run goes: they apply at the next step.
      if (row.phase === "sft" && row.step === 1) loop.edit("sft.lr", 1e-3);
      if (row.phase === "rl" && row.step === 0) loop.edit("rl.clip_eps_high", 0.28);
      if (row.phase === "rl" && row.step === 1) {
        loop.edit("rl.lr", 1e-5);
        loop.edit("rewards.terms.0.weight", 2);
      }
    },
    samples: (s) => samples.push(...s),
    event: (e) => events.push(e),
  });
  await loop.run();
  const edits: ConfigEdit[] = [...loop.appliedEdits];
  const run = {
    name: "run fixture v1",
    createdAt: "2026-12-01T08:30:00.000Z",
    config,
    edits,
    metrics,
    samples,
    events,
  };
  writeFileSync("config/fixtures/bundle-v1.lab-run.json", `${JSON.stringify(bundleJson(run))}\n`);
  writeFileSync(
    "config/fixtures/link-v1-run.txt",
    `${await encodeLink({ config, edits, name: run.name })}\n`,
  );
  console.log(`${metrics.length} rows, ${samples.length} samples, edits ${JSON.stringify(edits)}`);
}

if (process.argv[1]?.endsWith("make-run-fixture.ts")) void main();
