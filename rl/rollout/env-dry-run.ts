// The page's dry run of a JS environment before any training: compile the module (syntax and
// declaration errors come back with their line), play three episodes on training seeds with
// its scripted policy (or a random one), and give them as inspector samples: the chatml
// transcript in the character tokenizer's tokens, model turns trainable (mask 1), the prompt,
// observations and tool outputs inserted (mask 0), as a rollout would record them.
// Tested by rl/env-dry-run.test.ts.
import { lossMask, promptTokens, render } from "../../model/template";
import { CHAR_TOKENIZER } from "../../model/tokenizer";
import { prepareEnvEngine } from "../../tasks/env-api/engine";
import {
  dryRun,
  type EnvDescription,
  EnvError,
  envErrorText,
  type JsEnvLimits,
  makeJsEnvTask,
  type PlayedEpisode,
} from "../../tasks/env-api/js-env";
import { emptySample, type SampleRecord, withPieces } from "../common/step-records";

export interface DryRunEpisode {
  seed: number;
  turns: number;
  envReturn: number;
  success: boolean;
  rewards: number[];
  ended?: string;
  error?: string;
}

export type EnvDryRunResult =
  | { ok: true; info: EnvDescription; episodes: DryRunEpisode[]; samples: SampleRecord[]; scripted: boolean }
  | { ok: false; error: string; line?: number };

/** An episode as an inspector sample (step 0, group "dry-run"). */
export function episodeSample(ep: PlayedEpisode, envName: string): SampleRecord {
  const firstModel = ep.messages.findIndex((m) => m.role === "assistant");
  const opening = ep.messages.slice(0, firstModel < 0 ? ep.messages.length : firstModel);
  const prompt = promptTokens(opening, "chatml-turns");
  const all = render(ep.messages, "chatml-turns");
  const tokens = all.ids.slice(prompt.length);
  const mask = [...lossMask(all.roles.slice(prompt.length))];
  return {
    ...emptySample(),
    groupId: "dry-run",
    problemId: `${envName}:seed${ep.seed}`,
    bucket: "all",
    promptTokens: prompt,
    tokens,
    mask,
    postTool: tokens.map(() => 0),
    logprobs: tokens.map(() => 0),
    entropy: [],
    advantages: tokens.map(() => 0),
    reward: ep.envReturn,
    rewardTerms: { env: ep.envReturn },
    correct: ep.success,
    finish: ep.error ? "error" : ep.ended ? "length" : "stop",
    filter: ep.error ?? ep.ended ?? "",
  };
}

/** Compiles `source` and plays `episodes` episodes; never throws. */
export async function envDryRun(
  source: string,
  limits: JsEnvLimits,
  opts: { seed?: number; episodes?: number } = {},
): Promise<EnvDryRunResult> {
  await prepareEnvEngine();
  try {
    const task = makeJsEnvTask(source, limits);
    const played = dryRun(task, { seed: opts.seed, episodes: opts.episodes ?? 3 });
    return {
      ok: true,
      info: task.program.info,
      scripted: task.program.info.policy,
      episodes: played.map((e) => ({
        seed: e.seed,
        turns: e.turns,
        envReturn: e.envReturn,
        success: e.success,
        rewards: e.rewards,
        ...(e.ended ? { ended: e.ended } : {}),
        ...(e.error ? { error: e.error } : {}),
      })),
      samples: withPieces(
        played.map((e) => episodeSample(e, task.name)),
        CHAR_TOKENIZER,
      ),
    };
  } catch (e) {
    return {
      ok: false,
      error: envErrorText(e),
      ...(e instanceof EnvError && e.line ? { line: e.line } : {}),
    };
  }
}
