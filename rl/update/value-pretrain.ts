// VAPO's value pretraining (ALGORITHMS §12), before the first RL step: roll out the frozen
// policy on fresh prompts, take the Monte-Carlo returns (GAE with γ = λ = 1, no KL) as
// targets and train only the value head on the unclipped value loss, through the shared
// minibatch loop. Rows have phase "value_pretrain". Tested by rl/update/vapo.test.ts.
import { createRng } from "../../tasks/rng";
import { gae, withAdvantageDefaults } from "../algos/advantage";
import { AGG, aggregate, explainedVariance, valueLoss, valuePretrainDone } from "../algos/losses";
import { flatten, mean, unflatten } from "../algos/types";
import { adamwHparams, aggOptions } from "../common/config-options";
import type { TrainerContext } from "../common/phase-context";
import {
  type MetricsRow,
  putFinite,
  putTiming,
  rolloutMetrics,
  type StepOutput,
} from "../common/step-records";
import { rolloutAndReward } from "../rollout/collect-groups";
import { tokenRewardsOf } from "../rollout/task-driver";
import { scoreAll, stepOnly, trainMinibatches } from "./minibatch-loop";

/** The unclipped value loss of one minibatch's values against its Monte-Carlo returns, and its gradient per row. */
function unclippedValueLoss(
  c: TrainerContext["config"],
  values: ArrayLike<number>[],
  masks: Float64Array[],
  returns: ArrayLike<number>[],
) {
  const weights = flatten(AGG[c.rl.loss_agg](masks, aggOptions(c)));
  const vl = valueLoss(
    {
      values: flatten(values),
      oldValues: flatten(values),
      returns: flatten(returns),
      mask: flatten(masks),
    },
    Number.POSITIVE_INFINITY,
  );
  const loss = aggregate(vl.loss, weights);
  const dvalue = unflatten(
    vl.grad.map((g, i) => g * weights[i]),
    values.map((v) => v.length),
  );
  return { loss, dvalue, metrics: { "critic/vf_loss": loss } };
}

/**
 * Value-pretraining step `step`. The policy does not move: after each optimizer step every
 * tensor but the value head (and its AdamW moments) is put back. The row logs
 * critic/vf_loss and critic/vf_explained_var of the critic as it was before the step,
 * measured on this step's fresh rollouts; `finished` is the stop rule (valuePretrainDone)
 * checked after the step.
 */
export async function valuePretrainStep(
  ctx: TrainerContext,
  step: number,
): Promise<StepOutput & { finished: boolean }> {
  const c = ctx.config;
  const r = c.rl;
  const policy = ctx.policy;
  if (!policy.config.valueHead)
    throw new Error("value pretraining needs a model with a value head (rl.advantage gae)");
  const t0 = ctx.clock();
  const rng = createRng(`${c.seed}:value_pretrain:${step}`);
  const problems = ctx.driver.sample(rng, r.prompts_per_step);
  ctx.activity("rollout");
  const { rewarded, toolSeconds, rewardSeconds } = await rolloutAndReward(ctx, `vp${step}`, problems, step);
  const tRollout = ctx.clock() - t0;
  ctx.activity("update");
  const tt = ctx.clock();
  const rows = rewarded.map((t) => ({ prompt: t.traj.promptTokens, response: t.traj.tokens }));
  const masks = rewarded.map((t) => Float64Array.from(t.traj.mask));
  const mbSize = Math.max(1, Math.ceil(rows.length / r.minibatches));
  const old = await scoreAll(policy, rows, mbSize, c.model.context);
  if (!old.values) throw new Error("value pretraining: the model returned no values");
  const oldValues = old.values;
  const mc = gae(
    rewarded.map((t, i) => ({
      groupId: t.groupId,
      reward: t.reward,
      mask: masks[i],
      values: oldValues[i],
      tokenRewards: tokenRewardsOf(c, t, masks[i]),
    })),
    withAdvantageDefaults({ gamma: 1, lambda: 1, lambdaCritic: 1, whiten: false, klCoef: 0 }),
  );
  const returns = mc.returns!;
  const ev = explainedVariance(flatten(returns), flatten(oldValues), flatten(masks));
  const head = ["value_head.weight", "value_head.bias"].map((n) => policy.layout.byName.get(n)!);
  const hparams = adamwHparams(r, r.lr, 0);
  const order = createRng(`${c.seed}:value_pretrain_mb:${step}`).shuffle(rows.map((_, i) => i));
  const res = await trainMinibatches(policy, {
    rows,
    size: mbSize,
    epochs: r.epochs,
    context: c.model.context,
    order: () => order,
    loss: (idx, s) =>
      unclippedValueLoss(
        c,
        s.values!,
        idx.map((i) => masks[i]),
        idx.map((i) => returns[i]),
      ),
    // Keep the policy frozen: only the value head (and its moments) takes the step.
    step: () => stepOnly(policy, head, hparams),
    gradNormKey: "critic/grad_norm",
    where: `value-pretraining step ${step}`,
    lossName: "value loss",
  });
  const train = ctx.clock() - tt;
  const finished = valuePretrainDone(step + 1, ev, {
    steps: r.value_pretrain.steps,
    stopExplainedVar: r.value_pretrain.stop_explained_var,
  });
  const row: MetricsRow = { step, phase: "value_pretrain", time: ctx.clock() };
  Object.assign(row, rolloutMetrics(rewarded));
  const masked = (xs: Float64Array[]) =>
    mean(flatten(xs.map((v, i) => v.filter((_, j) => masks[i][j] !== 0))));
  putFinite(row, "critic/vf_loss", res.metrics["critic/vf_loss"] ?? Number.NaN);
  putFinite(row, "critic/vf_explained_var", ev);
  putFinite(row, "critic/values_mean", masked(oldValues));
  putFinite(row, "critic/returns_mean", masked(returns));
  putFinite(row, "critic/grad_norm", res.metrics["critic/grad_norm"] ?? Number.NaN);
  putFinite(row, "actor/lr", r.lr);
  const dt = ctx.clock() - t0;
  putFinite(row, "perf/tokens_per_s", dt > 0 ? res.tokens / dt : Number.NaN);
  putTiming(row, {
    rollout: Math.max(0, tRollout - toolSeconds - rewardSeconds),
    tool: toolSeconds,
    reward: rewardSeconds,
    train,
  });
  if (finished) row.event = `value pretraining done after ${step + 1} steps`;
  if (res.skipped) row.event = res.skipped;
  return { row, samples: [], skipped: res.skipped, finished };
}
