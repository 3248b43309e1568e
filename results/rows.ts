// What an engine's run becomes in the lab: metrics rows (phase "rl", the lab's names,
// results/names.ts) and text-level sample records for the inspector. Shared by the verl and
// TRL readers. Steps: an engine's step k is its k-th update, whose rollout the lab calls RL
// step k-1 (the lab's row s is the rollout after s updates); an evaluation after update k is
// the lab's evaluation at step k (the lab evaluates at step 0 before any update). So a
// training key of engine step k lands in row k-1 and an evaluation key in row k.
// Tests: results/results.test.ts.
import type { MetricsRow, SampleRecord } from "../rl/common/step-records.ts";
import { emptySample, SAMPLE_GROUPS } from "../rl/common/step-records.ts";

/** Metrics rows by lab step, keys added one by one. */
export class RowBuilder {
  private readonly byStep = new Map<number, Record<string, number>>();
  private readonly times = new Map<number, number>();

  put(step: number, key: string, value: number): void {
    if (!Number.isFinite(value)) return;
    const row = this.byStep.get(step) ?? {};
    row[key] = value;
    this.byStep.set(step, row);
  }

  has(step: number, key: string): boolean {
    return this.byStep.get(step)?.[key] !== undefined;
  }

  /** Seconds since the run started at the end of this step (the lab's `time`). */
  time(step: number, seconds: number): void {
    this.times.set(step, seconds);
  }

  rows(): MetricsRow[] {
    return [...this.byStep.keys()]
      .sort((a, b) => a - b)
      .map(
        (step) =>
          ({
            ...this.byStep.get(step),
            step,
            phase: "rl",
            time: this.times.get(step) ?? Number.NaN,
          }) as MetricsRow,
      );
  }
}

/** One sampled completion as an engine dumps it: text, not tokens. */
export interface TextSample {
  /** The lab's RL step (engine step - 1). */
  step: number;
  prompt: string;
  response: string;
  reward: number;
  terms: Record<string, number>;
  correct?: boolean;
  advantage?: number;
  /** The ground truth, as text. */
  truth: string;
}

/**
 * Sample records of one step, as the lab keeps them: completions of the same prompt form a group
 * (GRPO's n samples per prompt), the first SAMPLE_GROUPS groups are kept, `groupsInStep` says
 * how many there were. No tokens: `text` holds the prompt and response (no token masks).
 */
export function sampleRecords(samples: readonly TextSample[]): SampleRecord[] {
  const groups = new Map<string, TextSample[]>();
  for (const s of samples) {
    const g = groups.get(s.prompt);
    if (g) g.push(s);
    else groups.set(s.prompt, [s]);
  }
  const out: SampleRecord[] = [];
  [...groups.values()].slice(0, SAMPLE_GROUPS).forEach((g, gi) => {
    for (const s of g) {
      out.push({
        ...emptySample(),
        step: s.step,
        groupId: String(gi),
        problemId: s.truth,
        answer: s.truth,
        reward: s.reward,
        rewardTerms: s.terms,
        correct: s.correct === true,
        finish: "",
        groupsInStep: groups.size,
        text: { prompt: s.prompt, response: s.response, correct: s.correct, advantage: s.advantage },
      });
    }
  });
  return out;
}

/** Only the newest `keep` steps of samples (what the store keeps of a run, workers/store.ts). */
export function newestSteps(samples: SampleRecord[], keep: number): SampleRecord[] {
  const steps = [...new Set(samples.map((s) => s.step))].sort((a, b) => a - b).slice(-keep);
  const wanted = new Set(steps);
  return samples.filter((s) => wanted.has(s.step));
}

export const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
