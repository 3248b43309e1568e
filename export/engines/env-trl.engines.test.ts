// The TRL export of a lab JavaScript environment (export/env-export.ts), checked with TRL and
// transformers themselves (the engines layer's venv):
//  - the exported train_trl.py's LabEnvironment, imported as a module, offers exactly the
//    module's tools as TRL sees them (its public methods besides reset) with the JSON schemas
//    transformers' get_json_schema reads from them: names, types, enums, required arguments;
//  - called as TRL calls it (reset(**row), a tool method with the parsed arguments per call,
//    the reward functions with the completion and the environments), on the lab's scripted and
//    off-script episodes of the tools-only templates and of an environment that draws
//    Math.random in reset and in its tool, it gives the lab's tool outputs, episode return and
//    success (the lab's episodes: tasks/env-api/js-env.ts in the QuickJS sandbox);
//  - TRL's GRPOTrainer(environment_factory=LabEnvironment) trains one lab step of kv-lookup with
//    the lab-made Llama on the CPU to its end, and its results come back through the lab's import
//    on lab steps 0..1 with val/acc.
// Run: npx vitest run --project engines export/engines/env-trl.engines.test.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { resultFilesOf } from "../../cli/results-files.ts";
import { importResults } from "../../results/import.ts";
import { prepareEnvEngine } from "../../tasks/env-api/engine.ts";
import { makeJsEnvTask, playEpisode } from "../../tasks/env-api/js-env.ts";
import { ENV_TEMPLATES } from "../../tasks/env-api/templates.ts";
import { envRecipe, exportSpawn, OFF, SHELF } from "./env-fixtures.ts";
import { enginesPython } from "./venv.ts";

// The cases below read each module's description: the environment engine first.
await prepareEnvEngine();

interface Played {
  seed: number;
  texts: string[];
  prompt: unknown;
  outputs: string[];
  ret: number;
  success: boolean;
}

const PY = `
import inspect, json, re, sys
job = json.load(open(sys.argv[1]))
sys.path.insert(0, job["dir"])
import train_trl, lab_env
from transformers.utils import get_json_schema
cls = train_trl.LabEnvironment
methods = [n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if n not in ("reset", "get_reward") and not n.startswith("_")]
schemas = {n: get_json_schema(getattr(cls(), n))["function"] for n in methods}
out = []
for e in job["episodes"]:
    env = cls()
    env.reset(seed=e["seed"], prompt=e["prompt"], split="train")
    outputs = []
    for t in e["texts"][:-1]:
        call = json.loads(re.search(r"<tool_call>([\\s\\S]*?)</tool_call>", t).group(1))
        outputs.append(getattr(env, call["name"])(**call["arguments"]))
    completion = [{"role": "assistant", "content": e["texts"][-1]}]
    out.append({
        "outputs": outputs,
        "reward": lab_env.lab_reward(None, [completion], [env])[0],
        "acc": lab_env.lab_acc(None, [completion], [env])[0],
    })
print(json.dumps({"methods": methods, "schemas": schemas, "episodes": out}))
`;

function exportTo(root: string, name: string, r: unknown): string {
  const { dir, ex } = exportSpawn(root, name, r);
  if (ex.status !== 0) throw new Error(`npm run export -- trl: ${ex.stderr}`);
  return dir;
}

/** The lab's episodes on two seeds: the scripted policy's, and the off-script turns whose tools exist. */
function labEpisodes(source: string): Played[] {
  const task = makeJsEnvTask(source);
  const tools = new Set(task.program.info.tools.map((t) => t.name));
  const scripts = OFF.filter(
    (o) => o.length === 1 || o.some((t) => [...tools].some((n) => t.includes(`"${n}"`))),
  );
  const out: Played[] = [];
  for (const seed of [4, 1_000_006]) {
    for (const script of [null, ...scripts]) {
      const texts: string[] = [];
      const ep = playEpisode(task.make(), seed, (env, turn) => {
        const t = script ? script[Math.min(turn, script.length - 1)] : env.policyTurn();
        texts.push(t);
        return t;
      });
      const opening = task.make();
      opening.reset(seed);
      out.push({
        seed,
        texts,
        prompt: opening.messages(),
        outputs: ep.steps
          .slice(0, -1)
          .map((s) => s.observation.replace(/^<tool_response>|<\/tool_response>$/g, "")),
        ret: ep.envReturn,
        success: ep.success,
      });
    }
  }
  return out;
}

let python = "";
let root = "";
beforeAll(async () => {
  python = enginesPython();
  root = mkdtempSync(join(tmpdir(), "env-trl-"));
});

describe("the TRL export of a JS environment, in TRL and transformers", () => {
  const cases = [
    ...ENV_TEMPLATES.filter((t) => !makeJsEnvTaskInfo(t.source).multiTurn).map((t) => ({
      name: t.name,
      template: t.name as string | null,
      source: t.source,
      custom: null as string | null,
    })),
    { name: "shelf", template: null, source: SHELF, custom: SHELF },
  ];
  for (const c of cases)
    it(`${c.name}: TRL's tools and schemas are the module's; outputs, return and success are the lab's`, () => {
      const dir = exportTo(root, c.name, envRecipe(c.template, c.custom, 2));
      const lab = labEpisodes(c.source);
      const job = join(root, `${c.name}-job.json`);
      writeFileSync(job, JSON.stringify({ dir, episodes: lab }));
      const r = spawnSync(python, ["-c", PY, job], {
        encoding: "utf8",
        env: { ...process.env, LAB_NODE: process.execPath },
      });
      expect(r.status, r.stderr.slice(-3000)).toBe(0);
      const py = JSON.parse(r.stdout) as {
        methods: string[];
        schemas: Record<string, { name: string; description: string; parameters: Record<string, unknown> }>;
        episodes: { outputs: string[]; reward: number; acc: number }[];
      };
      const info = makeJsEnvTaskInfo(c.source);
      expect(py.methods.sort()).toEqual(info.tools.map((t) => t.name).sort());
      for (const t of info.tools) {
        const got = py.schemas[t.name];
        const want = t.parameters as {
          properties: Record<string, { type: string; enum?: unknown[]; description?: string }>;
          required?: string[];
        };
        expect(got.description).toBe(t.description);
        const props = got.parameters.properties as Record<
          string,
          { type: string; enum?: unknown[]; description?: string }
        >;
        expect(Object.keys(props).sort()).toEqual(Object.keys(want.properties).sort());
        for (const [k, p] of Object.entries(want.properties)) {
          expect(props[k].type, `${t.name}.${k}`).toBe(p.type);
          if (p.enum) expect(props[k].enum, `${t.name}.${k}`).toEqual(p.enum);
          if (p.description) expect(props[k].description, `${t.name}.${k}`).toBe(p.description);
        }
        expect(((got.parameters.required as string[]) ?? []).sort()).toEqual(
          [...(want.required ?? [])].sort(),
        );
      }
      expect(py.episodes.length).toBe(lab.length);
      lab.forEach((e, i) => {
        const where = `seed ${e.seed}: ${e.texts.join(" | ")}`;
        expect(py.episodes[i].outputs, where).toEqual(e.outputs);
        expect(py.episodes[i].reward, where).toBeCloseTo(e.ret, 12);
        expect(py.episodes[i].acc, where).toBe(e.success ? 1 : 0);
      });
      // Both sides saw successes and failures (the checks can fail).
      expect(lab.some((e) => e.success)).toBe(true);
      expect(lab.some((e) => !e.success)).toBe(true);
    }, 120_000);

  it("a multi-turn environment is refused for TRL, naming why", () => {
    const { ex } = exportSpawn(root, "guess", envRecipe("guess-number", null, 2));
    expect(ex.status).not.toBe(0);
    expect(ex.stderr).toMatch(/multi-turn .*environment_factory gives the model tools only/);
  }, 60_000);

  it("GRPOTrainer(environment_factory=LabEnvironment) trains a kv-lookup step with the lab-made Llama; the import puts it on lab steps", async () => {
    const dir = exportTo(root, "kv-train", envRecipe("kv-lookup", null, 1));
    const r = spawnSync(
      python,
      [
        join(dir, "train_trl.py"),
        "--model",
        resolve("public/models/lab-llama"),
        "--max-completion-length",
        "96",
      ],
      {
        encoding: "utf8",
        maxBuffer: 1 << 28,
        timeout: 600_000,
        env: { ...process.env, LAB_NODE: process.execPath },
      },
    );
    expect(r.status, `${r.stdout}\n${r.stderr}`.slice(-4000)).toBe(0);
    const state = JSON.parse(readFileSync(join(dir, "trl-out", "trainer_state.json"), "utf8"));
    expect(state.log_history.some((h: Record<string, unknown>) => "eval_rewards/lab_acc/mean" in h)).toBe(
      true,
    );
    const run = await importResults(resultFilesOf(dir));
    expect(run.info.engine).toBe("trl");
    const steps = [...new Set(run.rows.map((x) => x.step))].sort((a, b) => a - b);
    expect(steps).toEqual([0, 1]);
    expect(run.rows.some((x) => x.step === 1 && typeof x["val/acc"] === "number")).toBe(true);
  }, 600_000);
});

function makeJsEnvTaskInfo(source: string) {
  return makeJsEnvTask(source).program.info;
}
