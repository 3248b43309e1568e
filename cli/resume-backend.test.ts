// `npm run train -- --resume <run folder>` resumes on the backend the run was recorded with
// (run.json), not on the default WebGPU: a CPU run resumed without --backend stays
// on the CPU, and run.json keeps saying so. A tiny recipe on the CPU model, one RL step.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const train = (args: string[]) =>
  spawnSync(
    process.execPath,
    ["--import", "tsx", "--import", "./cli/raw-loader.mjs", "cli/train.ts", ...args],
    {
      encoding: "utf8",
      timeout: 480_000,
    },
  );

describe("npm run train --resume", () => {
  it("keeps the recorded backend when --backend is not given", () => {
    const dir = mkdtempSync(join(tmpdir(), "lab-resume-backend-"));
    const recipe = join(dir, "tiny.json");
    writeFileSync(
      recipe,
      JSON.stringify({
        name: "tiny",
        config: {
          seed: 40,
          model: { layers: 1, d_model: 16, heads: 2, context: 48 },
          sft: { steps: 0 },
          rl: { prompts_per_step: 2, group_size: 2 },
          task: { eval_size: 2, eval_every: 0 },
          sampling: { max_new_tokens: 8 },
          stop: { max_steps: 1 },
          checkpoint_every: 1,
        },
      }),
    );
    const out = join(dir, "run");
    const first = train([recipe, "--backend", "cpu", "--out", out, "--quiet"]);
    expect(first.status, first.stderr).toBe(0);
    const again = train(["--resume", out, "--quiet"]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toContain("backend: cpu");
    const made = JSON.parse(readFileSync(join(out, "run.json"), "utf8"));
    expect(made.backend).toBe("cpu");
    expect(made.starts.map((s: { kind: string; backend: string }) => [s.kind, s.backend])).toEqual([
      ["start", "cpu"],
      ["resume", "cpu"],
    ]);
  }, 960_000);
});
