// task.options: each built-in task's options as a strict zod object, and parseTaskOptions, which
// checks a run's options against its task's schema so a misspelt or out-of-range option is an
// error naming it (`task.options.digts: unknown option; did you mean digits?`) instead of being
// ignored. They live in config/ (a leaf) so the schema checks them where a config is parsed
// (parseRunConfig, encodeLink, the page's form); the task registry (tasks/index.ts) pairs each
// with its factory. Tested by tasks/index.test.ts and config/config.test.ts.
import { z } from "zod";

/** A share in [0, 1]. */
export const share = () =>
  z.number({ error: "must be a number" }).min(0, "must be >= 0").max(1, "must be <= 1");
/** A whole number >= min. */
export const whole = (min = 0) =>
  z.number({ error: "must be a number" }).int("must be an integer").min(min, `must be >= ${min}`);
export const anyNumber = () => z.number({ error: "must be a number" });

/** Levenshtein distance (small strings: option names). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j];
      d[j] = Math.min(
        d[j] + 1,
        d[j - 1] + 1,
        prev + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1),
      );
      prev = cur;
    }
  }
  return d[b.length];
}

/** The known name closest to `name`, when it is close enough to be a slip. */
export function didYouMean(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const dist = distance(name, k);
    if (dist < bestD) [best, bestD] = [k, dist];
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(name.length / 3)) ? best : undefined;
}

/** The keys a (possibly nested) zod object schema allows at `path`. */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let s: z.ZodType = schema;
  for (const k of path) {
    const shape = (s as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
    const next = shape?.[String(k)];
    if (!next) return [];
    s = next instanceof z.ZodOptional ? (next.unwrap() as z.ZodType) : next;
  }
  const shape = (s as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
  return shape ? Object.keys(shape) : [];
}

/**
 * Validates a task's options; returns them parsed, or throws an Error whose message has one
 * line per problem, each naming the option by its full path (task.options.<name>...).
 */
export function parseTaskOptions<T>(task: string, schema: z.ZodType<T>, options: unknown): T {
  const r = schema.safeParse(options ?? {});
  if (r.success) return r.data;
  throw new Error(
    taskOptionIssues(task, schema, r.error.issues)
      .map((i) => `${["task.options", ...i.path].join(".")}: ${i.message}`)
      .join("\n"),
  );
}

/** The problems of a task's options, each at its path under task.options, unknown keys named. */
export function taskOptionIssues(
  task: string,
  schema: z.ZodType,
  issues: readonly z.core.$ZodIssue[],
): { path: string[]; message: string }[] {
  const out: { path: string[]; message: string }[] = [];
  for (const issue of issues) {
    const at = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      const known = keysAt(schema, issue.path);
      for (const key of issue.keys) {
        const near = didYouMean(key, known);
        out.push({
          path: [...at, key],
          message: `unknown option${near ? `; did you mean ${near}?` : ""} (${task} options: ${known.join(", ") || "none"})`,
        });
      }
    } else out.push({ path: at, message: issue.message });
  }
  return out;
}

/** task.options of the arithmetic task: ArithmeticConfig's fields, and `sft` (ArithmeticDemoKnobs). */
export const ARITHMETIC_OPTIONS = z
  .object({
    hardFraction: share(),
    hardMulFraction: share(),
    mulDigits: z.tuple([whole(1), whole(1)]),
    sumDigits: whole(1),
    easyMulFraction: share(),
    easyMulMax: whole(1),
    easyAddMax: whole(1),
    random: z
      .object({
        steps: whole(1),
        digits: whole(1),
        operators: z.array(z.enum(["+", "-", "*"])).min(1, "needs at least one operator"),
        parens: z.boolean(),
      })
      .strict(),
    evalFraction: share(),
    oneOp: z.boolean(),
    sft: z
      .object({
        toolRate: share(),
        thinkRate: share(),
        wrongRate: share(),
        easyWrongRate: share(),
        toolErrorRate: share(),
        thinkTool: z.string(),
        thinkDirect: z.string(),
        easyToolRate: share(),
        checkRate: share(),
      })
      .partial()
      .strict(),
  })
  .partial()
  .strict();

/** task.options of word-problems: templates, evalFraction and `sft` (WordDemoKnobs). */
export const WORD_PROBLEMS_OPTIONS = z
  .object({
    templates: z.array(z.string()),
    evalFraction: share(),
    sft: z.object({ toolRate: share(), thinkRate: share(), wrongRate: share() }).partial().strict(),
  })
  .partial()
  .strict();

/**
 * task.options of function-calling: library ("seeds" or "catalogue"), templates, evalFraction,
 * compact, toolList and `sft` ({thinkRate}).
 */
export const FUNCTION_CALLING_OPTIONS = z
  .object({
    library: z.enum(["seeds", "catalogue"]),
    templates: z.array(z.string()),
    evalFraction: share(),
    compact: z.boolean(),
    toolList: z.boolean(),
    sft: z.object({ thinkRate: share() }).partial().strict(),
  })
  .partial()
  .strict();

/** task.options of frozenlake: FrozenLakeConfig's fields, and `sft` ({thinkRate}). */
export const FROZENLAKE_OPTIONS = z
  .object({
    size: whole(2),
    frozenProb: share(),
    slipProb: share(),
    maxSteps: whole(1),
    goalReward: anyNumber(),
    invalidPenalty: anyNumber(),
    brief: z.boolean(),
    sft: z.object({ thinkRate: share() }).partial().strict(),
  })
  .partial()
  .strict();

/** task.options of sokoban: SokobanConfig's fields, and `sft` ({thinkRate}). */
export const SOKOBAN_OPTIONS = z
  .object({
    width: whole(3),
    height: whole(3),
    boxes: whole(1),
    innerWalls: whole(0),
    reverseSteps: whole(1),
    maxSteps: whole(1),
    stepPenalty: anyNumber(),
    boxOnReward: anyNumber(),
    boxOffPenalty: anyNumber(),
    solvedReward: anyNumber(),
    invalidPenalty: anyNumber(),
    sft: z.object({ thinkRate: share() }).partial().strict(),
  })
  .partial()
  .strict();

/** The environment API version this lab runs (tasks/env-api/runtime.ts ENV_API_VERSION). */
export const ENV_API_VERSION = 1;
/** Past this many characters of task.options.source a share link says so and offers the bundle. */
export const ENV_SOURCE_LINK_MAX = 6000;

/**
 * task.options of a JavaScript environment (task.name "env", docs/ENVIRONMENTS.md): the API
 * version it was written for, its module's source (or a template's name), and the turn limit
 * that overrides the module's maxTurns.
 */
export const ENV_OPTIONS = z
  .object({
    api_version: z.literal(ENV_API_VERSION, {
      error: `must be ${ENV_API_VERSION} (the environment API version this lab runs)`,
    }),
    source: z.string().min(1, "must not be empty").max(200_000, "must be at most 200,000 characters"),
    template: z.string().min(1, "must not be empty"),
    max_turns: whole(1),
    sft: z.object({}).strict(),
  })
  .partial({ source: true, template: true, max_turns: true, sft: true })
  .strict()
  .refine((o) => (o.source === undefined) !== (o.template === undefined), {
    message: "give exactly one of source (the module) and template (a template's name)",
    path: ["source"],
  });

/** task.options' schema of each built-in task, by task.name (tasks/index.ts pairs them with factories). */
export const TASK_OPTIONS: Record<string, z.ZodType> = {
  arithmetic: ARITHMETIC_OPTIONS,
  "word-problems": WORD_PROBLEMS_OPTIONS,
  "function-calling": FUNCTION_CALLING_OPTIONS,
  frozenlake: FROZENLAKE_OPTIONS,
  sokoban: SOKOBAN_OPTIONS,
  env: ENV_OPTIONS,
};
