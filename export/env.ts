// A lab JavaScript environment as the exported Python runs it: env.json for
// export/env/lab_env.py, holding the module as a script (tasks/env-api/runtime.ts
// moduleAsScript), the API's dispatch, what describe() said of it (tools, multi-turn, the turn
// limit) and the call limits, so Python builds the very program the lab's sandbox runs for
// each call. Tested by export/engines/env-parity.engines.test.ts.
import { DEFAULT_ENV_LIMITS, type JsEnvLimits, JsEnvProgram } from "../tasks/env-api/js-env.ts";
import { ENV_API_VERSION, ENV_DISPATCH } from "../tasks/env-api/runtime.ts";

export interface EnvExport {
  api_version: number;
  name: string;
  source: string;
  script: string;
  dispatch: string;
  tools: { name: string; description: string; parameters: unknown }[];
  multi_turn: boolean;
  max_turns: number;
  max_tool_calls: number;
  timeout_s: number;
  memory_mb: number;
}

/** env.json of an environment's source (the environment engine must be loaded: prepareEnvEngine). */
export function envExportJson(source: string, limits: JsEnvLimits = DEFAULT_ENV_LIMITS): EnvExport {
  const p = new JsEnvProgram(source, limits);
  return {
    api_version: ENV_API_VERSION,
    name: p.info.name,
    source,
    script: p.script,
    dispatch: ENV_DISPATCH,
    tools: p.info.tools,
    multi_turn: p.info.multiTurn,
    max_turns: p.info.maxTurns,
    max_tool_calls: limits.maxToolCalls,
    timeout_s: limits.timeoutS,
    memory_mb: limits.memoryMB,
  };
}
