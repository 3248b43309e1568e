// The multi-turn environment loop (RAGEN / StarPO style) for an EnvTask: each episode resets
// its environment with a seed, the instructions and the first observation form the prompt,
// the model writes one assistant turn (decoding stops at <|im_end|>), env.step(text) scores
// it, and the next observation is appended as a user turn of environment tokens (mask 0)
// through the same GenerationSession, so all live episodes decode as one batch and nothing
// is recomputed. Episodes end when the environment says done, or when the context is full.
// sampling.max_new_tokens bounds each turn: a turn cut there is still given to env.step (its
// text usually holds no valid action) and then closed with an <|im_end|> of mask 0.
//
// Per turn the episode records a GiGPO step row: the anchor key of the state the action was
// taken in, the step reward, the action's token range and whether the action was invalid.
// Tested by rl/rollout/env-episodes.test.ts (a scripted policy on FrozenLake).
import type { SamplingOptions } from "../../model/api";
import { decodeRun } from "../../model/generate";
import { promptTokens } from "../../model/template";
import { decode, encode, IM_END_ID } from "../../model/tokenizer";
import type { EnvTask, Message } from "../../tasks/types";
import type { StepRow } from "../algos/types";
import type { GenerationPolicy, Trajectory } from "./agent-loop";

export interface EnvEpisode {
  seed: number;
  /** The whole interaction as one response (tool-call list empty). */
  traj: Trajectory;
  /** One row per turn the environment scored. */
  steps: StepRow[];
  /** Undiscounted episode return: the sum of the step rewards. */
  envReturn: number;
  /** The episode reached the goal. */
  success: boolean;
  /** Turns whose text held no valid action. */
  invalidActions: number;
}

export interface EnvRolloutOptions {
  sampling: SamplingOptions;
  /** Policy tokens per turn. */
  maxNewTokensPerTurn: number;
  /** Wall seconds spent in env.step are added here (the tool timing of a text environment). */
  stats?: { envSeconds: number };
}

/** The conversation an episode starts from: the task's instructions, then the first observation. */
export function envPromptMessages(task: EnvTask, observation: string): Message[] {
  return [
    { role: "system", content: task.instructions },
    { role: "user", content: observation },
  ];
}

/** Tokens appended after an action: the next observation as a user turn, then the assistant header. */
export function observationTurnTokens(observation: string): number[] {
  return encode(`\n<|im_start|>user\n${observation}<|im_end|>\n<|im_start|>assistant\n`);
}

interface EpisodeState {
  traj: Trajectory;
  env: ReturnType<EnvTask["make"]>;
  done: boolean;
  turnStart: number;
  turnTokens: number;
  anchor: string;
  steps: StepRow[];
  success: boolean;
  cutTurns: number;
}

/** A fresh episode: its environment reset with `seed`, the prompt of its first observation. */
function startEpisode(task: EnvTask, seed: number, index: number): EpisodeState {
  const env = task.make();
  const obs = env.reset(seed);
  return {
    traj: {
      index,
      promptTokens: promptTokens(env.messages?.() ?? envPromptMessages(task, obs), "chatml-turns"),
      tokens: [],
      mask: [],
      logprobs: [],
      postTool: [],
      toolCalls: [],
      finish: "stop",
      text: "",
    },
    env,
    done: false,
    turnStart: 0,
    turnTokens: 0,
    anchor: env.anchorKey(),
    steps: [],
    success: false,
    cutTurns: 0,
  };
}

/** How a turn ended: at <|im_end|>, cut at the turn's token limit, or at the context's end. */
interface TurnEnd {
  ended: boolean;
  cut: boolean;
  atContext: boolean;
  /** The sequence's length so far. */
  length: number;
  contextLength: number;
}

/**
 * The turn is over: the environment scores its text and the step row is recorded. Returns the
 * tokens to append (the next observation's turn) when the episode goes on, undefined when it ends.
 */
function scoreTurn(s: EpisodeState, end: TurnEnd, envTime: (f: () => void) => void): number[] | undefined {
  const { ended, cut, atContext, length, contextLength } = end;
  const text = decode(s.traj.tokens.slice(s.turnStart));
  let result!: ReturnType<typeof s.env.step>;
  envTime(() => {
    result = s.env.step(text);
  });
  s.steps.push({
    anchor: s.anchor,
    reward: result.reward,
    start: s.turnStart,
    end: s.traj.tokens.length,
    invalid: !result.info.valid,
  });
  if (cut) s.cutTurns++;
  if (result.done) {
    s.done = true;
    s.success = result.info.success;
    if (atContext) s.traj.finish = "context";
    else if (cut) s.traj.finish = "length";
    return undefined;
  }
  const ids = [...(ended ? [] : [IM_END_ID]), ...observationTurnTokens(result.observation)];
  if (atContext || length + ids.length >= contextLength) {
    s.done = true;
    s.traj.finish = "context";
    return undefined;
  }
  envTime(() => {
    s.anchor = s.env.anchorKey();
  });
  return ids;
}

/** Records the appended observation tokens (mask 0) and opens the next turn. */
function appendObservation(s: EpisodeState, ids: number[]): void {
  for (const id of ids) {
    s.traj.tokens.push(id);
    s.traj.mask.push(0);
    s.traj.logprobs.push(0);
    s.traj.postTool.push(0);
  }
  s.turnStart = s.traj.tokens.length;
  s.turnTokens = 0;
}

export async function envRollout(
  policy: GenerationPolicy,
  task: EnvTask,
  seeds: readonly number[],
  opts: EnvRolloutOptions,
): Promise<EnvEpisode[]> {
  const contextLength = policy.config.context;
  const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now());
  const states = seeds.map((seed, index) => startEpisode(task, seed, index));
  for (const s of states) {
    if (s.traj.promptTokens.length >= contextLength) {
      s.done = true;
      s.traj.finish = "context";
    }
  }
  if (states.every((s) => s.done)) return states.map((s, i) => episodeOf(s, seeds[i]));
  const session = policy.startGeneration(opts.sampling);
  const envTime = (f: () => void) => {
    const t0 = now();
    f();
    if (opts.stats) opts.stats.envSeconds += (now() - t0) / 1000;
  };
  try {
    await session.prefill(states.map((s) => s.traj.promptTokens));
    const active = states.map(() => false);
    while (states.some((s) => !s.done)) {
      states.forEach((s, i) => {
        active[i] = !s.done;
      });
      const appends: { seq: number; ids: number[] }[] = [];
      // Each live episode decodes until its turn ends (several tokens per round trip where the
      // session can); the environment scores the turn inside the cut.
      await decodeRun(
        session,
        active,
        opts.maxNewTokensPerTurn,
        (i, tok, logprob, length) => {
          const s = states[i];
          s.traj.tokens.push(tok);
          s.traj.mask.push(1);
          s.traj.logprobs.push(logprob);
          s.traj.postTool.push(0);
          s.turnTokens++;
          const ended = tok === IM_END_ID;
          const atContext = length >= contextLength;
          const cut = !ended && s.turnTokens >= opts.maxNewTokensPerTurn;
          if (!ended && !cut && !atContext) return false;
          const ids = scoreTurn(s, { ended, cut, atContext, length, contextLength }, envTime);
          if (ids) appends.push({ seq: i, ids });
          return true;
        },
        contextLength,
      );
      for (const { seq, ids } of appends) {
        await session.append(seq, ids);
        appendObservation(states[seq], ids);
      }
    }
  } finally {
    session.finish();
  }
  return states.map((s, i) => episodeOf(s, seeds[i]));
}

function episodeOf(s: EpisodeState, seed: number): EnvEpisode {
  s.traj.text = decode(s.traj.tokens);
  if (s.traj.finish === "stop" && s.cutTurns > 0) s.traj.finish = "length";
  return {
    seed,
    traj: s.traj,
    steps: s.steps,
    envReturn: s.steps.reduce((a, r) => a + r.reward, 0),
    success: s.success,
    invalidActions: s.steps.filter((r) => r.invalid).length,
  };
}

/**
 * Token rewards of a multi-turn episode for the token-level estimators (GAE, REINFORCE++,
 * ReMax): the turn-level discounted return (ALGORITHMS §12, RETURN turn-discount) of turn k
 * is ret_k = Σ_{j≥k} γ_turn^{j−k}·s_j; turn k's last token gets ret_k − ret_{k+1}, so the
 * undiscounted reward-to-go at any token of turn k is exactly ret_k. γ_turn = 1 puts the
 * plain step reward s_k on each turn's last token. `discount` is RETURN["turn-discount"].
 */
export function turnTokenRewards(
  steps: readonly StepRow[],
  length: number,
  gammaTurn: number,
  discount: (scores: ArrayLike<number>, gamma: number) => Float64Array,
): Float64Array {
  const out = new Float64Array(length);
  const ret = discount(
    steps.map((s) => s.reward),
    gammaTurn,
  );
  steps.forEach((s, k) => {
    const last = Math.min(s.end, length) - 1;
    if (last >= 0) out[last] += ret[k] - (k + 1 < ret.length ? ret[k + 1] : 0);
  });
  return out;
}
