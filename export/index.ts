// export/: a lab run's way out to a distributed engine. exportRun(config) returns the files
// of an export as {path: bytes} (pure: the CLI writes them to a folder, the page can zip
// them) and the warnings: every unmapped part the run uses (export/mapping.ts). `strict`
// refuses a run with any. Targets:
//   verl  config.yaml (Hydra, composes verl's ppo_trainer), tool_config.yaml, lab_tools.py,
//         lab_node.py, reward.py, train.parquet, val.parquet, run.sh, README.md
//   trl   train_trl.py (GRPOConfig + GRPOTrainer), reward.py, lab_node.py, the parquet files,
//         README.md
// Depends on config/, the registry names (mapping.ts) and tasks/. CLI: cli/export.ts
// (`npm run export -- verl <recipe.json | bundle | --link URL> --out DIR`).
// Tested by export/export.test.ts (`npx vitest run --project unit export/`).
export { trlConfig } from "./trl.ts";

import type { RunConfig } from "../config/schema.ts";
import type { ChatTemplateFacts } from "../model/face.ts";
import { isBuiltinTool, type Task } from "../tasks/types.ts";
import { clusterModel, verlRequired } from "./cluster.ts";
import { datasetRows, exportTask, rowsToParquet } from "./data.ts";
import { exportEnvRun, exportEnvVerlRun } from "./env-export.ts";
import {
  mappingTableMarkdown,
  pretrainedSource,
  REGISTRY_DECISIONS,
  type Unmapped,
  unmappedInUse,
} from "./mapping.ts";
import { TRL_RESULTS, trlArgsTableMarkdown, trlBatch, trlPy, trlWarnings } from "./trl.ts";
import TRL_KEYS from "./trl-keys.json";
import LAB_NODE_PY from "./verl/lab_node.py?raw";
import LAB_TOOLS_PY from "./verl/lab_tools.py?raw";
import REWARD_PY from "./verl/reward.py?raw";
import { runSh, TOOL_CONFIGS, toolConfigYaml, VERL_RESULTS, verlBatch, verlConfigYaml } from "./verl.ts";
import VERL_KEYS from "./verl-keys.json";

export const LAB_VERSION = "agentic-rl-lab 0.1.0";
/** The verl release the export's facts come from (export/engines/facts.sh). */
export const VERL_RELEASE = VERL_KEYS.verl_release;
export type Target = "verl" | "trl";
const ENGINE: Record<Target, string> = { verl: "verl's PPO trainer", trl: "TRL's GRPOTrainer" };

export interface ExportOptions {
  target: Target;
  /** The run's name (experiment name, README title). */
  name: string;
  /** Refuse the run when any part it uses does not map (or the GPU count forces an adjustment). */
  strict?: boolean;
  /** Where the run came from (a recipe path, "link", a bundle), for the README. */
  source?: string;
  /** GPUs the job runs on (verl: default 8, its trainer.n_gpus_per_node x nnodes; TRL: processes, default 1). */
  gpus?: number;
  /**
   * The model's chat template as the run recorded it when it loaded the model (a run event's
   * `chat`, chatFactsOf); absent when the run never loaded it (a recipe).
   */
  chat?: ChatTemplateFacts | null;
}

export interface ExportResult {
  files: Record<string, Uint8Array>;
  warnings: Unmapped[];
  /** The reward terms reward.py implements, and those left out (listed in warnings). */
  rewardTerms: string[];
}

export class StrictExportError extends Error {
  constructor(
    readonly warnings: Unmapped[],
    target: Target = "verl",
  ) {
    super(
      `export --strict: the run uses ${warnings.length} part(s) that ${ENGINE[target]} does not have (or that its GPU count changes):\n${warnings
        .map((w) => `  - ${w.part}: ${w.why}`)
        .join("\n")}`,
    );
  }
}

/** The chat-template facts a run recorded (its last run event with `chat`), or null. */
export function chatFactsOf(events: readonly { chat?: ChatTemplateFacts }[]): ChatTemplateFacts | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const chat = events[i].chat;
    if (chat) return chat;
  }
  return null;
}

const enc = new TextEncoder();

/** The reward spec reward.py embeds: the exportable terms (weights, options) and the verifier. */
export function rewardSpec(c: RunConfig, verifier: string) {
  const terms = c.rewards.terms
    .filter((t) => REGISTRY_DECISIONS.reward[t.name]?.status !== "unmapped")
    .map((t) => ({ name: t.name, weight: t.weight, options: t.options }));
  return { terms, verifier };
}

const ENGINE_LINE = "# @LAB_ENGINE@ (filled in by the exporter: ";
/** A shared Python file's header line naming the engine of this export (each file says whose it is). */
function forEngine(py: string, file: string, lines: Record<Target, string[]>, target: Target): string {
  const i = py.indexOf(ENGINE_LINE);
  if (i < 0) throw new Error(`export/verl/${file}: the @LAB_ENGINE@ line is missing`);
  const end = py.indexOf("\n", i);
  return py.slice(0, i) + lines[target].map((l) => `# ${l}`).join("\n") + py.slice(end);
}

export function rewardPy(spec: ReturnType<typeof rewardSpec>, target: Target = "verl"): string {
  const marker = "LAB_REWARD = None  # @LAB_REWARD@ (filled in by the exporter: terms, verifier)";
  if (!REWARD_PY.includes(marker)) throw new Error("export/verl/reward.py: the @LAB_REWARD@ line is missing");
  const py = forEngine(
    REWARD_PY,
    "reward.py",
    {
      verl: [
        "For verl: its reward manager calls compute_score once per response",
        "(reward.custom_reward_function.{path, name} in config.yaml); the exported tools (lab_tools.py)",
        'report each call\'s status as their tool reward, which verl passes as extra_info["tool_rewards"].',
      ],
      trl: [
        "For TRL: train_trl.py's reward functions call compute_score once per completion, with each",
        'call\'s status (the tool messages of the completion) as extra_info["tool_rewards"].',
      ],
    },
    target,
  );
  return py.replace(marker, `LAB_REWARD = json.loads(${JSON.stringify(JSON.stringify(spec))})`);
}

/** lab_node.py with its header naming the engine whose tools use it. */
export function labNodePy(target: Target): string {
  return forEngine(
    LAB_NODE_PY,
    "lab_node.py",
    {
      verl: ["For verl: lab_tools.py's tools run their programs here (the runner named in the tool config)."],
      trl: ["For TRL: train_trl.py's tool functions run their programs here (train_trl.py --tools)."],
    },
    target,
  );
}

/**
 * Whether the export writes the lab's tool list into the prompts' system message: the run uses
 * its model's own template (task.template "model", task.tool_prompt "hermes") and recorded that
 * the template ignores `tools`, as the lab then does (model/chat.ts JinjaChat).
 */
export function needsToolList(c: RunConfig, chat: ChatTemplateFacts | null | undefined): boolean {
  return c.task.template === "model" && c.task.tool_prompt === "hermes" && chat?.renders_tools === false;
}

/** Warnings beyond the mapping table that depend on the task, the template and the exact numbers. */
function taskWarnings(c: RunConfig, task: Task, o: ExportOptions): Unmapped[] {
  const out: Unmapped[] = [];
  const verl = o.target === "verl";
  if (c.task.template === "inline")
    out.push({
      part: "task.template",
      why: verl
        ? "the inline template with non-JSON calls: verl's Hermes agent loop parses only JSON calls in separate turns; the export uses Hermes turns"
        : "the inline template with non-JSON calls: TRL parses only the JSON calls its chat template's response schema knows; the export uses Hermes turns",
    });
  if (task.tools.some(isBuiltinTool))
    out.push({
      part: "task.tools (code tool)",
      why: 'the code tool is offered as a JSON function {"code": ...}; a model trained in the lab on bare-code calls (<tool_call>1+2</tool_call>) does not write them',
    });
  if (verl && c.rl.prompts_per_step % c.rl.minibatches !== 0)
    out.push({
      part: "rl.minibatches",
      why: `verl splits a step by prompts: ${c.rl.prompts_per_step} prompts do not divide into ${c.rl.minibatches} minibatches (ppo_mini_batch_size ${Math.max(1, Math.floor(c.rl.prompts_per_step / c.rl.minibatches))})`,
    });
  // The lab's own character model counts characters; the cluster's model counts its tokens.
  if (pretrainedSource(c) === null && c.model.tokenizer === null)
    out.push({
      part: "sampling.max_new_tokens",
      why: `${c.sampling.max_new_tokens} is characters of the lab's character model; ${verl ? "verl's data.max_response_length" : "TRL's max_completion_length"} counts tokens of the model you pass, and in Hermes form the call alone is about 22 tokens of Qwen2.5 (call, tool response and answer over 50): set ${verl ? "data.max_response_length=N (run.sh)" : "--max-completion-length N"} for that tokenizer, or answers are cut`,
    });
  // TRL's budget holds the whole completion; the lab's, the model's own tokens (EXPERIMENTS.md:
  // lab-llama-calculator at TRL's 48 cut most late answers, at 128 it matched the lab).
  else if (!verl && task.tools.length > 0)
    out.push({
      part: "sampling.max_new_tokens",
      why: `the lab counts ${c.sampling.max_new_tokens} of the model's own tokens over the episode; TRL's max_completion_length counts the whole completion, tool calls, tool results and the chat template's framing of each tool turn included: pass a larger --max-completion-length (lab-llama-calculator: 48 cut most answers after a call, 128 matched the lab)`,
    });
  if (c.task.template === "model" && c.task.tool_prompt === "hermes" && task.tools.length > 0) {
    if (!o.chat)
      out.push({
        part: "task.template (model)",
        why: "the run did not record whether its model's chat template renders tools (it never loaded the model): the export assumes it does; for a template that ignores them (SmolLM2's) export the run after it started, or its bundle",
      });
    else if (!o.chat.renders_tools && !verl)
      out.push({
        part: "task.tools (template)",
        why: 'the model\'s chat template ignores tools, and TRL parses tool calls only for chat templates it knows ("Unrecognized chat template"): train_trl.py passes no tools=, so the tool list is in the system message as in the lab but TRL does not run the calls',
      });
  }
  return out;
}

function readme(
  c: RunConfig,
  o: ExportOptions,
  warnings: Unmapped[],
  terms: string[],
  files: string[],
  gpus: number,
): string {
  const verl = o.target === "verl";
  const w = warnings.length
    ? warnings.map((x) => `- \`${x.part}\`: ${x.why}`).join("\n")
    : "None: every part this run uses has a counterpart.";
  const model = clusterModel(c);
  const modelArg = model.path === null ? " --model PATH" : "";
  const required = verl ? verlRequired(c) : [];
  const needs = (verl ? required.map((r) => ({ flag: r.flag, why: r.why })) : []).concat(
    !verl && model.path === null ? [{ flag: "--model", why: model.why }] : [],
  );
  const run = verl
    ? [
        "```sh",
        "pip install verl==0.9.1 vllm   # the release the export is checked against; verl's install guide has vLLM's version",
        "# a Sandbox Fusion server (bytedance/SandboxFusion; its README has the docker image) runs the tools",
        "export SANDBOX_FUSION_URL=http://localhost:8080/run_code",
        `bash run.sh${required.map((r) => ` ${r.flag} ${r.flag === "--model" ? "PATH" : "NAME"}`).join("")}`,
        "```",
        "",
        "`--tools node` runs the JavaScript tools in a local `node` instead of Sandbox Fusion (`tool_config_node.yaml`).",
        `The batch sizes are for ${gpus} GPU(s) (trainer.n_gpus_per_node x trainer.nnodes); for another count, export again with \`--gpus N\`.`,
        "",
        `Results: \`${VERL_RESULTS.metrics}\` (verl's file logger: one JSON line per step), \`${VERL_RESULTS.rollouts}/<step>.jsonl\` and \`${VERL_RESULTS.validation}/<step>.jsonl\` (the generations), beside run.sh.`,
      ]
    : [
        "```sh",
        "pip install trl==1.16.0 peft datasets   # the release the export is checked against",
        "export SANDBOX_FUSION_URL=http://localhost:8080/run_code",
        gpus > 1
          ? `accelerate launch --num_processes ${gpus} train_trl.py${modelArg}`
          : `python3 train_trl.py${modelArg}`,
        "```",
        "",
        "`--tools node` runs the JavaScript tools in a local `node` instead of Sandbox Fusion.",
        `The batch sizes are for ${gpus} process(es); for another count, export again with \`--gpus N\`.`,
        "",
        `Results: \`${TRL_RESULTS.state}\` (the log history: one entry per optimizer step; the lab's import puts them back on lab steps) and \`${TRL_RESULTS.completions}\` (each logged step's completions), beside train_trl.py.`,
      ];
  if (needs.length > 0)
    run.push(
      "",
      "Required (the script stops without them; no engine default stands in):",
      "",
      ...needs.map((n) => `- \`${n.flag}\`: ${n.why}`),
    );
  if (c.model.dtype === "f16" && c.model.lora.rank > 0)
    run.push(
      "",
      "The lab trained this LoRA run against its base with the linear weights rounded to f16 (f32 math). The engine loads the base in its own dtype; a merged export of the lab run holds the f16-rounded base plus the adapter, while the PEFT adapter over the f32 source is a slightly different model (a few thousandths of a nat per token at the lab's sizes).",
    );
  return [
    `# ${o.name}: exported to ${verl ? "verl" : "TRL"}`,
    "",
    `Written by \`npm run export -- ${o.target}\` (${LAB_VERSION}, config version ${c.version})${o.source ? ` from ${o.source}` : ""}.`,
    verl
      ? `Keys checked against verl ${VERL_RELEASE}'s own \`ppo_trainer\` config.`
      : `GRPOConfig arguments checked against TRL ${TRL_KEYS.grpo_config.trl_release} and transformers ${TRL_KEYS.training_arguments.transformers_version}.`,
    "",
    "## Files",
    "",
    ...files.map((f) => `- \`${f}\``),
    "",
    "## Run",
    "",
    ...run,
    "",
    "## Not carried over (warnings)",
    "",
    w,
    "",
    "## Reward",
    "",
    `reward.py implements ${terms.length ? terms.map((t) => `\`${t}\``).join(", ") : "no term"} with the run's weights and options, and the task's verifier (${exportTask(c).verifier}) on the strict final answer. It reads each tool call's status from \`extra_info["tool_rewards"]\`, which the exported tools report. The lab's test suite checks that it scores the lab's samples (export/samples.jsonl: correct, wrong, malformed and tool-heavy answers) exactly as the lab does.`,
    "",
    "## Mapping table",
    "",
    ...(verl
      ? [
          "Every lab field and registry entry: mapped, mapped approximately (how), or not in verl's PPO trainer.",
          "",
          mappingTableMarkdown(),
        ]
      : [
          "Every GRPOConfig argument the TRL export writes and the lab field it comes from.",
          "",
          trlArgsTableMarkdown(),
        ]),
    "",
  ]
    .filter((l, i, a) => !(l === "" && a[i - 1] === ""))
    .join("\n");
}

/** An export of a run: its files and warnings. Throws StrictExportError under `strict`. */
export function exportRun(c: RunConfig, o: ExportOptions): ExportResult {
  if (c.task.name === "env") {
    const r = (o.target === "verl" ? exportEnvVerlRun : exportEnvRun)(c, {
      name: o.name,
      gpus: o.gpus,
      source: o.source,
      toolList: null,
      version: LAB_VERSION,
    });
    if (o.strict && r.warnings.length > 0) throw new StrictExportError(r.warnings, o.target);
    return { ...r, rewardTerms: ["env"] };
  }
  const { task, verifier } = exportTask(c);
  const verl = o.target === "verl";
  const vb = verl ? verlBatch(c, o.gpus) : null;
  const tb = verl ? null : trlBatch(c, o.gpus);
  const warnings = [
    ...(verl ? unmappedInUse(c) : trlWarnings(c)),
    ...taskWarnings(c, task, o),
    ...(vb?.warnings ?? tb?.warnings ?? []),
  ];
  if (o.strict && warnings.length > 0) throw new StrictExportError(warnings, o.target);
  const spec = rewardSpec(c, verifier);
  const toolList = needsToolList(c, o.chat);
  const { train, val } = datasetRows(c, { toolList });
  const tools = task.tools.map((t) => t.name);
  const files: Record<string, string | Uint8Array> = {
    "reward.py": rewardPy(spec, o.target),
    "lab_node.py": labNodePy(o.target),
    "train.parquet": rowsToParquet(train, tools),
    "val.parquet": rowsToParquet(val, tools),
  };
  if (vb) {
    const header = [
      `config.yaml: a lab run exported to verl (${LAB_VERSION}, RunConfig version ${c.version}).`,
      `Composes verl's own ppo_trainer config; keys checked against verl ${VERL_RELEASE}.`,
      `Batch sizes for ${vb.gpus} GPU(s) (npm run export -- verl --gpus N). Run with run.sh.`,
      "Each key's comment names the lab field it comes from; README.md lists what does not map.",
    ];
    files["config.yaml"] = verlConfigYaml(c, o.name, header, vb).text;
    files[TOOL_CONFIGS.sandbox_fusion] = toolConfigYaml(task, c, "sandbox_fusion");
    files[TOOL_CONFIGS.node] = toolConfigYaml(task, c, "node");
    files["lab_tools.py"] = LAB_TOOLS_PY;
    files["run.sh"] = runSh(verlRequired(c));
  } else if (tb) {
    files["train_trl.py"] = trlPy(c, o.name, task, { batch: tb, passTools: !toolList });
  }
  const names = [...Object.keys(files), "README.md"].sort();
  files["README.md"] = readme(
    c,
    o,
    warnings,
    spec.terms.map((t) => t.name),
    names,
    vb?.gpus ?? tb?.gpus ?? 1,
  );
  const out: Record<string, Uint8Array> = {};
  for (const k of Object.keys(files).sort()) {
    const v = files[k];
    out[k] = typeof v === "string" ? enc.encode(v) : v;
  }
  return { files: out, warnings, rewardTerms: spec.terms.map((t) => t.name) };
}
