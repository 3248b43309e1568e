// The sandbox's public API for the RL loop, the workers and the app (browser-safe: no Node
// imports; Node code adds sandbox/pool-node.ts for createNodeSandboxPool).

export { POOL_DEFAULTS, type PoolOptions, type PoolStats, SandboxPool, type WorkerFactory } from "./pool.ts";
export { createBrowserSandboxPool } from "./pool-browser.ts";
export { headTail, InProcessSandbox, isModuleUsable, loadQuickJS, runCode } from "./run-code.ts";
export { validateArgs, validateToolSpec } from "./schema.ts";
export { type SmokeCheck, type SmokeReport, sandboxSmoke } from "./smoke.ts";
export {
  type CallOptions,
  callNamedTool,
  callTool,
  errorLastLine,
  FORMAT_DEFAULTS,
  type FormatOptions,
  formatToolResponse,
  JS_INTERPRETER_TOOL,
  type RewardOutcome,
  runRewardFunction,
  type ToolDeclaration,
} from "./tools.ts";
export * from "./types.ts";
