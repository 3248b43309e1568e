// Makes export/trl-keys.json: the arguments of TRL's GRPOConfig (trl/trainer/grpo_config.py) with
// their annotated types, the values GRPOTrainer accepts for its string-valued choices (read off the
// comparisons in trl/trainer/grpo_trainer.py, with their lines), and the argument names of
// transformers' TrainingArguments (transformers/training_args.py), which GRPOConfig extends.
// Facts only: names, types, allowed values, line numbers. export/export.test.ts checks every
// argument the TRL export writes, and every enum value, against them.
//   node export/tools/trl-keys.mjs <site-packages> <training_args.py> "<transformers version>" --release 1.16.0 > export/trl-keys.json
//   node export/tools/trl-keys.mjs <trl checkout or git dir> <training_args.py> "<transformers version>" > export/trl-keys.json
//   (<training_args.py> "keep": the TrainingArguments part of the committed export/trl-keys.json)
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [trl, trainingArgs, transformersVersion, flag, release] = process.argv.slice(2);
if (
  !trl ||
  !trainingArgs ||
  !transformersVersion ||
  (flag !== undefined && (flag !== "--release" || !release))
) {
  console.error(
    'usage: node export/tools/trl-keys.mjs <site-packages | trl checkout> <training_args.py> "<transformers version>" [--release V]',
  );
  process.exit(2);
}
const gitDir = existsSync(join(trl, ".git")) ? join(trl, ".git") : trl;
const CONFIG = "trl/trainer/grpo_config.py";
const TRAINER = "trl/trainer/grpo_trainer.py";
const commit = release
  ? null
  : execFileSync("git", ["--git-dir", gitDir, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
const read = (file) =>
  existsSync(join(trl, file))
    ? readFileSync(join(trl, file), "utf8")
    : execFileSync("git", ["--git-dir", gitDir, "show", `HEAD:${file}`], {
        encoding: "utf8",
        maxBuffer: 1 << 26,
      });
const grpo = read(CONFIG);
// Dataclass fields: four-space indent, `name: type = field(`.
const FIELD = /^ {4}([a-z_][a-z0-9_]*): ([^=\n]+?) = field\(/gm;
const fields = (src) => [...src.matchAll(FIELD)].map((m) => m[1]);
const types = Object.fromEntries([...grpo.matchAll(FIELD)].map((m) => [m[1], m[2].trim()]));
// The string values GRPOTrainer compares a choice with: `self.X == "v"`, `args.X in ["a", "b"]`, ...
const trainer = read(TRAINER).split("\n");
const CHOICES = ["loss_type", "importance_sampling_level", "scale_rewards", "vllm_importance_sampling_mode"];
const enums = {};
for (const name of CHOICES) {
  const values = new Set();
  const lines = new Set();
  const re = new RegExp(
    `(?:self|args|self\\.args)\\.${name} (?:==|!=|in|not in) (\\[[^\\]]*\\]|\\([^)]*\\)|"[^"]*")`,
    "g",
  );
  trainer.forEach((l, i) => {
    for (const m of l.matchAll(re)) {
      for (const v of m[1].matchAll(/"([^"]+)"/g)) values.add(v[1]);
      lines.add(i + 1);
    }
  });
  if (values.size === 0) throw new Error(`${TRAINER}: no comparison of ${name} found`);
  enums[name] = { values: [...values].sort(), source: `${TRAINER}:${[...lines].join(",")}` };
}
const out = {
  grpo_config: {
    source: `huggingface/trl ${CONFIG}`,
    ...(release ? { trl_release: release } : { trl_commit: commit }),
    names: fields(grpo),
    types,
    enums,
  },
  training_arguments:
    trainingArgs === "keep"
      ? JSON.parse(readFileSync(new URL("../trl-keys.json", import.meta.url), "utf8")).training_arguments
      : {
          source: "transformers/training_args.py",
          transformers_version: transformersVersion,
          names: fields(readFileSync(trainingArgs, "utf8")),
        },
};
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
