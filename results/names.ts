// The committed tables from verl's and TRL's metric names to the lab's (docs/ARCHITECTURE.md "Metrics",
// verl's style), used when a cluster run comes back (results/import.ts) and shown in
// docs/SCALE-OUT.md ("Bring the results back"; `namesTableMarkdown` writes it, and
// results/results.test.ts checks the doc holds it). A key in neither table keeps its own
// name, so nothing the engine logged is lost; a mapped key is stored under the lab's name only.
// Sources: verl `verl/trainer/ppo/metric_utils.py` (critic/*, response_length/*, timing_s/*),
// `verl/trainer/ppo/ray_trainer.py` `_validate` (val-core/<data_source>/<var>/mean@N); TRL
// `trl/trainer/grpo_trainer.py` (`_metrics`: reward, reward_std, kl, entropy, clip_ratio/*,
// completions/*, tools/*, rewards/<func>/mean) and transformers' `Trainer.log` (loss, grad_norm,
// learning_rate, epoch).

export type Engine = "verl" | "trl";

export interface NameRow {
  /** The engine's key; `<f>` stands for a reward function's name, `<ds>` for a data source. */
  from: string;
  /** The lab's key. */
  to: string;
  /** How the value is carried: the same number, or the transform applied. */
  how: "same" | "1 - x";
  note?: string;
}

export const VERL_NAMES: readonly NameRow[] = [
  {
    from: "critic/score/mean",
    to: "reward/mean",
    how: "same",
    note: "the reward function's score per sequence",
  },
  { from: "actor/kl_loss", to: "actor/kl_ref", how: "same", note: "KL to the reference, as a loss term" },
  { from: "timing_s/gen", to: "timing/rollout_s", how: "same" },
  { from: "timing_s/reward", to: "timing/reward_s", how: "same" },
  { from: "timing_s/update_actor", to: "timing/train_s", how: "same" },
  {
    from: "val-core/<ds>/acc/mean@1",
    to: "val/acc/<bucket>",
    how: "same",
    note: "data source `lab/<task>/<bucket>` (export/data.ts); `val/acc` too when there is one data source",
  },
];

export const TRL_NAMES: readonly NameRow[] = [
  { from: "reward", to: "reward/mean", how: "same" },
  { from: "reward_std", to: "reward/std", how: "same" },
  { from: "rewards/<f>/mean", to: "reward/<f>/mean", how: "same" },
  { from: "rewards/<f>/std", to: "reward/<f>/std", how: "same" },
  { from: "kl", to: "actor/kl_ref", how: "same", note: "k3 estimate to the reference (beta > 0 only)" },
  { from: "entropy", to: "actor/entropy", how: "same" },
  { from: "grad_norm", to: "actor/grad_norm", how: "same" },
  { from: "learning_rate", to: "actor/lr", how: "same" },
  { from: "loss", to: "actor/pg_loss", how: "same", note: "approximately: TRL's loss includes beta·KL" },
  { from: "clip_ratio/region_mean", to: "actor/pg_clipfrac", how: "same" },
  { from: "clip_ratio/low_mean", to: "actor/pg_clipfrac_lower", how: "same" },
  { from: "completions/mean_length", to: "response_length/mean", how: "same" },
  { from: "completions/clipped_ratio", to: "response_length/clip_ratio", how: "same" },
  { from: "frac_reward_zero_std", to: "groups/zero_std_frac", how: "same" },
  { from: "tools/call_frequency", to: "tool/calls_mean", how: "same", note: "tool calls per completion" },
  { from: "tools/failure_frequency", to: "tool/success_rate", how: "1 - x", note: "failures per call" },
  {
    from: "eval_rewards/lab_acc/mean",
    to: "val/acc",
    how: "same",
    note: "the export's zero-weight reward lab_acc on the held-out set (greedy)",
  },
  {
    from: "eval_rewards/lab_valid_call/mean",
    to: "val/valid_call_rate",
    how: "same",
    note: "the export's zero-weight reward lab_valid_call on the held-out set",
  },
];

interface Compiled {
  re: RegExp;
  row: NameRow;
}

const compile = (rows: readonly NameRow[]): Compiled[] =>
  rows.map((row) => ({
    re: new RegExp(
      `^${row.from
        .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        .replace("<f>", "([^/]+)")
        .replace("<ds>", "(.+)")}$`,
    ),
    row,
  }));

const TABLES: Record<Engine, Compiled[]> = { verl: compile(VERL_NAMES), trl: compile(TRL_NAMES) };

/** The lab's name and value of an engine's metric (its own name and value when no row maps it). */
export function labMetric(
  engine: Engine,
  key: string,
  value: number,
  dataSources = 1,
): { key: string; value: number }[] {
  for (const { re, row } of TABLES[engine]) {
    const m = re.exec(key);
    if (!m) continue;
    const v = row.how === "1 - x" ? 1 - value : value;
    if (row.to === "val/acc/<bucket>") {
      const bucket = /^lab\/[^/]+\/(.+)$/.exec(m[1]);
      const out = bucket ? [{ key: `val/acc/${bucket[1]}`, value: v }] : [];
      if (dataSources === 1) out.push({ key: "val/acc", value: v });
      return out.length > 0 ? out : [{ key, value }];
    }
    return [{ key: m[1] === undefined ? row.to : row.to.replace("<f>", m[1]), value: v }];
  }
  return [{ key, value }];
}

/** The two tables as markdown (docs/SCALE-OUT.md holds this text). */
export function namesTableMarkdown(): string {
  const table = (title: string, rows: readonly NameRow[]) => [
    `| ${title} | lab | carried |`,
    "| --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| \`${r.from}\` | \`${r.to}\` | ${r.how === "same" ? "as is" : `\`${r.how}\``}${r.note ? `; ${r.note}` : ""} |`,
    ),
  ];
  return [...table("verl", VERL_NAMES), "", ...table("TRL", TRL_NAMES)].join("\n");
}
