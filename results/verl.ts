// A verl run's files as the lab reads them (facts from verl's sources):
// - the file logger (`verl/utils/tracking.py`, `FileLogger`, on when `trainer.logger` includes
//   "file"): one line per `Tracking.log` call, exactly `{"step": N, "data": {metric: value}}`,
//   written with orjson (NaN becomes null, numpy arrays become lists). `RayPPOTrainer.fit`
//   logs the validation before training at step 0, then each step's metrics (validation
//   included on test_freq steps) at global_steps 1, 2, ...
// - generation dumps (`RayPPOTrainer._dump_generations`, `trainer.rollout_data_dir`):
//   `<dir>/<global_steps>.jsonl`, one json.dumps line per sample with `input`, `output`,
//   `gts`, `score`, `step` and the reward function's extra fields (the exported reward.py
//   returns `acc` and `reward/<term>`).
// Pure. Tests: results/results.test.ts.
import { labMetric } from "./names.ts";
import { isObject, jsonLines, ResultsError } from "./read.ts";
import { mean, RowBuilder, type TextSample } from "./rows.ts";

export interface VerlLogLine {
  line: number;
  step: number;
  data: Record<string, number>;
}

const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : `a ${typeof v}`);

/** The file logger's lines; `notes` says what was left out (a truncated last line, non-numeric values). */
export function readVerlLog(text: string, path: string): { lines: VerlLogLine[]; notes: string[] } {
  const { lines, truncated } = jsonLines(text, path);
  const notes = truncated ? [truncated] : [];
  const nonNumeric = new Set<string>();
  const out = lines.map(({ line, value }) => {
    const at = `${path}:${line}`;
    if (!isObject(value)) {
      throw new ResultsError(
        `${at}: a line is {"step": N, "data": {...}} (verl's FileLogger), not ${kind(value)}`,
      );
    }
    for (const k of Object.keys(value)) {
      if (k !== "step" && k !== "data") {
        throw new ResultsError(`${at}: unknown key "${k}" (verl's FileLogger writes "step" and "data" only)`);
      }
    }
    const { step, data } = value;
    if (typeof step !== "number" || !Number.isInteger(step) || step < 0) {
      throw new ResultsError(`${at}: "step" is ${JSON.stringify(step)}, not a step number`);
    }
    if (!isObject(data)) throw new ResultsError(`${at}: "data" is ${kind(data)}, not an object of metrics`);
    const metrics: Record<string, number> = {};
    for (const [k, v] of Object.entries(data)) {
      if (typeof v === "number") metrics[k] = v;
      else if (v !== null) nonNumeric.add(k);
    }
    return { line, step, data: metrics };
  });
  if (nonNumeric.size > 0) {
    notes.push(`${path}: not charted (values are not numbers): ${[...nonNumeric].sort().join(", ")}`);
  }
  return { lines: out, notes };
}

export interface VerlDumpLine {
  input: string;
  output: string;
  score: number;
  step: number;
  gts: unknown;
  extra: Record<string, unknown>;
}

/** One generation dump file (`<step>.jsonl`); `fileStep` is the step its name carries. */
export function readVerlDump(
  text: string,
  path: string,
  fileStep: number,
): { samples: VerlDumpLine[]; notes: string[] } {
  const { lines, truncated } = jsonLines(text, path);
  const samples = lines.map(({ line, value }) => {
    const at = `${path}:${line}`;
    if (!isObject(value)) throw new ResultsError(`${at}: a generation is a JSON object, not ${kind(value)}`);
    const { input, output, score, step, gts, ...extra } = value;
    if (typeof input !== "string" || typeof output !== "string") {
      throw new ResultsError(
        `${at}: a generation has "input" and "output" strings (RayPPOTrainer._dump_generations)`,
      );
    }
    if (step !== undefined && (typeof step !== "number" || !Number.isInteger(step))) {
      throw new ResultsError(`${at}: "step" is ${JSON.stringify(step)}, not a step number`);
    }
    return {
      input,
      output,
      score: typeof score === "number" ? score : Number.NaN,
      step: typeof step === "number" ? step : fileStep,
      gts,
      extra,
    };
  });
  return { samples, notes: truncated ? [truncated] : [] };
}

const isVal = (key: string) => key.startsWith("val-core/") || key.startsWith("val-aux/");

/**
 * The run's rows: each log line's metrics under the lab's names at the lab's steps
 * (results/rows.ts), `time` from the cumulative `timing_s/step`, and from the dumps of a step
 * what its log line lacks: `acc/mean` (the reward's `acc`) and `reward/<term>/mean`.
 */
export function verlRows(lines: readonly VerlLogLine[], dumps: readonly VerlDumpLine[]): RowBuilder {
  const rows = new RowBuilder();
  let elapsed = 0;
  for (const { step, data } of [...lines].sort((a, b) => a.step - b.step)) {
    const sources = new Set(
      Object.keys(data)
        .map((k) => /^val-core\/(.+)\/acc\/mean@1$/.exec(k)?.[1])
        .filter((x) => x !== undefined),
    );
    for (const [k, v] of Object.entries(data)) {
      const at = isVal(k) ? step : Math.max(0, step - 1);
      for (const m of labMetric("verl", k, v, sources.size)) rows.put(at, m.key, m.value);
    }
    const t = data["timing_s/step"];
    if (typeof t === "number" && step > 0) {
      elapsed += t;
      rows.time(step - 1, elapsed);
    }
  }
  const byStep = new Map<number, VerlDumpLine[]>();
  for (const d of dumps) byStep.set(d.step, [...(byStep.get(d.step) ?? []), d]);
  for (const [step, ds] of byStep) {
    const at = Math.max(0, step - 1);
    const keys = new Set(ds.flatMap((d) => Object.keys(d.extra)));
    for (const k of keys) {
      const vs = ds.map((d) => d.extra[k]);
      if (!vs.every((v) => typeof v === "number" && Number.isFinite(v))) continue;
      const name = k === "acc" ? "acc/mean" : k.startsWith("reward/") ? `${k}/mean` : null;
      if (name && !rows.has(at, name)) rows.put(at, name, mean(vs as number[]));
    }
  }
  return rows;
}

/** The dumps as text samples for the inspector. */
export function verlSamples(dumps: readonly VerlDumpLine[]): TextSample[] {
  return dumps.map((d) => {
    const terms: Record<string, number> = {};
    for (const [k, v] of Object.entries(d.extra)) {
      if (k !== "acc" && typeof v === "number") terms[k] = v;
    }
    const acc = d.extra.acc;
    return {
      step: Math.max(0, d.step - 1),
      prompt: d.input,
      response: d.output,
      reward: d.score,
      terms,
      correct: typeof acc === "number" ? acc === 1 : typeof acc === "boolean" ? acc : undefined,
      truth: typeof d.gts === "string" ? d.gts : JSON.stringify(d.gts ?? null),
    };
  });
}
