// The training engine end to end on the CPU reference model with the real QuickJS sandbox:
// SFT lowers the loss, an RL step produces DESIGN.md's metric names, tool output gets no
// gradient, edits apply, and the same seed replays the same rows.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig, type RunConfig } from "../../config";
import { builtinChat } from "../../model/chat";
import { CpuModel } from "../../model/cpu";
import { CHAR_TOKENIZER } from "../../model/tokenizer";
import { InProcessSandbox } from "../../sandbox/run-code";
import { RunLoop } from "./run-loop";
import { modelConfigOf, taskOf } from "./run-parts";
import { type MetricsRow, minibatchLoss, Trainer } from "./trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

function tinyConfig(over: object = {}): RunConfig {
  return mergeConfig(defaultRunConfig(), {
    seed: 7,
    model: { layers: 1, d_model: 16, heads: 2, context: 96 },
    sft: { steps: 3, batch: 4, warmup_steps: 1 },
    rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 2 },
    sampling: { max_new_tokens: 24 },
    task: { eval_size: 4, eval_every: 2 },
    stop: { max_steps: 2 },
    ...over,
  });
}

function makeTrainer(config: RunConfig, clock?: () => number) {
  const policy = new CpuModel(modelConfigOf(config), undefined, config.seed);
  return new Trainer(config, { policy, task: taskOf(config), sandbox, clock });
}

describe("Trainer (CPU model)", () => {
  it("runs SFT then RL with DESIGN.md's metric names and no NaN", async () => {
    const config = tinyConfig({
      rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 2, kl: { coef: 0.01 } },
    });
    const rows: MetricsRow[] = [];
    const loop = new RunLoop(makeTrainer(config), { row: (r) => rows.push(r) });
    await loop.run();
    const sft = rows.filter((r) => r.phase === "sft");
    const rl = rows.filter((r) => r.phase === "rl");
    expect(sft).toHaveLength(3);
    expect(sft[0].loss).toBeGreaterThan(0);
    expect(rl.length).toBe(3); // 2 steps + the final evaluation row
    for (const key of [
      "reward/mean",
      "reward/std",
      "reward/correctness/mean",
      "acc/mean",
      "actor/entropy",
      "actor/grad_norm",
      "actor/lr",
      "actor/pg_loss",
      "actor/pg_clipfrac",
      "actor/ppo_kl",
      "actor/kl_ref",
      "response_length/mean",
      "tool/call_rate",
      "tool/calls_mean",
      "groups/zero_std_frac",
      "groups/zero_std_frac_all_correct",
      "groups/zero_std_frac_all_wrong",
      "perf/tokens_per_s",
      "timing/rollout_s",
      "timing/train_s",
      "val/acc",
      "val/acc_sampled",
      "val/tool_call_rate",
      "val/tool_call_rate_sampled",
      "val/valid_call_rate",
      "val/valid_call_rate_sampled",
    ]) {
      expect(rl[0], key).toHaveProperty([key]);
    }
    for (const r of rows)
      for (const v of Object.values(r)) if (typeof v === "number") expect(Number.isFinite(v)).toBe(true);
    for (const r of rl.filter((x) => "groups/zero_std_frac" in x)) {
      const split =
        Number(r["groups/zero_std_frac_all_correct"]) + Number(r["groups/zero_std_frac_all_wrong"]);
      expect(split).toBeLessThanOrEqual(Number(r["groups/zero_std_frac"]) + 1e-12);
    }
  });

  it("evaluates the dev set beside the held-out set when task.dev_size is set", async () => {
    const base = tinyConfig({ sft: { steps: 0 } });
    const withDev = mergeConfig(base, { task: { dev_size: 3 } });
    const a = await makeTrainer(base).evaluate();
    const b = await makeTrainer(withDev).evaluate();
    expect(Object.keys(a).some((k) => k.startsWith("dev/"))).toBe(false);
    for (const k of ["dev/acc", "dev/acc_sampled", "dev/tool_call_rate", "dev/tool_call_rate_sampled"])
      expect(b, k).toHaveProperty([k]);
    // The reported held-out numbers do not move when the dev set is added.
    for (const [k, v] of Object.entries(a)) expect(b[k], k).toBe(v);
    const v1 = mergeConfig(withDev, { task: { split_version: 1 } });
    await expect(makeTrainer(v1).evaluate()).rejects.toThrow(
      /task.dev_size: .*no dev set under split version 1/,
    );
  });

  it("SFT lowers the loss on the demonstrations", async () => {
    const config = tinyConfig({ sft: { steps: 25, batch: 8, lr: 1e-2, warmup_steps: 2 } });
    const tr = makeTrainer(config, () => 0);
    const losses: number[] = [];
    for (let i = 0; i < 25; i++) losses.push(Number((await tr.sftStep()).row.loss));
    const head = (losses[0] + losses[1] + losses[2]) / 3;
    const tail = (losses[22] + losses[23] + losses[24]) / 3;
    expect(tail).toBeLessThan(head * 0.7);
  });

  it("replays: the same config and seed give identical rows", async () => {
    const run = async () => {
      const rows: MetricsRow[] = [];
      await new RunLoop(
        makeTrainer(tinyConfig({ stop: { max_steps: 1 } }), () => 0),
        { row: (r) => rows.push(r) },
      ).run();
      return rows.map((r) =>
        Object.fromEntries(
          Object.entries(r).filter(([k]) => !k.startsWith("timing/") && !k.startsWith("perf/")),
        ),
      );
    };
    expect(await run()).toEqual(await run());
  });

  it("applies a live edit at the next step and refuses a restart-only one", async () => {
    const rows: MetricsRow[] = [];
    const events: string[] = [];
    const loop = new RunLoop(makeTrainer(tinyConfig({ sft: { steps: 0 }, stop: { max_steps: 2 } })), {
      row: (r) => {
        rows.push(r);
        if (r.step === 0 && r.phase === "rl") {
          loop.edit("rl.lr", 1e-5);
          loop.edit("model.d_model", 32);
        }
      },
      event: (e) => events.push(`${e.kind}:${e.message}`),
    });
    await loop.run();
    expect(rows[0]["actor/lr"]).toBe(3e-4);
    expect(rows[1]["actor/lr"]).toBe(1e-5);
    expect(events.some((e) => e.startsWith("edit:rl.lr"))).toBe(true);
    expect(events.some((e) => e.startsWith("edit-refused:") && e.includes("model.d_model"))).toBe(true);
  });
});

describe("loss masks", () => {
  const rows = {
    logprob: [[-1, -2, -0.5, -3, -1.5]],
    entropy: [[1, 2, 9, 9, 3]],
    oldLogprob: [[-1.1, -1.9, -0.4, -3.2, -1.4]],
    advantages: [[0.7, 0.7, 0.7, 0.7, 0.7]],
    postTool: [[0, 0, 0, 0, 1]],
  };
  // Tokens [gen, gen, tool, tool, gen] (ALGORITHMS §10's example).
  it("gives tool-response tokens exactly zero gradient, through every loss term", () => {
    const config = tinyConfig({
      rl: { kl: { coef: 0.1 }, entropy_coef: 0.01 },
      shaping: { kind: "tao-code", restrict_to_post_tool: false },
    });
    const out = minibatchLoss(config, {
      ...rows,
      mask: [[1, 1, 0, 0, 1]],
      refLogprob: [[-1, -1, -1, -1, -1]],
    });
    expect(out.dlogp[0][2]).toBe(0);
    expect(out.dlogp[0][3]).toBe(0);
    expect(out.dentropy[0][2]).toBe(0);
    expect(out.dentropy[0][3]).toBe(0);
    expect(out.dlogp[0][0]).not.toBe(0);
    expect(out.metrics["actor/entropy"]).toBeCloseTo(2, 12);
    expect(out.metrics["actor/entropy_post_tool"]).toBeCloseTo(3, 12);
  });
  it("trains on tool tokens when the mask is off (the contrast)", () => {
    const out = minibatchLoss(tinyConfig(), { ...rows, mask: [[1, 1, 1, 1, 1]] });
    expect(out.dlogp[0][2]).not.toBe(0);
  });

  it("records whether the model's chat template renders tools (the export reads it), and only for a model's own template", async () => {
    const config = tinyConfig({ sft: { steps: 0 }, stop: { max_steps: 1 } });
    const events = async (rendersTools?: boolean) => {
      const chat = { ...builtinChat("inline", CHAR_TOKENIZER), rendersTools };
      const policy = new CpuModel(modelConfigOf(config), undefined, config.seed);
      const out: { kind: string; chat?: unknown }[] = [];
      await new RunLoop(new Trainer(config, { policy, task: taskOf(config), sandbox, chat }), {
        event: (e) => out.push(e),
      }).run();
      return out.filter((e) => e.chat !== undefined);
    };
    expect(await events(false)).toMatchObject([{ kind: "info", chat: { renders_tools: false } }]);
    expect(await events(true)).toMatchObject([{ kind: "info", chat: { renders_tools: true } }]);
    expect(await events(undefined)).toEqual([]);
  });
});
