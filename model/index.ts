// The model package's surface for rl/, workers/ and cli/: tokenizers (the character one and a
// model's tokenizer.json), templates and chat formats, config and
// layout, the PolicyModel interface, the CPU reference backend, generation with stop strings,
// checkpoints. The WebGPU backend is imported from "model/gpu" directly (it pulls in the
// kernels' WGSL, which needs a bundler or vitest to load).
// Tested by the model/*.test.ts files.
export type * from "./api";
export * from "./chat";
export * from "./checkpoint";
export * from "./config";
export { CpuModel } from "./cpu";
export * from "./generate";
export * from "./hf/tokenizer";
export * from "./template";
export * from "./tokenizer";
