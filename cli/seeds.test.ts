// `npm run train -- <recipe> --seeds N`: N complete run folders, seeds S..S+N-1, one after
// another, that `npm run compare` reads as one arm. A tiny from-scratch recipe on the CPU
// model (no SFT, no RL steps: the step-0 evaluation only), so the two runs take seconds.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe("npm run train --seeds", () => {
  it("runs each seed into DIR/seed-<S> and compare aggregates them", () => {
    const dir = mkdtempSync(join(tmpdir(), "lab-seeds-"));
    const recipe = join(dir, "tiny.json");
    writeFileSync(
      recipe,
      JSON.stringify({
        name: "tiny",
        config: {
          seed: 40,
          model: { layers: 1, d_model: 16, heads: 2, context: 48 },
          sft: { steps: 0 },
          task: { eval_size: 2, eval_every: 0 },
          sampling: { max_new_tokens: 8 },
          stop: { max_steps: 0 },
        },
      }),
    );
    const out = join(dir, "arm");
    const train = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "--import",
        "./cli/raw-loader.mjs",
        "cli/train.ts",
        recipe,
        "--seeds",
        "2",
        "--backend",
        "cpu",
        "--out",
        out,
        "--quiet",
      ],
      { encoding: "utf8", timeout: 480_000 },
    );
    expect(train.status, train.stderr).toBe(0);
    for (const s of [40, 41]) {
      expect(existsSync(join(out, `seed-${s}`, "metrics.jsonl"))).toBe(true);
      expect(JSON.parse(readFileSync(join(out, `seed-${s}`, "config.json"), "utf8")).seed).toBe(s);
      const made = JSON.parse(readFileSync(join(out, `seed-${s}`, "run.json"), "utf8"));
      expect(made).toMatchObject({ backend: "cpu", adapter: "CPU reference model" });
      expect(made.starts[0].command).toContain(`--seed ${s}`);
    }
    expect(existsSync(join(out, "seed-42"))).toBe(false);
    const cmp = spawnSync(
      process.execPath,
      ["--import", "tsx", "cli/compare-runs.ts", out, "--keys", "val/acc"],
      {
        encoding: "utf8",
        timeout: 240_000,
      },
    );
    expect(cmp.status, cmp.stderr).toBe(0);
    expect(cmp.stdout).toContain("arm (2 seeds: 40, 41)");
    expect(cmp.stdout).toContain("backend: cpu\n");
    expect(cmp.stdout).toMatch(/\| 0 \| \d\.\d{3} ± \d\.\d{3} \(SE \d\.\d{3}\) \|/);
  }, 720_000);
});
