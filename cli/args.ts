// The CLI's argument reading, once for `npm run train`, `npm run export` and `npm run compare`:
// flags (--quiet), options that take the next argument as their value (--out DIR), and
// positionals in order. An option without its value and an option not in the lists go to the
// command's usage(), which prints the message and the usage and exits 2 (usageExit makes one).
// Tested by cli/args.test.ts.

import { fileURLToPath } from "node:url";

export interface ArgSpec {
  /** Options without a value ("--quiet"). */
  flags: readonly string[];
  /** Options that take the next argument as their value ("--out"). */
  values: readonly string[];
}

export interface ParsedArgs {
  /** The flags given. */
  flags: Set<string>;
  /** Each value option's value (the last one given wins). */
  values: Map<string, string>;
  /** The arguments that are not options, in order. */
  positionals: string[];
}

/** Reads `argv` by `spec`; `usage(message)` ends the command on a missing value or an unknown option. */
export function parseCliArgs(
  argv: readonly string[],
  spec: ArgSpec,
  usage: (msg: string) => never,
): ParsedArgs {
  const out: ParsedArgs = { flags: new Set(), values: new Map(), positionals: [] };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (spec.flags.includes(x)) out.flags.add(x);
    else if (spec.values.includes(x)) {
      const v = argv[++i];
      if (v === undefined) usage(`${x} needs a value`);
      out.values.set(x, v);
    } else if (x.startsWith("--")) usage(`unknown option ${x}`);
    else out.positionals.push(x);
  }
  return out;
}

/** A command's usage(): prints "error: <msg>" (when given) and the usage text to stderr, then exits 2. */
export function usageExit(text: string): (msg?: string) => never {
  return (msg) => {
    if (msg) console.error(`error: ${msg}\n`);
    console.error(text);
    process.exit(2);
  };
}

/** The lab's presets (public/recipes): where a recipe's bare `extends` name is found when not beside it. */
export const PRESETS = fileURLToPath(new URL("../public/recipes/", import.meta.url));
