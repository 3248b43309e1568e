// A TRL GRPO run's files as the lab reads them (facts from the sources):
// - `trainer_state.json` (transformers `src/transformers/trainer_callback.py`, TrainerState
//   `save_to_json`: json.dumps with indent 2, so NaN and Infinity may appear): `log_history`,
//   one dict per `Trainer.log` call with `step` (global_step: updates done), transformers' keys
//   (`loss`, `grad_norm`, `learning_rate`, `epoch`) and GRPOTrainer's (`trl/trainer/grpo_trainer.py`
//   `_metrics`: `reward`, `reward_std`, `kl`, `entropy`, `clip_ratio/*`, `completions/*`,
//   `rewards/<func>/mean`, ...; evaluation keys prefixed `eval_`); the last entry of a finished
//   run is the summary (`train_runtime`, `train_loss`, ...), not a step. Written to output_dir by
//   `trainer.save_state()` and into each `checkpoint-<step>/`.
// - completions (`log_completions=True`, GRPOTrainer.log): `<output_dir>/completions/
//   completions_<global_step:05d>.parquet`, columns `step`, `prompt`, `completion`, one column
//   per reward function, extra logged columns, `advantage`.
// Pure (hyparquet reads the parquet). Tests: results/results.test.ts.
import { parquetReadObjects } from "hyparquet";
import { labMetric } from "./names.ts";
import { isObject, parsePythonJson, ResultsError } from "./read.ts";
import { RowBuilder, type TextSample } from "./rows.ts";

export interface TrlLogEntry {
  index: number;
  step: number;
  metrics: Record<string, number>;
}

/** The line of a character offset in a text (1-based). */
const lineAt = (text: string, pos: number) => text.slice(0, pos).split("\n").length;

/** `log_history`'s step entries; `notes` says what was left out. */
export function readTrainerState(text: string, path: string): { entries: TrlLogEntry[]; notes: string[] } {
  let state: unknown;
  try {
    state = parsePythonJson(text);
  } catch (err) {
    const pos = /position (\d+)/.exec(String((err as Error).message))?.[1];
    const line = pos !== undefined ? lineAt(text, Number(pos)) : text.split("\n").length;
    throw new ResultsError(`${path}:${line}: not JSON (a file cut short?): ${(err as Error).message}`);
  }
  if (!isObject(state) || !Array.isArray(state.log_history)) {
    throw new ResultsError(`${path}: no "log_history" list: not a transformers TrainerState file`);
  }
  const notes: string[] = [];
  const nonNumeric = new Set<string>();
  const entries: TrlLogEntry[] = [];
  state.log_history.forEach((e: unknown, index: number) => {
    const at = `${path}: log_history[${index}]`;
    if (!isObject(e)) throw new ResultsError(`${at} is not an object of metrics`);
    const { step, ...rest } = e;
    if (typeof step !== "number" || !Number.isInteger(step) || step < 0) {
      throw new ResultsError(`${at}: "step" is ${JSON.stringify(step)}, not a step number`);
    }
    if ("train_runtime" in rest) {
      notes.push(`${at}: the end-of-training summary (train_runtime, train_loss), not a step: left out`);
      return;
    }
    const metrics: Record<string, number> = {};
    for (const [k, v] of Object.entries(rest)) {
      if (typeof v === "number") metrics[k] = v;
      else if (v !== null) nonNumeric.add(k);
    }
    entries.push({ index, step, metrics });
  });
  if (nonNumeric.size > 0) {
    notes.push(`${path}: not charted (values are not numbers): ${[...nonNumeric].sort().join(", ")}`);
  }
  return { entries, notes };
}

/**
 * The run's rows: training keys of step s (s updates done, the s-th update's rollout) in the
 * lab's row s-1 under the lab's names; `eval_*` keys (an evaluation after s updates) in row s,
 * as named. TRL's log has no wall time: `time` stays unknown.
 */
export function trlRows(entries: readonly TrlLogEntry[]): RowBuilder {
  const rows = new RowBuilder();
  for (const { step, metrics } of entries) {
    for (const [k, v] of Object.entries(metrics)) {
      if (k.startsWith("eval_")) rows.put(step, k, v);
      else for (const m of labMetric("trl", k, v)) rows.put(Math.max(0, step - 1), m.key, m.value);
    }
  }
  return rows;
}

const NOT_REWARDS = new Set(["step", "prompt", "completion", "advantage", "image", "images"]);

const num = (v: unknown) =>
  typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : v === null ? Number.NaN : undefined;

/**
 * One completions parquet file as text samples: the reward is the sum of the reward-function
 * columns (weights 1: the export's train_trl.py has one function, `lab_reward`), each a term.
 */
export async function readCompletions(
  bytes: ArrayBuffer,
  path: string,
  fileStep: number,
): Promise<TextSample[]> {
  let rows: Record<string, unknown>[];
  try {
    rows = await parquetReadObjects({ file: bytes });
  } catch (err) {
    throw new ResultsError(`${path}: not a parquet file hyparquet can read: ${(err as Error).message}`);
  }
  return rows.map((r, i) => {
    const at = `${path}: row ${i}`;
    const { prompt, completion } = r;
    if (typeof prompt !== "string" || typeof completion !== "string") {
      throw new ResultsError(
        `${at}: a completion has "prompt" and "completion" strings (GRPOTrainer.log_completions)`,
      );
    }
    const terms: Record<string, number> = {};
    for (const [k, v] of Object.entries(r)) {
      const x = num(v);
      if (!NOT_REWARDS.has(k) && x !== undefined && Number.isFinite(x)) terms[k] = x;
    }
    const step = num(r.step);
    const advantage = num(r.advantage);
    return {
      step: Math.max(0, (step !== undefined && Number.isFinite(step) ? step : fileStep) - 1),
      prompt,
      response: completion,
      reward: Object.values(terms).reduce((a, b) => a + b, 0),
      terms,
      advantage: advantage !== undefined && Number.isFinite(advantage) ? advantage : undefined,
      truth: "",
    };
  });
}
