// The memory plan (model/memory.ts): its trained-parameter terms are the models' buffers, the
// f16 base halves only the frozen matrices, micro-batches and recomputation shrink only the
// activation terms, and at Qwen2.5-0.5B's shape the LoRA r16 + f16 + micro 1 + recompute plan
// is under the 4 GB goal while the full fine-tune is not.
// Run: npx vitest run --project unit model/memory.test.ts
import { describe, expect, it } from "vitest";
import { modelConfig, paramLayout } from "./config";
import { CpuModel } from "./cpu";
import { loraParamCount } from "./lora";
import { memoryPlan, qwen05bConfig } from "./memory";

const term = (p: ReturnType<typeof memoryPlan>, name: string) =>
  p.terms.find((t) => t.name.startsWith(name))!.bytes;

describe("memory plan", () => {
  const c = modelConfig({
    layers: 2,
    dModel: 16,
    heads: 2,
    norm: "rmsnorm",
    mlp: "swiglu",
    positional: "rope",
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj", "down_proj"] },
  });
  const o = { B: 4, T: 16, micro: 0, recompute: false, baseDtype: "f32" as const };

  it("counts the trained parameters the models train (the adapter with LoRA, every weight without)", () => {
    const p = memoryPlan(c, o);
    expect(term(p, "gradients")).toBe(loraParamCount(c, c.lora) * 4);
    expect(term(p, "adam moments")).toBe(2 * loraParamCount(c, c.lora) * 4);
    expect(term(p, "base weights")).toBe(paramLayout(c).count * 4);
    const full = modelConfig({ ...c, lora: { ...c.lora, rank: 0 } });
    expect(term(memoryPlan(full, o), "gradients")).toBe(paramLayout(full).count * 4);
    expect(new CpuModel(c).grads.length).toBeGreaterThanOrEqual(loraParamCount(c, c.lora));
  });

  it("f16 halves the frozen matrices only; micro-batches and recomputation shrink only activations", () => {
    const p = memoryPlan(c, o);
    const h = memoryPlan(c, { ...o, baseDtype: "f16" });
    const layout = paramLayout(c);
    const vectors = layout.tensors.filter((t) => t.shape.length === 1).reduce((a, t) => a + t.size, 0);
    expect(term(h, "base weights")).toBe((layout.count - vectors) * 2 + vectors * 4);
    const m = memoryPlan(c, { ...o, micro: 1 });
    expect(term(m, "activations")).toBeCloseTo(term(p, "activations") / 4, 0);
    const r = memoryPlan(c, { ...o, recompute: true });
    expect(term(r, "activations")).toBeLessThan(term(p, "activations"));
    expect(term(r, "gradients")).toBe(term(p, "gradients"));
  });

  it("Qwen2.5-0.5B at 8x512: LoRA r16, f16, micro 1, recomputation under 4 GB; the full fine-tune is not", () => {
    const lora = memoryPlan(qwen05bConfig(16), { B: 8, T: 512, micro: 1, recompute: true, baseDtype: "f16" });
    const full = memoryPlan(qwen05bConfig(0), { B: 8, T: 512, micro: 0, recompute: false, baseDtype: "f32" });
    expect(paramLayout(qwen05bConfig(0)).count).toBe(494032768); // Qwen2.5-0.5B's parameter count (tied head)
    expect(lora.total).toBeLessThan(4e9);
    expect(full.total).toBeGreaterThan(4e9);
  });
});
