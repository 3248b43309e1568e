// One RL step: collect the batch (rl/rollout/collect-groups.ts: sample, roll out, reward, filter, refill),
// score it under the rollout policy (and the reference for KL), compute advantages with the
// ADVANTAGE registry, then epochs x minibatches of the RL loss (rl/update/minibatch-loss.ts) through the shared
// minibatch loop, and one metrics row with verl's names plus the inspector's sample records.
// Tested by rl/run/trainer.test.ts, rl/run/trainer-env.test.ts, rl/update/vapo.test.ts, rl/update/baselines.test.ts
// and rl/run/registry-run.test.ts (every estimator, loss and recipe for two steps).
import { createRng } from "../../tasks/rng";
import { ADVANTAGE, type AdvantageState } from "../algos/advantage";
import { type Trajectory as AlgoTrajectory, mean } from "../algos/types";
import { adamwHparams, advantageOptions, rlLr } from "../common/config-options";
import type { TrainerContext } from "../common/phase-context";
import {
  firstCustomError,
  type MetricsRow,
  perfMeter,
  putFinite,
  putPerf,
  putTiming,
  rolloutMetrics,
  type StepOutput,
  sampleRecords,
  withPieces,
} from "../common/step-records";
import type { RewardedTrajectory } from "../rollout/batch-rewards";
import { collectGroups } from "../rollout/collect-groups";
import { tokenRewardsOf } from "../rollout/task-driver";
import { scoreAll, trainMinibatches } from "./minibatch-loop";
import { minibatchLoss } from "./minibatch-loss";
import { mismatchMetrics, rolloutCorrection } from "./sampler-mismatch";

/** RL step `step`; `advState` carries estimator state between steps (reinforce-history). */
export async function rlStep(
  ctx: TrainerContext,
  step: number,
  advState: AdvantageState,
): Promise<StepOutput & { advState: AdvantageState }> {
  const t0 = ctx.clock();
  const perf = perfMeter(ctx.policy);
  const got = await collectGroups(ctx, step);
  perf.end("rollout");
  const { batch, all, decisions } = got;

  const tt = ctx.clock();
  ctx.activity("update");
  const update = batch.length > 0 ? await rlUpdate(ctx, batch, step, advState, perf) : undefined;
  const train = ctx.clock() - tt;

  const row: MetricsRow = { step, phase: "rl", time: ctx.clock() };
  Object.assign(row, rolloutMetrics(all));
  putFinite(row, "filter/kept_frac", mean(got.keptFracs));
  // Each a fraction of every group rolled out this step (all rounds); the two splits sum to
  // zero_std_frac unless a reward gives equal values to right and wrong answers.
  const ofSeen = (n: number) => (got.groupsSeen ? n / got.groupsSeen : Number.NaN);
  putFinite(row, "groups/zero_std_frac", ofSeen(got.zeroStd.zeroStd));
  putFinite(row, "groups/zero_std_frac_all_correct", ofSeen(got.zeroStd.allCorrect));
  putFinite(row, "groups/zero_std_frac_all_wrong", ofSeen(got.zeroStd.allWrong));
  if (update) Object.assign(row, update.metrics);
  row["actor/lr"] = rlLr(ctx.config, step);
  const tokens = all.reduce((s, t) => s + t.traj.tokens.length, 0) + (update?.tokens ?? 0);
  const dt = ctx.clock() - t0;
  putFinite(row, "perf/tokens_per_s", dt > 0 ? tokens / dt : Number.NaN);
  putTiming(row, { ...got.timing, train });
  putPerf(row, perf.phases);
  if (decisions.has("abort")) row.event = decisions.get("abort")!;
  if (update?.skipped) row.event = update.skipped;
  const customError = firstCustomError(all);
  if (customError !== undefined) row["reward/custom_error"] = customError;
  const samples = withPieces(sampleRecords(step, all, decisions, update), ctx.chat.tokenizer);
  return { row, samples, skipped: update?.skipped, advState: update?.advState ?? advState };
}

type Scored = Awaited<ReturnType<typeof scoreAll>>;

/** The batch's advantages (and returns, for GAE) from the ADVANTAGE registry, over the masks the correction left. */
function advantagesOf(
  c: TrainerContext["config"],
  batch: RewardedTrajectory[],
  masks: Float64Array[],
  old: Scored,
  ref: Scored | undefined,
  advState: AdvantageState,
) {
  const r = c.rl;
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
    tokenRewards: tokenRewardsOf(c, t, masks[i]),
  }));
  const advFn = ADVANTAGE[r.advantage];
  if (!advFn) throw new Error(`rl.advantage: unknown estimator "${r.advantage}"`);
  if (r.advantage === "gae" && !old.values)
    throw new Error("rl.advantage gae needs a model with a value head");
  return advFn(algoBatch, advantageOptions(r), advState);
}

/**
 * Sampler vs trainer on the sampled tokens (rl/update/sampler-mismatch.ts): the mismatch
 * metrics and the rollout correction, whose rejection narrows the loss masks (in place) and
 * whose IS weights scale the policy term.
 */
function samplerCorrection(
  c: TrainerContext["config"],
  batch: RewardedTrajectory[],
  masks: Float64Array[],
  oldSampler: ArrayLike<number>[],
) {
  const samplerLp = batch.map((t) => t.traj.logprobs);
  const sampled = batch.map((t, i) => Float64Array.from(t.traj.mask, (m, j) => (m && masks[i][j] ? 1 : 0)));
  const mismatch = mismatchMetrics(
    oldSampler,
    samplerLp,
    batch.map((t) => t.traj.mask),
  );
  const corr = rolloutCorrection(oldSampler, samplerLp, sampled, c.rl.rollout_correction);
  if (corr.keep)
    for (let i = 0; i < masks.length; i++)
      for (let j = 0; j < masks[i].length; j++) masks[i][j] *= corr.keep[i][j];
  return { samplerLp, mismatch, corr };
}

/** Steps 5-6: advantages and epochs x minibatches of the RL loss. */
async function rlUpdate(
  ctx: TrainerContext,
  batch: RewardedTrajectory[],
  step: number,
  advState: AdvantageState,
  perf: ReturnType<typeof perfMeter>,
) {
  const c = ctx.config;
  const r = c.rl;
  const policy = ctx.policy;
  const rows = batch.map((t) => ({ prompt: t.traj.promptTokens, response: t.traj.tokens }));
  const masks = batch.map((t) => {
    const base = r.mask_tool_output ? t.traj.mask : t.traj.mask.map(() => 1);
    return Float64Array.from(base, (m) => m * t.lossScale);
  });
  const mbSize = Math.max(1, Math.ceil(batch.length / r.minibatches));
  // Every RL forward scores at the sampling temperature (the distribution the rollout drew
  // from); the old policy also under the sampler's top-k/top-p set, for the mismatch.
  const temperature = c.sampling.temperature;
  const truncation = { temperature, topK: c.sampling.top_k, topP: c.sampling.top_p };
  // Scored in micro-batches when they are on (verl's log_prob_micro_batch_size_per_gpu), so no
  // forward holds more rows than a training micro-batch (model/memory-plan.ts counts that).
  const scoreSize = r.micro_batch_size > 0 ? Math.min(r.micro_batch_size, mbSize) : mbSize;
  const old = await scoreAll(policy, rows, scoreSize, c.model.context, { temperature, truncation });
  const ref =
    r.kl.coef > 0
      ? await scoreAll(await ctx.reference(), rows, scoreSize, c.model.context, { temperature })
      : undefined;
  perf.end("old_logprobs");

  const oldSampler = old.truncLogp ?? old.logp;
  const { samplerLp, mismatch, corr } = samplerCorrection(c, batch, masks, oldSampler);

  const adv = advantagesOf(c, batch, masks, old, ref, advState);

  const hparams = adamwHparams(r, rlLr(c, step));
  const selected = new Map<RewardedTrajectory, Float64Array>();
  const rng = createRng(`${c.seed}:minibatch:${step}`);
  const res = await trainMinibatches(policy, {
    rows,
    size: mbSize,
    microSize: r.micro_batch_size,
    epochs: r.epochs,
    context: c.model.context,
    order: () => rng.shuffle(batch.map((_, i) => i)),
    loss: (idx, s) => {
      const { returns } = adv;
      const g = minibatchLoss(c, {
        logprob: s.logp,
        entropy: s.entropy,
        mask: idx.map((i) => masks[i]),
        oldLogprob: idx.map((i) => old.logp[i]),
        advantages: idx.map((i) => adv.advantages[i]),
        postTool: idx.map((i) => batch[i].traj.postTool),
        refLogprob: ref ? idx.map((i) => ref.logp[i]) : undefined,
        values: returns ? s.values : undefined,
        oldValues: old.values ? idx.map((i) => old.values![i]) : undefined,
        returns: returns ? idx.map((i) => returns[i]) : undefined,
        correct: idx.map((i) => batch[i].correct),
        isWeights: corr.weights ? idx.map((i) => corr.weights![i]) : undefined,
      });
      // the last epoch's picks are the ones the inspector shows
      if (g.selected) for (let k = 0; k < idx.length; k++) selected.set(batch[idx[k]], g.selected[k]);
      return g;
    },
    temperature,
    step: () => policy.step(hparams),
    gradNormKey: "actor/grad_norm",
    where: `RL step ${step}`,
  });
  perf.end("update");
  Object.assign(res.metrics, mismatch, corr.metrics);
  return {
    ...res,
    advantages: new Map(batch.map((t, i) => [t, adv.advantages[i]])),
    entropies: new Map(batch.map((t, i) => [t, old.entropy[i]])),
    selected,
    ratios: new Map(
      batch.map((t, i) => [
        t,
        Float64Array.from(t.traj.mask, (m, j) => (m ? Math.exp(oldSampler[i][j] - samplerLp[i][j]) : 1)),
      ]),
    ),
    advState: adv.state ?? advState,
  };
}
