// The agent loop: batched decoding in which a sequence that stops at a tool call has its
// calls run (all pending calls of the batch in parallel), the formatted responses appended
// as environment tokens (mask 0), and decoding continues from the KV cache. Decoding goes by
// runs (model/generate.ts decodeRun): each sequence until its call or turn ends, several tokens
// per round trip where the session can, with the same tokens as one at a time.
//
// Token in, token out: a trajectory's tokens are exactly the sampled ids plus the inserted
// ones; the text is only ever decoded from them, never re-tokenised. The chat format says
// where a segment ends (inline: at </tool_call> inside the turn; otherwise at the turn's end)
// and what the inserted tokens are (its tool turns), so the loop never knows the tokenizer.
// Tested by rl/rollout/agent-loop.test.ts (a scripted policy with the real sandbox).

import type { GenerationSession, PolicyModel, SamplingOptions } from "../../model/api";
import type { ChatFormat } from "../../model/chat";
import { decodeRun } from "../../model/generate";
import { headTail } from "../../sandbox/run-code";
import { hash32 } from "../../tasks/rng";

/** What the agent loop needs of a model: its context length and a generation session. */
export type GenerationPolicy = Pick<PolicyModel, "startGeneration"> & {
  readonly config: { context: number };
};

/** One call the model wrote, parsed; `error` set when it was malformed (a failed call). */
export interface ToolCallRequest {
  /** Tool name ("" for a malformed call that names none). */
  name: string;
  /** Code for the JS interpreter tool, or JSON arguments for a user-defined tool. */
  code?: string;
  arguments?: Record<string, unknown>;
  raw: string;
  error?: string;
}

export interface ToolOutcome {
  /** The sandbox status was Success (DESIGN.md's definition of a successful call). */
  ok: boolean;
  /** The text the model sees inside <tool_response>. */
  text: string;
  /** A short status for the inspector: Success, Failed: TypeError, Timeout, ... */
  status: string;
  /** The tool's raw result (JSON-safe) for rewards and the inspector. */
  detail?: unknown;
}

/** How calls are found in a generated segment and executed; built from the task's tools. */
export interface ToolProtocol {
  parse(segment: string): ToolCallRequest[];
  /** seeds[i]: the sandbox seed of calls[i] (its place in the run); absent: seed 0. */
  execute(calls: ToolCallRequest[], seeds?: number[]): Promise<ToolOutcome[]>;
}

export interface RolloutLimits {
  /** Tool calls executed per trajectory; later calls are refused. */
  maxToolCalls: number;
  /** Policy tokens per trajectory (inserted tokens do not count). */
  maxNewTokens: number;
  /** Characters of one tool response the model sees (head + "..." + tail beyond it). */
  maxToolResponseChars: number;
  /** Appended (as environment tokens) when a call is refused; "" appends nothing. */
  overLimitNotice: string;
}

export interface ToolCallRecord {
  call: ToolCallRequest;
  outcome: ToolOutcome;
  /** Index in `tokens` where the response tokens start. */
  responseStart: number;
  responseEnd: number;
  executed: boolean;
}

export interface Trajectory {
  /** Index of the sequence in the batch. */
  index: number;
  promptTokens: number[];
  /** Response tokens: sampled and inserted, in order. */
  tokens: number[];
  /** 1 for tokens the policy sampled in this rollout (trained), 0 for inserted ones. */
  mask: number[];
  /** Sampling log-prob of each sampled token (0 for inserted tokens). */
  logprobs: number[];
  /** 1 for policy tokens generated after a tool response (TAO-RL's post-tool tokens). */
  postTool: number[];
  toolCalls: ToolCallRecord[];
  /** "stop": ended its turn; "length": hit maxNewTokens; "context": hit the context length. */
  finish: "stop" | "length" | "context";
  /** The decoded response (for verifiers and the inspector). */
  text: string;
}

interface SeqState {
  traj: Trajectory;
  done: boolean;
  /** Index in traj.tokens where the current segment (text since the last response/turn) starts. */
  segmentStart: number;
  policyTokens: number;
  callsExecuted: number;
  sawTool: boolean;
}

export async function rollout(
  policy: GenerationPolicy,
  prompts: number[][],
  opts: {
    chat: ChatFormat;
    sampling: SamplingOptions;
    limits: RolloutLimits;
    tools?: ToolProtocol;
    /** Wall seconds spent waiting for tool calls are added here. */
    stats?: { toolSeconds: number };
  },
): Promise<Trajectory[]> {
  const { chat, limits, tools } = opts;
  const contextLength = policy.config.context;
  const session = policy.startGeneration(opts.sampling);
  await session.prefill(prompts);
  const states: SeqState[] = prompts.map((p, index) => ({
    traj: {
      index,
      promptTokens: p,
      tokens: [],
      mask: [],
      logprobs: [],
      postTool: [],
      toolCalls: [],
      finish: "stop",
      text: "",
    },
    done: p.length >= contextLength,
    segmentStart: 0,
    policyTokens: 0,
    callsExecuted: 0,
    sawTool: false,
  }));
  for (const s of states) if (s.done) s.traj.finish = "context";
  const active: boolean[] = prompts.map(() => false);
  try {
    while (states.some((s) => !s.done)) {
      let budget = 0;
      states.forEach((s, i) => {
        active[i] = !s.done;
        if (!s.done) budget = Math.max(budget, limits.maxNewTokens - s.policyTokens);
      });
      // Each active sequence decodes until its turn or tool call ends or a limit is hit; the
      // session samples several tokens per round trip and discards those past the cut.
      const pending: { seq: number; calls: ToolCallRequest[] }[] = [];
      await decodeRun(
        session,
        active,
        Math.max(1, budget),
        (i, tok, logprob, length) => {
          const s = states[i];
          s.traj.tokens.push(tok);
          s.traj.mask.push(1);
          s.traj.logprobs.push(logprob);
          s.traj.postTool.push(s.sawTool ? 1 : 0);
          s.policyTokens++;
          const atCallEnd = chat.callEndId !== undefined && tok === chat.callEndId;
          const atTurnEnd = tok === chat.turnEndId;
          if (atCallEnd || (atTurnEnd && chat.callEndId === undefined)) {
            const segment = chat.tokenizer.decode(s.traj.tokens.slice(s.segmentStart));
            const calls = tools ? tools.parse(segment) : [];
            if (calls.length > 0) {
              pending.push({ seq: i, calls });
              return true;
            }
            if (atTurnEnd) s.done = true;
          } else if (atTurnEnd) {
            s.done = true;
          }
          if (!s.done) endIfOverLimits(s, length, contextLength, limits);
          return s.done;
        },
        contextLength,
      );
      if (pending.length > 0) {
        const t0 = performance.now();
        await runPending(pending, states, session, chat, limits, tools!, contextLength, opts.sampling.seed);
        if (opts.stats) opts.stats.toolSeconds += (performance.now() - t0) / 1000;
      }
    }
  } finally {
    session.finish();
  }
  for (const s of states) s.traj.text = chat.tokenizer.decode(s.traj.tokens);
  return states.map((s) => s.traj);
}

function endIfOverLimits(s: SeqState, length: number, contextLength: number, limits: RolloutLimits): void {
  if (s.policyTokens >= limits.maxNewTokens) {
    s.done = true;
    s.traj.finish = "length";
  } else if (length >= contextLength) {
    s.done = true;
    s.traj.finish = "context";
  }
}

async function runPending(
  pending: { seq: number; calls: ToolCallRequest[] }[],
  states: SeqState[],
  session: GenerationSession,
  chat: ChatFormat,
  limits: RolloutLimits,
  tools: ToolProtocol,
  contextLength: number,
  samplingSeed: number,
): Promise<void> {
  // Decide per call whether it runs (within maxToolCalls), then run every allowed call of
  // the whole batch at once: the sandbox pool executes them in parallel.
  const allowed: ToolCallRequest[] = [];
  // Each call's sandbox seed (its Math.random): the rollout's seed (run seed and label),
  // the trajectory and the call index, so a replay gives every program the same numbers.
  const seeds: number[] = [];
  const plan = pending.map(({ seq, calls }) => {
    const s = states[seq];
    return calls.map((call) => {
      const run = s.callsExecuted < limits.maxToolCalls;
      if (run) {
        seeds.push(hash32(`${samplingSeed}:tool:${seq}:${s.callsExecuted}`));
        s.callsExecuted++;
        allowed.push(call);
      }
      return run;
    });
  });
  const outcomes = allowed.length > 0 ? await tools.execute(allowed, seeds) : [];
  let k = 0;
  for (let p = 0; p < pending.length; p++) {
    const { seq, calls } = pending[p];
    const s = states[seq];
    const texts: string[] = [];
    const records: ToolCallRecord[] = [];
    calls.forEach((call, j) => {
      const executed = plan[p][j];
      const outcome: ToolOutcome = executed
        ? outcomes[k++]
        : { ok: false, text: limits.overLimitNotice, status: "Refused: tool-call limit reached" };
      if (executed || limits.overLimitNotice) texts.push(headTail(outcome.text, limits.maxToolResponseChars));
      records.push({ call, outcome, responseStart: 0, responseEnd: 0, executed });
    });
    // A turn that ended with its calls all refused silently still needs the next assistant header.
    const inserted =
      texts.length > 0
        ? chat.toolResponseTokens(texts).ids
        : chat.callEndId === undefined
          ? chat.continuation()
          : [];
    const room = contextLength - session.lengths()[seq];
    const start = s.traj.tokens.length;
    const toAppend = inserted.slice(0, Math.max(0, room));
    for (const r of records) {
      r.responseStart = start;
      r.responseEnd = start + toAppend.length;
    }
    s.traj.toolCalls.push(...records);
    if (toAppend.length > 0) {
      await session.append(seq, toAppend);
      for (const tok of toAppend) {
        s.traj.tokens.push(tok);
        s.traj.mask.push(0);
        s.traj.logprobs.push(0);
        s.traj.postTool.push(0);
      }
    }
    s.sawTool = s.sawTool || records.some((r) => r.executed);
    s.segmentStart = s.traj.tokens.length;
    if (toAppend.length < inserted.length) {
      s.done = true;
      s.traj.finish = "context";
    }
    if (!s.done) endIfOverLimits(s, session.lengths()[seq], contextLength, limits);
  }
}
