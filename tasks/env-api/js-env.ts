// A JavaScript environment as the lab's EnvTask: the author's module (docs/ENVIRONMENTS.md)
// runs in the QuickJS sandbox, one call per reset, turn, tool call and final check, each with
// a seed derived from the episode's seed and the call's place, so an episode is a function
// of (source, seed, the model's turns). The rollout (rl/env-rollout.ts) drives it like
// FrozenLake: each model turn goes to step(); a turn holding a <tool_call> runs that tool on
// the episode's state and the tool's output comes back as the next (masked) user turn; a
// single-turn environment (no step) ends at the first turn without a tool call, which is its
// answer. When the episode ends (done, the turn limit, or an error) check() scores it: its
// success is the episode's success (val/acc), its score is added to the last turn's reward.
// Tested by tasks/env-api/env-api.test.ts.
import type { RunCodeResult, ToolSpec } from "../../sandbox/types.ts";
import { drawSeeds } from "../env-util.ts";
import { hash32, Rng } from "../rng.ts";
import { isEvalKey } from "../split.ts";
import type { Demo, Env, EnvTask, Message, StepResult } from "../types.ts";
import { envEngine } from "./engine.ts";
import { envProgram, exportDefaultCount, moduleAsScript } from "./runtime.ts";

/** A tool as a module declares it: the sandbox's ToolSpec without a body (the module's own run() implements it). */
type EnvToolSpec = Pick<ToolSpec, "name" | "description"> & { parameters: Record<string, unknown> };

/** What `describe` reports of a module. */
export interface EnvDescription {
  name: string;
  description: string;
  maxTurns: number;
  tools: EnvToolSpec[];
  /** The module has step(): a game of several turns. */
  multiTurn: boolean;
  /** The module has policy(): a scripted player for dry runs and SFT demonstrations. */
  policy: boolean;
  /** Words the random policy picks from (the dry run without policy()). */
  actions: string[];
}

export interface JsEnvLimits {
  /** Seconds per environment call (limits.tool_timeout_s). */
  timeoutS: number;
  /** QuickJS heap per call (limits.memory_mb). */
  memoryMB: number;
  /** Tool calls an episode may run (limits.max_tool_calls); later ones are refused with a notice. */
  maxToolCalls: number;
  /** Overrides the module's maxTurns (task.options.max_turns). */
  maxTurns?: number;
}

export const DEFAULT_ENV_LIMITS: JsEnvLimits = { timeoutS: 1, memoryMB: 16, maxToolCalls: 3 };

/** An error of the environment's code, with the 1-based line of the author's source when it has one. */
export class EnvError extends Error {
  constructor(
    message: string,
    readonly call: string,
    readonly line?: number,
    readonly errorName = "Error",
  ) {
    super(message);
    this.name = "EnvError";
  }
}

/** The text of an EnvError for people: `<call>: <Name>: <message> (line N)`. */
export function envErrorText(e: unknown): string {
  if (e instanceof EnvError)
    return `${e.call}: ${e.errorName === "EnvApiError" ? "" : `${e.errorName}: `}${e.message}${e.line ? ` (line ${e.line})` : ""}`;
  return (e as Error).message;
}

/** The episode as check() and policy() see it. */
export interface EpisodeView {
  seed: number;
  /** Model turns so far. */
  turn: number;
  turns: { text: string; observation: string; kind: "tool" | "step" | "answer" }[];
  calls: { name: string; arguments: unknown; result: unknown; ok: boolean }[];
  /** The content of the last <answer>..</answer> of the last turn, else null. */
  answer: string | null;
  /** The last model turn. */
  text: string;
}

/** A compiled environment: its source as a script, and what describe() said of it. */
export class JsEnvProgram {
  readonly script: string;
  readonly info: EnvDescription;

  constructor(
    readonly source: string,
    readonly limits: JsEnvLimits = DEFAULT_ENV_LIMITS,
  ) {
    const n = exportDefaultCount(source);
    if (n !== 1)
      throw new EnvError(
        n === 0
          ? "the source must `export default` the environment object (see docs/ENVIRONMENTS.md)"
          : `the source has ${n} \`export default\` lines; keep one`,
        "module",
      );
    this.script = moduleAsScript(source) as string;
    this.info = this.call("describe", {}, 0) as EnvDescription;
    if (limits.maxTurns !== undefined) this.info = { ...this.info, maxTurns: limits.maxTurns };
  }

  /** One sandbox call; throws EnvError naming the call (and the line, for the author's errors). */
  call(op: string, payload: Record<string, unknown>, seed: number): unknown {
    const r: RunCodeResult = envEngine().run({
      code: envProgram(this.script, { op, ...payload }),
      seed: seed >>> 0,
      run_timeout: this.limits.timeoutS,
      memory_limit_MB: this.limits.memoryMB,
    });
    if (r.status === "Success") return r.value ?? null;
    const err = r.error;
    const lines = this.source.split("\n").length;
    // A line past the author's source is the dispatch's: the fault is named in the message.
    const line = err?.line !== undefined && err.line <= lines ? err.line : undefined;
    if (!err) throw new EnvError(r.run_result.stderr.trim() || r.status, op);
    const what =
      err.kind === "Exception"
        ? err.message
        : `${err.kind}: ${err.message || "the call ran out of its limit"}`;
    throw new EnvError(what, op, line, err.name);
  }
}

const CALL_RE = /<tool_call>([\s\S]*?)<\/tool_call>/;

/** The first <tool_call> of a turn as {name, arguments}, an error text, or null when there is none. */
export function parseEnvToolCall(
  text: string,
): { name: string; arguments: Record<string, unknown> } | { error: string } | null {
  const m = text.match(CALL_RE);
  if (!m) return null;
  let v: unknown;
  try {
    v = JSON.parse(m[1]);
  } catch {
    return {
      error: 'the tool call is not JSON: write <tool_call>{"name": ..., "arguments": {...}}</tool_call>',
    };
  }
  if (typeof v !== "object" || v === null || typeof (v as { name?: unknown }).name !== "string")
    return { error: 'the tool call needs a "name"' };
  const args = (v as { arguments?: unknown }).arguments ?? {};
  if (typeof args !== "object" || args === null || Array.isArray(args))
    return { error: '"arguments" must be an object' };
  return { name: (v as { name: string }).name, arguments: args as Record<string, unknown> };
}

function lastAnswer(text: string): string | null {
  const all = [...text.matchAll(/<answer>([\s\S]*?)<\/answer>/g)];
  return all.length > 0 ? all[all.length - 1][1].trim() : null;
}

/** Per-call sandbox seed: the episode's seed, the call and its turn. */
export function envCallSeed(seed: number, op: string, turn: number): number {
  return hash32(`env:${seed >>> 0}:${op}:${turn}`);
}

interface ResetResult {
  messages: Message[];
  state: unknown;
}

/** The lab's Env over a program: one episode at a time, its state kept as JSON. */
export class JsEnv implements Env<unknown> {
  readonly name: string;
  readonly maxSteps: number;
  readonly actions: readonly string[];
  private seed = 0;
  private state_: unknown = null;
  private messages_: Message[] = [];
  private view: EpisodeView | null = null;
  private done = false;
  private toolCalls = 0;
  private lastObservation = "";

  constructor(
    readonly program: JsEnvProgram,
    private readonly resetCache?: (seed: number) => ResetResult,
  ) {
    this.name = program.info.name;
    this.maxSteps = program.info.maxTurns;
    this.actions = program.info.actions;
  }

  reset(seed: number): string {
    this.seed = seed >>> 0;
    const r = this.resetCache
      ? this.resetCache(this.seed)
      : (this.program.call("reset", { seed: this.seed }, envCallSeed(this.seed, "reset", 0)) as ResetResult);
    this.state_ = structuredClone(r.state);
    this.messages_ = r.messages;
    this.view = { seed: this.seed, turn: 0, turns: [], calls: [], answer: null, text: "" };
    this.done = false;
    this.toolCalls = 0;
    this.lastObservation = r.messages[r.messages.length - 1].content;
    return this.lastObservation;
  }

  /** The episode's opening messages (reset's prompt or messages). */
  messages(): Message[] {
    return this.messages_.map((m) => ({ ...m }));
  }

  private cur(): EpisodeView {
    if (!this.view) throw new Error(`${this.name}: step() before reset()`);
    return this.view;
  }

  /** A tool-call turn: the call run by the program's tool() (within the call limit); returns the text the model sees. */
  private toolTurn(v: EpisodeView, call: NonNullable<ReturnType<typeof parseEnvToolCall>>): string {
    const p = this.program;
    let out: string;
    if ("error" in call) {
      out = `Error: ${call.error}`;
      v.calls.push({ name: "", arguments: null, result: out, ok: false });
    } else if (this.toolCalls >= p.limits.maxToolCalls) {
      out = `Error: tool-call limit reached (${p.limits.maxToolCalls} calls)`;
      v.calls.push({ name: call.name, arguments: call.arguments, result: out, ok: false });
    } else {
      this.toolCalls++;
      try {
        const r = p.call(
          "tool",
          { name: call.name, args: call.arguments, state: this.state_ },
          envCallSeed(this.seed, "tool", v.turn),
        ) as { result: unknown; state: unknown };
        this.state_ = r.state;
        out = typeof r.result === "string" ? r.result : JSON.stringify(r.result);
        v.calls.push({ name: call.name, arguments: call.arguments, result: r.result, ok: true });
      } catch (e) {
        // A tool that throws is a failed call the model sees, as in the sandbox's tools.
        out = `Error: ${envErrorText(e)}`;
        v.calls.push({ name: call.name, arguments: call.arguments, result: out, ok: false });
      }
    }
    return out;
  }

  /** A multi-turn environment's turn: the program's step(); an error ends the episode. */
  private programStep(v: EpisodeView, text: string) {
    try {
      const r = this.program.call(
        "step",
        { state: this.state_, text, turn: v.turn },
        envCallSeed(this.seed, "step", v.turn),
      ) as { observation: string; reward: number; done: boolean; valid: boolean; state: unknown };
      this.state_ = r.state;
      return { observation: r.observation, reward: r.reward, done: r.done, valid: r.valid, error: undefined };
    } catch (e) {
      return {
        observation: "",
        reward: 0,
        done: true,
        valid: true,
        error: envErrorText(e) as string | undefined,
      };
    }
  }

  /** The ended episode judged by the program's check(): success and the score added to the reward. */
  private check(v: EpisodeView): { success: boolean; score: number } | { error: string } {
    try {
      const c = this.program.call(
        "check",
        { state: this.state_, episode: v },
        envCallSeed(this.seed, "check", v.turn),
      ) as { success: boolean; score: number };
      return { success: c.success, score: c.score };
    } catch (e) {
      return { error: envErrorText(e) };
    }
  }

  step(text: string): StepResult {
    const v = this.cur();
    if (this.done) throw new Error(`${this.name}: step() after the episode ended`);
    const p = this.program;
    v.turn++;
    v.text = text;
    v.answer = lastAnswer(text);
    let observation = "";
    let reward = 0;
    let done = false;
    let valid = true;
    let error: string | undefined;
    let toolOutput: string | undefined;
    let kind: "tool" | "step" | "answer" = "answer";
    const call = p.info.tools.length > 0 ? parseEnvToolCall(text) : null;
    if (call) {
      kind = "tool";
      const out = this.toolTurn(v, call);
      if ("error" in call) valid = false;
      toolOutput = out;
      observation = `<tool_response>${out}</tool_response>`;
    } else if (p.info.multiTurn) {
      kind = "step";
      ({ observation, reward, done, valid, error } = this.programStep(v, text));
    } else {
      done = true;
    }
    v.turns.push({ text, observation, kind });
    let truncated = false;
    if (!done && v.turn >= this.maxSteps) {
      done = true;
      truncated = true;
    }
    let success = false;
    if (done && error === undefined) {
      const checked = this.check(v);
      if ("error" in checked) error = checked.error;
      else {
        success = checked.success;
        reward += checked.score;
      }
    }
    this.done = done;
    this.lastObservation = observation;
    return {
      observation,
      reward,
      done,
      info: {
        action: kind === "tool" ? (call && "name" in call ? call.name : null) : text,
        valid,
        success,
        truncated,
        steps: v.turn,
        kind,
        ...(toolOutput !== undefined ? { toolOutput } : {}),
        ...(truncated ? { ended: `the turn limit (${this.maxSteps} turns) ended the episode` } : {}),
        ...(error !== undefined ? { error, ended: `the environment failed: ${error}` } : {}),
      },
    };
  }

  state(): unknown {
    return structuredClone(this.state_);
  }

  /** The episode as check() sees it (a copy). */
  episode(): EpisodeView {
    return structuredClone(this.cur());
  }

  anchorKey(state?: unknown): string {
    return `${this.name}:${hash32(JSON.stringify(state ?? this.state_)).toString(16)}`;
  }

  render(): string {
    return this.lastObservation;
  }

  /** The scripted policy's next turn (the module's policy()); throws EnvError when it has none or fails. */
  policyTurn(): string {
    const v = this.cur();
    const r = this.program.call(
      "policy",
      { state: this.state_, episode: v },
      envCallSeed(this.seed, "policy", v.turn + 1),
    ) as { text: string };
    return r.text;
  }
}

export interface JsEnvTask extends EnvTask {
  program: JsEnvProgram;
  make(): JsEnv;
}

/** Most reset results kept per task for the seed split (each split key is one reset). */
const RESET_CACHE_MAX = 20_000;

/** An EnvTask over an environment's source; compiling runs describe(), so a bad module throws EnvError here. */
export function makeJsEnvTask(source: string, limits: JsEnvLimits = DEFAULT_ENV_LIMITS): JsEnvTask {
  const program = new JsEnvProgram(source, limits);
  const info = program.info;
  const cache = new Map<number, ResetResult>();
  const resetOf = (seed: number): ResetResult => {
    let r = cache.get(seed);
    if (!r) {
      r = program.call("reset", { seed }, envCallSeed(seed, "reset", 0)) as ResetResult;
      if (cache.size >= RESET_CACHE_MAX) cache.clear();
      cache.set(seed, r);
    }
    return r;
  };
  // The split key is the episode a seed starts (its opening messages and state), as the grid
  // environments key on the layout: two seeds that start the same episode share a side.
  const splitName = `env:${info.name}`;
  const layout = (seed: number) => JSON.stringify(resetOf(seed));
  const make = () => new JsEnv(program, resetOf);
  return {
    name: info.name,
    description: info.description || `JavaScript environment ${info.name}`,
    kind: "env",
    defaultTemplate: "chatml-turns",
    buckets: ["all"],
    instructions: "",
    program,
    make,
    sampleSeeds: (rng, n) => drawSeeds(splitName, layout, rng, n, false),
    evalSeeds: (n) => evalSeedsOf(splitName, layout, n),
    sftDemos(rng, n) {
      if (!info.policy)
        throw new Error(
          `task.options.source: ${info.name} has no policy(state, episode), so it has no scripted demonstrations for SFT (set sft.steps 0)`,
        );
      const out: Demo[] = [];
      const seedRng = rng.fork("seeds");
      for (let tries = 0; out.length < n; tries++) {
        if (tries > 20 * (n + 1))
          throw new Error(`${info.name}: the scripted policy fails too many episodes for demonstrations`);
        const [seed] = drawSeeds(splitName, layout, seedRng, 1, false);
        const ep = playEpisode(make(), seed, (env) => env.policyTurn());
        if (ep.success && !ep.error)
          out.push({
            id: `${info.name}:seed${seed}#demo${out.length}`,
            messages: ep.messages,
            bucket: "all",
            meta: { seed },
          });
      }
      return out;
    },
  };
}

/** Seeds scanned for eval episodes before an environment counts as having no more. */
const EVAL_SCAN = (n: number) => Math.max(400, 20 * n);

/**
 * Eval seeds as the grid environments take them (tasks/env-util.ts evalSeedList: counting up
 * from 0, eval-side keys, each episode once), except that an environment with few distinct
 * episodes (a guessing game's 16 secrets) gets the ones it has instead of an error.
 */
function evalSeedsOf(name: string, layout: (seed: number) => string, n: number): number[] {
  const out: number[] = [];
  const seen = new Set<string>();
  const distinct = new Set<string>();
  for (let seed = 0; out.length < n && seed < EVAL_SCAN(n); seed++) {
    const key = layout(seed);
    distinct.add(key);
    if (!seen.has(key) && isEvalKey(name, key)) {
      seen.add(key);
      out.push(seed);
    }
  }
  if (out.length === 0 && n > 0)
    throw new Error(
      `${name}: no held-out episode among the first ${EVAL_SCAN(n)} seeds (all its episodes train): episodes are split by what reset(seed) returns, and it returned ${distinct.size} different one${distinct.size === 1 ? "" : "s"}; let the prompt or state vary with the seed, or set task.eval_size to 0`,
    );
  return out;
}

/** One played episode: its messages (chatml turns, tool output as tool messages), rewards and end. */
export interface PlayedEpisode {
  seed: number;
  messages: Message[];
  rewards: number[];
  envReturn: number;
  success: boolean;
  turns: number;
  /** Why the episode ended, when not by done: the turn limit, or an error. */
  ended?: string;
  error?: string;
  steps: StepResult[];
}

/** Plays an episode with `policy` choosing each model turn (scripted, random or replayed). */
export function playEpisode(
  env: JsEnv,
  seed: number,
  policy: (env: JsEnv, turn: number) => string,
): PlayedEpisode {
  env.reset(seed);
  const messages = env.messages();
  const steps: StepResult[] = [];
  for (let turn = 0; ; turn++) {
    let text: string;
    try {
      text = policy(env, turn);
    } catch (e) {
      const error = envErrorText(e);
      return summary(seed, messages, steps, { error, ended: `the policy failed: ${error}` });
    }
    messages.push({ role: "assistant", content: text });
    const r = env.step(text);
    steps.push(r);
    if (r.done) return summary(seed, messages, steps, r.info as { ended?: string; error?: string });
    if (r.info.toolOutput !== undefined) messages.push({ role: "tool", content: String(r.info.toolOutput) });
    else messages.push({ role: "user", content: r.observation });
  }
}

function summary(
  seed: number,
  messages: Message[],
  steps: StepResult[],
  end: { ended?: string; error?: string },
): PlayedEpisode {
  const rewards = steps.map((s) => s.reward);
  const last = steps[steps.length - 1];
  return {
    seed,
    messages,
    rewards,
    envReturn: rewards.reduce((a, b) => a + b, 0),
    success: last?.info.success ?? false,
    turns: steps.length,
    ...(end.ended ? { ended: end.ended } : {}),
    ...(end.error ? { error: end.error } : {}),
    steps,
  };
}

/** A policy that answers a random one of the environment's actions (`<answer>word</answer>`), or "". */
export function randomPolicy(seed: number): (env: JsEnv, turn: number) => string {
  const rng = new Rng(`env-random-policy:${seed}`);
  return (env) => (env.actions.length > 0 ? `<answer>${rng.pick(env.actions)}</answer>` : "");
}

/**
 * The dry run: `episodes` episodes on training seeds, with the scripted policy where the
 * module has one and a random one otherwise.
 */
export function dryRun(task: JsEnvTask, opts: { seed?: number; episodes?: number } = {}): PlayedEpisode[] {
  const seeds = task.sampleSeeds(new Rng(`env-dry-run:${opts.seed ?? 0}`), opts.episodes ?? 3);
  return seeds.map((seed) =>
    playEpisode(task.make(), seed, task.program.info.policy ? (env) => env.policyTurn() : randomPolicy(seed)),
  );
}
