// Environments and off-script turns the engines layer's environment tests share
// (env-trl.engines.test.ts, env-verl.engines.test.ts): an environment that draws Math.random in
// reset and in its tool with optional and enum arguments, turns a model might write off the
// scripted policy, and the recipe the tests export.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SHELF = `// A shelf: reset draws the items, the tool draws a noise value; optional and enum arguments.
export default {
  name: "shelf",
  maxTurns: 4,
  tools: [{
    name: "peek",
    description: "What lies on a shelf.",
    parameters: {
      type: "object",
      properties: {
        shelf: { type: "integer", description: "0, 1 or 2" },
        side: { type: "string", enum: ["left", "right"], description: "which end" },
        loud: { type: "boolean" },
      },
      required: ["shelf"],
    },
    run(args, state) {
      if (!(args.shelf in state.items)) throw new Error("no shelf " + args.shelf);
      state.peeks++;
      return { item: state.items[args.shelf], side: args.side ?? "left", noise: Math.random(), loud: !!args.loud };
    },
  }],
  reset(seed) {
    const items = [0, 1, 2].map(() => ["cup", "pen", "box"][Math.floor(Math.random() * 3)]);
    return { prompt: "what is on shelf " + (seed % 3) + "?", state: { items, want: seed % 3, peeks: 0 } };
  },
  check(state, episode) {
    const ok = episode.answer === state.items[state.want];
    return { success: ok, score: (ok ? 1 : 0) - 0.1 * state.peeks };
  },
  policy(state, episode) {
    if (episode.calls.length === 0) return '<tool_call>{"name":"peek","arguments":{"shelf":' + state.want + ',"side":"right"}}</tool_call>';
    return "<answer>" + episode.calls[0].result.item + "</answer>";
  },
};
`;

// Off-script turns: calls TRL would run (valid JSON, a known tool), then a final answer.
export const OFF = [
  ['<tool_call>{"name":"lookup","arguments":{"key":"z"}}</tool_call>', "<answer>12</answer>"],
  [
    '<tool_call>{"name":"convert","arguments":{"value":2,"from":"km","to":"mm"}}</tool_call>',
    '<tool_call>{"name":"convert","arguments":{"value":3,"from":"parsec","to":"m"}}</tool_call>',
    "<answer>2000000</answer>",
  ],
  [
    '<tool_call>{"name":"peek","arguments":{"shelf":7}}</tool_call>',
    '<tool_call>{"name":"peek","arguments":{"shelf":1,"loud":true}}</tool_call>',
    "<answer>pen</answer>",
  ],
  ["no idea"],
];

/** The kv-lookup recipe on another template or source, 2 prompts x 2 samples, 2 held-out episodes. */
export function envRecipe(template: string | null, source: string | null, steps: number, maxNewTokens = 40) {
  const r = JSON.parse(readFileSync("public/recipes/env-kv-lookup-sft.json", "utf8"));
  r.name = `env-${template ?? "custom"}`;
  r.config.task.options = source ? { api_version: 1, source } : { api_version: 1, template };
  r.config.sft = { steps: 0 };
  r.config.rl = { prompts_per_step: 2, group_size: 2 };
  r.config.task.eval_size = 2;
  r.config.task.eval_every = 1;
  r.config.sampling = { max_new_tokens: maxNewTokens };
  r.config.stop = { max_steps: steps };
  return r;
}

/** npm run export -- <target> of a recipe object into root/name. */
export function exportSpawn(root: string, name: string, r: unknown, target: "trl" | "verl" = "trl") {
  writeFileSync(join(root, `${name}.json`), JSON.stringify(r));
  const dir = join(root, name);
  const ex = spawnSync(
    "npx",
    [
      "tsx",
      "--import",
      "./cli/raw-loader.mjs",
      "cli/export.ts",
      target,
      join(root, `${name}.json`),
      "--out",
      dir,
    ],
    { encoding: "utf8" },
  );
  return { dir, ex };
}
