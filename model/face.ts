// The model's face: all that the page (app/) and the way out to other engines (export/) may
// import of model/, and all of it pure: no GPU, no tokenizer, no weights. Reading a Hugging Face
// config.json into a ModelConfig, the parameter layout, the memory plan, model sources, and the
// text of the Hermes tool-list prompt. Everything with weights (checkpoints, the HF reader and
// writer, the models) runs in the trainer worker, behind the worker API (workers/api.ts).
// cli/imports.test.ts holds the rule: app/ and export/ reach model/ only through this file, and
// this file only the pure modules it names.
export { modelConfigOf, paramLayout } from "./config";
export { type HfOptions, hfModelConfig } from "./hf/config";
export { DEFAULT_LIMITS, formatBytes, planOfConfig } from "./memory-plan";
export { type ModelSource, parseModelSource, sourceFields, sourceLabel } from "./source";
export { type ChatTemplateFacts, type ChatTool, chatToolsOf, withToolPrompt } from "./tool-list-prompt";
