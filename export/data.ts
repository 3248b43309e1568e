// The run's prompts as verl dataset rows and parquet files: train.parquet holds exactly the
// prompts the lab's trainer draws in rl/rollout/collect-groups.ts (round 0 of every RL step: createRng(`${seed}:rl:${step}:0`),
// prompts_per_step each, in order), val.parquet the task's held-out set (task.eval_size).
// Row format (verl's RLHFDataset + tool agent loop): data_source, prompt (chat messages),
// ability, reward_model {ground_truth, style}, extra_info {index, split, problem_id, bucket,
// gt_calls, tools_kwargs}, and agent_name "tool_agent" as its own column. Written with
// hyparquet-writer; export/export.test.ts reads them back with hyparquet.
import { parquetWriteBuffer } from "hyparquet-writer";
import { own } from "../config/own.ts";
import type { RunConfig } from "../config/schema.ts";
import { type ChatTool, chatToolsOf, withToolPrompt } from "../model/face.ts";
import { makeArithmeticTask } from "../tasks/arithmetic.ts";
import { makeFunctionCallingTask } from "../tasks/function-calling.ts";
import { createRng } from "../tasks/rng.ts";
import { isBuiltinTool, type Problem, type Task } from "../tasks/types.ts";
import { makeWordProblemsTask } from "../tasks/word-problems.ts";

type Options = Record<string, unknown>;

/** The single-turn tasks the exporter knows, with the verifier reward.py ports for each. */
export const EXPORT_TASKS: Record<string, { make: (o: Options) => Task; verifier: string; ability: string }> =
  {
    arithmetic: {
      make: (o) => makeArithmeticTask(o as Parameters<typeof makeArithmeticTask>[0]),
      verifier: "integer",
      ability: "math",
    },
    "word-problems": {
      make: (o) => makeWordProblemsTask(o as Parameters<typeof makeWordProblemsTask>[0]),
      verifier: "numeric",
      ability: "math",
    },
    "function-calling": {
      make: (o) => makeFunctionCallingTask(o as Parameters<typeof makeFunctionCallingTask>[0]),
      verifier: "numeric",
      ability: "function-calling",
    },
  };

const ENV_TASKS = new Set(["frozenlake", "sokoban"]);

/** The run's task as the exporter sees it; a clear error for what it cannot export. */
export function exportTask(c: RunConfig): { task: Task; verifier: string; ability: string } {
  const name = c.task.name;
  if (ENV_TASKS.has(name))
    throw new Error(
      `task.name: "${name}" is a multi-turn environment; verl runs environments through an Interaction (verl-agent, RAGEN), which this exporter does not write`,
    );
  const e = own(EXPORT_TASKS, name);
  if (!e)
    throw new Error(
      `task.name: unknown task "${name}" (exportable: ${Object.keys(EXPORT_TASKS).join(", ")})`,
    );
  if (c.stop.max_steps <= 0)
    throw new Error(
      `stop.max_steps: ${c.stop.max_steps} RL steps (an SFT-only run): the verl and TRL exports are RL runs; export the RL recipe that starts from its checkpoint`,
    );
  const { sft: _sft, ...options } = c.task.options as Options;
  const task = e.make(options);
  // The one-operation calculator's operator limit (task.options.oneOp) is enforced by rl/rollout/tool-protocol.ts only.
  for (const t of task.tools)
    if (isBuiltinTool(t) && t.maxOperators !== undefined)
      throw new Error(
        `task.options.oneOp: tool "${t.name}" limits operators per call, which the exported verl and TRL tools cannot enforce`,
      );
  return { task, verifier: e.verifier, ability: e.ability };
}

export interface VerlRow {
  data_source: string;
  prompt: { role: string; content: string }[];
  ability: string;
  reward_model: { ground_truth: string; style: string };
  extra_info: {
    index: number;
    split: "train" | "test";
    problem_id: string;
    bucket: string;
    gt_calls: string; // JSON of the ground-truth calls ("" when the task has none)
    tools_kwargs: Record<string, { create_kwargs: { ground_truth: string } }>;
  };
  agent_name: string;
}

/** The prompts of the lab's RL steps, in the order the lab's trainer draws them. */
export function trainProblems(c: RunConfig, task: Task): Problem[] {
  const out: Problem[] = [];
  for (let step = 0; step < c.stop.max_steps; step++)
    out.push(...task.sample(createRng(`${c.seed}:rl:${step}:0`), c.rl.prompts_per_step));
  return out;
}

export function toRow(
  p: Problem,
  i: number,
  split: "train" | "test",
  c: RunConfig,
  ability: string,
  tools: string[],
  toolList: ChatTool[] | null = null,
): VerlRow {
  const gt = p.meta.gtCalls as unknown[] | undefined;
  const messages = p.messages.map((m) => ({ role: m.role, content: m.content }));
  return {
    data_source: `lab/${c.task.name}/${p.bucket}`,
    prompt: toolList ? withToolPrompt(messages, toolList) : messages,
    ability,
    reward_model: { ground_truth: p.answer, style: "rule" },
    extra_info: {
      index: i,
      split,
      problem_id: p.id,
      bucket: p.bucket,
      gt_calls: gt ? JSON.stringify(gt) : "",
      tools_kwargs: Object.fromEntries(tools.map((t) => [t, { create_kwargs: { ground_truth: p.answer } }])),
    },
    agent_name: "tool_agent",
  };
}

/**
 * The rows of train.parquet and val.parquet. `toolList`: the run's template ignores `tools`, so
 * the lab's tool list goes into each prompt's system message (model/tool-list-prompt.ts), as the
 * lab's JinjaChat puts it there.
 */
export function datasetRows(
  c: RunConfig,
  o: { toolList?: boolean } = {},
): { train: VerlRow[]; val: VerlRow[] } {
  const { task, ability } = exportTask(c);
  const tools = task.tools.map((t) => t.name);
  const list = o.toolList ? chatToolsOf(task.tools) : null;
  return {
    train: trainProblems(c, task).map((p, i) => toRow(p, i, "train", c, ability, tools, list)),
    val: task.evalSet(c.task.eval_size).map((p, i) => toRow(p, i, "test", c, ability, tools, list)),
  };
}

const str = (name: string) => ({
  name,
  type: "BYTE_ARRAY" as const,
  converted_type: "UTF8" as const,
  repetition_type: "REQUIRED" as const,
});
const group = (name: string, n: number) => ({ name, repetition_type: "REQUIRED" as const, num_children: n });

/** verl rows as a parquet file (nested columns: prompt is a list of structs). */
export function rowsToParquet(rows: VerlRow[], tools: string[]): Uint8Array {
  if (tools.length === 0) throw new Error("export: a task without tools has no tools_kwargs to write");
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
    group("extra_info", 6),
    { name: "index", type: "INT64" as const, repetition_type: "REQUIRED" as const },
    str("split"),
    str("problem_id"),
    str("bucket"),
    str("gt_calls"),
    group("tools_kwargs", tools.length),
    ...tools.flatMap((t) => [group(t, 1), group("create_kwargs", 1), str("ground_truth")]),
    str("agent_name"),
  ];
  const col = <K extends keyof VerlRow>(name: K, f: (r: VerlRow) => unknown = (r) => r[name]) => ({
    name,
    data: rows.map(f),
  });
  const buf = parquetWriteBuffer({
    columnData: [
      col("data_source"),
      col("prompt"),
      col("ability"),
      col("reward_model"),
      col("extra_info", (r) => ({ ...r.extra_info, index: BigInt(r.extra_info.index) })),
      col("agent_name"),
    ],
    schema,
    createdBy: "agentic-rl-lab export (hyparquet-writer)",
  });
  return new Uint8Array(buf);
}
