// The baseline group (`npm run bench -- baseline`): this tree against the code of a pinned git tag,
// built beside it. The tag's commit is checked out (detached) into a git worktree under the OS temp
// folder, with this tree's node_modules linked in; each measurement then runs in its own child
// process (bench/baseline-child.ts) from each tree in turn, pinned first then ours, rep after rep
// (A/B/A/B...), so load on the machine falls on both alike. Rows (median of the reps; `spread` is
// ours' (max - min) / median, the note gives both sides' ranges and the load average):
//  - baseline_quick_demo_rl_step: the quick-demo recipe's RL step from its SFT checkpoint (s);
//  - baseline_rl_step_smollm2_l4_512: bench/rl-shape.ts's RL step at SmolLM2's layers x 4, context 512 (s);
//  - baseline_decode_smollm2_b1: KV-cache decode at batch 1, SmolLM2-135M's shape (tokens/s);
//  - baseline_smollm2_train_step: SmolLM2-135M's train step at batch 1 x 64 (tokens/s).
// --quick runs 1 rep of each instead of 3.
// Standalone: npx tsx bench/baseline.ts [--quick]
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, realpathSync, symlinkSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Measure } from "./baseline-child";
import { type BenchRow, makeRow } from "./report";

/** The pinned tag and the commit it must name (the last commit before the kernel plan). */
export const BASELINE_TAG = "bench-baseline";
export const BASELINE_COMMIT = "d3993fefc2f7789e8fdd636fb014e726b93998af";

const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
const CHILD = join(ROOT, "bench/baseline-child.ts");

const git = (args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();

/** The pinned tree: the tag (made at BASELINE_COMMIT when absent) checked out beside this one. */
export function baselineTree(): string {
  let commit: string;
  try {
    commit = git(["rev-parse", `${BASELINE_TAG}^{commit}`]);
  } catch {
    git(["tag", BASELINE_TAG, BASELINE_COMMIT]);
    commit = BASELINE_COMMIT;
  }
  if (commit !== BASELINE_COMMIT)
    throw new Error(`tag ${BASELINE_TAG} names ${commit}, not ${BASELINE_COMMIT}`);
  const dir = join(tmpdir(), `agentic-rl-lab-bench-baseline-${commit.slice(0, 7)}`);
  if (!existsSync(join(dir, ".git"))) git(["worktree", "add", "--detach", dir, commit]);
  else if (git(["-C", dir, "rev-parse", "HEAD"]) !== commit) throw new Error(`${dir} is not at ${commit}`);
  if (!existsSync(join(dir, "node_modules")))
    symlinkSync(realpathSync(join(ROOT, "node_modules")), join(dir, "node_modules"));
  return dir;
}

interface ChildResult {
  value: number;
  unit: string;
  detail: string;
  adapter?: string;
}

/** One measurement on the tree at `root`, in a fresh process. */
function runChild(root: string, measure: Measure): ChildResult {
  const tsx = join(ROOT, "node_modules/.bin/tsx");
  const r = spawnSync(tsx, ["--import", join(root, "cli/raw-loader.mjs"), CHILD, root, measure], {
    cwd: root,
    encoding: "utf8",
    timeout: 15 * 60_000,
    maxBuffer: 64 << 20,
  });
  const line = r.stdout
    ?.split("\n")
    .reverse()
    .find((l) => l.startsWith("{"));
  if (r.status !== 0 || !line)
    throw new Error(
      `${measure} on ${root} failed (${r.status ?? r.signal}): ${(r.stderr ?? "").slice(-2000)}`,
    );
  return JSON.parse(line) as ChildResult;
}

const ROWS: { measure: Measure; id: string; better: "higher" | "lower"; what: string }[] = [
  {
    measure: "quick_demo_rl_step",
    id: "baseline_quick_demo_rl_step",
    better: "lower",
    what: "quick-demo recipe's RL step from its SFT checkpoint (public/recipes/quick-demo.json), median of steps 2-4 in each process",
  },
  {
    measure: "rl_step_l4_512",
    id: "baseline_rl_step_smollm2_l4_512",
    better: "lower",
    what: "bench/rl-shape.ts's RL step (SmolLM2-135M's layers x 4, LoRA r16, 2 prompts x 2 samples, 384-token prompts decoded to context 512, old log-probs, one update), after a warm-up step at context 32",
  },
  {
    measure: "decode_b1",
    id: "baseline_decode_smollm2_b1",
    better: "higher",
    what: "KV-cache decode at batch 1, SmolLM2-135M's shape (30 layers, random weights), 4-token prompt, 8 tokens timed after one warm-up decode",
  },
  {
    measure: "train_step",
    id: "baseline_smollm2_train_step",
    better: "higher",
    what: "SmolLM2-135M's train step (forwardScore + backward + clipped AdamW, random weights), batch 1 x 64, one timed step after a warm-up step",
  },
];

const range = (xs: number[]) => `${Math.min(...xs).toPrecision(3)}-${Math.max(...xs).toPrecision(3)}`;

export async function runBaselineBench(opts: { quick?: boolean } = {}): Promise<{ rows: BenchRow[] }> {
  const reps = opts.quick ? 1 : 3;
  const pinned = baselineTree();
  const rows: BenchRow[] = [];
  for (const spec of ROWS) {
    const ours: ChildResult[] = [];
    const base: ChildResult[] = [];
    const loads: number[] = [];
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) {
      loads.push(loadavg()[0]);
      base.push(runChild(pinned, spec.measure));
      console.error(
        `[baseline] ${spec.measure} rep ${r + 1} pinned ${base[r].value.toPrecision(4)} ${base[r].unit}`,
      );
      ours.push(runChild(ROOT, spec.measure));
      console.error(
        `[baseline] ${spec.measure} rep ${r + 1} ours ${ours[r].value.toPrecision(4)} ${ours[r].unit}`,
      );
    }
    loads.push(loadavg()[0]);
    const o = ours.map((x) => x.value);
    const b = base.map((x) => x.value);
    rows.push(
      makeRow({
        id: spec.id,
        group: "baseline",
        ours: o,
        baseline: b,
        unit: ours[0].unit,
        better: spec.better,
        note: `${spec.what}; ours this tree, baseline tag ${BASELINE_TAG} (${BASELINE_COMMIT.slice(0, 7)}, before the kernel plan) built in a git worktree; each a fresh process, ${reps} interleaved repetitions (pinned first); ours ${range(o)}, baseline ${range(b)} ${ours[0].unit}; last ours: ${ours[reps - 1].detail}; last baseline: ${base[reps - 1].detail}; 1-minute load average ${range(loads)} on the shared 2-core machine over ${((performance.now() - t0) / 1000).toFixed(0)} s; Node/Dawn adapter: ${ours[0].adapter ?? "?"}`,
      }),
    );
  }
  return { rows };
}

const argv1 = process.argv[1];
if (argv1 && fileURLToPath(import.meta.url) === argv1) {
  const { rows } = await runBaselineBench({ quick: process.argv.includes("--quick") });
  for (const r of rows)
    console.log(
      `${r.id.padEnd(34)} ours ${r.ours.toPrecision(4)} base ${r.baseline.toPrecision(4)} ${r.unit} ratio ${r.ratio.toFixed(3)} (${r.note})`,
    );
  process.exit(0);
}
