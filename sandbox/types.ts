// The sandbox's request and result types. They follow Sandbox Fusion's `run_code` API
// (names and units: `run_timeout` in seconds, `memory_limit_MB`, `run_result`), plus the
// last expression's value, a typed error and the tools the code may call.
// Tested through sandbox/run-code.test.ts and sandbox/adversarial.test.ts.

/** A JSON-schema subset for tool parameters: what function-calling models are given. */
export type JsonSchema =
  | { type: "string"; description?: string; enum?: string[] }
  | { type: "number" | "integer"; description?: string; enum?: number[]; minimum?: number; maximum?: number }
  | { type: "boolean"; description?: string }
  | { type: "array"; description?: string; items?: JsonSchema }
  | JsonObjectSchema;

export interface JsonObjectSchema {
  type: "object";
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** A user-defined tool: declared like an OpenAI/Qwen function, implemented by JS run in the sandbox. */
export interface ToolSpec {
  /** A JavaScript identifier: the code calls it as `name({...})`. */
  name: string;
  description: string;
  parameters: JsonObjectSchema;
  /** JS source: an arrow/function expression taking the arguments object, or a function body using `args`. */
  body: string;
}

export interface RunCodeRequest {
  code: string;
  /**
   * Seconds (float) of counted interpreter work (sandbox/budget.ts: INTERRUPTS_PER_SECOND
   * interrupt checks a second), the same on every machine at any load.
   */
  run_timeout?: number;
  /**
   * Seconds of wall clock after which the call is stopped whatever its budget says (default
   * backstopSeconds(run_timeout)); the pool's hard kill fires a margin later.
   */
  wall_backstop_s?: number;
  memory_limit_MB?: number;
  /** Cap on each of stdout, stderr and the serialized value, in bytes (UTF-16 code units). */
  max_output_bytes?: number;
  /** Functions defined in the sandbox before the code runs. */
  tools?: ToolSpec[];
  /**
   * Seed of the call's Math.random, an integer in [0, 2^32) (default 0). The lab derives it
   * from the run seed and the call's place (rl/`callSeed`), so a replay sees the same numbers.
   */
  seed?: number;
  /** Start of the call's virtual clock, ms since the epoch (default SANDBOX_CLOCK_MS). */
  clock_ms?: number;
  /**
   * true (default): seeded Math.random and the virtual clock. false: the host's, unseeded
   * (the sandbox benchmark's switch; no run of the lab sets it).
   */
  deterministic?: boolean;
}

/** Where every sandboxed program's clock starts: 2025-01-01T00:00:00Z. */
export const SANDBOX_CLOCK_MS = Date.UTC(2025, 0, 1);

export type ErrorKind = "Exception" | "Timeout" | "MemoryLimit" | "StackOverflow" | "HardKill";

export interface SandboxErrorInfo {
  kind: ErrorKind;
  name: string;
  message: string;
  stack?: string;
  /** 1-based line in the submitted code, when the error has one. */
  line?: number;
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface RunCodeResult {
  /** Success: ran to the end without error. Failed: the code erred or ran out of a limit. SandboxError: the sandbox broke. */
  status: "Success" | "Failed" | "SandboxError";
  run_result: {
    status: "Finished" | "Error" | "TimeLimitExceeded";
    /** Seconds. */
    execution_time: number;
    /** 0 finished, 1 error, null when killed by a time limit or when the sandbox broke. */
    return_code: number | null;
    stdout: string;
    stderr: string;
  };
  /** The last expression's value (a settled promise is awaited), JSON-safe; absent for undefined. */
  value?: JsonValue;
  error?: SandboxErrorInfo;
  /** Some output or the value was cut at max_output_bytes (or nested deeper than MAX_VALUE_DEPTH). */
  truncated: boolean;
  /**
   * The wall-clock backstop, not the counted budget, ended the call (a long built-in, or a
   * machine far slower than expected): a replay may get another verdict. The lab records it
   * as an event of the run.
   */
  backstop?: boolean;
}

/** Defaults for the limits: a tool call in an RL rollout is small and must be quick. */
export const RUN_DEFAULTS = {
  /** Seconds of counted interpreter work before the interrupt. */
  run_timeout: 1,
  /** Per-call QuickJS heap limit. */
  memory_limit_MB: 32,
  /** Per stream; the model-facing text is cut much shorter by formatToolResponse. */
  max_output_bytes: 65_536,
  /** Bytes of QuickJS stack; kept well below the wasm engine's own native stack. */
  max_stack_bytes: 256 * 1024,
  /** Promise jobs run per call before the job queue counts as a runaway. */
  max_jobs: 100_000,
} as const;

/** A result for failures outside the interpreter (bad request, crashed worker, closed pool). */
export function sandboxError(message: string, name = "SandboxError", executionTime = 0): RunCodeResult {
  return {
    status: "SandboxError",
    run_result: {
      status: "Error",
      execution_time: executionTime,
      return_code: null,
      stdout: "",
      stderr: `${name}: ${message}\n`,
    },
    error: { kind: "Exception", name, message },
    truncated: false,
  };
}

/** Anything that runs code: the worker pool, or an in-process engine. */
export interface SandboxRunner {
  run(request: RunCodeRequest): Promise<RunCodeResult>;
}
