// The memory plan's terms for two real model shapes (SmolLM2-135M, Qwen2.5-0.5B: their
// config.json values) against figures worked out by hand here, the per-buffer limit check, and a
// plan over budget refused with its numbers and what to change.
// Run: `npx vitest run --project unit model/memory-plan.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { HEAD_CHUNK_BYTES } from "./head";
import { hfModelConfig } from "./hf";
import { QWEN25_05B, SMOLLM2_135M } from "./hf-configs";
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
// The published configs (model/hf-configs.ts), read by the lab's own config reader.
const SMOLLM2 = SMOLLM2_135M;
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
    const io = 9 * N + 3 * N * 576 + 3 * N + 4 * N + 2 * (N + 64);
    const grad = 3 * N * 576 + N * 960 + N * 3072 + N * 1536 + 9 * N + 2 * 64;
    expect(term(plan, "activations")).toBe((30 * layer + io + grad) * 4);
    expect(plan.terms.map((t) => t.key)).toEqual([
      "weights",
      "gradients",
      "optimizer",
      "activations",
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
    // The KL reference holds its weights only.
    expect(term(plan, "reference")).toBe(P * 4);
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
    // LoRA with an f16 base: base weights 2 bytes each, gradients and moments over the adapter only.
    const A = 1_081_344;
    const lora = memoryPlan(mc, { ...RUN, adapterParams: A, baseBytes: 2 }, undefined, 100 * GB);
    expect(term(lora, "weights")).toBe(P * 2 + A * 4);
    expect(term(lora, "gradients")).toBe(A * 4);
    expect(term(lora, "optimizer")).toBe(2 * A * 4);
    // Micro-batches of 2 sequences: activations of 1024 rows (a quarter); recomputation keeps less still.
    const micro = memoryPlan(mc, { ...RUN, microBatchRows: 2 }, undefined, 100 * GB);
    expect(term(micro, "activations")).toBeLessThan(term(plan, "activations")! / 3.9);
    const recompute = memoryPlan(mc, { ...RUN, recompute: true }, undefined, 100 * GB);
    expect(term(recompute, "activations")).toBeLessThan(term(plan, "activations")! / 5);
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
    expect(planRunOf(c)).toEqual({ trainRows: 16, seqLen: 256, decodeRows: 50, reference: true });
    const plan = planOfConfig(c, hfModelConfig(SMOLLM2, "config.json", { context: 256 }));
    expect(plan.budget).toBe(2 * GB);
  });
});
