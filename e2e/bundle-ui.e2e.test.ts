// e2e: a run bundle opens read-only in a browser without WebGPU: the banner says training is
// disabled, the bundle imports through the Runs tab, and its rows fill the charts.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { defaultRunConfig } from "../config";
import { encodeBundle } from "../rl/bundle";
import type { MetricsRow } from "../rl/trainer";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium({ webgpu: false });
});
afterAll(async () => {
  await browser?.close();
});

describe("bundles without WebGPU", () => {
  it("imports a bundle and shows its charts while training is disabled", async () => {
    // A bundle as the CLI's run folders become: rows with DESIGN.md's names over 6 RL steps.
    const metrics: MetricsRow[] = Array.from({ length: 6 }, (_, step) => ({
      step,
      phase: "rl",
      time: step * 10,
      "reward/mean": 0.2 + 0.1 * step,
      "reward/std": 0.4,
      "acc/mean": 0.2 + 0.1 * step,
      "tool/call_rate": 0.3 + 0.1 * step,
      "actor/entropy": 0.5 - 0.05 * step,
      "actor/grad_norm": 0.8,
    }));
    const bytes = await encodeBundle({
      name: "offline-run",
      createdAt: new Date(0).toISOString(),
      config: defaultRunConfig(),
      edits: [],
      metrics,
      samples: [],
      events: [],
    });
    const file = join(mkdtempSync(join(tmpdir(), "bundle-")), "offline.run.json.gz");
    writeFileSync(file, bytes);

    const page = await browser.newPage();
    await page.goto(baseUrl);
    await page.getByTestId("webgpu-banner").waitFor({ timeout: 60_000 });
    await page.getByTestId("tab-runs").click();
    await page.locator('input[type="file"]').setInputFiles(file);
    const row = page.getByTestId("stored-run").filter({ hasText: "offline-run" });
    await row.waitFor({ timeout: 60_000 });
    await row.getByRole("button", { name: "Open" }).click();
    await page.getByTestId("tab-charts").click();
    await expect
      .poll(async () => Number(await page.getByTestId("chart-reward").getAttribute("data-points")), {
        timeout: 60_000,
      })
      .toBeGreaterThan(0);
    await page.screenshot({ path: "e2e/artifacts/bundle-no-webgpu.png" });
    await page.close();
  });
});
