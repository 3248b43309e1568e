// e2e: share links in the app. A valid link shows what it sets and offers Replay (which
// starts the run); truncated, tampered and unknown-version links show a message naming the
// problem, and the page keeps working.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { encodeLink } from "../config/link";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe("share links in the app", () => {
  it("shows a valid link's config and replays it", async () => {
    const config = mergeConfig(defaultRunConfig(), {
      seed: 42,
      model: { layers: 1, d_model: 16, heads: 2, context: 80 },
      sft: { steps: 1, batch: 2, warmup_steps: 0 },
      rl: { prompts_per_step: 1, group_size: 2, epochs: 1, minibatches: 1 },
      sampling: { max_new_tokens: 8 },
      task: { eval_size: 1, eval_every: 0 },
      stop: { max_steps: 1 },
    });
    const hash = await encodeLink({
      config,
      edits: [{ phase: "rl", step: 1, path: "rl.lr", value: 0.001 }],
      name: "tiny",
    });
    const page = await browser.newPage();
    await page.goto(`${baseUrl}${hash}`);
    const banner = page.getByTestId("link-banner");
    await banner.waitFor({ timeout: 60_000 });
    const text = (await banner.textContent()) ?? "";
    expect(text).toContain("seed=42");
    expect(text).toContain("1 live edit(s) at steps 1");
    await page.getByTestId("link-replay").click();
    // The run starts: the URL then follows it (its config, re-encoded) and a share button appears.
    await page.getByTestId("share-link").waitFor({ timeout: 120_000 });
    await page.waitForFunction(() => location.hash.startsWith("#run=v2."), null, { timeout: 120_000 });
    await page.close();
  });

  for (const [what, mutate] of [
    ["truncated", (h: string) => h.slice(0, h.length - 12)],
    ["tampered", (h: string) => `${h.slice(0, -6)}${h.slice(-6) === "AAAAAA" ? "BBBBBB" : "AAAAAA"}`],
    ["unknown version", (h: string) => h.replace("#run=v2.", "#run=v9.")],
  ] as const) {
    it(`explains a ${what} link and keeps the page working`, async () => {
      const hash = await encodeLink({ config: defaultRunConfig(), edits: [], name: "x" });
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${baseUrl}${mutate(hash)}`);
      const banner = page.getByTestId("link-error");
      await banner.waitFor({ timeout: 60_000 });
      expect((await banner.textContent())?.length).toBeGreaterThan(30);
      await page.getByTestId("tab-charts").waitFor();
      expect(errors).toEqual([]);
      await page.close();
    });
  }
});
