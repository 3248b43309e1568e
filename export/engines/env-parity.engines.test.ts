// The exported environment runner (export/env/lab_env.py, run by the engines' Python on a
// local node) against the lab's own (tasks/env-api/js-env.ts in the QuickJS sandbox): on the
// same seeds and the same model turns (the scripted policy's, and fixed off-script turns:
// junk, a bad call, a call to a missing key, past the tool-call limit, past the turn limit)
// every template and an environment that draws Math.random in reset, step and a tool and
// reads the clock give the same opening messages, observations, rewards, ends, successes
// and error texts.
// Run: npx vitest run --project engines export/engines/env-parity.engines.test.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { prepareEnvEngine } from "../../tasks/env-api/engine.ts";
import { makeJsEnvTask, playEpisode } from "../../tasks/env-api/js-env.ts";
import { ENV_TEMPLATES } from "../../tasks/env-api/templates.ts";
import { envExportJson } from "../env.ts";
import { enginesPython } from "./venv.ts";

const RANDOM_ENV = `// Randomness everywhere: reset, step and the tool draw Math.random; step reads the clock.
export default {
  name: "dice",
  maxTurns: 4,
  tools: [{ name: "roll", description: "a die", run(args, state) {
    if (args.sides === 0) throw new Error("no sides");
    state.rolls.push(1 + Math.floor(Math.random() * (args.sides || 6)));
    return { roll: state.rolls[state.rolls.length - 1], r: Math.random() };
  } }],
  reset(seed) {
    return { prompt: "target " + Math.floor(Math.random() * 100), state: { t: Math.random(), rolls: [] } };
  },
  step(state, text, turn) {
    const x = Math.random();
    return { observation: "x=" + x + " at " + new Date().toISOString() + " " + Date.now(), reward: x - state.t, done: turn >= 3 };
  },
  check(state, episode) {
    return { success: state.rolls.length > 0, score: Math.random() };
  },
};
`;

const OFF_SCRIPT = [
  "no idea",
  '<tool_call>{"name": "lookup", "arguments": {"key": "z"}}</tool_call>',
  "<tool_call>not json</tool_call>",
  '<tool_call>{"name":"roll","arguments":{"sides":0}}</tool_call>',
  '<tool_call>{"name":"roll","arguments":{"sides":20}}</tool_call>',
  '<tool_call>{"name":"roll","arguments":{}}</tool_call>',
  '<tool_call>{"name":"convert","arguments":{"value":2,"from":"km","to":"mm"}}</tool_call>',
  "<answer>Down</answer>",
  "<answer>8</answer>",
  "<answer>42</answer>",
];

interface Played {
  seed: number;
  texts: string[];
  messages: unknown;
  steps: { observation: string; reward: number; done: boolean; info: Record<string, unknown> }[];
}

const PY = `
import json, sys
from lab_env import LabEnvEpisode
job = json.load(open(sys.argv[1]))
ep = LabEnvEpisode(job["spec"])
out = []
for e in job["episodes"]:
    messages = ep.reset(e["seed"])
    steps = []
    for t in e["texts"]:
        o, r, d, info = ep.step(t)
        steps.append({"observation": o, "reward": r, "done": d, "info": info})
    out.append({"messages": messages, "steps": steps})
print(json.dumps(out))
`;

/** The lab's episodes: two scripted (when the module has a policy) and one off script per seed. */
function labEpisodes(source: string): Played[] {
  const task = makeJsEnvTask(source);
  const out: Played[] = [];
  for (const seed of [3, 1_000_003]) {
    const scripted = task.program.info.policy;
    for (const mode of scripted ? ["policy", "off"] : ["off"]) {
      const texts: string[] = [];
      const ep = playEpisode(task.make(), seed, (env, turn) => {
        const t = mode === "policy" ? env.policyTurn() : OFF_SCRIPT[(turn + seed) % OFF_SCRIPT.length];
        texts.push(t);
        return t;
      });
      const opening = task.make();
      opening.reset(seed);
      out.push({
        seed,
        texts,
        messages: opening.messages(),
        steps: ep.steps.map((s) => ({
          observation: s.observation,
          reward: s.reward,
          done: s.done,
          info: s.info as Record<string, unknown>,
        })),
      });
    }
  }
  return out;
}

describe("the exported environment runner matches the lab's", () => {
  let python = "";
  const dir = mkdtempSync(join(tmpdir(), "env-parity-"));
  beforeAll(async () => {
    python = enginesPython();
    await prepareEnvEngine();
  });
  const cases = [
    ...ENV_TEMPLATES.map((t) => ({ name: t.name, source: t.source })),
    { name: "dice", source: RANDOM_ENV },
  ];
  for (const c of cases)
    it(`${c.name}: same messages, observations, rewards, ends and successes`, () => {
      const lab = labEpisodes(c.source);
      const job = join(dir, `${c.name}.json`);
      writeFileSync(job, JSON.stringify({ spec: envExportJson(c.source), episodes: lab }));
      const r = spawnSync(python, ["-c", PY, job], {
        encoding: "utf8",
        env: { ...process.env, PYTHONPATH: resolve("export/env"), LAB_NODE: process.execPath },
      });
      expect(r.stderr).toBe("");
      const py = JSON.parse(r.stdout) as { messages: unknown; steps: Played["steps"] }[];
      expect(py.length).toBe(lab.length);
      lab.forEach((e, i) => {
        expect(py[i].messages, `seed ${e.seed}`).toEqual(e.messages);
        expect(py[i].steps.length).toBe(e.steps.length);
        e.steps.forEach((s, k) => {
          const p = py[i].steps[k];
          const where = `seed ${e.seed} turn ${k + 1}: ${e.texts[k]}`;
          expect(p.observation, where).toBe(s.observation);
          expect(p.reward, where).toBe(s.reward);
          expect(p.done, where).toBe(s.done);
          for (const key of ["valid", "success", "truncated", "steps", "kind", "error"])
            expect(p.info[key], `${where} (${key})`).toEqual(s.info[key]);
        });
      });
    }, 60_000);
});
