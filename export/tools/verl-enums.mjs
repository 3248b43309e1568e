// Makes export/verl-enums.json: the values verl accepts for every enum-like key the verl export
// writes, read off verl's own source at a commit, each with the file and line it came from.
// Facts only (names, allowed values, defaults), no code. export/export.test.ts checks every value
// an export writes against them (the key list, export/verl-keys.json, checks only names).
//   node export/tools/verl-enums.mjs <site-packages> --release 0.9.1 > export/verl-enums.json
//   node export/tools/verl-enums.mjs <verl checkout or git dir> > export/verl-enums.json
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [dir, flag, release] = process.argv.slice(2);
if (!dir || (flag !== undefined && (flag !== "--release" || !release))) {
  console.error(
    "usage: node export/tools/verl-enums.mjs <site-packages --release V | verl checkout or git dir> > export/verl-enums.json",
  );
  process.exit(2);
}
const gitDir = existsSync(join(dir, ".git")) ? join(dir, ".git") : dir;
const git = (...a) =>
  execFileSync("git", ["--git-dir", gitDir, ...a], { encoding: "utf8", maxBuffer: 1 << 26 });
const commit = release ? null : git("rev-parse", "HEAD").trim();
const files = {};
const lines = (f) => {
  files[f] ??= (release ? readFileSync(join(dir, f), "utf8") : git("show", `HEAD:${f}`)).split("\n");
  return files[f];
};
/** Every match of `re` in file f: [captured value, line number]. */
function grep(f, re) {
  const out = [];
  lines(f).forEach((l, i) => {
    for (const m of l.matchAll(re)) out.push([m[1], i + 1]);
  });
  return out;
}
const strs = (s) => [...s.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
function fact(f, pairs, note) {
  const values = [...new Set(pairs.map(([v]) => v))];
  if (values.length === 0) throw new Error(`${f}: no values found (${note})`);
  return { values, source: `${f}:${[...new Set(pairs.map(([, n]) => n))].join(",")}`, note };
}
/** The string literals of a block: from the line matching `start` to the line matching `end`. */
function block(f, start, end) {
  const ls = lines(f);
  const i = ls.findIndex((l) => start.test(l));
  if (i < 0) throw new Error(`${f}: ${start} not found`);
  const pairs = [];
  for (let k = i; k < ls.length; k++) {
    for (const v of strs(ls[k])) pairs.push([v, k + 1]);
    if (k > i && end.test(ls[k])) break;
  }
  return pairs;
}

const CORE = "verl/trainer/ppo/core_algos.py";
const RC = "verl/trainer/ppo/rollout_corr_helper.py";
// AdvantageEstimator members and the ones registered with @register_adv_est.
const memberValue = Object.fromEntries(
  lines(CORE)
    .map((l) => l.match(/^ {4}([A-Z_]+) = "([a-z_]+)"/))
    .filter(Boolean)
    .map((m) => [m[1], m[2]]),
);
const registeredAdv = [
  ...grep(CORE, /@register_adv_est\(AdvantageEstimator\.([A-Z_]+)\)/g).map(([k, n]) => [memberValue[k], n]),
  ...grep(CORE, /@register_adv_est\("([a-z_]+)"\)/g),
];
// A decorator split over lines: @register_adv_est(\n    AdvantageEstimator.X\n)
lines(CORE).forEach((l, i) => {
  if (/^@register_adv_est\($/.test(l)) {
    const m = lines(CORE)[i + 1].match(/AdvantageEstimator\.([A-Z_]+)/);
    if (m) registeredAdv.push([memberValue[m[1]], i + 2]);
  }
});
const kl = [];
lines(CORE).forEach((l, i) => {
  const m = l.match(/^ {4}if kl_penalty (?:in \(([^)]*)\)|== "([^"]+)")/);
  if (m) for (const v of m[1] ? strs(m[1]) : [m[2]]) kl.push([v, i + 1]);
});
const optimizer = "verl/workers/config/optimizer.py";
const tracking = "verl/utils/tracking.py";
const yaml = "verl/trainer/config/_generated_ppo_trainer.yaml";
const trainerDefault = (key) => {
  const ls = lines(yaml);
  const t = ls.findIndex((l) => /^trainer:/.test(l));
  for (let k = t + 1; k < ls.length && !/^\S/.test(ls[k]); k++) {
    const m = ls[k].match(new RegExp(`^ {2}${key}: (\\d+)`));
    if (m) return { value: Number(m[1]), source: `${yaml}:${k + 1}` };
  }
  throw new Error(`${yaml}: trainer.${key} not found`);
};
const out = {
  source: "volcengine/verl",
  ...(release ? { verl_release: release } : { verl_commit: commit }),
  enums: {
    "algorithm.adv_estimator": fact(CORE, registeredAdv, "registered with @register_adv_est"),
    "actor_rollout_ref.actor.policy_loss.loss_mode": fact(
      CORE,
      grep(CORE, /@register_policy_loss\("([a-z_]+)"\)/g),
      "registered with @register_policy_loss",
    ),
    "actor_rollout_ref.actor.loss_agg_mode": fact(
      CORE,
      [
        ...grep(CORE, /loss_agg_mode == "([a-z-]+)"/g),
        ...grep(CORE, /loss_agg_mode in \[([^\]]*)\]/g).flatMap(([s, n]) => strs(s).map((v) => [v, n])),
      ],
      "the branches of agg_loss",
    ),
    "actor_rollout_ref.actor.kl_loss_type": fact(CORE, kl, "the branches of kl_penalty_forward"),
    "algorithm.kl_penalty": fact(CORE, kl, "the branches of kl_penalty_forward"),
    "algorithm.rollout_correction.rollout_is": fact(
      RC,
      grep(RC, /valid_is_levels = \{([^}]*)\}/g).flatMap(([s, n]) => strs(s).map((v) => [v, n])),
      "compute_rollout_correction_weights's valid_is_levels",
    ),
    "algorithm.rollout_correction.rollout_rs": fact(
      RC,
      block(RC, /^SUPPORTED_ROLLOUT_RS_OPTIONS/, /^\}/),
      "SUPPORTED_ROLLOUT_RS_OPTIONS (a comma-separated list of them)",
    ),
    "actor_rollout_ref.actor.optim.lr_scheduler_type": fact(
      optimizer,
      grep(optimizer, /assert self\.lr_scheduler_type in \[([^\]]*)\]/g).flatMap(([s, n]) =>
        strs(s).map((v) => [v, n]),
      ),
      "OptimizerConfig's assertion",
    ),
    "trainer.logger": fact(
      tracking,
      block(tracking, /supported_backend = \[/, /\]/),
      "Tracking.supported_backend (a list of them)",
    ),
  },
  rollout_rs_threshold: {
    k1: "lower_upper (or one upper, lower = 1/upper): bounds on exp(-log_ratio), log_ratio = old_log_prob - rollout_log_prob",
    source: `${RC}:${grep(RC, /(if option\.endswith\("k1"\):)/g)
      .map(([, n]) => n)
      .join(",")}`,
  },
  defaults: {
    "trainer.n_gpus_per_node": trainerDefault("n_gpus_per_node"),
    "trainer.nnodes": trainerDefault("nnodes"),
  },
};
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
