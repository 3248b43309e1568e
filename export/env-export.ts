// The TRL export of a run on a lab JavaScript environment (task "env", docs/ENVIRONMENTS.md):
// train_trl.py with the environment as TRL's environment_factory (lab_env.py LabTrlEnvironment,
// its tools typed methods), env.json (export/env.ts: the module and the limits), lab_env.py,
// train.parquet / val.parquet (each row an episode: its seed and the opening messages the lab's
// reset gives; the training seeds in the order the lab's trainer draws them) and README.md.
// The episode's reward is the lab's: the environment's return, weighted as the term `env`. The
// environment engine must be loaded (prepareEnvEngine). verl is refused with a clear message.
// Tested by export/engines/env-trl.engines.test.ts (TRL and transformers themselves).
import { parquetWriteBuffer } from "hyparquet-writer";
import type { RunConfig } from "../config/schema.ts";
import { type ChatTool, withToolPrompt } from "../model/face.ts";
import { type JsEnvLimits, type JsEnvTask, makeJsEnvTask } from "../tasks/env-api/js-env.ts";
import { envSourceOf } from "../tasks/index.ts";
import { createRng } from "../tasks/rng.ts";
import LAB_ENV_PY from "./env/lab_env.py?raw";
import { envExportJson } from "./env.ts";
import type { Unmapped } from "./mapping.ts";
import { TRL_RESULTS, trlArgsTableMarkdown, trlBatch, trlEnvPy, trlPy, trlWarnings } from "./trl.ts";

const enc = new TextEncoder();

export interface EnvRow {
  prompt: { role: string; content: string }[];
  seed: number;
  split: "train" | "test";
  data_source: string;
}

/** The run's environment under the run's tool limits, as the lab's trainer builds it. */
export function exportEnvTask(c: RunConfig): { task: JsEnvTask; limits: JsEnvLimits; source: string } {
  const o = c.task.options as { source?: string; template?: string; max_turns?: number };
  const source = envSourceOf(o);
  const limits: JsEnvLimits = {
    timeoutS: c.limits.tool_timeout_s,
    memoryMB: c.limits.memory_mb,
    maxToolCalls: c.limits.max_tool_calls,
    ...(o.max_turns !== undefined ? { maxTurns: o.max_turns } : {}),
  };
  return { task: makeJsEnvTask(source, limits), limits, source };
}

/** Episode rows: the training seeds of every RL step (createRng(`${seed}:rl:${step}:0`)), the held-out seeds. */
export function envRows(
  c: RunConfig,
  task: JsEnvTask,
  toolList: ChatTool[] | null,
): { train: EnvRow[]; val: EnvRow[] } {
  const row = (seed: number, split: "train" | "test"): EnvRow => {
    const e = task.make();
    e.reset(seed);
    const messages = (e.messages?.() ?? []).map((m) => ({ role: m.role, content: m.content }));
    return {
      prompt: toolList ? withToolPrompt(messages, toolList) : messages,
      seed,
      split,
      data_source: `lab/env/${task.name}`,
    };
  };
  const train: EnvRow[] = [];
  for (let step = 0; step < c.stop.max_steps; step++)
    for (const s of task.sampleSeeds(createRng(`${c.seed}:rl:${step}:0`), c.rl.prompts_per_step))
      train.push(row(s, "train"));
  return { train, val: task.evalSeeds(c.task.eval_size).map((s) => row(s, "test")) };
}

const str = (name: string) => ({
  name,
  type: "BYTE_ARRAY" as const,
  converted_type: "UTF8" as const,
  repetition_type: "REQUIRED" as const,
});

/** Episode rows as parquet: prompt (a list of {role, content}), seed, split, data_source. */
export function envRowsToParquet(rows: EnvRow[]): Uint8Array {
  const schema = [
    { name: "root", num_children: 4 },
    {
      name: "prompt",
      repetition_type: "REQUIRED" as const,
      converted_type: "LIST" as const,
      num_children: 1,
    },
    { name: "list", repetition_type: "REPEATED" as const, num_children: 1 },
    { name: "element", repetition_type: "REQUIRED" as const, num_children: 2 },
    str("role"),
    str("content"),
    { name: "seed", type: "INT64" as const, repetition_type: "REQUIRED" as const },
    str("split"),
    str("data_source"),
  ];
  const buf = parquetWriteBuffer({
    columnData: [
      { name: "prompt", data: rows.map((r) => r.prompt) },
      { name: "seed", data: rows.map((r) => BigInt(r.seed)) },
      { name: "split", data: rows.map((r) => r.split) },
      { name: "data_source", data: rows.map((r) => r.data_source) },
    ],
    schema,
    createdBy: "agentic-rl-lab export (hyparquet-writer)",
  });
  return new Uint8Array(buf);
}

/** What the environment export does not carry, beyond TRL's own gaps. */
function envWarnings(c: RunConfig): Unmapped[] {
  const out: Unmapped[] = [];
  const others = c.rewards.terms.filter((t) => t.name !== "env");
  if (c.rewards.terms.some((t) => t.name === "env") && others.length > 0)
    out.push({
      part: "rewards.terms",
      why: `only the term env (the episode's return) is exported; ${others.map((t) => t.name).join(", ")} are left out`,
    });
  out.push({
    part: "sampling.max_new_tokens",
    why: `the lab counts ${c.sampling.max_new_tokens} of the model's own tokens per turn; TRL's max_completion_length counts the whole completion, tool turns and their chat-template framing included: set --max-completion-length N for the episode, or late answers are cut`,
  });
  out.push({
    part: "env turns",
    why: "TRL calls a tool method with the parsed arguments: the text the model wrote beside a call is not given to the environment (episode.turns[].text holds the call alone)",
  });
  return out;
}

export interface EnvExportOptions {
  name: string;
  gpus?: number;
  source?: string;
  toolList: ChatTool[] | null;
  version: string;
}

/** The TRL export of an environment run: its files and warnings. */
export function exportEnvRun(
  c: RunConfig,
  o: EnvExportOptions,
): { files: Record<string, Uint8Array>; warnings: Unmapped[] } {
  const { task, limits, source } = exportEnvTask(c);
  const info = task.program.info;
  if (info.multiTurn)
    throw new Error(
      `task.options: the environment "${info.name}" is multi-turn (it has a step): TRL's environment_factory gives the model tools only, so the TRL export takes environments whose turns are tool calls and a final answer`,
    );
  if (info.tools.length === 0)
    throw new Error(
      `task.options: the environment "${info.name}" has no tools: TRL's environment_factory needs at least one`,
    );
  if (c.stop.max_steps <= 0)
    throw new Error(
      `stop.max_steps: ${c.stop.max_steps} RL steps (an SFT-only run): the TRL export is an RL run; export the RL recipe that starts from its checkpoint`,
    );
  const batch = trlBatch(c, o.gpus);
  const warnings = [...trlWarnings(c), ...envWarnings(c), ...batch.warnings];
  const weight = c.rewards.terms.find((t) => t.name === "env")?.weight ?? 1;
  const spec = envExportJson(source, limits);
  const { train, val } = envRows(c, task, o.toolList);
  const files: Record<string, string | Uint8Array> = {
    "env.json": `${JSON.stringify(spec, null, 1)}\n`,
    "lab_env.py": LAB_ENV_PY,
    "train.parquet": envRowsToParquet(train),
    "val.parquet": envRowsToParquet(val),
    "train_trl.py": trlPy(c, o.name, null, {
      batch,
      passTools: !o.toolList,
      env: { code: trlEnvPy(info.tools, weight), maxTurns: spec.max_turns },
    }),
  };
  const names = [...Object.keys(files), "README.md"].sort();
  const w = warnings.map((x) => `- \`${x.part}\`: ${x.why}`).join("\n");
  files["README.md"] = [
    `# ${o.name}: the environment ${info.name} exported to TRL`,
    "",
    `Written by \`npm run export -- trl\` (${o.version}, config version ${c.version})${o.source ? ` from ${o.source}` : ""}.`,
    "",
    "## Files",
    "",
    ...names.map((f) => `- \`${f}\``),
    "",
    "## Run",
    "",
    "```sh",
    "pip install trl==1.16.0 peft datasets   # the release the export is checked against; node on PATH (or LAB_NODE)",
    `python3 train_trl.py --model PATH`,
    "```",
    "",
    `The environment is TRL's \`environment_factory\`: \`LabEnvironment\` in train_trl.py, one instance per rollout. \`reset(seed)\` starts the lab's episode of the row's seed (the row's prompt is the opening the lab's reset gives); its methods (${info.tools.map((t) => `\`${t.name}\``).join(", ")}) are the module's tools, typed from their JSON schemas; each runs one model turn of the lab's episode in a local \`node\` (lab_env.py) with the sandbox's determinism (seeded Math.random, the virtual clock, UTC), under the run's limits (${limits.maxToolCalls} tool calls, ${limits.timeoutS} s and ${limits.memoryMB} MB a call, ${spec.max_turns} turns). The completion's final answer is the last turn; the reward is the episode's return (step rewards plus check()'s score)${weight !== 1 ? ` times the term env's weight ${weight}` : ""}; \`lab_acc\` (check()'s success) and \`lab_valid_call\` are logged with weight 0: the lab's val/acc and val/valid_call_rate.`,
    "",
    `Results: \`${TRL_RESULTS.state}\` and \`${TRL_RESULTS.completions}\`, beside train_trl.py; \`npm run compare\` reads them.`,
    "",
    "Required: `--model`: the lab trains environments on its character model, which has no Hugging Face checkpoint; pass the model the cluster trains.",
    "",
    "## Not carried over (warnings)",
    "",
    w || "None.",
    "",
    "## Mapping table",
    "",
    trlArgsTableMarkdown(),
    "",
  ].join("\n");
  const out: Record<string, Uint8Array> = {};
  for (const k of Object.keys(files).sort()) {
    const v = files[k];
    out[k] = typeof v === "string" ? enc.encode(v) : v;
  }
  return { files: out, warnings };
}
