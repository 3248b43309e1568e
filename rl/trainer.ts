// The training engine: SFT cold start and RL steps over any PolicyModel (WebGPU or CPU),
// a task, and a sandbox. One RL step follows DESIGN.md's data flow: sample prompts (seeded),
// roll out with tools, reward, filter (with refill), advantages, optional entropy shaping,
// then epochs x minibatches of policy-loss updates, and one metrics row with verl's names.
// Multi-turn environments (EnvTask: frozenlake, sokoban) run through rl/env-rollout.ts: a
// prompt is a seed, the reward is the episode return, `correct` is success, each turn is a
// GiGPO step row, and token-level estimators see turn-discounted token rewards
// (rl.turn_gamma); rows add env/success_rate, env/steps_mean, env/return_mean,
// env/invalid_rate. ReMax adds one greedy rollout per prompt as the group's baseline.
// VAPO's value pretraining (valuePretrainStep) trains only the value head on Monte-Carlo
// returns of the frozen policy and logs rows of phase "value_pretrain".
// Every random choice derives from (config.seed, phase, step), so a run replays exactly and a
// resumed run needs no saved RNG state. Config edits apply at the start of the next step.
// The loop that drives it (pause, resume, stop rules) is rl/runner.ts.
// Tested by rl/trainer.test.ts, rl/trainer-env.test.ts, rl/vapo.test.ts,
// rl/baselines.test.ts, rl/registry-run.test.ts (CPU model) and the headless runs (cli/, e2e/).
import { applyEdit, type ConfigEdit, type RunConfig } from "../config";
import type { PolicyModel } from "../model/api";
import { builtinChat, type ChatFormat } from "../model/chat";
import { lossMask, type Message } from "../model/template";
import { CHAR_TOKENIZER, type Tokenizer } from "../model/tokenizer";
import type { SandboxRunner } from "../sandbox/types";
import { createRng, hash32 } from "../tasks/rng";
import { type AnyTask, type EnvTask, isEnvTask, type Problem, type Task } from "../tasks/types";
import { ADVANTAGE, type AdvantageState, gae, RETURN, withAdvantageDefaults } from "./algos/advantage";
import { applyFilters, type FilterGroup, planDuplicate, planResample } from "./algos/filters";
import {
  AGG,
  aggregate,
  entropyTerm,
  explainedVariance,
  klTerm,
  POLICY_LOSS,
  positiveLm,
  valueLoss,
  valuePretrainDone,
} from "./algos/losses";
import { actorMetrics } from "./algos/masks";
import { SHAPING } from "./algos/shaping";
import {
  type Trajectory as AlgoTrajectory,
  flatten,
  lastPolicyIndex,
  mean,
  type StepRow,
  std,
  sum,
  unflatten,
} from "./algos/types";
import { gatherRows, packSequences, scatterRows } from "./batch";
import { envPromptMessages, envRollout, turnTokenRewards } from "./env-rollout";
import { parseAnswer } from "./parse";
import { computeRewards, type RewardedTrajectory, type RewardItem } from "./rewards";
import { type RolloutLimits, rollout, type ToolProtocol, type Trajectory } from "./rollout";
import { lrAt } from "./schedule";
import { makeToolProtocol } from "./tools";

/** One line of metrics.jsonl: DESIGN.md's names; absent keys were not computed this step. */
export type MetricsRow = { step: number; phase: "sft" | "value_pretrain" | "rl"; time: number } & Record<
  string,
  number | string
>;

/** A trajectory as the inspector shows it: tokens with their per-token numbers. */
export interface SampleRecord {
  step: number;
  groupId: string;
  problemId: string;
  bucket: string;
  answer: string;
  promptTokens: number[];
  tokens: number[];
  /** The readable text of each prompt and response token (the tokenizer's pieces): the page loads no tokenizer. */
  promptPieces?: string[];
  pieces?: string[];
  /** The tokenizer's pad id, so the inspector can tell padding from text. */
  padId?: number;
  mask: number[];
  postTool: number[];
  logprobs: number[];
  entropy: number[];
  advantages: number[];
  reward: number;
  rewardTerms: Record<string, number>;
  correct: boolean;
  toolCalls: {
    raw: string;
    response: string;
    ok: boolean;
    status: string;
    executed: boolean;
    responseStart: number;
    responseEnd: number;
  }[];
  finish: string;
  /** The custom JS reward's error for this trajectory (it then scored 0). */
  customError?: string;
  filter: string;
  /** Multi-turn environments: one row per turn (anchor state, step reward, action token range). */
  steps?: StepRow[];
}

export interface TrainerDeps {
  policy: PolicyModel;
  /** A single-turn task, or a multi-turn environment (rl/env-rollout.ts plays its episodes). */
  task: AnyTask;
  sandbox: SandboxRunner;
  /**
   * The tokenizer and transcript template (model/chat.ts); default: task.template with the
   * character tokenizer. Multi-turn environments always speak chatml-turns with it.
   */
  chat?: ChatFormat;
  /** Frozen reference policy for KL; made from the policy on first need when absent. */
  reference?: PolicyModel;
  /** Seconds since the run started (injected so replays can ignore wall time). */
  clock?: () => number;
  /** Told what a step is doing now (the UI's progress bar). */
  onActivity?: (activity: "sft" | "rollout" | "tools" | "reward" | "update" | "eval") => void;
}

export interface StepOutput {
  row: MetricsRow;
  samples: SampleRecord[];
  /** Set when the update was skipped because the loss or gradient norm was not finite. */
  skipped?: string;
}

const SAMPLE_GROUPS = 2;

export class Trainer {
  config: RunConfig;
  rlStepIndex = 0;
  sftStepIndex = 0;
  /** VAPO value pretraining (rl.value_pretrain): steps done, and whether its stop rule fired. */
  valuePretrainStepIndex = 0;
  valuePretrainFinished = false;
  private reference?: PolicyModel;
  private tools: ToolProtocol;
  private defaultChat?: ChatFormat;
  private advState: AdvantageState = {};
  private evalProblems?: Problem[];
  /** Seconds since the run started. */
  readonly clock: () => number;

  constructor(
    config: RunConfig,
    private readonly deps: TrainerDeps,
  ) {
    this.config = config;
    this.reference = deps.reference;
    const t0 = Date.now();
    this.clock = deps.clock ?? (() => (Date.now() - t0) / 1000);
    this.tools = this.makeTools();
  }

  private makeTools(): ToolProtocol {
    const task = this.deps.task;
    return makeToolProtocol(
      isEnvTask(task) ? [] : task.tools,
      this.deps.sandbox,
      { timeoutS: this.config.limits.tool_timeout_s, memoryMB: this.config.limits.memory_mb },
      this.chat.callSyntax,
    );
  }

  /** The run's chat format: the one given, else task.template with the character tokenizer. */
  get chat(): ChatFormat {
    if (this.deps.chat) return this.deps.chat;
    const t = this.template;
    if (t === "model")
      throw new Error(
        'task.template: "model" needs the chat format built from model.tokenizer (rl/setup.ts chatFormatOf)',
      );
    if (!this.defaultChat || this.defaultChat.name !== this.template)
      this.defaultChat = builtinChat(t, CHAR_TOKENIZER);
    return this.defaultChat;
  }

  get tokenizer(): Tokenizer {
    return this.chat.tokenizer;
  }

  // Environment episodes are always chatml turns (observation / action), as they roll out.
  private get envChat(): ChatFormat {
    if (this.chat.tokenizer.kind !== "char")
      throw new Error(
        `task.name: multi-turn environments (${this.deps.task.name}) run with the character tokenizer only; model.tokenizer must be null`,
      );
    return builtinChat("chatml-turns", CHAR_TOKENIZER);
  }

  get policy(): PolicyModel {
    return this.deps.policy;
  }

  /** Applies a live edit (validated by config/); restart-only fields are refused with a message. */
  applyEdit(edit: ConfigEdit): { ok: true } | { ok: false; error: string } {
    const r = applyEdit(this.config, edit);
    if (!r.ok) return r;
    this.config = r.config;
    this.tools = this.makeTools();
    return { ok: true };
  }

  private get template() {
    return this.config.task.template;
  }

  /** The environment when the task is multi-turn, else undefined. */
  private get env(): EnvTask | undefined {
    const t = this.deps.task;
    return isEnvTask(t) ? t : undefined;
  }

  /** n training prompts: a task's problems, or an environment's seeds as problems. */
  private sampleProblems(rng: ReturnType<typeof createRng>, n: number): Problem[] {
    const env = this.env;
    if (!env) return (this.deps.task as Task).sample(rng, n);
    return env.sampleSeeds(rng, n).map((seed) => envProblem(env, seed));
  }

  private limits(): RolloutLimits {
    const l = this.config.limits;
    return {
      maxToolCalls: l.max_tool_calls,
      maxNewTokens: this.config.sampling.max_new_tokens,
      maxToolResponseChars: l.max_tool_response_chars,
      overLimitNotice: l.notice_on_exceeded ? "Tool-call limit reached; answer now." : "",
    };
  }

  // ------------------------------------------------------------------------------ SFT

  /** One supervised step on demonstrations: cross-entropy over assistant tokens only. */
  async sftStep(): Promise<StepOutput> {
    const c = this.config;
    const step = this.sftStepIndex;
    const rng = createRng(`${c.seed}:sft:${step}`);
    const knobs = (c.task.options.sft ?? {}) as Record<string, unknown>;
    const env = this.env;
    const demos = env
      ? env.sftDemos(rng, c.sft.batch, knobs as { thinkRate?: number })
      : (this.deps.task as Task).sftDemos(rng, c.sft.batch, knobs);
    const chat = env ? this.envChat : this.chat;
    let mismatches = 0;
    const rows = demos.map((d) => {
      const r = chat.render(d.messages as Message[]);
      mismatches += r.mismatches;
      return { ids: r.ids, mask: lossMask(r.roles) };
    });
    const { batch, index } = packSequences(
      rows.map((r) => ({ prompt: r.ids.slice(0, 1), response: r.ids.slice(1) })),
      c.model.context,
    );
    const masks = rows.map((r) => Float64Array.from(r.mask.slice(1)));
    const n = masks.reduce((s, m, b) => s + m.reduce((a, x, j) => a + (index[b][j] >= 0 ? x : 0), 0), 0);
    const t0 = this.clock();
    this.deps.onActivity?.("sft");
    const policy = this.deps.policy;
    policy.zeroGrad();
    const out = await policy.forwardScore(batch);
    const lp = gatherRows(out.logp, index);
    let loss = 0;
    for (let b = 0; b < lp.length; b++) for (let j = 0; j < lp[b].length; j++) loss -= masks[b][j] * lp[b][j];
    loss /= Math.max(1, n);
    const dlogp = scatterRows(
      masks.map((m) => m.map((x) => -x / Math.max(1, n))),
      index,
      batch.B * batch.T,
    );
    const lr = lrAt(step, {
      lr: c.sft.lr,
      warmupSteps: c.sft.warmup_steps,
      schedule: c.sft.schedule,
      minLrRatio: c.sft.min_lr_ratio,
      totalSteps: c.sft.steps,
    });
    let skipped: string | undefined;
    let gradNorm = Number.NaN;
    if (!Number.isFinite(loss)) {
      skipped = `non-finite SFT loss at step ${step}`;
    } else {
      await policy.backward({ dlogp });
      const r = await policy.step({
        lr,
        beta1: c.sft.betas[0],
        beta2: c.sft.betas[1],
        eps: 1e-8,
        weightDecay: c.sft.weight_decay,
        maxGradNorm: c.sft.grad_clip > 0 ? c.sft.grad_clip : Number.POSITIVE_INFINITY,
      });
      gradNorm = r.gradNorm;
      if (r.skipped) skipped = `non-finite gradient norm at SFT step ${step}`;
    }
    const dt = this.clock() - t0;
    this.sftStepIndex++;
    const row: MetricsRow = { step, phase: "sft", time: this.clock(), "actor/lr": lr };
    putFinite(row, "loss", loss);
    putFinite(row, "actor/grad_norm", gradNorm);
    putFinite(row, "perf/tokens_per_s", dt > 0 ? (batch.B * batch.T) / dt : Number.NaN);
    putFinite(row, "timing/train_s", dt);
    // Demos whose turn-by-turn tokens did not extend (task.tokenization_check "warn").
    if (chat.name === "model") row["tokenize/mismatch_turns"] = mismatches;
    if (skipped) row.event = skipped;
    return { row, samples: [], skipped };
  }

  // ------------------------------------------------------------------------------ RL

  private sampling(label: string, greedy = false) {
    const s = this.config.sampling;
    return {
      temperature: greedy ? 0 : s.temperature,
      topK: s.top_k,
      topP: s.top_p,
      seed: hash32(`${this.config.seed}:${label}`),
    };
  }

  /**
   * Rolls out each problem `repeat` times and judges each trajectory: single-turn tasks by
   * the verifier on the final answer; environments play their episodes (correct = success).
   */
  private async rolloutProblems(
    problems: Problem[],
    repeat: number,
    label: string,
    greedy = false,
  ): Promise<{ items: (RewardItem & { problem: Problem })[]; toolSeconds: number }> {
    const owners: Problem[] = [];
    for (const p of problems) for (let g = 0; g < repeat; g++) owners.push(p);
    const env = this.env;
    const chat = env ? this.envChat : this.chat;
    const longest = Math.max(0, ...problems.map((p) => chat.promptTokens(p.messages as Message[]).length));
    // A prompt that fills the context leaves no room to answer: say which field to change.
    if (longest >= this.deps.policy.config.context)
      throw new Error(
        `model.context: ${this.deps.policy.config.context} tokens cannot hold the prompts of task "${this.deps.task.name}" (up to ${longest} tokens); raise model.context`,
      );
    if (env) {
      const stats = { envSeconds: 0 };
      const episodes = await envRollout(
        this.deps.policy,
        env,
        owners.map((p) => Number(p.meta.seed)),
        {
          sampling: this.sampling(label, greedy),
          maxNewTokensPerTurn: this.config.sampling.max_new_tokens,
          stats,
        },
      );
      return {
        items: episodes.map((e, i) => ({
          traj: e.traj,
          problem: owners[i],
          groupId: "",
          correct: e.success,
          steps: e.steps,
          envReturn: e.envReturn,
        })),
        toolSeconds: stats.envSeconds,
      };
    }
    const prompts = owners.map((p) => chat.promptTokens(p.messages as Message[]));
    const stats = { toolSeconds: 0 };
    const trajs = await rollout(this.deps.policy, prompts, {
      stats,
      chat,
      sampling: this.sampling(label, greedy),
      limits: this.limits(),
      tools: this.tools,
    });
    return {
      items: trajs.map((t, i) => ({
        traj: t,
        problem: owners[i],
        groupId: "",
        correct: this.verify(owners[i], t),
      })),
      toolSeconds: stats.toolSeconds,
    };
  }

  /** Correctness of one trajectory by the task's verifier on its strict final answer. */
  private verify(problem: Problem, t: Trajectory): boolean {
    const ans = parseAnswer(t.text, { mode: "strict", endMarkers: ["<|im_end|>"] });
    const calls = t.toolCalls
      .filter((c) => !c.call.error)
      .map((c) => ({ name: c.call.name, arguments: c.call.arguments, code: c.call.code }));
    return (this.deps.task as Task).verify(problem, ans.ok ? ans.answer : null, { text: t.text, calls })
      .correct;
  }

  /**
   * Rolls out `needed` sampled prompts x group_size and rewards them; with ReMax, also one
   * greedy rollout per prompt whose reward becomes the group's baselineReward (not trained).
   */
  private async rolloutAndReward(label: string, problems: Problem[], step: number) {
    const c = this.config;
    const { items, toolSeconds } = await this.rolloutProblems(problems, c.rl.group_size, `rollout:${label}`);
    const groupOf = (i: number) => `${label}:${Math.floor(i / c.rl.group_size)}`;
    this.deps.onActivity?.("reward");
    const rw = this.clock();
    const rewarded = await computeRewards(
      items.map((it, i) => ({ ...it, groupId: groupOf(i) })),
      c,
      { step, sandbox: this.deps.sandbox },
    );
    let rewardSeconds = this.clock() - rw;
    let seconds = toolSeconds;
    if (c.rl.advantage === "remax") {
      this.deps.onActivity?.("rollout");
      const greedy = await this.rolloutProblems(problems, 1, `rollout:${label}:greedy`, true);
      seconds += greedy.toolSeconds;
      const rb = this.clock();
      const base = await computeRewards(
        greedy.items.map((it, i) => ({ ...it, groupId: groupOf(i * c.rl.group_size) })),
        c,
        { step, sandbox: this.deps.sandbox },
      );
      // An episode's token rewards sum to its turn-discounted return (tokenRewardsOf), so its
      // baseline is the greedy episode's return measured the same way.
      const baseline = base.map((b) => (b.steps ? sum(this.tokenRewardsOf(b, b.traj.mask)!) : b.reward));
      rewarded.forEach((t, i) => {
        t.baselineReward = baseline[Math.floor(i / c.rl.group_size)];
      });
      rewardSeconds += this.clock() - rb;
    }
    return { rewarded, toolSeconds: seconds, rewardSeconds };
  }

  /** One RL step. Returns the metrics row and a sample of trajectories for the inspector. */
  async rlStep(): Promise<StepOutput> {
    const c = this.config;
    const step = this.rlStepIndex;
    const t0 = this.clock();
    const timing = { rollout: 0, tool: 0, reward: 0, train: 0 };

    // 1-4. Sample, roll out, reward, filter; refill per filters.refill.
    const needed = c.rl.prompts_per_step;
    const kept: RewardedTrajectory[][] = [];
    const all: RewardedTrajectory[] = [];
    const decisions = new Map<string, string>();
    let round = 0;
    const keptFracs: number[] = [];
    let zeroStdGroups = 0;
    let groupsSeen = 0;
    for (;;) {
      const rng = createRng(`${c.seed}:rl:${step}:${round}`);
      const problems = this.sampleProblems(
        rng,
        round === 0 ? needed : Math.ceil(needed * c.filters.oversample),
      );
      const tr = this.clock();
      this.deps.onActivity?.("rollout");
      const { rewarded, toolSeconds, rewardSeconds } = await this.rolloutAndReward(
        `${step}:${round}`,
        problems,
        step,
      );
      const elapsed = this.clock() - tr;
      timing.tool += toolSeconds;
      timing.reward += rewardSeconds;
      timing.rollout += Math.max(0, elapsed - toolSeconds - rewardSeconds);
      all.push(...rewarded);
      const groups = chunk(rewarded, c.rl.group_size);
      groupsSeen += groups.length;
      zeroStdGroups += groups.filter(
        (g) =>
          std(
            g.map((t) => t.reward),
            "population",
          ) === 0,
      ).length;
      const fr = applyFilters(groups.map(filterGroupOf), c.filters.list);
      keptFracs.push(fr.metrics["filter/kept_frac"]);
      groups.forEach((g, gi) => {
        decisions.set(g[0].groupId, fr.reasons[gi]);
        g.forEach((t, k) => {
          t.lossScale = fr.trajectoryScale?.[gi][k] ?? 1;
        });
        if (fr.keep[gi]) kept.push(g);
      });
      round++;
      if (c.filters.refill !== "resample" || c.filters.list.length === 0) break;
      const plan = planResample({
        kept: kept.length,
        needed,
        round,
        maxRounds: c.filters.max_gen_rounds,
        genBatch: needed,
      });
      if (plan.action === "train") break;
      if (plan.action === "abort") {
        decisions.set("abort", plan.error);
        break;
      }
    }
    let trainGroups = kept;
    if (c.filters.refill === "resample") trainGroups = kept.slice(0, needed);
    if (c.filters.refill === "duplicate" && kept.length > 0) {
      const rng = createRng(`${c.seed}:dup:${step}`);
      trainGroups = planDuplicate(kept.length, needed, () => rng.next()).map((gi, k) =>
        kept[gi].map((t) => ({ ...t, groupId: `${t.groupId}#${k}` })),
      );
    }
    const batch = trainGroups.flat();

    // 5-6. Advantages and the update.
    const tt = this.clock();
    this.deps.onActivity?.("update");
    const update = batch.length > 0 ? await this.update(batch, step) : undefined;
    timing.train = this.clock() - tt;

    this.rlStepIndex++;
    const row: MetricsRow = { step, phase: "rl", time: this.clock() };
    Object.assign(row, rolloutMetrics(all));
    putFinite(row, "filter/kept_frac", mean(keptFracs));
    putFinite(row, "groups/zero_std_frac", groupsSeen ? zeroStdGroups / groupsSeen : Number.NaN);
    if (update) Object.assign(row, update.metrics);
    row["actor/lr"] = this.currentLr(step);
    const tokens = all.reduce((s, t) => s + t.traj.tokens.length, 0) + (update?.tokens ?? 0);
    const dt = this.clock() - t0;
    putFinite(row, "perf/tokens_per_s", dt > 0 ? tokens / dt : Number.NaN);
    row["timing/rollout_s"] = timing.rollout;
    row["timing/tool_s"] = timing.tool;
    row["timing/reward_s"] = timing.reward;
    row["timing/train_s"] = timing.train;
    if (decisions.has("abort")) row.event = decisions.get("abort")!;
    if (update?.skipped) row.event = update.skipped;
    const samples = withPieces(
      sampleRecords(step, all, decisions, update?.advantages),
      this.env ? CHAR_TOKENIZER : this.tokenizer,
    );
    return { row, samples, skipped: update?.skipped };
  }

  private currentLr(step: number): number {
    const r = this.config.rl;
    return lrAt(step, {
      lr: r.lr,
      warmupSteps: r.warmup_steps,
      schedule: r.schedule,
      minLrRatio: r.min_lr_ratio,
      totalSteps: this.config.stop.max_steps,
    });
  }

  private async getReference(): Promise<PolicyModel> {
    this.reference ??= await this.deps.policy.frozenCopy();
    return this.reference;
  }

  /** Scores rows in chunks of the minibatch size (no gradient is kept). */
  private async scoreAll(model: PolicyModel, rows: { prompt: number[]; response: number[] }[], size: number) {
    const out: { logp: Float64Array[]; entropy: Float64Array[]; values?: Float64Array[] } = {
      logp: [],
      entropy: [],
    };
    for (let i = 0; i < rows.length; i += size) {
      const { batch, index } = packSequences(rows.slice(i, i + size), this.config.model.context);
      const r = await model.forwardScore(batch);
      out.logp.push(...gatherRows(r.logp, index));
      out.entropy.push(...gatherRows(r.entropy, index));
      if (r.values) {
        out.values ??= [];
        out.values.push(...gatherRows(r.values, index));
      }
    }
    return out;
  }

  /**
   * Per-token rewards of an environment episode for the token-level estimators: each turn's
   * turn-discounted return (rl.turn_gamma, RETURN turn-discount) as in turnTokenRewards,
   * plus whatever the reward adds beyond the episode return (custom JS) on the last policy
   * token. Undefined for single-turn trajectories (the outcome reward sits on the last token).
   */
  private tokenRewardsOf(t: RewardedTrajectory, mask: ArrayLike<number>): Float64Array | undefined {
    if (!t.steps || t.envReturn === undefined) return undefined;
    const r = turnTokenRewards(t.steps, mask.length, this.config.rl.turn_gamma, RETURN["turn-discount"]);
    const extra = t.reward - t.envReturn;
    const last = lastPolicyIndex(mask);
    if (extra !== 0 && last >= 0) r[last] += extra;
    return r;
  }

  private async update(batch: RewardedTrajectory[], step: number) {
    const c = this.config;
    const r = c.rl;
    const policy = this.deps.policy;
    const rows = batch.map((t) => ({ prompt: t.traj.promptTokens, response: t.traj.tokens }));
    const masks = batch.map((t) => {
      const base = c.rl.mask_tool_output ? t.traj.mask : t.traj.mask.map(() => 1);
      return Float64Array.from(base, (m) => m * t.lossScale);
    });
    const mbSize = Math.max(1, Math.ceil(batch.length / r.minibatches));
    const old = await this.scoreAll(policy, rows, mbSize);
    const needRef = r.kl.coef > 0;
    const ref = needRef ? await this.scoreAll(await this.getReference(), rows, mbSize) : undefined;

    const algoBatch: AlgoTrajectory[] = batch.map((t, i) => ({
      groupId: t.groupId,
      reward: t.reward,
      mask: masks[i],
      oldLogprob: old.logp[i],
      refLogprob: ref?.logp[i],
      values: old.values?.[i],
      postTool: t.traj.postTool,
      toolCalls: t.traj.toolCalls.filter((x) => x.executed).length,
      toolSuccesses: t.traj.toolCalls.filter((x) => x.executed && x.outcome.ok).length,
      correct: t.correct,
      truncated: t.traj.finish !== "stop",
      steps: t.steps,
      baselineReward: t.baselineReward,
      tokenRewards: this.tokenRewardsOf(t, masks[i]),
    }));
    const advFn = ADVANTAGE[r.advantage];
    if (!advFn) throw new Error(`rl.advantage: unknown estimator "${r.advantage}"`);
    if (r.advantage === "gae" && !old.values)
      throw new Error("rl.advantage gae needs a model with a value head");
    const adv = advFn(
      algoBatch,
      withAdvantageDefaults({
        stdEps: r.std_eps,
        std: r.std,
        normByStd: r.advantage === "dr-grpo" ? false : r.norm_adv_by_std,
        singletonGroup: r.singleton_group,
        gamma: r.gamma,
        lambda: r.lambda,
        lambdaCritic: r.lambda_critic,
        lengthAdaptiveAlpha: r.length_adaptive_alpha,
        klCoef: r.kl.in === "reward" ? r.kl.coef : 0,
        klEstimator: r.kl.estimator,
        gigpo: {
          ...withAdvantageDefaults().gigpo,
          stepWeight: r.gigpo.step_weight,
          gamma: r.gigpo.gamma,
          norm: r.gigpo.norm,
          episodeStats: r.gigpo.episode_stats,
        },
        history: { window: r.history_window, ema: r.history_ema },
      }),
      this.advState,
    );
    if (adv.state) this.advState = adv.state;

    const lr = this.currentLr(step);
    const acc = new Map<string, number[]>();
    const push = (k: string, v: number) => {
      if (Number.isFinite(v)) acc.set(k, [...(acc.get(k) ?? []), v]);
    };
    let skipped: string | undefined;
    let tokens = 0;
    const rng = createRng(`${c.seed}:minibatch:${step}`);
    for (let epoch = 0; epoch < r.epochs && !skipped; epoch++) {
      const order = rng.shuffle(batch.map((_, i) => i));
      for (let s = 0; s < order.length && !skipped; s += mbSize) {
        const idx = order.slice(s, s + mbSize);
        const { batch: sb, index } = packSequences(
          idx.map((i) => rows[i]),
          c.model.context,
        );
        tokens += sb.B * sb.T;
        policy.zeroGrad();
        const out = await policy.forwardScore(sb);
        const lp = gatherRows(out.logp, index);
        const ent = gatherRows(out.entropy, index);
        const mbLoss = minibatchLoss(c, {
          logprob: lp,
          entropy: ent,
          mask: idx.map((i) => masks[i]),
          oldLogprob: idx.map((i) => old.logp[i]),
          advantages: idx.map((i) => adv.advantages[i]),
          postTool: idx.map((i) => batch[i].traj.postTool),
          refLogprob: ref ? idx.map((i) => ref.logp[i]) : undefined,
          values: adv.returns && out.values ? gatherRows(out.values, index) : undefined,
          oldValues: old.values ? idx.map((i) => old.values![i]) : undefined,
          returns: adv.returns ? idx.map((i) => adv.returns![i]) : undefined,
          correct: idx.map((i) => batch[i].correct),
        });
        const loss = mbLoss.loss;
        for (const [k, v] of Object.entries(mbLoss.metrics)) push(k, v);
        const size = sb.B * sb.T;
        const dvalue = mbLoss.dvalue ? scatterRows(mbLoss.dvalue, index, size) : undefined;
        if (!Number.isFinite(loss)) {
          skipped = `non-finite loss at RL step ${step}; update skipped`;
          break;
        }
        await policy.backward({
          dlogp: scatterRows(mbLoss.dlogp, index, size),
          dentropy: scatterRows(mbLoss.dentropy, index, size),
          dvalue,
        });
        const st = await policy.step({
          lr,
          beta1: r.betas[0],
          beta2: r.betas[1],
          eps: 1e-8,
          weightDecay: r.weight_decay,
          maxGradNorm: r.grad_clip > 0 ? r.grad_clip : Number.POSITIVE_INFINITY,
        });
        if (st.skipped) skipped = `non-finite gradient norm at RL step ${step}; update skipped`;
        else push("actor/grad_norm", st.gradNorm);
      }
    }
    const metrics: Record<string, number> = {};
    for (const [k, v] of acc) metrics[k] = mean(v);
    return { metrics, skipped, tokens, advantages: new Map(batch.map((t, i) => [t, adv.advantages[i]])) };
  }

  // ------------------------------------------------------------------------------ value pretraining

  /**
   * Whether VAPO value pretraining (ALGORITHMS §12) still has to run before the first RL
   * step: rl.value_pretrain.steps > 0, a model with a value head, and its stop rule not met.
   */
  get needsValuePretrain(): boolean {
    const vp = this.config.rl.value_pretrain;
    return (
      vp.steps > 0 &&
      this.deps.policy.config.valueHead &&
      !this.valuePretrainFinished &&
      this.rlStepIndex === 0
    );
  }

  /**
   * One value-pretraining step: roll out the (frozen) policy on fresh prompts, take the
   * Monte-Carlo returns (GAE with γ = λ = 1, no KL) as targets and train the value head on the
   * unclipped value loss only. The policy does not move: after the optimizer step every
   * tensor but the value head (and its AdamW moments) is put back. The row (phase
   * "value_pretrain") logs critic/vf_loss and critic/vf_explained_var of the critic as it
   * was before the step, measured on this step's fresh rollouts; the stop rule
   * (valuePretrainDone) is checked after each step.
   */
  async valuePretrainStep(): Promise<StepOutput> {
    const c = this.config;
    const r = c.rl;
    const step = this.valuePretrainStepIndex;
    const policy = this.deps.policy;
    if (!policy.config.valueHead)
      throw new Error("value pretraining needs a model with a value head (rl.advantage gae)");
    const t0 = this.clock();
    const rng = createRng(`${c.seed}:value_pretrain:${step}`);
    const problems = this.sampleProblems(rng, r.prompts_per_step);
    this.deps.onActivity?.("rollout");
    const { rewarded, toolSeconds, rewardSeconds } = await this.rolloutAndReward(`vp${step}`, problems, step);
    const tRollout = this.clock() - t0;
    this.deps.onActivity?.("update");
    const tt = this.clock();
    const rows = rewarded.map((t) => ({ prompt: t.traj.promptTokens, response: t.traj.tokens }));
    const masks = rewarded.map((t) => Float64Array.from(t.traj.mask));
    const mbSize = Math.max(1, Math.ceil(rows.length / r.minibatches));
    const old = await this.scoreAll(policy, rows, mbSize);
    if (!old.values) throw new Error("value pretraining: the model returned no values");
    const oldValues = old.values;
    const mc = gae(
      rewarded.map((t, i) => ({
        groupId: t.groupId,
        reward: t.reward,
        mask: masks[i],
        values: oldValues[i],
        tokenRewards: this.tokenRewardsOf(t, masks[i]),
      })),
      withAdvantageDefaults({ gamma: 1, lambda: 1, lambdaCritic: 1, whiten: false, klCoef: 0 }),
    );
    const returns = mc.returns!;
    const ev = explainedVariance(flatten(returns), flatten(oldValues), flatten(masks));
    const weightsOf = (idx: number[]) =>
      AGG[r.loss_agg](
        idx.map((i) => masks[i]),
        { lMax: r.l_max ?? c.sampling.max_new_tokens },
      );
    const losses: number[] = [];
    const norms: number[] = [];
    let skipped: string | undefined;
    let tokens = 0;
    const head = ["value_head.weight", "value_head.bias"].map((n) => policy.layout.byName.get(n)!);
    const order = createRng(`${c.seed}:value_pretrain_mb:${step}`).shuffle(rows.map((_, i) => i));
    for (let epoch = 0; epoch < r.epochs && !skipped; epoch++) {
      for (let s = 0; s < order.length && !skipped; s += mbSize) {
        const idx = order.slice(s, s + mbSize);
        const { batch: sb, index } = packSequences(
          idx.map((i) => rows[i]),
          c.model.context,
        );
        tokens += sb.B * sb.T;
        policy.zeroGrad();
        const out = await policy.forwardScore(sb);
        const values = gatherRows(out.values!, index);
        const weights = flatten(weightsOf(idx));
        const vl = valueLoss(
          {
            values: flatten(values),
            oldValues: flatten(values),
            returns: flatten(idx.map((i) => returns[i])),
            mask: flatten(idx.map((i) => masks[i])),
          },
          Number.POSITIVE_INFINITY,
        );
        const loss = aggregate(vl.loss, weights);
        losses.push(loss);
        if (!Number.isFinite(loss)) {
          skipped = `non-finite value loss at value-pretraining step ${step}; update skipped`;
          break;
        }
        const size = sb.B * sb.T;
        const dvalue = scatterRows(
          unflatten(
            vl.grad.map((g, i) => g * weights[i]),
            values.map((v) => v.length),
          ),
          index,
          size,
        );
        await policy.backward({ dlogp: new Float32Array(size), dvalue });
        const before = await policy.getWeights();
        const beforeOpt = await policy.getOptimizerState();
        const st = await policy.step({
          lr: r.lr,
          beta1: r.betas[0],
          beta2: r.betas[1],
          eps: 1e-8,
          weightDecay: 0,
          maxGradNorm: r.grad_clip > 0 ? r.grad_clip : Number.POSITIVE_INFINITY,
        });
        if (st.skipped) {
          skipped = `non-finite gradient norm at value-pretraining step ${step}; update skipped`;
          break;
        }
        norms.push(st.gradNorm);
        // Keep the policy frozen: only the value head (and its moments) takes the step.
        const after = await policy.getWeights();
        const afterOpt = await policy.getOptimizerState();
        for (const t of head) {
          before.set(after.subarray(t.offset, t.offset + t.size), t.offset);
          beforeOpt.m.set(afterOpt.m.subarray(t.offset, t.offset + t.size), t.offset);
          beforeOpt.v.set(afterOpt.v.subarray(t.offset, t.offset + t.size), t.offset);
        }
        await policy.setWeights(before);
        await policy.setOptimizerState({ ...beforeOpt, step: afterOpt.step });
      }
    }
    const train = this.clock() - tt;
    this.valuePretrainStepIndex++;
    this.valuePretrainFinished = valuePretrainDone(this.valuePretrainStepIndex, ev, {
      steps: r.value_pretrain.steps,
      stopExplainedVar: r.value_pretrain.stop_explained_var,
    });
    const row: MetricsRow = { step, phase: "value_pretrain", time: this.clock() };
    Object.assign(row, rolloutMetrics(rewarded));
    putFinite(row, "critic/vf_loss", mean(losses));
    putFinite(row, "critic/vf_explained_var", ev);
    putFinite(
      row,
      "critic/values_mean",
      mean(flatten(oldValues.map((v, i) => v.filter((_, j) => masks[i][j] !== 0)))),
    );
    putFinite(
      row,
      "critic/returns_mean",
      mean(flatten(returns.map((v, i) => v.filter((_, j) => masks[i][j] !== 0)))),
    );
    putFinite(row, "critic/grad_norm", mean(norms));
    putFinite(row, "actor/lr", r.lr);
    const dt = this.clock() - t0;
    putFinite(row, "perf/tokens_per_s", dt > 0 ? tokens / dt : Number.NaN);
    row["timing/rollout_s"] = Math.max(0, tRollout - toolSeconds - rewardSeconds);
    row["timing/tool_s"] = toolSeconds;
    row["timing/reward_s"] = rewardSeconds;
    row["timing/train_s"] = train;
    if (this.valuePretrainFinished)
      row.event = `value pretraining done after ${this.valuePretrainStepIndex} steps`;
    if (skipped) row.event = skipped;
    return { row, samples: [], skipped };
  }

  // ------------------------------------------------------------------------------ evaluation

  /**
   * Held-out evaluation: greedy and sampled rollouts of the task's eval set (val/* metrics).
   * For an environment, val/acc is the success rate of episodes on its eval seeds.
   */
  async evaluate(): Promise<Record<string, number>> {
    const c = this.config;
    const env = this.env;
    this.evalProblems ??= env
      ? env.evalSeeds(c.task.eval_size).map((seed) => envProblem(env, seed))
      : (this.deps.task as Task).evalSet(c.task.eval_size);
    const problems = this.evalProblems;
    if (problems.length === 0) return {};
    this.deps.onActivity?.("eval");
    const out: Record<string, number> = {};
    for (const mode of ["greedy", "sampled"] as const) {
      const { items: res } = await this.rolloutProblems(
        problems,
        1,
        `eval:${this.rlStepIndex}`,
        mode === "greedy",
      );
      const correct = res.map((r) => r.correct);
      const calls = res.map(({ traj }) => traj.toolCalls.some((x) => x.executed));
      const suffix = mode === "greedy" ? "" : "_sampled";
      out[`val/acc${suffix}`] = mean(correct.map(Number));
      out[`val/tool_call_rate${suffix}`] = mean(calls.map(Number));
      if (env) {
        const m = envMetrics(res, "");
        out[`val/env_steps_mean${suffix}`] = m.steps_mean;
        out[`val/env_return_mean${suffix}`] = m.return_mean;
      }
      if (mode === "greedy") {
        for (const bucket of this.deps.task.buckets) {
          const idx = res.map((r, i) => (r.problem.bucket === bucket ? i : -1)).filter((i) => i >= 0);
          if (idx.length) out[`val/acc/${bucket}`] = mean(idx.map((i) => Number(correct[i])));
        }
      }
    }
    return out;
  }
}

// ------------------------------------------------------------------------------ the loss

/** Per-row (response-position) inputs of one minibatch. */
export interface MinibatchInput {
  logprob: ArrayLike<number>[];
  entropy: ArrayLike<number>[];
  /** Loss mask: 1 = trained. */
  mask: ArrayLike<number>[];
  oldLogprob: ArrayLike<number>[];
  advantages: ArrayLike<number>[];
  postTool: ArrayLike<number>[];
  refLogprob?: ArrayLike<number>[];
  values?: ArrayLike<number>[];
  oldValues?: ArrayLike<number>[];
  returns?: ArrayLike<number>[];
  /** Per row: the trajectory was judged correct (VAPO positive-example LM loss). */
  correct?: boolean[];
}

/**
 * The RL loss of one minibatch and its gradient w.r.t. each token's log-prob, entropy and
 * value, per row: policy loss (with optional entropy shaping of the advantage), KL in the
 * loss, entropy bonus and the clipped value loss, aggregated by rl.loss_agg. Tokens with
 * mask 0 get exactly zero gradient.
 */
export function minibatchLoss(c: RunConfig, x: MinibatchInput) {
  const r = c.rl;
  const lens = x.mask.map((m) => m.length);
  const flat = {
    logprob: flatten(x.logprob),
    entropy: flatten(x.entropy),
    mask: flatten(x.mask),
    old: flatten(x.oldLogprob),
    adv: flatten(x.advantages),
    postTool: flatten(x.postTool),
  };
  const metrics: Record<string, number> = {};
  const weights = flatten(AGG[r.loss_agg](x.mask, { lMax: r.l_max ?? c.sampling.max_new_tokens }));
  const shaping = c.shaping.kind !== "none" ? SHAPING[c.shaping.kind] : undefined;
  const shaped = shaping?.(
    { advantages: flat.adv, entropy: flat.entropy, mask: flat.mask, postTool: flat.postTool },
    {
      coef: c.shaping.coef,
      restrictToPostTool: c.shaping.restrict_to_post_tool,
      detachEntropy: c.shaping.detach_entropy,
      fallbackAllTokens: c.shaping.fallback_all_tokens,
      alpha: c.shaping.alpha,
      kappa: c.shaping.kappa,
      qH: c.shaping.q_h,
    },
  );
  const lossFn = POLICY_LOSS[r.policy_loss];
  if (!lossFn) throw new Error(`rl.policy_loss: unknown loss "${r.policy_loss}"`);
  const pl = lossFn(
    {
      logprob: flat.logprob,
      oldLogprob: flat.old,
      advantages: shaped?.advantages ?? flat.adv,
      mask: flat.mask,
    },
    { epsLow: r.clip_eps_low, epsHigh: r.clip_eps_high, dualClipC: r.dual_clip_c },
  );
  const dlogp = pl.grad.map((g, i) => g * weights[i]);
  let loss = aggregate(pl.loss, weights);
  metrics["actor/pg_loss"] = loss;
  Object.assign(metrics, pl.metrics);
  const dent = new Float64Array(dlogp.length);
  if (shaped) {
    const back = shaped.backward(pl.gradAdv.map((g, i) => g * weights[i]));
    for (let i = 0; i < dent.length; i++) dent[i] += back[i];
  }
  const ref = x.refLogprob ? flatten(x.refLogprob) : undefined;
  if (r.kl.in === "loss" && r.kl.coef > 0 && ref) {
    const kl = klTerm(r.kl.estimator, flat.logprob, ref, flat.mask, r.kl.coef);
    loss += aggregate(kl.value, weights);
    for (let i = 0; i < dlogp.length; i++) dlogp[i] += kl.grad[i] * weights[i];
  }
  if (r.entropy_coef > 0) {
    const et = entropyTerm(flat.entropy, weights, r.entropy_coef);
    loss += et.loss;
    for (let i = 0; i < dent.length; i++) dent[i] += et.gradH[i];
  }
  if (r.positive_lm_coef > 0 && x.correct) {
    const correct = x.correct;
    const pos = positiveLm(x.logprob.map((lp, b) => ({ logprob: lp, mask: x.mask[b], correct: correct[b] })));
    const g = flatten(pos.grad);
    loss += r.positive_lm_coef * pos.loss;
    for (let i = 0; i < dlogp.length; i++) dlogp[i] += r.positive_lm_coef * g[i];
    metrics["actor/positive_lm_loss"] = pos.loss;
  }
  let dvalue: Float64Array[] | undefined;
  if (x.values && x.oldValues && x.returns) {
    const values = flatten(x.values);
    const returns = flatten(x.returns);
    const vl = valueLoss({ values, oldValues: flatten(x.oldValues), returns, mask: flat.mask }, r.value_clip);
    const vfLoss = aggregate(vl.loss, weights);
    metrics["critic/vf_loss"] = vfLoss;
    metrics["critic/vf_explained_var"] = explainedVariance(returns, values, flat.mask);
    loss += r.value_coef * vfLoss;
    dvalue = unflatten(
      vl.grad.map((g, i) => g * weights[i] * r.value_coef),
      lens,
    );
  }
  Object.assign(
    metrics,
    actorMetrics(
      {
        mask: flat.mask,
        entropy: flat.entropy,
        postTool: flat.postTool,
        logprob: flat.logprob,
        oldLogprob: flat.old,
        refLogprob: ref,
      },
      r.kl.estimator,
    ),
  );
  return { loss, dlogp: unflatten(dlogp, lens), dentropy: unflatten(dent, lens), dvalue, metrics };
}

// ------------------------------------------------------------------------------ helpers

function putFinite(row: Record<string, unknown>, key: string, v: number): void {
  if (Number.isFinite(v)) row[key] = v;
}

function chunk<T>(xs: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

function filterGroupOf(g: RewardedTrajectory[]): FilterGroup {
  return {
    groupId: g[0].groupId,
    rewards: g.map((t) => t.reward),
    acc: g.map((t) => Number(t.correct)),
    truncated: g.map((t) => t.traj.finish !== "stop"),
    toolCalls: g.map((t) => t.traj.toolCalls.filter((x) => x.executed).length),
    toolSuccesses: g.map((t) => t.traj.toolCalls.filter((x) => x.executed && x.outcome.ok).length),
  };
}

function rolloutMetrics(all: RewardedTrajectory[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (all.length === 0) return out;
  const rewards = all.map((t) => t.reward);
  out["reward/mean"] = mean(rewards);
  out["reward/std"] = all.length > 1 ? std(rewards, "sample") : 0;
  const terms = new Set(all.flatMap((t) => Object.keys(t.terms)));
  for (const k of terms) putFinite(out, `reward/${k}/mean`, mean(all.map((t) => t.terms[k] ?? 0)));
  out["acc/mean"] = mean(all.map((t) => Number(t.correct)));
  const lens = all.map((t) => t.traj.tokens.length);
  out["response_length/mean"] = mean(lens);
  out["response_length/clip_ratio"] = mean(all.map((t) => Number(t.traj.finish !== "stop")));
  const executed = all.map((t) => t.traj.toolCalls.filter((x) => x.executed));
  out["tool/call_rate"] = mean(executed.map((x) => Number(x.length > 0)));
  out["tool/calls_mean"] = mean(executed.map((x) => x.length));
  const calls = executed.flat();
  if (calls.length > 0) out["tool/success_rate"] = mean(calls.map((x) => Number(x.outcome.ok)));
  const episodes = all.filter((t) => t.steps !== undefined);
  if (episodes.length > 0) Object.assign(out, envMetrics(episodes, "env/"));
  return out;
}

/** Multi-turn metrics: success rate, turns per episode, invalid-action rate, episode return. */
function envMetrics(
  episodes: { correct: boolean; steps?: StepRow[]; envReturn?: number }[],
  prefix: string,
): Record<string, number> {
  const steps = episodes.flatMap((t) => t.steps ?? []);
  const out: Record<string, number> = {
    [`${prefix}success_rate`]: mean(episodes.map((t) => Number(t.correct))),
    [`${prefix}steps_mean`]: mean(episodes.map((t) => t.steps?.length ?? 0)),
    [`${prefix}return_mean`]: mean(episodes.map((t) => t.envReturn ?? 0)),
  };
  if (steps.length > 0) out[`${prefix}invalid_rate`] = mean(steps.map((s) => Number(!!s.invalid)));
  return out;
}

/** An environment seed as a prompt: the instructions and the first observation. */
function envProblem(env: EnvTask, seed: number): Problem {
  return {
    id: `${env.name}:seed${seed}`,
    messages: envPromptMessages(env, env.make().reset(seed)),
    answer: "",
    bucket: env.buckets[0] ?? "all",
    meta: { seed },
  };
}

/** Adds each token's readable piece, so the page shows BPE tokens without a tokenizer. */
export function withPieces(samples: SampleRecord[], tok: Tokenizer): SampleRecord[] {
  const pieces = (ids: number[]) =>
    ids.map((id) => (id >= 0 && id < tok.vocabSize ? tok.piece(id) : `<${id}>`));
  return samples.map((s) => ({
    ...s,
    promptPieces: pieces(s.promptTokens),
    pieces: pieces(s.tokens),
    padId: tok.padId,
  }));
}

function sampleRecords(
  step: number,
  all: RewardedTrajectory[],
  decisions: Map<string, string>,
  advantages?: Map<RewardedTrajectory, Float64Array>,
): SampleRecord[] {
  const groups = [...new Set(all.map((t) => t.groupId))].slice(0, SAMPLE_GROUPS);
  return all
    .filter((t) => groups.includes(t.groupId))
    .map((t) => ({
      step,
      groupId: t.groupId,
      problemId: t.problem.id,
      bucket: t.problem.bucket,
      answer: t.problem.answer,
      promptTokens: t.traj.promptTokens,
      tokens: t.traj.tokens,
      mask: t.traj.mask,
      postTool: t.traj.postTool,
      logprobs: t.traj.logprobs,
      entropy: [],
      advantages: [...(advantages?.get(t) ?? [])],
      reward: t.reward,
      rewardTerms: t.terms,
      correct: t.correct,
      toolCalls: t.traj.toolCalls.map((x) => ({
        raw: x.call.raw,
        response: x.outcome.text,
        ok: x.outcome.ok,
        status: x.outcome.status,
        executed: x.executed,
        responseStart: x.responseStart,
        responseEnd: x.responseEnd,
      })),
      finish: t.traj.finish,
      filter: decisions.get(t.groupId) ?? "kept",
      ...(t.customError ? { customError: t.customError } : {}),
      ...(t.steps ? { steps: t.steps } : {}),
    }));
}
