// The TRL and verl exports of a run on a lab JavaScript environment (task "env",
// docs/ENVIRONMENTS.md). TRL:
// train_trl.py with the environment as TRL's environment_factory (lab_env.py LabTrlEnvironment,
// its tools typed methods), env.json (export/env.ts: the module and the limits), lab_env.py,
// train.parquet / val.parquet (each row an episode: its seed and the opening messages the lab's
// reset gives; the training seeds in the order the lab's trainer draws them) and README.md.
// verl (exportEnvVerlRun): config.yaml over verl's ppo_trainer with the agent loop lab_env_agent
// (lab_verl_env.py, registered by agent_loop.yaml) playing each row's episode, multi-turn
// environments included; the rows carry agent_name and extra_info.seed; run.sh.
// The episode's reward is the lab's: the environment's return, weighted as the term `env`. The
// environment engine must be loaded (prepareEnvEngine).
// Tested by export/engines/env-trl.engines.test.ts (TRL and transformers themselves) and
// export/engines/env-verl.engines.test.ts (verl's own agent-loop base, config and dataset).
import { parquetWriteBuffer } from "hyparquet-writer";
import type { RunConfig } from "../config/schema.ts";
import { type ChatTool, withToolPrompt } from "../model/face.ts";
import { type JsEnvLimits, type JsEnvTask, makeJsEnvTask } from "../tasks/env-api/js-env.ts";
import { envSourceOf } from "../tasks/index.ts";
import { createRng } from "../tasks/rng.ts";
import { verlRequired } from "./cluster.ts";
import LAB_ENV_PY from "./env/lab_env.py?raw";
import LAB_VERL_ENV_PY from "./env/lab_verl_env.py?raw";
import { envExportJson } from "./env.ts";
import { type Unmapped, unmappedInUse } from "./mapping.ts";
import { TRL_RESULTS, trlArgsTableMarkdown, trlBatch, trlEnvPy, trlPy, trlWarnings } from "./trl.ts";
import { runSh, VERL_RESULTS, verlBatch, verlConfigYaml, verlEnvConfigTree } from "./verl.ts";
import VERL_KEYS from "./verl-keys.json";

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

/** verl's rows of an episode: the TRL row's prompt and seed, with what verl's dataset and agent loop read. */
export function envVerlRowsToParquet(rows: EnvRow[]): Uint8Array {
  const group = (name: string, n: number) => ({
    name,
    repetition_type: "REQUIRED" as const,
    num_children: n,
  });
  const schema = [
    { name: "root", num_children: 6 },
    str("data_source"),
    {
      name: "prompt",
      repetition_type: "REQUIRED" as const,
      converted_type: "LIST" as const,
      num_children: 1,
    },
    { name: "list", repetition_type: "REPEATED" as const, num_children: 1 },
    group("element", 2),
    str("role"),
    str("content"),
    str("ability"),
    group("reward_model", 2),
    str("ground_truth"),
    str("style"),
    group("extra_info", 3),
    { name: "index", type: "INT64" as const, repetition_type: "REQUIRED" as const },
    str("split"),
    { name: "seed", type: "INT64" as const, repetition_type: "REQUIRED" as const },
    str("agent_name"),
  ];
  const buf = parquetWriteBuffer({
    columnData: [
      { name: "data_source", data: rows.map((r) => r.data_source) },
      { name: "prompt", data: rows.map((r) => r.prompt) },
      { name: "ability", data: rows.map(() => "env") },
      { name: "reward_model", data: rows.map(() => ({ ground_truth: "", style: "env" })) },
      {
        name: "extra_info",
        data: rows.map((r, i) => ({ index: BigInt(i), split: r.split, seed: BigInt(r.seed) })),
      },
      { name: "agent_name", data: rows.map(() => "lab_env_agent") },
    ],
    schema,
    createdBy: "agentic-rl-lab export (hyparquet-writer)",
  });
  return new Uint8Array(buf);
}

/** The verl export of an environment run: its files and warnings. */
export function exportEnvVerlRun(
  c: RunConfig,
  o: EnvExportOptions,
): { files: Record<string, Uint8Array>; warnings: Unmapped[] } {
  const { task, limits, source } = exportEnvTask(c);
  const info = task.program.info;
  if (c.stop.max_steps <= 0)
    throw new Error(
      `stop.max_steps: ${c.stop.max_steps} RL steps (an SFT-only run): the verl export is an RL run; export the RL recipe that starts from its checkpoint`,
    );
  const VERL_RELEASE = VERL_KEYS.verl_release;
  const vb = verlBatch(c, o.gpus);
  const others = c.rewards.terms.filter((t) => t.name !== "env");
  const warnings: Unmapped[] = [
    ...unmappedInUse(c),
    ...vb.warnings,
    ...(others.length > 0 && c.rewards.terms.some((t) => t.name === "env")
      ? [
          {
            part: "rewards.terms",
            why: `only the term env (the episode's return) is exported; ${others.map((t) => t.name).join(", ")} are left out`,
          },
        ]
      : []),
    {
      part: "sampling.max_new_tokens",
      why: `the lab counts ${c.sampling.max_new_tokens} of the model's own tokens per turn; verl's data.max_response_length counts the whole episode's response, observations and their chat-template framing included: raise it (data.max_response_length=N) for the episode, or late turns are cut (check() then scores the episode where it stands)`,
    },
  ];
  const weight = c.rewards.terms.find((t) => t.name === "env")?.weight ?? 1;
  const spec = { ...envExportJson(source, limits), reward_weight: weight };
  const { train, val } = envRows(c, task, o.toolList);
  const header = [
    `config.yaml: a lab run on the JavaScript environment ${info.name} exported to verl (${o.version}, RunConfig version ${c.version}).`,
    `Composes verl's own ppo_trainer config; keys checked against verl ${VERL_RELEASE}.`,
    `Batch sizes for ${vb.gpus} GPU(s) (npm run export -- verl --gpus N). Run with run.sh.`,
    "The agent loop lab_env_agent (lab_verl_env.py) plays each row's episode; README.md says how.",
  ];
  const files: Record<string, string | Uint8Array> = {
    "config.yaml": verlConfigYaml(
      c,
      o.name,
      header,
      vb,
      verlEnvConfigTree(c, o.name, vb, { name: info.name }),
    ).text,
    "agent_loop.yaml": [
      "# agent_loop.yaml: verl's agent-loop registry entry for the lab's episode loop",
      "# (actor_rollout_ref.rollout.agent.agent_loop_config_path; every row names agent_name lab_env_agent).",
      "- name: lab_env_agent",
      "  _target_: lab_verl_env.LabEnvAgentLoop",
      "",
    ].join("\n"),
    "env.json": `${JSON.stringify(spec, null, 1)}\n`,
    "lab_env.py": LAB_ENV_PY,
    "lab_verl_env.py": LAB_VERL_ENV_PY,
    "train.parquet": envVerlRowsToParquet(train),
    "val.parquet": envVerlRowsToParquet(val),
    "run.sh": runSh(verlRequired(c), { env: true }),
  };
  const names = [...Object.keys(files), "README.md"].sort();
  const w = warnings.map((x) => `- \`${x.part}\`: ${x.why}`).join("\n");
  files["README.md"] = [
    `# ${o.name}: the environment ${info.name} exported to verl`,
    "",
    `Written by \`npm run export -- verl\` (${o.version}, config version ${c.version})${o.source ? ` from ${o.source}` : ""}.`,
    "",
    "## Files",
    "",
    ...names.map((f) => `- \`${f}\``),
    "",
    "## Run",
    "",
    "```sh",
    `pip install verl==${VERL_RELEASE}   # the release the export is checked against; node on PATH (or LAB_NODE)`,
    "bash run.sh --model PATH",
    "```",
    "",
    `Each row of train.parquet / val.parquet is one episode: its seed (\`extra_info.seed\`; the training seeds in the order the lab's trainer draws them, the held-out seeds by the lab's split) and the opening messages the lab's reset gives. verl's rollout runs the agent loop \`lab_env_agent\` (\`LabEnvAgentLoop\` in lab_verl_env.py, registered by agent_loop.yaml) for every row: it resets the environment with the seed and gives each model turn whole to the lab's step in a local \`node\` (lab_env.py) with the sandbox's determinism (seeded Math.random, the virtual clock, UTC), under the run's limits (${limits.maxToolCalls} tool calls, ${limits.timeoutS} s and ${limits.memoryMB} MB a call, ${spec.max_turns} turns). ${info.multiTurn ? "The environment is multi-turn: its step() answers each turn." : `A Hermes tool call runs one of the module's tools (${info.tools.map((t) => `\`${t.name}\``).join(", ")}); a turn without one is the final answer.`} Observations come back as user turns, masked from the loss. The trajectory's reward is the episode's return (step rewards plus check()'s score)${weight !== 1 ? ` times the term env's weight ${weight}` : ""}, set by the loop, so no reward function runs; check()'s success is logged as \`acc\` (verl's val-core/<data_source>/acc/mean@1: the lab's val/acc).`,
    "",
    `Results: \`${VERL_RESULTS.metrics}\`, \`${VERL_RESULTS.rollouts}/\` and \`${VERL_RESULTS.validation}/\`, beside run.sh; \`npm run compare\` reads them.`,
    "",
    "Required: `--model`: the lab trains environments on its character model, which has no Hugging Face checkpoint; pass the model the cluster trains.",
    "",
    "## Not carried over (warnings)",
    "",
    w || "None.",
    "",
  ].join("\n");
  const out: Record<string, Uint8Array> = {};
  for (const k of Object.keys(files).sort()) {
    const v = files[k];
    out[k] = typeof v === "string" ? enc.encode(v) : v;
  }
  return { files: out, warnings };
}
