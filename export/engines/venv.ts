// Where the engines' Python environment lives (made by `npm run engines:setup`,
// export/engines/setup.sh) and whether it is there: the engines test layer
// (`*.engines.test.ts`) and any other test that runs verl, TRL, transformers or PEFT
// take the interpreter from here. cli/test-all.mjs reads the same path and stamp to report
// the layer as skipped, naming the set-up command, when the venv is missing or stale.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ENGINES_SETUP = "npm run engines:setup";
const HERE = dirname(fileURLToPath(import.meta.url));

/** The venv folder: $LAB_ENGINES_VENV, else <cache>/agentic-rl-lab/engines-venv. */
export function enginesVenv(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LAB_ENGINES_VENV) return env.LAB_ENGINES_VENV;
  const cache = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, "agentic-rl-lab", "engines-venv");
}

/** What the set-up stamps into the venv: the hash of the pins it installed. */
export function pinsHash(): string {
  const h = createHash("sha256");
  h.update(readFileSync(join(HERE, "requirements.txt")));
  h.update(readFileSync(join(HERE, "constraints.txt")));
  return h.digest("hex");
}

/** Why the venv cannot be used (missing, or made from other pins), or null when it can. */
export function enginesVenvProblem(env: NodeJS.ProcessEnv = process.env): string | null {
  const venv = enginesVenv(env);
  const stamp = join(venv, ".lab-engines-stamp");
  if (!existsSync(join(venv, "bin", "python")) || !existsSync(stamp))
    return `no engines venv at ${venv}: make it with \`${ENGINES_SETUP}\``;
  if (readFileSync(stamp, "utf8").trim() !== pinsHash())
    return `the engines venv at ${venv} was made from other pins: run \`${ENGINES_SETUP}\` again`;
  return null;
}

/** The venv's python; throws naming the set-up command when the venv is missing or stale. */
export function enginesPython(env: NodeJS.ProcessEnv = process.env): string {
  const problem = enginesVenvProblem(env);
  if (problem) throw new Error(problem);
  return join(enginesVenv(env), "bin", "python");
}
