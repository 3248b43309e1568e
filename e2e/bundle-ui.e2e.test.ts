// e2e: a run bundle opens read-only in a browser without WebGPU: one banner says training is
// disabled and that bundles can still be imported and viewed, Start and Step are disabled,
// the bundle imports through the Runs tab under a name of its own ("#N offline-run
// (imported)", a second import another N), and its rows fill the charts, whose hover names the
// run as the runs table does.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { defaultRunConfig } from "../config";
import { encodeBundle } from "../rl/run/run-bundle";
import type { MetricsRow } from "../rl/run/trainer";
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
    expect(await page.getByTestId("webgpu-banner").count()).toBe(1);
    expect(await page.getByTestId("webgpu-banner").textContent()).toMatch(/can still be imported and viewed/);
    expect(await page.getByTestId("start").isDisabled()).toBe(true);
    expect(await page.getByTestId("step").isDisabled()).toBe(true);
    await page.getByTestId("tab-runs").click();
    const names = page.getByTestId("stored-run-name");
    await page.locator('.import-bundle input[type="file"]').setInputFiles(file);
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(1);
    await page.locator('.import-bundle input[type="file"]').setInputFiles(file);
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(2);
    const [first, second] = await names.allTextContents();
    expect(first).toMatch(/^#\d+ offline-run \(imported\)$/);
    expect(second).toMatch(/^#\d+ offline-run \(imported\)$/);
    expect(second).not.toBe(first);
    const row = page.getByTestId("stored-run").filter({ hasText: first });
    await row.getByRole("button", { name: "Open" }).click();
    await expect.poll(() => page.getByTestId("run-name").first().textContent()).toBe(first);
    await page.getByTestId("tab-charts").click();
    const chart = page.getByTestId("chart-reward");
    await expect
      .poll(async () => Number(await chart.getAttribute("data-points")), { timeout: 60_000 })
      .toBeGreaterThan(0);
    const over = (await chart.locator(".u-over").boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.5, over.y + over.height / 2);
    await expect.poll(() => chart.getByTestId("chart-readout").textContent()).toContain(`${first} mean`);
    // Pressing nothing started anything: no error banner besides the WebGPU one.
    expect(await page.getByTestId("app-error").count()).toBe(0);
    await page.screenshot({ path: "e2e/artifacts/bundle-no-webgpu.png" });
    await page.close();
  });
});
