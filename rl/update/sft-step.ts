// The SFT cold start: one supervised step on the task's demonstrations (cross-entropy over
// assistant tokens only, lossMask of the rendered conversation), through the shared minibatch
// loop as a single minibatch. The roles come from the chat format's turn-by-turn rendering
// (model/chat.ts); with a model's own template the row counts tokenize/mismatch_turns (demos
// whose turns did not extend, task.tokenization_check "warn"). Tested by rl/run/trainer.test.ts and rl/run/trainer-env.test.ts.
import { lossMask, type Message } from "../../model/template";
import { createRng } from "../../tasks/rng";
import { adamwHparams, sftLr } from "../common/config-options";
import type { TrainerContext } from "../common/phase-context";
import { type MetricsRow, putFinite, type StepOutput } from "../common/step-records";
import { trainMinibatches } from "./minibatch-loop";

/** SFT step `step`: sft.batch demonstrations, one AdamW step at the scheduled learning rate. */
export async function sftStep(ctx: TrainerContext, step: number): Promise<StepOutput> {
  const c = ctx.config;
  const rng = createRng(`${c.seed}:sft:${step}`);
  const knobs = (c.task.options.sft ?? {}) as Record<string, unknown>;
  let mismatches = 0;
  const convs = ctx.driver.sftDemos(rng, c.sft.batch, knobs).map((d) => {
    const r = ctx.chat.render(d.messages as Message[]);
    mismatches += r.mismatches;
    return { ids: r.ids, mask: lossMask(r.roles) };
  });
  // Token 0 is the only "prompt": every later token is scored, and the mask picks the trained ones.
  const rows = convs.map((r) => ({ prompt: r.ids.slice(0, 1), response: r.ids.slice(1) }));
  const masks = convs.map((r) => Float64Array.from(r.mask.slice(1)));
  const lr = sftLr(c, step);
  const t0 = ctx.clock();
  ctx.activity("sft");
  const res = await trainMinibatches(ctx.policy, {
    rows,
    size: rows.length,
    epochs: 1,
    context: c.model.context,
    order: () => rows.map((_, i) => i),
    loss: (_idx, s, index) => {
      // the mean over trained tokens that fit in the context
      const n = Math.max(
        1,
        masks.reduce((sum, m, b) => sum + m.reduce((a, x, j) => a + (index[b][j] >= 0 ? x : 0), 0), 0),
      );
      let loss = 0;
      for (let b = 0; b < s.logp.length; b++)
        for (let j = 0; j < s.logp[b].length; j++) loss -= masks[b][j] * s.logp[b][j];
      loss /= n;
      return { loss, dlogp: masks.map((m) => m.map((x) => -x / n)), metrics: { loss } };
    },
    step: () => ctx.policy.step(adamwHparams(c.sft, lr)),
    gradNormKey: "actor/grad_norm",
    where: `SFT step ${step}`,
  });
  const dt = ctx.clock() - t0;
  const row: MetricsRow = { step, phase: "sft", time: ctx.clock(), "actor/lr": lr };
  putFinite(row, "loss", res.metrics.loss ?? Number.NaN);
  putFinite(row, "actor/grad_norm", res.metrics["actor/grad_norm"] ?? Number.NaN);
  putFinite(row, "perf/tokens_per_s", dt > 0 ? res.tokens / dt : Number.NaN);
  putFinite(row, "timing/train_s", dt);
  if (ctx.chat.name === "model") row["tokenize/mismatch_turns"] = mismatches;
  if (res.skipped) row.event = res.skipped;
  return { row, samples: [], skipped: res.skipped };
}
