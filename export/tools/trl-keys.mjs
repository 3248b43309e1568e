// Makes export/trl-keys.json: the argument names of TRL's GRPOConfig (trl/trainer/grpo_config.py)
// and of transformers' TrainingArguments (transformers/training_args.py), which GRPOConfig
// extends, each with where it came from. Facts only: names. export/export.test.ts checks every
// GRPOConfig argument the TRL export writes against this list.
//   node export/tools/trl-keys.mjs <trl checkout or git dir> <training_args.py> "<transformers version>" > export/trl-keys.json
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [trl, trainingArgs, transformersVersion] = process.argv.slice(2);
if (!trl || !trainingArgs || !transformersVersion) {
  console.error(
    'usage: node export/tools/trl-keys.mjs <trl checkout> <training_args.py> "<transformers version>"',
  );
  process.exit(2);
}
const gitDir = existsSync(join(trl, ".git")) ? join(trl, ".git") : trl;
const FILE = "trl/trainer/grpo_config.py";
const commit = execFileSync("git", ["--git-dir", gitDir, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
const grpo = existsSync(join(trl, FILE))
  ? readFileSync(join(trl, FILE), "utf8")
  : execFileSync("git", ["--git-dir", gitDir, "show", `HEAD:${FILE}`], { encoding: "utf8" });
// Dataclass fields: four-space indent, `name: type = field(`.
const fields = (src) => [...src.matchAll(/^ {4}([a-z_][a-z0-9_]*): [^=\n]+= field\(/gm)].map((m) => m[1]);
const out = {
  grpo_config: { source: `huggingface/trl ${FILE}`, trl_commit: commit, names: fields(grpo) },
  training_arguments: {
    source: "transformers/training_args.py",
    transformers_version: transformersVersion,
    names: fields(readFileSync(trainingArgs, "utf8")),
  },
};
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
