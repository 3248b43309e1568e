// A policy that writes given text: each sequence has a list of segments, and the next one is
// emitted after every append (tool response). It exists to test the agent loop, the masks and
// the trainer wiring with exact, known tokens, through the same generation interface as the
// real models, and records what was appended.
import type { DecodeResult, GenerationSession, SamplingOptions } from "../model/api";
import { CHAR_TOKENIZER, type Tokenizer } from "../model/tokenizer";
import type { GenerationPolicy } from "../rl/rollout/agent-loop";

export class ScriptedPolicy implements GenerationPolicy {
  readonly appended: { seq: number; tokens: number[] }[] = [];
  readonly config: { context: number };

  constructor(
    private readonly scripts: string[][],
    context = 512,
    private readonly tokenizer: Tokenizer = CHAR_TOKENIZER,
  ) {
    this.config = { context };
  }

  startGeneration(_sampling: SamplingOptions): GenerationSession {
    let lengths: number[] = [];
    let queues: number[][][] = [];
    let segIndex: number[] = [];
    let pos: number[] = [];
    return {
      prefill: async (prompts) => {
        lengths = prompts.map((p) => p.length);
        queues = prompts.map((_, i) =>
          this.scripts[i % this.scripts.length].map((seg) => this.tokenizer.encode(seg)),
        );
        segIndex = prompts.map(() => 0);
        pos = prompts.map(() => 0);
      },
      decode: async (active): Promise<DecodeResult> => {
        const tokens = new Int32Array(lengths.length).fill(-1);
        const logprobs = new Float32Array(lengths.length).fill(Number.NaN);
        for (let i = 0; i < lengths.length; i++) {
          if (!active[i]) continue;
          const seg = queues[i][segIndex[i]] ?? [];
          // Past the end of its script the policy repeats its last token (a runaway generation).
          tokens[i] = seg[pos[i]] ?? seg[seg.length - 1] ?? 0;
          logprobs[i] = -0.5;
          pos[i]++;
          lengths[i]++;
        }
        return { tokens, logprobs };
      },
      append: async (seq, toks) => {
        this.appended.push({ seq, tokens: [...toks] });
        lengths[seq] += toks.length;
        segIndex[seq]++;
        pos[seq] = 0;
      },
      lengths: () => [...lengths],
      finish: () => {},
    };
  }
}
