// The hooks registered by raw-loader.mjs (they run on Node's loader thread).
import { readFile } from "node:fs/promises";

export async function resolve(specifier, context, next) {
  if (specifier.endsWith("?raw")) {
    const url = new URL(specifier, context.parentURL);
    return { url: url.href, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.endsWith("?raw")) {
    const text = await readFile(new URL(url.slice(0, -4)), "utf8");
    return { format: "module", source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  }
  return next(url, context);
}
