// `npm run bench:counts`: the GPU work of one RL step, counted by the engine dispatch by dispatch
// (Runtime.work: FLOPs and least bytes of each op; Runtime.counters: submits and readbacks), under
// the discrete GPUs' kernel plan (forced on whatever adapter runs it), at 1, 2 and 3 layers of
// SmolLM2-135M's and Qwen2.5-0.5B's shapes (random weights, LoRA r16 on all seven targets; the
// step of bench/rl-shape.ts: 2 prompts x 2 samples, 384 prompt + 128 decoded tokens, old
// log-probs over the batch, one update). Writes bench/results/counts.json; bench/counts-model.ts
// extrapolates to the real depths and predicts step times on named GPUs, and `npm run bench:doc`
// puts the table in docs/PERFORMANCE.md. About 10 minutes on lavapipe (2 cores).
//   npm run bench:counts [-- --only smollm2|qwen] [--steps 2: count the second step too and say whether it differs]
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGpu } from "../kernels/device";
import { nodeGpu } from "../kernels/node-gpu";
import { Runtime } from "../kernels/runtime";
import { type ModelConfig, modelConfig } from "../model/config";
import { GpuModel } from "../model/gpu";
import { qwen05bShape } from "./bigmodel";
import {
  type CountsReport,
  type DepthCount,
  type DispatchCount,
  type ModelCount,
  NAMED_GPUS,
  OVERHEADS,
  PHASES,
  type Phase,
  type PhaseCount,
  phaseCount,
} from "./counts-model";
import { type BenchRow, makeRow, median } from "./report";
import { RL_SHAPE, rlShapeConfig, rlShapeStep } from "./rl-shape";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const COUNTS_FILE = "bench/results/counts.json";

interface ModelSpec {
  id: string;
  name: string;
  layers: number;
  shape: string;
  config: (layers: number) => ModelConfig;
}

const STEP = `${RL_SHAPE.prompts} prompts x ${RL_SHAPE.samples} samples, ${RL_SHAPE.promptTokens} prompt + ${RL_SHAPE.context - RL_SHAPE.promptTokens} decoded tokens, old log-probs, one update; LoRA r16 on all seven targets`;

export const MODELS: ModelSpec[] = [
  {
    id: "smollm2_135m_rl512",
    name: "SmolLM2-135M RL step at context 512",
    layers: 30,
    shape: `d576, 9 heads over 3 KV heads, MLP 1536, vocab 49,152, f32 base; ${STEP}`,
    config: (layers) => rlShapeConfig({ ...RL_SHAPE, layers }),
  },
  {
    id: "qwen25_05b_lora16_rl512",
    name: "Qwen2.5-0.5B LoRA RL step at context 512",
    layers: 24,
    shape: `d896, 14 heads over 2 KV heads, MLP 4864, vocab 151,936, f16 base; ${STEP}`,
    config: (layers) => modelConfig({ ...qwen05bShape(16, RL_SHAPE.context, "f16"), layers }),
  },
];

/** Counts one step on `model`, phase by phase, by wrapping the runtime's dispatch. */
export async function countStep(
  rt: Runtime,
  model: GpuModel,
  seed: number,
): Promise<{ wallS: number; phases: Record<Phase, PhaseCount> }> {
  const logs = Object.fromEntries(PHASES.map((p) => [p, [] as DispatchCount[]])) as Record<
    Phase,
    DispatchCount[]
  >;
  const trips = Object.fromEntries(PHASES.map((p) => [p, { submits: 0, readbacks: 0 }])) as Record<
    Phase,
    { submits: number; readbacks: number }
  >;
  let phase: Phase | null = null;
  let at = { ...rt.counters };
  const close = () => {
    if (!phase) return;
    trips[phase].submits += rt.counters.submits - at.submits;
    trips[phase].readbacks += rt.counters.readbacks - at.readbacks;
  };
  const dispatch = rt.dispatch.bind(rt);
  rt.dispatch = (rec, pipeline, bindings, groups, work) => {
    const before = { ...rt.work };
    dispatch(rec, pipeline, bindings, groups, work);
    if (phase && rt.work.dispatches > before.dispatches)
      logs[phase].push({
        label: pipeline.label,
        flops: rt.work.flops - before.flops,
        bytes: rt.work.bytes - before.bytes,
      });
  };
  const start = { ...rt.work };
  try {
    const t = await rlShapeStep(model, { ...RL_SHAPE, layers: model.config.layers }, seed, (p) => {
      close();
      phase = p;
      at = { ...rt.counters };
    });
    close();
    phase = null;
    const logged = PHASES.reduce((n, p) => n + logs[p].length, 0);
    if (logged !== rt.work.dispatches - start.dispatches)
      throw new Error(
        `counted ${rt.work.dispatches - start.dispatches} dispatches but logged ${logged}: a dispatch bypassed Runtime.dispatch`,
      );
    const phases = Object.fromEntries(
      PHASES.map((p) => [p, phaseCount(logs[p], trips[p], NAMED_GPUS)]),
    ) as Record<Phase, PhaseCount>;
    return { wallS: t.totalS, phases };
  } finally {
    rt.dispatch = dispatch;
  }
}

/**
 * The device check's rows (bench/device/check.ts, on a GPU): the same steps at the real depths,
 * one warm-up step (pipeline compiles) and `reps` timed ones, with the work counted as they run:
 * seconds per step, and the FLOP/s and bytes/s the step achieved.
 */
export async function countedStepRows(rt: Runtime, reps: number, adapterNote: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const spec of MODELS) {
    const model = new GpuModel(rt, spec.config(spec.layers), undefined, 1);
    try {
      await countStep(rt, model, 1);
      const s: number[] = [];
      let last: Awaited<ReturnType<typeof countStep>> | null = null;
      for (let i = 0; i < reps; i++) {
        last = await countStep(rt, model, i + 2);
        s.push(last.wallS);
      }
      const p = (last as NonNullable<typeof last>).phases;
      const flops = PHASES.reduce((a, ph) => a + p[ph].flops, 0);
      const bytes = PHASES.reduce((a, ph) => a + p[ph].bytes, 0);
      const dispatches = PHASES.reduce((a, ph) => a + p[ph].dispatches, 0);
      const t = median(s);
      rows.push(
        makeRow({
          id: `counted_step_${spec.id}`,
          group: "device",
          ours: s,
          baseline: s,
          unit: "s",
          better: "lower",
          note: `${spec.name}, ${spec.layers} layers (${spec.shape}); counted ${dispatches} dispatches, ${(flops / 1e9).toFixed(0)} GFLOP, ${(bytes / 1e9).toFixed(1)} GB: ${(flops / t / 1e12).toFixed(2)} TFLOP/s and ${(bytes / t / 1e9).toFixed(0)} GB/s achieved over the step (docs/PERFORMANCE.md "GPU work on paper" predicts it for named GPUs); ours only; ${adapterNote}`,
        }),
      );
    } finally {
      model.dispose();
    }
  }
  return rows;
}

export async function runCounts(opts: { only?: string; steps?: number } = {}): Promise<CountsReport> {
  process.env.LAB_KERNEL_PLAN ??= "discrete";
  const gpu = await createGpu(await nodeGpu());
  const rt = new Runtime(gpu.device);
  const adapter = `${gpu.adapter.description || gpu.adapter.vendor}${gpu.adapter.isFallback ? " (software)" : ""}`;
  const models: ModelCount[] = [];
  try {
    for (const spec of MODELS.filter((m) => !opts.only || m.id.startsWith(opts.only))) {
      const depths: DepthCount[] = [];
      for (const layers of [1, 2, 3]) {
        const model = new GpuModel(rt, spec.config(layers), undefined, 1);
        try {
          const first = await countStep(rt, model, 1);
          for (let s = 1; s < (opts.steps ?? 1); s++) {
            const again = await countStep(rt, model, s + 1);
            const same = PHASES.every(
              (p) =>
                again.phases[p].dispatches === first.phases[p].dispatches &&
                again.phases[p].bytes === first.phases[p].bytes &&
                again.phases[p].readbacks === first.phases[p].readbacks,
            );
            console.log(
              `${spec.id} L${layers} step ${s + 1}: ${same ? "the same counts as the first" : "DIFFERENT counts"}`,
            );
          }
          depths.push({ layers, ...first });
          const p = first.phases;
          console.log(
            `${spec.id} L${layers}: ${first.wallS.toFixed(1)} s; dispatches ${PHASES.map((ph) => p[ph].dispatches).join("/")}, GFLOP ${PHASES.map((ph) => (p[ph].flops / 1e9).toFixed(1)).join("/")}, GB ${PHASES.map((ph) => (p[ph].bytes / 1e9).toFixed(2)).join("/")}`,
          );
        } finally {
          model.dispose();
        }
      }
      models.push({ id: spec.id, name: spec.name, layers: spec.layers, shape: spec.shape, depths });
    }
  } finally {
    gpu.device.destroy();
  }
  return {
    date: new Date().toISOString(),
    adapter,
    plan: rt.plan.name,
    planWhy: rt.planChoice.why,
    gpus: [...NAMED_GPUS],
    overheads: OVERHEADS,
    models,
  };
}

// (the device check bundles this file: only a run of counts.ts itself is its main)
if (process.argv[1]?.endsWith("counts.ts") && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const t0 = Date.now();
  const report = await runCounts({ only: arg("--only"), steps: Number(arg("--steps") ?? 1) });
  const out = arg("--out") ?? join(ROOT, COUNTS_FILE);
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`wrote ${out} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}
