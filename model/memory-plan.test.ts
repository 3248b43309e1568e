// The memory plan's terms for two real model shapes (SmolLM2-135M, Qwen2.5-0.5B: their
// config.json values) against figures worked out by hand here, the per-buffer limit check, and a
// plan over budget refused with its numbers and what to change.
// Run: `npx vitest run --project unit model/memory-plan.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { modelConfig } from "./config";
import { HEAD_CHUNK_BYTES } from "./head";
import { QWEN25_05B, SMOLLM2_135M } from "./hf/configs";
import { hfModelConfig } from "./hf/read";
import { loraParamCount } from "./lora";
import {
  GB,
  memoryPlan,
  HEAD_CHUNK_BYTES as PLAN_CHUNK,
  type PlanRun,
  planOfConfig,
  planRefusal,
  planRunOf,
} from "./memory-plan";

// HuggingFaceTB/SmolLM2-135M-Instruct config.json (the fields that shape memory).
// The published configs (model/hf/configs.ts), read by the lab's own config reader.
const SMOLLM2 = SMOLLM2_135M;
const ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"] as const;
const QWEN25 = QWEN25_05B;

// 8 sequences of 512 tokens per minibatch (N = 4096 rows), 16 decoded at once.
const RUN: PlanRun = { trainRows: 8, seqLen: 512, decodeRows: 16, reference: false };
const term = (plan: ReturnType<typeof memoryPlan>, key: string) =>
  plan.terms.find((t) => t.key === key)?.bytes;

describe("memory plan", () => {
  it("uses the head's chunk size", () => expect(PLAN_CHUNK).toBe(HEAD_CHUNK_BYTES));

  it("SmolLM2-135M: every term by hand", () => {
    const mc = hfModelConfig(SMOLLM2, "config.json", { context: 512 });
    const plan = memoryPlan(mc, RUN, undefined, 100 * GB);
    // Parameters: embedding 49152x576 (tied head); per layer q 576x576, k and v 576x192 each,
    // o 576x576, gate/up/down 576x1536 each, two norms of 576; the final norm.
    const perLayer = 576 * 576 + 2 * 576 * 192 + 576 * 576 + 3 * 576 * 1536 + 2 * 576;
    const P = 49152 * 576 + 30 * perLayer + 576;
    expect(P).toBe(134_515_008); // the model card's 135M
    expect(term(plan, "weights")).toBe(P * 4);
    expect(term(plan, "gradients")).toBe(P * 4);
    expect(term(plan, "optimizer")).toBe(2 * P * 4);
    // KV cache: K and V per layer, 16 sequences x 512 positions x 3 kv heads x 64.
    expect(term(plan, "kv-cache")).toBe(2 * 30 * 16 * 512 * 3 * 64 * 4);
    // The head: logits and dlogits in chunks of whole rows under 64 MiB: 341 rows x 49152 ids.
    expect(Math.floor((64 * 2 ** 20) / 4 / 49152)).toBe(341);
    expect(term(plan, "head-logits")).toBe(2 * 341 * 49152 * 4);
    // Decoding: the sampler's logits for all 16 sequences (one chunk) and their hidden states.
    expect(term(plan, "decode")).toBe(16 * 49152 * 4 + 16 * 576 * 4);
    // Activations, N = 4096 rows. Per layer: ln1, res2, ln2, res3 (C = 576 each), qkv (576+2x192),
    // atty (576), fch (2x1536, gate and up), fchAct (1536), four mean/rstd rows, lse (9 heads),
    // and two 1-float placeholders (no q/k norm) padded to 64 floats each.
    const N = 4096;
    const layer = N * (4 * 576 + 960 + 576 + 3072 + 1536) + 4 * N + 9 * N + 2 * 64;
    // train-io: tokens, targets, pos, wlp, went, dvalue, lnfMean, lnfRstd, values (N each), encoded,
    // tmp, lnf (N x C each), out (3N); train-grad: dres, dln, datty (N x C), dqkv (N x 960),
    // dfch (N x 3072), dfchAct (N x 1536), attScratch (9N), two placeholders.
    // ...and the embedding backward's keys and orders (4N) and starts (2 x (N+1), padded to N+64).
    // io.out also holds the 64 step norms read back with a forward (NORM_LOG).
    const io = 9 * N + 3 * N * 576 + 3 * N + 64 + 4 * N + 2 * (N + 64);
    const grad = 3 * N * 576 + N * 960 + N * 3072 + N * 1536 + 9 * N + 2 * 64;
    expect(term(plan, "activations")).toBe((30 * layer + io) * 4);
    expect(term(plan, "scratch")).toBe(grad * 4);
    // Recomputation: one layer's arena and each layer's output (N x 576) instead of 30 arenas.
    const rec = memoryPlan(mc, { ...RUN, recompute: true }, undefined, 100 * GB);
    expect(term(rec, "activations")).toBe((layer + 30 * N * 576 + io) * 4);
    expect(plan.terms.map((t) => t.key)).toEqual([
      "weights",
      "gradients",
      "optimizer",
      "activations",
      "scratch",
      "head-logits",
      "kv-cache",
      "decode",
    ]);
    expect(plan.total).toBe(plan.terms.reduce((a, t) => a + t.bytes, 0));
  });

  it("Qwen2.5-0.5B: weights, KV cache and the head by hand; a KL reference; LoRA and f16 terms", () => {
    const mc = hfModelConfig(QWEN25, "config.json", { context: 512 });
    // Per layer: q 896x896 + bias 896, k and v 896x128 + bias 128 each, o 896x896,
    // gate/up/down 896x4864 each, two norms of 896.
    const perLayer = 896 * 896 + 896 + 2 * (896 * 128 + 128) + 896 * 896 + 3 * 896 * 4864 + 2 * 896;
    const P = 151936 * 896 + 24 * perLayer + 896;
    expect(P).toBe(494_032_768); // the model card's 0.49B
    const plan = memoryPlan(mc, { ...RUN, reference: true }, undefined, 100 * GB);
    expect(term(plan, "weights")).toBe(P * 4);
    expect(term(plan, "optimizer")).toBe(2 * P * 4);
    expect(term(plan, "kv-cache")).toBe(2 * 24 * 16 * 512 * 2 * 64 * 4);
    // 110 rows of 151936 logits fit a 64 MiB chunk.
    expect(term(plan, "head-logits")).toBe(2 * 110 * 151936 * 4);
    // The KL reference: a frozen copy of the weights, and its own scoring buffers (the policy's
    // sizes in the recomputation layout: a frozen copy only scores).
    const rec = memoryPlan(mc, { ...RUN, recompute: true }, undefined, 100 * GB);
    const scoring = term(rec, "activations")! + term(rec, "scratch")! + term(rec, "head-logits")!;
    expect(term(plan, "reference")).toBe(P * 4 + scoring);
    // The embedding (151936 x 896 f32, 544.5 MB) is one tensor, never cut between buffers: over
    // WebGPU's default 256 MiB maxBufferSize.
    expect(plan.fits).toBe(false);
    expect(plan.problems.join("\n")).toContain(
      "Weights: params's largest tensor is 544.5 MB, over the adapter's maxBufferSize of 268.4 MB",
    );
    const big = { maxBufferSize: 2 ** 30, maxStorageBufferBindingSize: 2 ** 30 };
    expect(memoryPlan(mc, { ...RUN, reference: true }, big, 100 * GB).problems).toEqual([]);
    // A smaller head chunk: 16 MiB holds 27 rows.
    const chunked = memoryPlan(mc, { ...RUN, headChunkBytes: 16 * 2 ** 20 }, undefined, 100 * GB);
    expect(term(chunked, "head-logits")).toBe(2 * 27 * 151936 * 4);
    // LoRA r16 on all seven targets with an f16 base (model/half.ts: each layer's four linear
    // weights in f16, packed two to a word; the embedding/head, norms and biases f32), gradients
    // and moments over the adapter only. Per layer the adapter is r x (in + out) for q (896+896),
    // k and v (896+128 each), o (896+896), gate and up (896+4864 each), down (4864+896).
    const loraMc = modelConfig({ ...mc, lora: { rank: 16, alpha: 32, targets: [...ALL] } });
    const A = 24 * 16 * (2 * 1792 + 2 * 1024 + 3 * 5760);
    expect(A).toBe(8_798_208);
    expect(loraParamCount(loraMc, loraMc.lora)).toBe(A);
    const f16Mc = modelConfig({ ...loraMc, baseDtype: "f16" });
    const lora = memoryPlan(f16Mc, RUN, undefined, 100 * GB);
    // Linear weights a layer: c_attn 1152 x 896, c_proj 896 x 896, c_fc 9728 x 896, mlp c_proj 896 x 4864.
    const halves = 24 * (1152 * 896 + 896 * 896 + 9728 * 896 + 896 * 4864);
    expect(term(lora, "weights")).toBe((P - halves) * 4 + halves * 2);
    expect(term(memoryPlan(loraMc, RUN, undefined, 100 * GB), "weights")).toBe(P * 4);
    expect(term(lora, "adapter")).toBe(A * 4);
    expect(term(lora, "gradients")).toBe(A * 4);
    expect(term(lora, "optimizer")).toBe(2 * A * 4);
    // A tensor kept in f32 (beyond f16's range, as the model's baseStorage() reports it): an f32
    // buffer of its own beside its f16 slot (model/gpu-base.ts), and said.
    const keptF32 = [{ name: "h.3.mlp.c_proj.weight", maxAbs: 70000 }];
    const kept = memoryPlan(f16Mc, { ...RUN, keptF32 }, undefined, 100 * GB);
    expect(term(kept, "weights")! - term(lora, "weights")!).toBe(896 * 4864 * 4);
    expect(kept.notes.join("\n")).toContain(
      "h.3.mlp.c_proj.weight kept in f32 in the f16 base: a value of 70000 is beyond f16's range",
    );
    expect(() => memoryPlan(f16Mc, { ...RUN, keptF32: [{ name: "wte", maxAbs: 1e5 }] })).toThrow(
      "keptF32 names wte, which is not an f16 tensor",
    );
    // No shader-f16: the f16-rounded values stored in f32, and said.
    const noHalf = memoryPlan(f16Mc, { ...RUN, halfStorage: false }, undefined, 100 * GB);
    expect(term(noHalf, "weights")).toBe(P * 4);
    expect(noHalf.notes.join()).toContain("shader-f16");
    // Micro-batches of 2 sequences: activations of 1024 rows (a quarter); recomputation keeps less still.
    const micro = memoryPlan(mc, { ...RUN, microBatchRows: 2 }, undefined, 100 * GB);
    expect(term(micro, "activations")).toBeLessThan(term(plan, "activations")! / 3.9);
    expect(term(micro, "scratch")).toBeLessThan(term(plan, "scratch")! / 3.9);
    const recompute = memoryPlan(mc, { ...RUN, recompute: true }, undefined, 100 * GB);
    expect(term(recompute, "activations")).toBeLessThan(term(plan, "activations")! / 5);
    expect(term(recompute, "scratch")).toBe(term(plan, "scratch"));
    expect(term(recompute, "weights")).toBe(term(plan, "weights"));
    // Recomputation keeps one layer's arena (4096 rows: ln1, res2, ln2, res3 of 896, qkv of 1152,
    // atty 896, gate|up 9728, act 4864, four mean/rstd rows, lse of 14 heads, two placeholders)
    // and 24 outputs of 4096 x 896: 23 arenas fewer, 24 outputs more.
    const layer = 4096 * (4 * 896 + 1152 + 896 + 9728 + 4864 + 4 + 14) + 2 * 64;
    expect(term(plan, "activations")! - term(recompute, "activations")!).toBe(
      (23 * layer - 24 * 4096 * 896) * 4,
    );
  });

  it("Qwen2.5-0.5B at 8 x 512: LoRA r16 + f16 base + micro-batches of 1 + recomputation under the 4 GB goal; the full fine-tune is not", () => {
    const mc = hfModelConfig(QWEN25, "config.json", { context: 512 });
    const loraMc = modelConfig({ ...mc, lora: { rank: 16, alpha: 32, targets: [...ALL] }, baseDtype: "f16" });
    const shape = { ...RUN, reference: true };
    const lora = memoryPlan(loraMc, { ...shape, microBatchRows: 1, recompute: true });
    const full = memoryPlan(mc, shape);
    expect(lora.total).toBeLessThan(4 * GB);
    expect(full.total).toBeGreaterThan(4 * GB);
    // The reference: LoRA's shares the base (its scoring buffers only), full fine-tuning's copies the weights.
    expect(term(lora, "reference")).toBeLessThan(
      term(lora, "activations")! + term(lora, "scratch")! + 2 * 110 * 151936 * 4 + 1,
    );
    expect(term(full, "reference")).toBeGreaterThan(term(full, "weights")!);
  });

  it("refuses a plan over budget with its numbers and what to change", () => {
    const mc = hfModelConfig(SMOLLM2, "config.json", { context: 512 });
    const limits = { maxBufferSize: 4 * GB, maxStorageBufferBindingSize: 2 * GB };
    const plan = memoryPlan(mc, RUN, limits, 4 * GB);
    // 4 x 538 MB (weights, gradients, moments) + 4.3 GB of activations (4096 rows) + 377 MB KV.
    expect(plan.fits).toBe(false);
    expect(plan.total).toBeGreaterThan(4 * GB);
    const msg = planRefusal(plan, "model.pretrained: hf:HuggingFaceTB/SmolLM2-135M-Instruct");
    expect(msg).toContain(`the plan needs ${(plan.total / GB).toFixed(2)} GB, over the budget of 4.00 GB`);
    expect(msg).toContain("Weights: 538.1 MB");
    expect(msg).toContain("Head logits chunk: 134.1 MB");
    expect(msg).toContain("KV cache: 377.5 MB");
    expect(msg).toMatch(/change: .*sft\.batch/);
    expect(msg).toContain("model.memory_budget_gb");
    // Two sequences per minibatch and four decoded at once fit.
    const small = memoryPlan(mc, { ...RUN, trainRows: 2, decodeRows: 4 }, limits, 4 * GB);
    expect(small.problems).toEqual([]);
    expect(small.fits).toBe(true);
  });

  it("reads the run shape from a RunConfig: largest training batch, largest decode batch, budget", () => {
    const c = mergeConfig(defaultRunConfig(), {
      model: { memory_budget_gb: 2, context: 256 },
      sft: { steps: 10, batch: 4 },
      rl: { prompts_per_step: 4, group_size: 8, minibatches: 2, kl: { coef: 0.01 } },
      task: { eval_size: 50 },
    });
    expect(planRunOf(c)).toEqual({
      trainRows: 16,
      seqLen: 256,
      decodeRows: 50,
      reference: true,
      referenceRows: 16,
      recompute: false,
    });
    const plan = planOfConfig(c, hfModelConfig(SMOLLM2, "config.json", { context: 256 }));
    expect(plan.budget).toBe(2 * GB);
    // Micro-batches of 2 (RL scores and trains 2 at a time), recomputation, LoRA on the pretrained shape.
    const m = mergeConfig(c, {
      sft: { steps: 0 },
      rl: { micro_batch_size: 2 },
      model: { gradient_checkpointing: true, lora: { rank: 8 } },
    });
    expect(planRunOf(m)).toMatchObject({ trainRows: 2, referenceRows: 2, recompute: true });
    const lp = planOfConfig(m, hfModelConfig(SMOLLM2, "config.json", { context: 256 }));
    expect(lp.terms.map((t) => t.key)).toContain("adapter");
    expect(term(lp, "gradients")).toBe(term(lp, "adapter"));
    expect(lp.total).toBeLessThan(plan.total / 2);
  });
});
