// Every knob does what it says: walks every RunConfig field of FIELD_META, sets the context in
// which it acts (FIELD_META activeWhen), changes it from its value there and checks that
// something observable changes: the initial weights, a metrics row, the rendered prompts and
// sampled tokens, the events or the checkpoints. A dead knob fails here; an exemption needs its
// reason in EXEMPT. Tiny runs on the CPU model with the real sandbox (a context that needs tool
// calls starts from the committed quick-demo SFT checkpoint, which calls its calculator).
// Run: `npx vitest run --project unit rl/run/knobs.test.ts` (about 15 s of CPU).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  defaultRunConfig,
  FIELD_META,
  fieldMeta,
  getPath,
  mergeConfig,
  parseRunConfig,
  type RunConfig,
  setPath,
} from "../../config";
import { crc32 } from "../../config/link";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { createTrainer } from "./build-trainer";
import { RunLoop } from "./run-loop";
import type { MetricsRow, SampleRecord } from "./trainer";

let sandbox: InProcessSandbox;
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});

/** The walk's run: SFT 2 steps, RL 2 steps with 2 epochs x 2 minibatches, a reward with spread. */
const BASE: RunConfig = mergeConfig(defaultRunConfig(), {
  seed: 3,
  model: { layers: 1, d_model: 8, heads: 2, context: 128 },
  sft: { steps: 2, batch: 2, warmup_steps: 1 },
  rl: { prompts_per_step: 2, group_size: 2, epochs: 2, minibatches: 2, lr: 1e-2 },
  rewards: {
    terms: [{ name: "correctness", weight: 1, options: { pos: 1, neg: -0.5 } }],
    custom_js: "(x) => x.text.length % 3",
  },
  sampling: { max_new_tokens: 8 },
  task: { eval_size: 2, eval_every: 1 },
  stop: { max_steps: 2 },
  checkpoint_every: 1,
});

/** Fields the walk does not change, each with why. */
const EXEMPT: Record<string, string> = {
  version: "the schema version: not a knob (migrateConfig sets it; any other value is refused)",
  seeds:
    "acts above the engine: npm run train (and the page) run seed, seed+1, ... as separate runs, each with seeds: 1 in its loop; cli/seeds.test.ts checks the runs",
  // A model's own tokenizer and chat template: each needs Qwen3's 151,669-id tokenizer (and,
  // for a pretrained folder, a model with as many rows), too large for this walk's tiny runs;
  // their own tests run them.
  "model.pretrained":
    "needs a Hugging Face folder whose vocabulary covers the tokenizer; rl/run/chat-run.test.ts writes a tiny Qwen3 one and checks the run takes its architecture and weights",
  "model.revision":
    'acts only with an "hf:" model.pretrained, fetched from the Hub into the page\'s cache; model/source.test.ts and e2e/model.e2e.test.ts (a fake Hub) check it names the files',
  "model.sha256":
    'acts only with a "local:" model.pretrained, picked in the page; model/source.test.ts and e2e/model.e2e.test.ts check a link with it finds (or misses) the files',
  "model.memory_budget_gb":
    "acts before loading (a plan over the budget is refused, the run never starts); model/memory-plan.test.ts and rl/run/build-trainer.test.ts check the refusal and its numbers",
  "model.gradient_checkpointing":
    "changes memory, not numbers: the gradients are the same bit for bit (rl/update/microbatch.test.ts on the CPU model, model/recompute.gpu.test.ts on WebGPU, with and without LoRA, micro-batches on), and the memory plan's activation term shrinks (model/memory-plan.test.ts)",
  "model.tokenizer":
    "a real tokenizer makes the model 151,669 rows wide; rl/run/chat-run.test.ts checks the lab model takes its vocabulary and the run its chat format",
  "task.tool_prompt":
    'acts only with task.template "model" and a template that ignores tools; model/chat.test.ts checks both values on one',
  "task.tokenization_check":
    'acts only with task.template "model"; model/chat.test.ts (strict, warn, off) and rl/run/chat-run.test.ts (strict, warn from the config) check it',
};

/** The value a field is changed to, where the walk's generic rule (flip, next option, +1, x2, /2) does not fit. */
const CHANGE: Record<string, unknown> = {
  "task.name": "word-problems",
  "task.options": { hardFraction: 0 },
  "task.buckets": ["hard"],
  "model.lora.targets": ["q_proj"],
  "sft.betas": [0.5, 0.9],
  "sft.grad_clip": 0.01,
  "sft.init_checkpoint": "checkpoints/quick-demo-sft.safetensors",
  "rl.betas": [0.5, 0.9],
  "rl.grad_clip": 0.01,
  "rl.clip_eps_low": 0.001,
  "rl.clip_eps_high": 0.001,
  "rl.dual_clip_c": 1.001,
  "rl.l_max": 100,
  "rl.gamma": 0.5,
  "rl.lambda": 0.5,
  "rl.lambda_critic": 0.5,
  "rl.length_adaptive_alpha": 1,
  "rl.value_clip": 0.01,
  "rl.value_pretrain.stop_explained_var": -1,
  "rl.history_window": 1,
  "rl.history_ema": 0.9,
  "rl.warmup_steps": 2,
  "rl.std_eps": 1,
  "rl.clip_cov.ratio": 0.5,
  "rl.clip_cov.lb": 50,
  "rl.clip_cov.ub": -50,
  "rl.kl_cov.ratio": 0.5,
  "rl.turn_gamma": 0.9,
  "rl.gigpo.gamma": 0.5,
  "rl.gigpo.step_weight": 0.5,
  "rewards.terms": [{ name: "format", weight: 1, options: {} }],
  "rewards.terms.*.name": "format",
  "rewards.terms.*.options": { pos: 2, neg: 0 },
  "rewards.custom_js": "(x) => x.text.length % 5",
  "filters.list": [{ name: "dapo-dynamic-sampling", options: {} }],
  "filters.list.*.name": "starpo-variance",
  "filters.list.*.options": { p: 1 },
  "filters.max_gen_rounds": 1,
  "shaping.coef": 1,
  "shaping.alpha": 2,
  "shaping.kappa": 100,
  "shaping.q_h": 0.5,
  "sampling.top_k": 3,
  "sampling.top_p": 0.5,
  "limits.max_tool_calls": 0,
  "limits.max_tool_response_chars": 2,
  "limits.tool_timeout_s": 0.005,
  "limits.memory_mb": 1,
  "stop.target": { key: "reward/mean", value: -100 },
  checkpoint_every: 2,
  // The CPU model's decode path and training forward agree exactly (ratio 1), so a threshold
  // acts only when it crosses 1: truncate every weight to 0.5, reject every token.
  "rl.rollout_correction.rollout_is_threshold": 0.5,
  "rl.rollout_correction.rollout_rs_threshold": 0.5,
  "rl.rollout_correction.rollout_rs_threshold_lower": 1.5,
};

function valid(c: unknown): RunConfig | undefined {
  const r = parseRunConfig(c);
  return r.ok ? r.config : undefined;
}

/** The config of a context: BASE with the activeWhen paths set. */
function inContext(ctx: Record<string, unknown> = {}): RunConfig {
  let c: RunConfig = BASE;
  for (const [path, value] of Object.entries(ctx)) c = setPath(c, path, value);
  const r = parseRunConfig(c);
  if (!r.ok)
    throw new Error(`activeWhen ${JSON.stringify(ctx)}: ${r.errors.map((e) => `${e.path}: ${e.message}`)}`);
  return r.config;
}

/** The config with `path` changed from its value in `c`: CHANGE, else flip / next option / +1 / x2 / /2. */
function changed(c: RunConfig, key: string, path: string): RunConfig {
  const cur = getPath(c, path);
  const meta = fieldMeta(path)!;
  const candidates =
    key in CHANGE
      ? [CHANGE[key]]
      : typeof cur === "boolean"
        ? [!cur]
        : meta.options && typeof cur === "string"
          ? meta.options.filter((o) => o !== cur)
          : typeof cur === "number"
            ? [...(Number.isInteger(cur) ? [cur + 1] : []), cur === 0 ? 0.1 : cur * 2, cur / 2]
            : [];
  for (const v of candidates) {
    const next = valid(setPath(c, path, v));
    if (next && JSON.stringify(getPath(next, path)) !== JSON.stringify(cur)) return next;
  }
  throw new Error(`${path}: no valid changed value (from ${JSON.stringify(cur)}); add one to CHANGE`);
}

const comparable = (rows: readonly MetricsRow[]) =>
  rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).filter(([k]) => k !== "time" && !k.startsWith("timing/") && !k.startsWith("perf/")),
    ),
  );

/** What a person (or a test) can observe of a run, as one string. */
async function observe(config: RunConfig): Promise<Record<string, string>> {
  const trainer = await createTrainer(config, {
    makeModel: async (mc, w, seed) => new CpuModel(mc, w, seed),
    sandbox,
    readFile: async (p) => new Uint8Array(readFileSync(resolve("public", p))),
    clock: () => 0,
  });
  const w = await trainer.policy.getWeights();
  const rows: MetricsRow[] = [];
  const samples: SampleRecord[] = [];
  const events: string[] = [];
  const checkpoints: string[] = [];
  await new RunLoop(trainer, {
    row: (r) => rows.push(r),
    samples: (s) => samples.push(...s),
    event: (e) => events.push(`${e.kind} ${e.message}`),
    checkpoint: (ck) => {
      checkpoints.push(`${ck.phase} ${ck.step}`);
    },
  }).run();
  return {
    "initial weights": `${w.length}:${crc32(new Uint8Array(w.buffer, w.byteOffset, w.byteLength))}`,
    rows: JSON.stringify(comparable(rows)),
    "prompts and sampled tokens": JSON.stringify(samples.map((s) => [s.promptTokens, s.tokens, s.mask])),
    events: JSON.stringify(events),
    checkpoints: JSON.stringify(checkpoints),
  };
}

describe("every knob does what it says", () => {
  it("changing any field (in its context) changes something observable", async () => {
    const t0 = Date.now();
    const baselines = new Map<string, Record<string, string>>();
    const dead: string[] = [];
    const seen: string[] = [];
    // KNOBS=rl.lr,sft.lr walks only those (while debugging one knob).
    const only = process.env.KNOBS?.split(",");
    for (const [key, meta] of Object.entries(FIELD_META)) {
      if (only && !only.includes(key)) continue;
      if (key in EXEMPT) {
        expect(EXEMPT[key].length, key).toBeGreaterThan(20);
        continue;
      }
      const path = key.replaceAll("*", "0");
      const ctx = meta.activeWhen ?? {};
      const base = inContext(ctx);
      // A field under an array element needs the element: the context provides it (or BASE does).
      expect(getPath(base, path), `${key}: the walk's context has no ${path}`).not.toBeUndefined();
      const id = JSON.stringify(ctx);
      if (!baselines.has(id)) baselines.set(id, await observe(base));
      const before = baselines.get(id)!;
      const after = await observe(changed(base, key, path));
      const what = Object.keys(before).filter((k) => before[k] !== after[k]);
      if (what.length === 0) dead.push(`${key} (context ${id})`);
      else seen.push(`${key}: ${what.join(", ")}`);
    }
    console.log(
      `knob walk: ${seen.length} fields in ${((Date.now() - t0) / 1000).toFixed(1)} s\n${seen.join("\n")}`,
    );
    expect(dead).toEqual([]);
  }, 480_000);
});
