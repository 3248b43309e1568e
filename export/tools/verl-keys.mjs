// Makes export/verl-keys.json: every key path of verl's flattened PPO trainer config
// (verl/trainer/config/_generated_ppo_trainer.yaml) with the YAML type of its value, and the
// verl commit it came from. Facts only: paths and types, no values. The exporter's test
// (export/export.test.ts) checks every key an export writes against this list.
// Run against an installed verl release (the site-packages folder holding verl/; the engines
// venv's, export/engines/facts.sh) or a verl checkout (a work tree or a bare git dir):
//   node export/tools/verl-keys.mjs <site-packages> --release 0.9.1 > export/verl-keys.json
//   node export/tools/verl-keys.mjs /path/to/verl > export/verl-keys.json
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isMap, isScalar, isSeq, parseDocument } from "yaml";

const FILE = "verl/trainer/config/_generated_ppo_trainer.yaml";

function read(dir, release) {
  const tree = join(dir, FILE);
  if (release) return { commit: null, text: readFileSync(tree, "utf8") };
  const gitDir = existsSync(join(dir, ".git")) ? join(dir, ".git") : dir;
  const commit = execFileSync("git", ["--git-dir", gitDir, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
  const text = existsSync(tree)
    ? readFileSync(tree, "utf8")
    : execFileSync("git", ["--git-dir", gitDir, "show", `HEAD:${FILE}`], { encoding: "utf8" });
  return { commit, text };
}

/**
 * The YAML type of a node: map, list, bool, int, float, str, null; "???" is missing, ${..}
 * an interpolation. int and float follow the source text (1.0 is a float), as PyYAML does.
 */
function typeOf(node, text) {
  if (isMap(node)) return "map";
  if (isSeq(node)) return "list";
  if (!isScalar(node)) throw new Error(`unexpected YAML node at ${node?.range}`);
  const v = node.value;
  if (v === null) return "null";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") {
    const src = text.slice(node.range[0], node.range[1]);
    return /^[-+]?\d+$/.test(src) ? "int" : "float";
  }
  if (v === "???") return "missing";
  if (/^\$\{.*\}$/s.test(v)) return "interpolation";
  return "str";
}

function walk(map, prefix, text, out) {
  for (const pair of map.items) {
    const path = prefix ? `${prefix}.${pair.key.value}` : String(pair.key.value);
    out[path] = typeOf(pair.value, text);
    if (isMap(pair.value)) walk(pair.value, path, text, out);
  }
}

const [dir, flag, release] = process.argv.slice(2);
if (!dir || (flag !== undefined && (flag !== "--release" || !release))) {
  console.error(
    "usage: node export/tools/verl-keys.mjs <site-packages --release V | verl checkout or git dir> > export/verl-keys.json",
  );
  process.exit(2);
}
const { commit, text } = read(dir, release);
const doc = parseDocument(text);
if (doc.errors.length) throw new Error(`${FILE}: ${doc.errors[0].message}`);
const keys = {};
walk(doc.contents, "", text, keys);
process.stdout.write(
  `${JSON.stringify({ source: `volcengine/verl ${FILE}`, ...(release ? { verl_release: release } : { verl_commit: commit }), count: Object.keys(keys).length, keys }, null, 1)}\n`,
);
