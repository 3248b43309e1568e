// e2e: the trainer worker's API drives a real (tiny) run in Chromium: WebGPU model in a
// dedicated worker, QuickJS pool in nested workers, metrics pushed back to the page.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { launchChromium } from "./chromium";
import { serveHarness } from "./harness-server";

let browser: Browser;
let server: { url: string; close(): Promise<void> };

beforeAll(async () => {
  server = await serveHarness();
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("trainer worker in Chromium", () => {
  it("serves tool calls from the QuickJS pool in nested workers, hard kill included", async () => {
    const page = await browser.newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => document.getElementById("status")?.textContent === "ready");
    const report = await page.evaluate(() => (globalThis as any).trainer.sandboxSmoke(200));
    expect(report.checks.filter((c: { ok: boolean }) => !c.ok)).toEqual([]);
    expect(report.ok).toBe(true);
    await page.close();
  });

  it("runs SFT and RL steps and pushes metrics rows, samples and progress", async () => {
    const page = await browser.newPage();
    page.on("pageerror", (e) => console.error("pageerror", e.message));
    await page.goto(server.url);
    await page.waitForFunction(() => document.getElementById("status")?.textContent === "ready");
    const config = mergeConfig(defaultRunConfig(), {
      seed: 3,
      model: { layers: 1, d_model: 16, heads: 2, context: 80 },
      sft: { steps: 2, batch: 4, warmup_steps: 1 },
      rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1 },
      sampling: { max_new_tokens: 16 },
      task: { eval_size: 2, eval_every: 0 },
      stop: { max_steps: 2 },
    });
    await page.evaluate((c) => (globalThis as any).startRun(c), config);
    await page.waitForFunction(
      () => (globalThis as any).collected.rows.filter((r: any) => r.phase === "rl").length >= 3,
      null,
      {
        timeout: 300_000,
      },
    );
    const got = await page.evaluate(() => (globalThis as any).collected);
    const errors = got.events.filter((e: any) => e.kind === "error");
    expect(errors).toEqual([]);
    const rl = got.rows.filter((r: any) => r.phase === "rl");
    expect(got.rows.filter((r: any) => r.phase === "sft")).toHaveLength(2);
    expect(rl[0]).toHaveProperty(["reward/mean"]);
    expect(rl[0]).toHaveProperty(["actor/grad_norm"]);
    expect(rl[0]).toHaveProperty(["val/acc"]);
    expect(got.samples.length).toBeGreaterThan(0);
    expect(got.progress.some((p: any) => p.activity === "rollout")).toBe(true);
    await page.close();
  });
});
