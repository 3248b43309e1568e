// The verl export of a lab JavaScript environment (export/env-export.ts exportEnvVerlRun),
// checked with verl 0.9.1 itself (the engines layer's venv; export/engines/verl_env_check.py):
//  - config.yaml composes over verl's ppo_trainer with run.sh's overrides, passes verl's
//    validate_config, names the agent loop lab_env_agent, and verl's get_custom_reward_fn
//    loads the module's reward function;
//  - verl's RLHFDataset reads train.parquet / val.parquet (the lab's training seeds in the
//    trainer's order, its held-out seeds) with the lab-made Llama's tokenizer;
//  - the agent loop, made as verl's AgentLoopWorker makes it, plays each episode's row against
//    a server replaying the lab's turns (scripted and off-script) and gives the lab's
//    observations (as masked user turns), return, success and valid-call flag, on a tools-only
//    template, the multi-turn guessing game (a step() that draws Math.random in reset) and an
//    environment that draws Math.random in reset and in its tool; an episode the response
//    budget cuts is scored by check() where it stands.
// Run: npx vitest run --project engines export/engines/env-verl.engines.test.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parquetReadObjects } from "hyparquet";
import { beforeAll, describe, expect, it } from "vitest";
import { prepareEnvEngine } from "../../tasks/env-api/engine.ts";
import { makeJsEnvTask, playEpisode } from "../../tasks/env-api/js-env.ts";
import { ENV_TEMPLATES } from "../../tasks/env-api/templates.ts";
import { envRecipe, exportSpawn, OFF, SHELF } from "./env-fixtures.ts";
import { enginesPython } from "./venv.ts";

await prepareEnvEngine();

const MODEL = resolve("public/models/lab-llama");

interface LabEpisode {
  split: "train" | "test";
  index: number;
  seed: number;
  texts: string[];
  observations: string[];
  ret: number;
  success: boolean;
  validCall: boolean;
}

interface VerlEpisode {
  seed: number;
  agent_name: string;
  generate_calls: number;
  reward_score: number;
  info: { acc: number; env_return: number; valid_call: number; cut: boolean; error: string };
  fallback: { score: number; acc: number };
  segments: { mask: number; text: string }[];
  response_tokens: number;
}

async function seedsOf(file: string): Promise<number[]> {
  const buf = readFileSync(file);
  const rows = (await parquetReadObjects({
    file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength),
  })) as { extra_info: { seed: bigint | number }; agent_name: string }[];
  for (const r of rows) expect(r.agent_name).toBe("lab_env_agent");
  return rows.map((r) => Number(r.extra_info.seed));
}

/** The lab's episodes on the first two training rows and the first held-out row: the scripted policy's and off-script turns. */
function labEpisodes(
  source: string,
  seeds: { train: number[]; test: number[] },
  extra: string[][],
): LabEpisode[] {
  const task = makeJsEnvTask(source);
  const tools = task.program.info.tools.map((t) => t.name);
  const scripts = [
    ...OFF.filter((o) => o.length === 1 || o.some((t) => tools.some((n) => t.includes(`"${n}"`)))),
    ...extra,
  ];
  const out: LabEpisode[] = [];
  const at: [LabEpisode["split"], number][] = [
    ["train", 0],
    ["train", 1],
    ["test", 0],
  ];
  for (const [split, index] of at)
    for (const script of [null, ...scripts]) {
      const texts: string[] = [];
      const ep = playEpisode(task.make(), seeds[split][index], (env, turn) => {
        const t = script ? script[Math.min(turn, script.length - 1)] : env.policyTurn();
        texts.push(t);
        return t;
      });
      out.push({
        split,
        index,
        seed: seeds[split][index],
        texts,
        observations: ep.steps.slice(0, -1).map((s) => s.observation),
        ret: ep.envReturn,
        success: ep.success,
        validCall: ep.steps.some(
          (s) => s.info.kind === "tool" && !s.observation.startsWith("<tool_response>Error: "),
        ),
      });
    }
  return out;
}

type Checked = {
  validated: boolean | string;
  reward_fn: string;
  default_agent_loop: string;
  rows: { train: number; test: number };
  episodes: VerlEpisode[];
};

/** verl_env_check.py on every job in one process (verl is imported once). */
function checkAll(jobs: { dir: string; episodes: LabEpisode[]; hydra: string[] }[]): Checked[] {
  const file = join(root, "jobs.json");
  writeFileSync(file, JSON.stringify(jobs.map((j) => ({ ...j, model: MODEL }))));
  const r = spawnSync(python, ["export/engines/verl_env_check.py", file], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
    env: { ...process.env, LAB_NODE: process.execPath },
  });
  const lines = r.stdout.split("\n").filter((l) => l.startsWith("@@VERL_ENV_CHECK@@"));
  if (lines.length !== jobs.length)
    throw new Error(
      `verl_env_check.py: ${lines.length} of ${jobs.length} results (exit ${r.status}):\n${r.stderr.slice(-4000)}`,
    );
  return lines.map((l) => JSON.parse(l.slice("@@VERL_ENV_CHECK@@".length)) as Checked);
}

const template = (name: string) => ENV_TEMPLATES.find((t) => t.name === name)?.source as string;
const CASES = [
  {
    name: "kv-lookup",
    template: "kv-lookup" as string | null,
    source: template("kv-lookup"),
    extra: [] as string[][],
  },
  {
    name: "guess-number",
    template: "guess-number",
    source: template("guess-number"),
    // a guess, a turn that is not one (step's -0.1, valid false), then guesses the bisection would not make
    extra: [
      ["<answer>8</answer>", "hmm", "<answer>4</answer>", "<answer>12</answer>"],
      ["<answer>3</answer>"],
    ],
  },
  { name: "shelf", template: null, source: SHELF, extra: [] },
];
// five wrong guesses of 1 never win (the row's secret is not 1: the lab's episode below says so); a
// 60-token budget cuts the episode after its first turns
const CUT_TURNS = ["<answer>1</answer>", "<answer>1</answer>", "<answer>1</answer>", "<answer>1</answer>"];

let python = "";
let root = "";
const lab = new Map<string, LabEpisode[]>();
const seeds = new Map<string, { train: number[]; test: number[] }>();
const checked = new Map<string, Checked>();
beforeAll(async () => {
  python = enginesPython();
  root = mkdtempSync(join(tmpdir(), "env-verl-"));
  const jobs: { dir: string; episodes: LabEpisode[]; hydra: string[] }[] = [];
  for (const c of CASES) {
    const { dir, ex } = exportSpawn(
      root,
      c.name,
      envRecipe(c.template, c.template ? null : c.source, 2),
      "verl",
    );
    if (ex.status !== 0) throw new Error(`npm run export -- verl (${c.name}): ${ex.stderr}`);
    const s = {
      train: await seedsOf(join(dir, "train.parquet")),
      test: await seedsOf(join(dir, "val.parquet")),
    };
    seeds.set(c.name, s);
    lab.set(c.name, labEpisodes(c.source, s, c.extra));
    jobs.push({ dir, episodes: lab.get(c.name) as LabEpisode[], hydra: ["data.max_response_length=4096"] });
  }
  const { dir, ex } = exportSpawn(root, "guess-cut", envRecipe("guess-number", null, 1), "verl");
  if (ex.status !== 0) throw new Error(`npm run export -- verl (guess-cut): ${ex.stderr}`);
  const cutSeed = (await seedsOf(join(dir, "train.parquet")))[0];
  const task = makeJsEnvTask(template("guess-number"));
  const cutLab = playEpisode(
    task.make(),
    cutSeed,
    (_, turn) => CUT_TURNS[Math.min(turn, CUT_TURNS.length - 1)],
  );
  if (cutLab.success) throw new Error(`guess-cut: seed ${cutSeed}'s secret is 1; pick another wrong guess`);
  jobs.push({
    dir,
    episodes: [
      {
        split: "train",
        index: 0,
        seed: cutSeed,
        texts: CUT_TURNS,
        observations: [],
        ret: 0,
        success: false,
        validCall: false,
      },
    ],
    hydra: ["data.max_response_length=60"],
  });
  const out = checkAll(jobs);
  [...CASES.map((c) => c.name), "guess-cut"].forEach((n, i) => {
    checked.set(n, out[i]);
  });
}, 300_000);

describe("the verl export of a JS environment, in verl's own agent-loop machinery", () => {
  for (const c of CASES)
    it(`${c.name}: verl composes, validates and reads the rows; its agent loop gives the lab's observations, return and success`, () => {
      const s = seeds.get(c.name) as { train: number[]; test: number[] };
      const episodes = lab.get(c.name) as LabEpisode[];
      const v = checked.get(c.name) as Checked;
      expect(readFileSync(join(root, c.name, "run.sh"), "utf8")).toContain(
        'agent_loop_config_path="$HERE/agent_loop.yaml"',
      );
      expect(s.train.length).toBe(2 * 2); // prompts_per_step x max_steps (verl draws rollout.n of each)
      // distinct held-out episodes: guess-number has 1 among its first seeds
      expect(s.test).toEqual(makeJsEnvTask(c.source).evalSeeds(2));
      expect(v.validated).toBeTruthy();
      expect(v.reward_fn).toMatch(/compute_score/);
      expect(v.default_agent_loop).toBe("lab_env_agent");
      expect(v.rows).toEqual({ train: 4, test: s.test.length });
      expect(v.episodes.length).toBe(episodes.length);
      episodes.forEach((e, i) => {
        const got = v.episodes[i];
        const where = `seed ${e.seed}: ${e.texts.join(" | ")}`;
        expect(got.seed, where).toBe(e.seed);
        expect(got.generate_calls, where).toBe(e.texts.length);
        expect(got.reward_score, where).toBeCloseTo(e.ret, 12);
        expect(got.fallback.score, where).toBeCloseTo(e.ret, 12);
        expect(got.info.acc, where).toBe(e.success ? 1 : 0);
        expect(got.fallback.acc, where).toBe(e.success ? 1 : 0);
        expect(got.info.valid_call, where).toBe(e.validCall ? 1 : 0);
        expect(got.info.cut, where).toBe(false);
        // the response: each model turn (mask 1), then its observation as a masked user turn
        const model = got.segments.filter((x) => x.mask === 1).map((x) => x.text.trim());
        const env = got.segments.filter((x) => x.mask === 0).map((x) => x.text);
        expect(model, where).toEqual(e.texts);
        expect(env.length, where).toBe(e.observations.length);
        e.observations.forEach((o, k) => {
          expect(env[k], where).toContain(o);
        });
      });
      // both sides saw successes and failures (the checks can fail)
      expect(episodes.some((e) => e.success)).toBe(true);
      expect(episodes.some((e) => !e.success)).toBe(true);
    });

  it("an episode the response budget cuts is ended and scored by check() where it stands", () => {
    const got = (checked.get("guess-cut") as Checked).episodes[0];
    expect(got.info.cut).toBe(true);
    expect(got.generate_calls).toBeLessThan(CUT_TURNS.length);
    expect(got.response_tokens).toBeLessThanOrEqual(60);
    expect(got.info.acc).toBe(0);
    expect(got.reward_score).toBeCloseTo(got.info.env_return, 12);
  });
});
