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
 * The run's rows on the lab's steps. TRL counts optimizer steps, `perLab` of them per lab RL step
 * (the export's optimizer_steps_per_lab_step: rl.minibatches x rl.epochs): a training key of
 * optimizer step s (s updates done) belongs to lab step floor((s - 1) / perLab), the mean over
 * that lab step's optimizer steps that logged it (the rollout's keys are logged once per
 * generation); an `eval_*` key (an evaluation after s updates) lands in row s / perLab, under the
 * lab's name where names.ts maps it (the export's held-out accuracy, `eval_rewards/lab_acc/mean`,
 * is `val/acc`), else as named. `time` is the sum of TRL's `step_time` up to the lab step's last
 * optimizer step (training only: evaluation time is not in it).
 */
export function trlRows(entries: readonly TrlLogEntry[], perLab = 1): RowBuilder {
  const rows = new RowBuilder();
  const sums = new Map<number, Map<string, { sum: number; n: number }>>();
  const stepTime = new Map<number, number>();
  for (const { step, metrics } of entries) {
    for (const [k, v] of Object.entries(metrics)) {
      if (k.startsWith("eval_")) {
        const at = Math.floor(step / perLab);
        for (const m of labMetric("trl", k, v)) rows.put(at, m.key, m.value);
        continue;
      }
      if (k === "step_time") stepTime.set(step, v);
      const lab = Math.max(0, Math.floor((step - 1) / perLab));
      const acc = sums.get(lab) ?? new Map<string, { sum: number; n: number }>();
      sums.set(lab, acc);
      for (const m of labMetric("trl", k, v)) {
        const a = acc.get(m.key) ?? { sum: 0, n: 0 };
        a.sum += m.value;
        a.n += 1;
        acc.set(m.key, a);
      }
    }
  }
  for (const [lab, acc] of sums) for (const [k, { sum, n }] of acc) rows.put(lab, k, sum / n);
  let t = 0;
  const last = new Map<number, number>();
  for (const s of [...stepTime.keys()].sort((a, b) => a - b)) {
    t += stepTime.get(s) as number;
    last.set(Math.max(0, Math.floor((s - 1) / perLab)), t);
  }
  for (const [lab, time] of last) rows.time(lab, time);
  return rows;
}

const NOT_REWARDS = new Set(["step", "prompt", "completion", "advantage", "image", "images"]);

const num = (v: unknown) =>
  typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : v === null ? Number.NaN : undefined;

/** A conversational prompt or completion (a list of messages) as text, in the Hermes form the lab's tasks use. */
function messagesText(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (!Array.isArray(v)) return null;
  const parts: string[] = [];
  for (const m of v) {
    if (typeof m !== "object" || m === null) return null;
    const { role, content, tool_calls, reasoning_content } = m as Record<string, unknown>;
    // TRL's response parser moves a <think> block to reasoning_content: put it back
    const think = typeof reasoning_content === "string" ? `<think>${reasoning_content}</think>` : "";
    const text = think + (typeof content === "string" ? content : "");
    if (role === "tool") parts.push(`<tool_response>${text}</tool_response>`);
    else {
      const calls = Array.isArray(tool_calls)
        ? tool_calls.map((c) => {
            const f = (c as Record<string, unknown>)?.function ?? c;
            return `<tool_call>\n${JSON.stringify(f)}\n</tool_call>`;
          })
        : [];
      parts.push(text.includes("<tool_call>") ? text : text + calls.join(""));
    }
  }
  return parts.join("\n");
}

/**
 * One completions parquet file as text samples, on the lab's steps (`perLab` optimizer steps per
 * lab step). The reward is the export's `lab_reward` column (reward weight 1; lab_acc and
 * lab_valid_call are logged with weight 0, and lab_acc is the verifier's verdict), else the sum
 * of the reward-function columns; each column is a term. Conversational prompts and completions
 * (lists of messages, as TRL logs a run with tools) are rendered as text. Rows of an evaluation
 * before any update (step 0) are no training rollout: left out, and counted in `evalRows`.
 */
export async function readCompletions(
  bytes: ArrayBuffer,
  path: string,
  fileStep: number,
  perLab = 1,
): Promise<{ samples: TextSample[]; evalRows: number }> {
  let rows: Record<string, unknown>[];
  try {
    rows = await parquetReadObjects({ file: bytes });
  } catch (err) {
    throw new ResultsError(`${path}: not a parquet file hyparquet can read: ${(err as Error).message}`);
  }
  const samples: TextSample[] = [];
  let evalRows = 0;
  rows.forEach((r, i) => {
    const at = `${path}: row ${i}`;
    const prompt = messagesText(r.prompt);
    const completion = messagesText(r.completion);
    if (prompt === null || completion === null) {
      throw new ResultsError(
        `${at}: a completion has "prompt" and "completion" strings or message lists (GRPOTrainer.log_completions)`,
      );
    }
    const terms: Record<string, number> = {};
    for (const [k, v] of Object.entries(r)) {
      const x = num(v);
      if (!NOT_REWARDS.has(k) && x !== undefined && Number.isFinite(x)) terms[k] = x;
    }
    const rowStep = num(r.step);
    const step = rowStep !== undefined && Number.isFinite(rowStep) ? rowStep : fileStep;
    if (step === 0) {
      evalRows++;
      return;
    }
    const advantage = num(r.advantage);
    samples.push({
      step: Math.max(0, Math.floor((step - 1) / perLab)),
      prompt,
      response: completion,
      reward: "lab_reward" in terms ? terms.lab_reward : Object.values(terms).reduce((a, b) => a + b, 0),
      terms,
      correct: "lab_acc" in terms ? terms.lab_acc === 1 : undefined,
      advantage: advantage !== undefined && Number.isFinite(advantage) ? advantage : undefined,
      truth: "",
    });
  });
  return { samples, evalRows };
}
