// e2e: the app shell in real Chromium. With WebGPU on, the trainer worker reports the adapter;
// with WebGPU off (no --enable-unsafe-webgpu: requestAdapter() returns null) a clear banner shows.
import { mkdirSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
const browsers: Browser[] = [];
mkdirSync("e2e/artifacts", { recursive: true });

afterAll(async () => {
  await Promise.all(browsers.map((b) => b.close()));
});

describe("app shell", () => {
  it("shows the adapter reported by the trainer worker", async () => {
    const browser = await launchChromium();
    browsers.push(browser);
    const page = await browser.newPage();
    await page.goto(baseUrl);
    const info = page.getByTestId("adapter-info");
    await info.waitFor({ timeout: 60_000 });
    const vendor = await page.getByTestId("adapter-vendor").textContent();
    expect(vendor?.length).toBeGreaterThan(0);
    expect(await page.getByTestId("webgpu-banner").count()).toBe(0);
    await page.screenshot({ path: "e2e/artifacts/adapter.png" });
  });

  it("shows a clear banner, not a blank page, when WebGPU is unavailable", async () => {
    const browser = await launchChromium({ webgpu: false });
    browsers.push(browser);
    const page = await browser.newPage();
    await page.goto(baseUrl);
    const banner = page.getByTestId("webgpu-banner");
    await banner.waitFor({ timeout: 60_000 });
    expect(await banner.textContent()).toMatch(/WebGPU is unavailable/);
    expect(await banner.textContent()).toMatch(/adapter|not available/);
    await page.screenshot({ path: "e2e/artifacts/no-webgpu.png" });
  });
});
