// e2e: share links and reloads in the app (one WebGPU browser for the spec).
// - A valid link shows what it sets and offers Replay; the address bar keeps the link after
//   the preset picker applies and after a form edit; the replayed run ends at "1/1 steps done"; a
//   reload of the page's own link is not shown as someone else's shared link.
// - Truncated, tampered and unknown-version links show a message naming the problem, a hash
//   that is no link at all says it was not understood, and the page keeps working.
// - A reload mid-run (ci-tiny, its default checkpoints every 2 steps): the run is marked
//   interrupted and offered as "Resume #N from step K", its stored rows drawn before Resume,
//   its steps numbered as the charts and the inspector number them (from 0, before training);
//   resumed, it completes with every row (none twice), the same name in the runs table and the
//   chart hover, and the counts at the end say 8/8; a stopped run says "stopped". The layout
//   holds: the top bar is as high at the end as before Start, each chart's PNG/CSV buttons
//   stay on their toggles' line, the Export buttons are indented as the top bar's title.
// Run: `npx vite build && E2E_SKIP_BUILD=1 npx vitest run --project e2e e2e/link.e2e.test.ts`.
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { defaultRunConfig, mergeConfig } from "../config";
import { encodeLink, LINK_VERSION } from "../config/link";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
mkdirSync("e2e/artifacts", { recursive: true });
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/**
 * The layout the page keeps: the top bar's height, the charts whose PNG/CSV buttons sit on
 * another line than their toggles (none should), and the left edges of the Export buttons and
 * the top bar's title (the buttons are indented as the bar's contents, not flush left).
 */
const layout = (page: Page) =>
  page.evaluate(() => {
    const box = (el: Element | null) => el?.getBoundingClientRect();
    const split = [...document.querySelectorAll(".chart figcaption")]
      .filter((c) => {
        const t = box(c.querySelector(".chart-toggles"));
        const a = box(c.querySelector(".chart-actions"));
        return t && a && Math.abs(t.top + t.height / 2 - (a.top + a.height / 2)) > 4;
      })
      .map((c) => c.querySelector(".chart-title")?.textContent);
    return {
      topBar: Math.round(box(document.querySelector(".topbar"))?.height ?? 0),
      // Each part of the bar: its class, top and height (what grew, when the bar did).
      parts: [...(document.querySelector(".topbar")?.children ?? [])].map(
        (c) =>
          `${c.className} ${Math.round(box(c)?.top ?? 0)}+${Math.round(box(c)?.height ?? 0)} ${c.textContent?.slice(0, 300)}`,
      ),
      split,
      exportX: box(document.querySelector('[data-testid="export-verl"]'))?.x ?? -1,
      titleX: box(document.querySelector(".topbar h1"))?.x ?? 0,
    };
  });

const attr = async (page: Page, id: string, name: string) =>
  (await page.getByTestId(id).getAttribute(name)) ?? "";
const text = async (page: Page, id: string) => (await page.getByTestId(id).textContent()) ?? "";

async function setField(page: Page, path: string, value: string) {
  const input = page.locator(`[data-path="${path}"]`);
  await input.evaluate((el) => {
    const group = el.closest("details");
    if (group) group.open = true;
  });
  await input.fill(value);
  await input.press("Tab");
}

describe("share links in the app", () => {
  it("keeps a valid link in the address bar, replays it, and does not take its own link for a shared one", async () => {
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
    const bannerText = (await banner.textContent()) ?? "";
    expect(bannerText).toContain("seed=42");
    // Summarised as "<name> + N edits", each edit listed with its phase.
    expect(await page.getByTestId("link-summary").textContent()).toBe("Shared run: tiny + 1 edit");
    expect(await page.getByTestId("link-edits").textContent()).toBe("RL step 1: rl.lr → 0.001");
    // The preset picker writes the query; the link stays, and stays after a form edit.
    await page.waitForFunction(() => location.search.includes("preset="), null, { timeout: 60_000 });
    expect(await page.evaluate(() => location.hash)).toBe(hash);
    await setField(page, "seed", "7");
    await page.waitForFunction(() => location.search.includes("seed=7"), null, { timeout: 10_000 });
    expect(await page.evaluate(() => location.hash)).toBe(hash);

    await page.getByTestId("link-replay").click();
    // The run starts: the URL then follows it (its config, re-encoded) and a share button appears.
    await page.getByTestId("share-link").waitFor({ timeout: 120_000 });
    await page.waitForFunction((v) => location.hash.startsWith(`#run=v${v}.`), LINK_VERSION, {
      timeout: 120_000,
    });
    // The end of the run: its one RL step counted once (the final evaluation is no step).
    await page.waitForFunction(
      () => document.querySelector('[data-testid="progress"]')?.getAttribute("data-phase") === "done",
      null,
      { timeout: 180_000 },
    );
    expect(await text(page, "progress-step")).toBe("1");
    expect(await text(page, "progress-total")).toBe("1");
    expect(await text(page, "progress-eta")).toBe("ETA –");
    const own = await page.evaluate(() => location.hash);
    expect(own).not.toBe(hash);

    // A reload of the page's own link: no "Shared run … Replay" banner, and the run it shows
    // ended, so nothing to resume.
    await page.reload();
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await page.waitForFunction(() => location.search.includes("preset="), null, { timeout: 60_000 });
    expect(await page.evaluate(() => location.hash)).toBe(own);
    expect(await page.getByTestId("link-banner").count()).toBe(0);
    expect(await page.getByTestId("resume-banner").count()).toBe(0);
    await page.close();
  });

  for (const [what, mutate, says] of [
    ["truncated", (h: string) => h.slice(0, h.length - 12), /cannot be opened/],
    [
      "tampered",
      (h: string) => `${h.slice(0, -6)}${h.slice(-6) === "AAAAAA" ? "BBBBBB" : "AAAAAA"}`,
      /cannot be opened/,
    ],
    ["unknown version", (h: string) => h.replace(/^#run=v\d+\./, "#run=v9."), /unknown link version 9/],
    ["not-a-link", () => "#utm_source=chat&x=1", /not understood.*run=v/],
  ] as const) {
    it(`explains a ${what} link and keeps the page working`, async () => {
      const hash = await encodeLink({ config: defaultRunConfig(), edits: [], name: "x" });
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${baseUrl}${mutate(hash)}`);
      const banner = page.getByTestId("link-error");
      await banner.waitFor({ timeout: 60_000 });
      expect((await banner.textContent()) ?? "").toMatch(says);
      await page.getByTestId("tab-charts").waitFor();
      expect(errors).toEqual([]);
      await page.close();
    });
  }

  it("offers an interrupted run after a reload and resumes it from its checkpoint to the end", async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    // ci-tiny with its own checkpoint cadence (every 2 steps), smaller steps.
    await page.goto(
      `${baseUrl}?preset=ci-tiny&stop.max_steps=8&rl.prompts_per_step=2&rl.group_size=2&task.eval_every=0&task.eval_size=2`,
    );
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await expect.poll(() => page.getByTestId("start").isEnabled(), { timeout: 30_000 }).toBe(true);
    const idle = await layout(page);
    expect(idle.split, "charts whose PNG/CSV buttons left their toggles' line").toEqual([]);
    expect(idle.exportX).toBeGreaterThanOrEqual(idle.titleX);
    await page.getByTestId("start").click();
    await expect
      .poll(async () => Number(await text(page, "progress-step")), { timeout: 300_000, interval: 250 })
      .toBeGreaterThanOrEqual(1);
    // The elapsed clock ticks between the worker's pushes.
    const e0 = await text(page, "progress-elapsed");
    await expect.poll(() => text(page, "progress-elapsed"), { timeout: 5_000 }).not.toBe(e0);
    const own = await page.evaluate(() => location.hash);
    expect(own).toMatch(/^#run=v/);
    // Reload as soon as step 3 is reached: 8 steps leave room, so a fast adapter cannot
    // finish the run before the reload interrupts it (it did with 4 steps).
    await expect
      .poll(async () => Number(await text(page, "progress-step")), { timeout: 300_000, interval: 100 })
      .toBeGreaterThanOrEqual(3);

    await page.reload();
    const resume = page.getByTestId("resume-banner");
    await resume.waitFor({ timeout: 60_000 });
    const resumeText = (await resume.textContent()) ?? "";
    expect(resumeText).toMatch(/#\d+ ci-tiny was interrupted/);
    const button = page.getByTestId("resume-interrupted");
    const label = (await button.textContent()) ?? "";
    const m = /^Resume (#\d+ ci-tiny) from step (\d+)$/.exec(label);
    expect(m, label).not.toBeNull();
    const [, name, from] = m!;
    expect(Number(from)).toBeGreaterThanOrEqual(2);
    // One numbering everywhere, the charts' (step 0 = the untrained policy's): the banner's
    // last step is the last point drawn before Resume (one reward mean and std per step done),
    // and the checkpoint is before the step after it at the latest.
    const after = /after step (\d+)\)/.exec(resumeText);
    expect(after, resumeText).not.toBeNull();
    const last = Number(after![1]);
    expect(Number(from)).toBeLessThanOrEqual(last + 1);
    expect(resumeText).toContain(`Its last checkpoint is before step ${from};`);
    const rewardChart = page.getByTestId("chart-reward");
    await expect
      .poll(async () => Number(await rewardChart.getAttribute("data-points")), { timeout: 30_000 })
      .toBe(2 * (last + 1));
    expect(Number(await rewardChart.getAttribute("data-x-last"))).toBe(last);
    // The inspector's newest stored samples: that step or the one before (a reload can come
    // between a step's row and its samples being stored), never the count of steps done.
    await page.getByTestId("tab-inspector").click();
    const latest = (await page.getByTestId("inspector-step").locator("option").first().textContent()) ?? "";
    const k = Number(/^latest \(step (\d+)\)$/.exec(latest)?.[1] ?? Number.NaN);
    expect(k, latest).toBeLessThanOrEqual(last);
    expect(k, latest).toBeGreaterThanOrEqual(last - 1);
    // The page's own URL is not someone else's link.
    expect(await page.getByTestId("link-banner").count()).toBe(0);
    await page.getByTestId("tab-runs").click();
    const stored = page.getByTestId("stored-run").filter({ hasText: name });
    await expect.poll(() => stored.getByTestId("stored-run-status").textContent()).toBe("interrupted");
    expect(await stored.getByTestId("stored-run-resume").textContent()).toBe(`Resume from step ${from}`);

    await expect.poll(() => button.isEnabled(), { timeout: 30_000 }).toBe(true);
    await button.click();
    expect(await page.getByTestId("resume-banner").count()).toBe(0);
    // The elapsed clock goes on from the kept steps' time, not from 0: the rows kept reach
    // past step 1, when it already read e0.
    const seconds = (t: string) => {
      const mm = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(t);
      return mm ? Number(mm[1] ?? 0) * 3600 + Number(mm[2] ?? 0) * 60 + Number(mm[3] ?? 0) : Number.NaN;
    };
    await page.getByTestId("progress-elapsed").waitFor();
    expect(seconds(await text(page, "progress-elapsed"))).toBeGreaterThanOrEqual(seconds(e0));
    await page.waitForFunction(
      () => document.querySelector('[data-testid="progress"]')?.getAttribute("data-phase") === "done",
      null,
      { timeout: 400_000 },
    );
    // Counts at the end: 8 of 8 steps, ETA – ; the kept rows came back and the rest were
    // recomputed: one reward point per RL step.
    expect(await text(page, "progress-step")).toBe("8");
    expect(await text(page, "progress-total")).toBe("8");
    // The top bar keeps its height when the run ends; the captions still hold their buttons.
    const ended = await layout(page);
    expect(ended.topBar, JSON.stringify([idle.parts, ended.parts], null, 1)).toBe(idle.topBar);
    expect(ended.split).toEqual([]);
    expect(await text(page, "progress-eta")).toBe("ETA –");
    expect(await page.getByTestId("run-row").first().getByTestId("run-name").textContent()).toBe(name);
    expect(await page.getByTestId("run-row").first().getByTestId("run-status").textContent()).toBe("done");
    await page.getByTestId("tab-charts").click();
    const chart = page.getByTestId("chart-reward");
    // data-points counts the current run's series: reward/mean and reward/std, 8 steps each.
    expect(Number(await chart.getAttribute("data-points"))).toBe(16);
    // 8 steps done: the last reward point is step 7, the final evaluation (the weights after
    // 8 steps) is drawn at step 8.
    expect(await chart.getAttribute("data-x-last")).toBe("7");
    expect(await page.getByTestId("chart-accuracy").getAttribute("data-x-last")).toBe("8");
    // The chart hover names the run as the runs table does.
    const over = (await chart.locator(".u-over").boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.5, over.y + over.height / 2);
    await expect.poll(() => chart.getByTestId("chart-readout").textContent()).toContain(`${name} mean`);

    // A new run: "ETA –" (not "0s") and "– tok/s" until a step is timed; a stopped run says so;
    // its name takes the next number.
    await page.getByTestId("start").click();
    expect(await text(page, "progress-eta")).toBe("ETA –");
    expect(await text(page, "progress")).toContain("– tok/s");
    await expect.poll(() => attr(page, "progress", "data-phase"), { timeout: 300_000 }).toBe("rl");
    await page.getByTestId("stop").click();
    await expect.poll(() => text(page, "run-phase"), { timeout: 60_000 }).toBe("stopped");
    await new Promise((r) => setTimeout(r, 1500));
    expect(await text(page, "run-phase")).toBe("stopped");
    await page.getByTestId("tab-runs").click();
    const next = (await page.getByTestId("run-row").first().getByTestId("run-name").textContent()) ?? "";
    expect(Number(/^#(\d+) /.exec(next)?.[1])).toBeGreaterThan(Number(/^#(\d+) /.exec(name)?.[1]));
    await page.screenshot({ path: "e2e/artifacts/link-resumed.png" });
    expect(errors).toEqual([]);
    await page.close();
  }, 900_000);
});
