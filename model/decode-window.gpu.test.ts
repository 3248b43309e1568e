// GPU tests of k-token decoding (GpuGenerationSession.decodeMany): k tokens per submit, cut on
// the CPU, must give exactly the tokens and log-probs of one decode() per token, with cuts inside
// the window (stop tokens, a tool-call end), appended tool responses, the context limit and
// inactive rows; the round trips it saves; and that a window computes only the rows that run
// (moved to the front, their draws unchanged). Run: npx vitest run --project gpu model/decode-window

import { beforeAll, describe, expect, it } from "vitest";
import { countersSince, type Runtime } from "../kernels/runtime";
import { gpuRuntime, planRuntime } from "../kernels/testing";
import type { GenerationSession, RunEnd } from "./api";
import { modelConfig } from "./config";
import { CpuModel } from "./cpu";
import { decodeRun } from "./generate";
import { GpuModel } from "./gpu";
import type { GpuGenerationSession } from "./gpu-generation";
import { encode, SPECIAL_IDS } from "./tokenizer";

let rt: Runtime;
beforeAll(async () => {
  rt = await gpuRuntime();
});

const CALL_END = SPECIAL_IDS["</tool_call>"];

interface Transcript {
  tokens: number[][];
  logprobs: number[][];
  lengths: number[];
}

/**
 * An agent-like loop: each row decodes a run until a "stop" (a token id divisible by 6, or the
 * tool-call end), a per-row budget or the context; rows that stopped get a 1-3 token "tool
 * response" appended (sometimes none: the row then just continues); rounds until every row
 * is done. Same loop for every session, so transcripts compare token for token.
 */
async function agentLoop(s: GenerationSession, prompts: number[][], context: number): Promise<Transcript> {
  await s.prefill(prompts);
  const t: Transcript = { tokens: prompts.map(() => []), logprobs: prompts.map(() => []), lengths: [] };
  const done = prompts.map((p) => p.length >= context);
  let round = 0;
  while (done.some((d) => !d) && round < 12) {
    const active = done.map((d) => !d);
    // one row sits out the second round (an inactive row in the middle of a batch)
    if (round === 1) active[1] = false;
    const stopped: number[] = [];
    const ends: RunEnd = (b, tok, lp, length) => {
      t.tokens[b].push(tok);
      t.logprobs[b].push(lp);
      if (length >= context || t.tokens[b].length >= 40) {
        done[b] = true;
        return true;
      }
      if (tok % 6 === 0 || tok === CALL_END) {
        stopped.push(b);
        return true;
      }
      return false;
    };
    await decodeRun(s, active, 20, ends, context);
    for (const b of stopped) {
      const resp = [3 + ((b + round) % 50), 7, 11].slice(0, (b + round) % 4);
      if (s.lengths()[b] + resp.length >= context) done[b] = true;
      else if (resp.length > 0) {
        await s.append(b, resp);
        t.tokens[b].push(...resp.map((x) => -x)); // marked, so appends line up in the comparison
      }
    }
    round++;
  }
  t.lengths = s.lengths();
  s.finish();
  return t;
}

/** The model (same seed, same weights) on a runtime whose plan decodes k tokens a submit. */
async function windowed(k: number, config: ReturnType<typeof modelConfig>, seed: number): Promise<GpuModel> {
  return new GpuModel(await planRuntime({ decodeWindow: k }), config, undefined, seed);
}

describe("k-token decode", () => {
  const config = modelConfig({ layers: 2, dModel: 32, heads: 2, context: 40 });
  const prompts = [encode("ab"), encode("<think>x"), encode("q"), encode("<tool_call>12*"), encode("z")];

  it("equals one token per decode, token for token, with cuts inside the window and appends", async () => {
    const model = await windowed(1, config, 5);
    const sampling = { temperature: 1, topP: 0.95, seed: 21 };
    const one = await agentLoop(model.startGeneration(sampling), prompts, config.context);
    for (const k of [4, 16]) {
      const mk = await windowed(k, config, 5);
      const many = await agentLoop(mk.startGeneration(sampling), prompts, config.context);
      mk.dispose();
      expect(many.tokens).toEqual(one.tokens);
      expect(many.logprobs).toEqual(one.logprobs);
      expect(many.lengths).toEqual(one.lengths);
    }
    // cuts really fell inside windows: some run was shorter than the window
    expect(one.tokens.some((r) => r.some((x) => x < 0))).toBe(true);
    // and the CPU reference session (one decode per token) draws the same way: greedy equality
    const cpu = new CpuModel(config, await model.getWeights());
    const greedy = { temperature: 0, seed: 0 };
    const m8 = await windowed(8, config, 5);
    expect((await agentLoop(m8.startGeneration(greedy), prompts, config.context)).tokens).toEqual(
      (await agentLoop(cpu.startGeneration(greedy), prompts, config.context)).tokens,
    );
    model.dispose();
  });

  it("decodes 64 tokens at batch 4 with 16x fewer readbacks and submits at k = 16", async () => {
    const count = async (k: number) => {
      const model = await windowed(k, modelConfig({ layers: 1, dModel: 16, heads: 2, context: 72 }), 2);
      const s = model.startGeneration({ temperature: 1, seed: 4 });
      await s.prefill([encode("a"), encode("bc"), encode("d"), encode("efg")]);
      const before = { ...model.rt.counters };
      const out = await decodeRun(s, [true, true, true, true], 64, () => false, 72);
      const d = countersSince(model.rt.counters, before);
      s.finish();
      model.dispose();
      return { d, tokens: out.tokens };
    };
    const one = await count(1);
    const many = await count(16);
    expect(many.tokens).toEqual(one.tokens);
    expect(one.d.readbacks).toBe(64);
    expect(many.d.readbacks).toBe(4);
    expect(many.d.submits).toBe(4);
    expect(one.d.submits).toBe(128); // a feed submit and a sample + read submit per token
  });

  it("computes only the rows that run, moved to the front, with the same tokens", async () => {
    // B rows; rows other than `keep` stop at their first token; `keep` runs 16 more tokens alone
    const run = async (k: number, B: number, keep: number) => {
      const model = await windowed(k, modelConfig({ layers: 1, dModel: 16, heads: 2, context: 64 }), 3);
      const s = model.startGeneration({ temperature: 1, seed: 9 }) as GpuGenerationSession;
      await s.prefill(Array.from({ length: B }, (_, b) => encode(String.fromCharCode(97 + b))));
      const first = await decodeRun(s, new Array(B).fill(true), 8, (b) => b !== keep, 64);
      const before = s.rowsComputed;
      const alone = new Array(B).fill(false);
      alone[keep] = true;
      const rest = await decodeRun(s, alone, 16, () => false, 64);
      // then every row again: the moved rows' caches went with them
      const again = await decodeRun(s, new Array(B).fill(true), 4, () => false, 64);
      const rows = s.rowsComputed - before;
      const lengths = s.lengths();
      s.finish();
      model.dispose();
      return { tokens: [first.tokens, rest.tokens, again.tokens], rows, lengths };
    };
    for (const B of [4, 10]) {
      const one = await run(1, B, 2);
      const many = await run(8, B, 2);
      expect(many.tokens).toEqual(one.tokens);
      expect(many.lengths).toEqual(one.lengths);
      // one token per decode computes every row; windows of 8 compute row 2 alone for its 16
      // tokens (2 windows of a drain step and 7 more), padded past the small-rows kernels at B 10
      // (9 rows on lavapipe and GPUs, 2 on SwiftShader) so the numbers stay those of all B rows
      const per = B <= 8 ? 1 : rt.plan.smallRows === 1 ? 2 : 9;
      expect(many.rows).toBe(16 * per + 4 * B);
      expect(one.rows).toBeGreaterThanOrEqual(20 * B);
    }
  });
});
