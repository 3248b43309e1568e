// Decoding until stop strings or budgets, on any GenerationSession (CPU or GPU).
// A sequence stops exactly when the text it generated in this call ends with one of its
// stop strings (the stop token is kept and counted), when it has generated maxNewTokens,
// or when its cache reaches the context. The rollout calls this again after append()ing a
// tool response to the sequences that stopped at a tool call.
// Tested by model/cpu.test.ts (and model/gpu.gpu.test.ts on the GPU session).
import type { GenerationSession } from "./api";
import { CHAR_TOKENIZER, type Tokenizer } from "./tokenizer";

export type StopReason = "stop" | "length" | "context";

export interface GeneratedSequence {
  tokens: number[];
  logprobs: number[];
  /** Why generation ended; null for sequences that were not active. */
  reason: StopReason | null;
  /** The stop string matched when reason is "stop". */
  stop?: string;
}

export interface GenerateOptions {
  maxNewTokens: number;
  /** One list for every sequence, or one list per sequence. */
  stop: readonly string[] | readonly (readonly string[])[];
  /** Which sequences generate (default all). */
  active?: ArrayLike<boolean>;
  /** The model's context; a sequence stops when its cache is full. */
  context: number;
  /** Whose pieces make the text stop strings are matched in (default: the character tokenizer). */
  tokenizer?: Tokenizer;
}

export async function generate(
  session: GenerationSession,
  options: GenerateOptions,
): Promise<GeneratedSequence[]> {
  const lengths = session.lengths();
  const B = lengths.length;
  const tok = options.tokenizer ?? CHAR_TOKENIZER;
  const stopsOf = (b: number): readonly string[] =>
    options.stop.length > 0 && Array.isArray(options.stop[0])
      ? (options.stop as readonly (readonly string[])[])[b]
      : (options.stop as readonly string[]);
  const out: GeneratedSequence[] = Array.from({ length: B }, () => ({
    tokens: [],
    logprobs: [],
    reason: null,
  }));
  const text = Array.from({ length: B }, () => "");
  const running = Array.from({ length: B }, (_, b) => (options.active ? Boolean(options.active[b]) : true));
  for (let b = 0; b < B; b++) {
    if (!running[b]) continue;
    if (options.maxNewTokens <= 0) {
      out[b].reason = "length";
      running[b] = false;
    } else if (lengths[b] >= options.context) {
      out[b].reason = "context";
      running[b] = false;
    }
  }
  while (running.some(Boolean)) {
    const { tokens, logprobs } = await session.decode(running);
    const len = session.lengths();
    for (let b = 0; b < B; b++) {
      if (!running[b]) continue;
      out[b].tokens.push(tokens[b]);
      out[b].logprobs.push(logprobs[b]);
      text[b] += tok.piece(tokens[b]);
      const hit = stopsOf(b).find((s) => text[b].endsWith(s));
      if (hit !== undefined) {
        out[b].reason = "stop";
        out[b].stop = hit;
      } else if (out[b].tokens.length >= options.maxNewTokens) {
        out[b].reason = "length";
      } else if (len[b] >= options.context) {
        out[b].reason = "context";
      }
      if (out[b].reason !== null) running[b] = false;
    }
  }
  return out;
}
