// task.options: each task declares its options as a strict zod object (next to its factory),
// and parseTaskOptions checks a run's options against it, so a misspelt or out-of-range option
// is an error naming it (`task.options.digts: unknown option; did you mean digits?`) instead of
// being ignored. Used by the registry in tasks/index.ts. Tested by tasks/index.test.ts.
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
  const lines: string[] = [];
  for (const issue of r.error.issues) {
    const at = ["task.options", ...issue.path.map(String)].join(".");
    if (issue.code === "unrecognized_keys") {
      const known = keysAt(schema, issue.path);
      for (const key of issue.keys) {
        const near = didYouMean(key, known);
        lines.push(
          `${at}.${key}: unknown option${near ? `; did you mean ${near}?` : ""} (${task} options: ${known.join(", ") || "none"})`,
        );
      }
    } else lines.push(`${at}: ${issue.message}`);
  }
  throw new Error(lines.join("\n"));
}
