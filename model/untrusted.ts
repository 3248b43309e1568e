// A model source's files are untrusted input (a Hub repo or someone's files): this is the check a
// model gets when it is picked or loaded, before any run, buffer or memory plan uses it. Each file
// is read through the lab's own readers, which refuse by name what they cannot hold:
//   config.json                   wrong types and absurd sizes (model/hf/read.ts, HF_CONFIG_MAX)
//   tokenizer.json / _config.json malformed, oversized, ids beyond config.json's vocab_size
//                                 (model/hf/tokenizer.ts), the chat template rendered in the
//                                 bounded sandbox (model/jinja-bounds.ts) on a probe conversation
//   *.safetensors                 headers only: lengths, offsets, dtypes, shapes (model/safetensors.ts)
//   model.safetensors.index.json  shard names beside the index (model/hf/read.ts, checkShardName)
// Every refusal is a ModelFileError naming the file; nothing reads more than a header from the
// weights. Used by workers/model-cache.ts (the picker) and tested by model/untrusted.test.ts.
import { jinjaChat } from "./chat";
import type { ModelConfig } from "./config";
import { checkFileSize } from "./file-caps";
import type { HfOptions } from "./hf/config";
import { type ModelDir, openHfTensors, readHfConfig } from "./hf/read";
import { HfTokenizer } from "./hf/tokenizer";

/** A model file refused: `file` is its name in the model's folder, the message says why. */
export class ModelFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
    this.name = "ModelFileError";
  }
}

// The model file a message names first (its own name, or the file a reader refused).
const FILE_IN_MESSAGE =
  /(tokenizer_config\.json|tokenizer\.json|model\.safetensors\.index\.json|config\.json|[\w.-]+\.safetensors)/;

/** Runs a check; any error becomes a ModelFileError naming the file its message names, else `file`. */
async function blame<T>(dir: ModelDir, file: string, f: () => Promise<T> | T): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof ModelFileError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    const named = FILE_IN_MESSAGE.exec(msg)?.[1];
    throw new ModelFileError(named ?? file, named ? msg : `${dir.name}/${file}: ${msg}`);
  }
}

async function readJsonFile(dir: ModelDir, file: string): Promise<Record<string, unknown> | null> {
  const src = await dir.open(file);
  if (!src) return null;
  checkFileSize(src.name, src.size);
  const bytes = await src.read(0, src.size);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new Error(`${src.name}: not valid JSON (${(err as Error).message})`);
  }
}

/** A conversation the chat template must render within its budget (a tool call and its result). */
const PROBE = [
  { role: "system" as const, content: "You are a helpful assistant." },
  { role: "user" as const, content: "What is 12*7?" },
  {
    role: "assistant" as const,
    content: '<tool_call>{"name": "calc", "arguments": {"code": "12*7"}}</tool_call>',
  },
  { role: "tool" as const, content: "84" },
  { role: "assistant" as const, content: "84" },
];

export interface ModelCheck {
  config: ModelConfig;
  /** Files checked, in order. */
  files: string[];
}

/**
 * Checks every file of a model folder the lab reads, or throws a ModelFileError naming the first
 * file refused. The tokenizer files are optional (a folder may hold weights only).
 */
export async function checkModelFiles(dir: ModelDir, opts: HfOptions = {}): Promise<ModelCheck> {
  const files: string[] = [];
  const config = await blame(dir, "config.json", () => readHfConfig(dir, opts));
  files.push("config.json");
  const tokJson = await blame(dir, "tokenizer.json", () => readJsonFile(dir, "tokenizer.json"));
  const tokConfig = await blame(dir, "tokenizer_config.json", () =>
    readJsonFile(dir, "tokenizer_config.json"),
  );
  if (tokJson && tokConfig) {
    const tokenizer = await blame(dir, "tokenizer.json", () => {
      const t = new HfTokenizer({ tokenizer: tokJson, config: tokConfig }, dir.name);
      if (t.vocabSize > config.vocab)
        throw new Error(
          `${dir.name}: tokenizer.json has ids up to ${t.vocabSize - 1}, beyond config.json's vocab_size ${config.vocab}`,
        );
      return t;
    });
    files.push("tokenizer.json");
    if (tokConfig.chat_template !== undefined && tokConfig.chat_template !== null) {
      await blame(dir, "tokenizer_config.json", () => {
        const source = `${dir.name}/tokenizer_config.json`;
        const tools = [
          { name: "calc", description: "A calculator.", parameters: { type: "object" }, codeArg: "code" },
        ];
        const chat = jinjaChat(tokenizer, tokConfig, { tools, check: "off", toolPrompt: "hermes", source });
        chat.promptText(PROBE.slice(0, 2));
        chat.render(PROBE);
      });
    }
    files.push("tokenizer_config.json");
  }
  const shards = await blame(dir, "model.safetensors", async () => {
    const tensors = await openHfTensors(dir, config);
    return [...new Set(tensors.map(({ file }) => file.source.name))];
  });
  files.push(...shards);
  return { config, files };
}
