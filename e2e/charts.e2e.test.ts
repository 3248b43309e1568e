// e2e: the charts as people who live in TensorBoard and W&B use them, and the page on a
// phone, in one browser session (issue #30, and the page half of multi-seed from #27). Two
// imported bundles opened together are a comparison whose legends name both runs; three edits
// at neighbouring steps draw as one "3 edits" marker inside the chart; "add chart" over the
// rows' keys charts val/acc/hard; its CSV download has every row; the favicon loads; at
// 390x844 the first chart is within the first screen after opening the charts tab, the config
// is a drawer and comes after the charts in tab order; Start with seeds 2 runs both seeds one
// after another as one group, drawn as a mean with a band and listed as a group; after a reload
// the stored runs list the group, and opening it draws the band again; a verl and a TRL run
// brought back (issue #39, results/) chart next to a lab run and a verl sample shows in the inspector.
// Screenshots: e2e/artifacts/ (the README's are taken by e2e/screenshots.ts, `npm run screenshots`).
// Run: `npx vitest run --project e2e e2e/charts.e2e.test.ts`.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type ConfigEdit, defaultRunConfig, mergeConfig, type RunConfig } from "../config";
import { encodeBundle } from "../rl/run/run-bundle";
import type { MetricsRow } from "../rl/run/trainer";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
let browser: Browser;
mkdirSync("e2e/artifacts", { recursive: true });
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const STEPS = 10;

/** A bundle as the CLI's run folders become: rows with DESIGN.md's names, evaluation every 2 steps. */
async function bundleFile(name: string, lift: number, edits: ConfigEdit[]): Promise<string> {
  const config: RunConfig = mergeConfig(defaultRunConfig(), { rl: { kl: { coef: 0.01 } } }) as RunConfig;
  const metrics: MetricsRow[] = Array.from({ length: STEPS }, (_, step) => ({
    step,
    phase: "rl",
    time: step * 12.5,
    "reward/mean": 0.2 + lift * step,
    "reward/std": 0.4 - 0.01 * step,
    "acc/mean": 0.1 + lift * step,
    "actor/kl_ref": 0.001 * step,
    "actor/entropy": 0.6 - 0.02 * step,
    "actor/grad_norm": 0.5 + 0.05 * (step % 3),
    "tool/call_rate": 0.3 + lift * step,
    "groups/zero_std_frac": 0.5 - 0.03 * step,
    ...(step % 2 === 0 ? { "val/acc": 0.2 + lift * step, "val/acc/hard": 0.05 + lift * step } : {}),
  }));
  const bytes = await encodeBundle({
    name,
    createdAt: new Date(0).toISOString(),
    config,
    edits,
    metrics,
    samples: [],
    events: edits.map((e) => ({
      step: e.step,
      phase: e.phase,
      kind: "edit" as const,
      message: `${e.path} = ${JSON.stringify(e.value)}`,
      edit: e,
    })),
  });
  const file = join(mkdtempSync(join(tmpdir(), "bundle-")), `${name}.run.json.gz`);
  writeFileSync(file, bytes);
  return file;
}

async function waitFor(cond: () => Promise<boolean>, timeoutMs: number, what: string) {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

async function setField(page: Page, path: string, value: string) {
  const input = page.locator(`[data-path="${path}"]`);
  await input.evaluate((el) => {
    const group = el.closest("details");
    if (group) group.open = true;
  });
  await input.fill(value);
  await input.press("Tab");
}

async function openStored(page: Page, name: RegExp) {
  const row = page.getByTestId("stored-run").filter({ hasText: name });
  await row.getByRole("button", { name: "Open" }).click();
}

describe("charts, comparisons and the page on a phone", () => {
  it("compares two runs with legends, adds a chart from the picker, downloads its CSV, loads the favicon", async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, acceptDownloads: true });
    const consoleErrors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(baseUrl);
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    // The favicon the page names loads (its 404 was the only console error).
    const icon = await page.evaluate(async () => {
      const href = (document.querySelector('link[rel="icon"]') as HTMLLinkElement | null)?.href ?? "";
      const res = await fetch(href);
      return { href, status: res.status, type: res.headers.get("content-type") ?? "" };
    });
    expect(icon.status).toBe(200);
    expect(icon.type).toMatch(/svg/);

    const three: ConfigEdit[] = [
      { phase: "rl", step: 4, path: "rl.lr", value: 0.0005 },
      { phase: "rl", step: 4, path: "rl.kl.coef", value: 0.02 },
      { phase: "rl", step: 5, path: "rl.lr", value: 0.001 },
    ];
    const a = await bundleFile("arm-a", 0.03, three);
    const b = await bundleFile("arm-b", 0.05, []);
    await page.getByTestId("tab-runs").click();
    const names = page.getByTestId("stored-run-name");
    const before = await names.count();
    await page.locator('.import-bundle input[type="file"]').setInputFiles(a);
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(before + 1);
    await page.locator('.import-bundle input[type="file"]').setInputFiles(b);
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(before + 2);
    await openStored(page, /arm-a/);
    await openStored(page, /arm-b/);
    const nameA = (await page.getByTestId("run-name").filter({ hasText: "arm-a" }).textContent()) ?? "";
    const nameB = (await page.getByTestId("run-name").filter({ hasText: "arm-b" }).textContent()) ?? "";
    expect(nameA).toMatch(/^#\d+ arm-a/);

    // The comparison: every chart with points names both runs in its legend.
    await page.getByTestId("tab-charts").click();
    const reward = page.getByTestId("chart-reward");
    await expect
      .poll(async () => Number(await reward.getAttribute("data-points")), { timeout: 30_000 })
      .toBe(2 * STEPS); // the current run's mean and std
    for (const id of ["reward", "accuracy", "kl", "entropy", "tool-calls"]) {
      const legend = await page.getByTestId(`chart-${id}`).getByTestId("legend-run").allTextContents();
      expect(legend, `legend of ${id}`).toEqual([nameA, nameB]);
    }
    // Keys in their dashes: reward's mean solid, std dashed.
    expect(await reward.getByTestId("legend-key").allTextContents()).toEqual(["mean", "std"]);
    // Three edits at steps 4, 4 and 5 are one marker, "3 edits", listed on hover, inside the plot.
    const marker = reward.locator('[data-testid="chart-marker"]');
    await expect.poll(() => marker.count()).toBe(1);
    expect(await marker.textContent()).toBe("3 edits");
    expect((await marker.getAttribute("title"))?.split("\n")).toHaveLength(3);
    const over = (await reward.locator(".u-over").boundingBox())!;
    const label = (await marker.locator("span").boundingBox())!;
    expect(label.x).toBeGreaterThanOrEqual(over.x - 1);
    expect(label.x + label.width).toBeLessThanOrEqual(over.x + over.width + 1);
    // Units on the axes; the SFT chart is absent (neither run has SFT rows); KL is drawn.
    // (uPlot draws the axis labels on its canvas; the figure names them too.)
    expect([await reward.getAttribute("data-x-label"), await reward.getAttribute("data-unit")]).toEqual([
      "RL step",
      "reward",
    ]);
    expect(await page.getByTestId("chart-sft-loss").count()).toBe(0);

    // "Add chart": search the rows' keys, add val/acc/hard; it draws both runs' evaluations.
    await page.getByTestId("add-chart").click();
    await page.getByTestId("chart-search").fill("acc/hard");
    const options = page.getByTestId("chart-option");
    expect(await options.allTextContents()).toEqual(["val/acc/hard"]);
    await options.first().click();
    const hard = page.getByTestId("chart-key:rl:val/acc/hard");
    await expect
      .poll(async () => Number(await hard.getAttribute("data-points")), { timeout: 30_000 })
      .toBe(STEPS / 2);
    expect(await hard.getByTestId("legend-run").allTextContents()).toEqual([nameA, nameB]);
    // Pinned, it moves to the top row.
    await hard.getByTestId("chart-pin").click();
    expect(await page.locator('[data-row="pinned"] [data-testid="chart-key:rl:val/acc/hard"]').count()).toBe(
      1,
    );
    // x by wall time: the last evaluation at 8 x 12.5 s.
    await page.getByTestId("x-axis").selectOption("time");
    await expect.poll(async () => Number(await hard.getAttribute("data-xmax"))).toBe(100);
    await page.getByTestId("x-axis").selectOption("step");

    // CSV: one line per run and evaluation, under a header.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      hard.getByTestId("chart-csv").click(),
    ]);
    expect(download.suggestedFilename()).toBe("val_acc_hard.csv");
    const csv = readFileSync((await download.path()) as string, "utf8")
      .trim()
      .split("\n");
    expect(csv[0]).toBe("run,seed,key,phase,step,wall_s,value");
    expect(csv).toHaveLength(1 + 2 * (STEPS / 2));
    expect(csv[1]).toBe(`${nameA},,val/acc/hard,rl,0,0,0.05`);
    // PNG: a real PNG file.
    const [png] = await Promise.all([page.waitForEvent("download"), hard.getByTestId("chart-png").click()]);
    expect(
      readFileSync((await png.path()) as string)
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");

    await page.getByTestId("config-panel").evaluate((el) => {
      el.scrollTop = 0;
    });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: "e2e/artifacts/charts-compare.png" });
    expect(pageErrors).toEqual([]);
    expect(consoleErrors.filter((e) => /404|favicon/i.test(e))).toEqual([]);
    await page.close();
  });

  it("at 390x844: the config is a drawer after the charts, and the first chart is on the first screen", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(baseUrl);
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await page.getByTestId("tab-runs").click();
    await page.getByTestId("tab-charts").click();
    const first = page.locator(".chart").first();
    const box = (await first.boundingBox())!;
    expect(box.y).toBeLessThan(844);
    expect(box.y).toBeGreaterThanOrEqual(0);
    // Tabs and charts come before the config in the document (and so in tab order).
    const order = await page.evaluate(() => {
      const tabs = document.querySelector('[data-testid="tab-charts"]') as Node;
      const panel = document.querySelector('[data-testid="config-panel"]') as Node;
      return tabs.compareDocumentPosition(panel) & Node.DOCUMENT_POSITION_FOLLOWING;
    });
    expect(order).toBeTruthy();
    // The drawer: closed, the config is off screen; opened, it is there.
    const panel = page.getByTestId("config-panel");
    expect(await panel.isVisible()).toBe(false);
    await page.getByTestId("drawer-toggle").click();
    await expect.poll(() => panel.isVisible()).toBe(true);
    await page.screenshot({ path: "e2e/artifacts/narrow-drawer.png" });
    await page.getByTestId("drawer-close").click();
    await expect.poll(() => panel.isVisible()).toBe(false);
    // "Copy share link" is there before a run, so nothing moves when one starts.
    expect(await page.getByTestId("share-link").isDisabled()).toBe(true);
    await page.screenshot({ path: "e2e/artifacts/narrow-charts.png" });
    await page.close();
  });

  it("Start with seeds 2 runs both seeds as one group: a mean with a band, the seeds faint, one group in the runs list", async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`${baseUrl}?preset=ci-tiny`);
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await waitFor(
      async () => (await page.getByTestId("preset-picker").inputValue()) === "ci-tiny",
      30_000,
      "the preset",
    );
    await setField(page, "seeds", "2");
    await setField(page, "stop.max_steps", "2");
    await setField(page, "task.eval_size", "4");
    await setField(page, "task.eval_every", "0");
    await expect
      .poll(() => page.getByTestId("start-plan").textContent())
      .toMatch(/for 2 seeds \(5–6\) one after another/);
    await page.getByTestId("start").click();
    const reward = page.getByTestId("chart-reward");
    await waitFor(
      async () => Number(await reward.getAttribute("data-seed-runs")) === 2,
      600_000,
      "rows of both seeds on the reward chart",
    );
    expect(Number(await reward.getAttribute("data-bands"))).toBeGreaterThan(0);
    const legend = reward.getByTestId("legend-run");
    expect(await legend.count()).toBe(1);
    expect(await legend.getAttribute("data-seeds")).toBe("2");
    expect(await legend.textContent()).toMatch(/ci-tiny × 2 seeds \(5–6\)/);
    await page.getByTestId("band-mode").selectOption("minmax");
    await page.getByTestId("tab-runs").click();
    await expect.poll(() => page.getByTestId("run-group").count()).toBe(1);
    expect(await page.locator('[data-testid="run-row"][data-group]:not([data-group=""])').count()).toBe(2);
    await page.getByTestId("stop").click();
    await page.getByTestId("tab-charts").click();
    await page.screenshot({ path: "e2e/artifacts/seeds-band.png" });

    // The group is stored with its seeds: after a reload the stored runs list it as one group
    // of both seeds, and "Open group" draws their mean with a band again.
    await page.reload();
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await page.getByTestId("tab-runs").click();
    const group = page.getByTestId("stored-group");
    await expect.poll(() => group.count(), { timeout: 30_000 }).toBe(1);
    expect(await group.getAttribute("data-seeds")).toBe("2");
    expect(await group.getByTestId("stored-group-name").textContent()).toMatch(/ci-tiny × 2 seeds \(5–6\)/);
    const groupId = (await group.getAttribute("data-group")) ?? "";
    expect(await page.locator(`[data-testid="stored-run"][data-group="${groupId}"]`).count()).toBe(2);
    await group.getByTestId("stored-group-open").click();
    await expect.poll(() => page.getByTestId("run-group").count(), { timeout: 30_000 }).toBe(1);
    await page.getByTestId("tab-charts").click();
    await expect
      .poll(async () => Number(await reward.getAttribute("data-seed-runs")), { timeout: 30_000 })
      .toBe(2);
    expect(Number(await reward.getAttribute("data-bands"))).toBeGreaterThan(0);
    expect(await legend.getAttribute("data-seeds")).toBe("2");

    // At 390x844 the stored runs fit: Open, Export and Delete on the screen, no sideways scroll;
    // the tab strip keeps "Config" in view with Runs selected; Escape closes the drawer.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("tab-runs").click();
    const actions = page.locator('[data-testid="stored-run"] .run-actions button');
    expect(await actions.count()).toBeGreaterThanOrEqual(6);
    for (const box of await actions.evaluateAll((bs) => bs.map((b) => b.getBoundingClientRect().toJSON())))
      expect(box.right, JSON.stringify(box)).toBeLessThanOrEqual(390);
    const tables = await page.evaluate(() =>
      [...document.querySelectorAll(".runs-list")].map((t) => t.getBoundingClientRect().right),
    );
    expect(tables.length).toBe(2);
    for (const right of tables) expect(right).toBeLessThanOrEqual(390);
    // What else is wider than the phone (the page scrolls sideways): named for the report.
    const wide = await page.evaluate(() =>
      [...document.querySelectorAll("body *")]
        .filter((e) => e.getBoundingClientRect().right > 391 && e.getBoundingClientRect().width > 0)
        .slice(0, 5)
        .map(
          (e) =>
            `${e.tagName}.${e.className}[${e.getAttribute("data-testid") ?? ""}] ${Math.round(e.getBoundingClientRect().right)}`,
        ),
    );
    if (wide.length) console.log("wider than 390:", wide.join("; "));
    const toggle = (await page.getByTestId("drawer-toggle").boundingBox())!;
    expect(toggle.x).toBeGreaterThanOrEqual(0);
    expect(toggle.x + toggle.width).toBeLessThanOrEqual(390);
    await page.getByTestId("drawer-toggle").click();
    const panel = page.getByTestId("config-panel");
    await expect.poll(() => panel.isVisible()).toBe(true);
    await page.keyboard.press("Escape");
    await expect.poll(() => panel.isVisible()).toBe(false);
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  // Issue #39: a verl run (the committed fixture folder: file log, 20 rollout dumps, the
  // export's config.yaml) and a TRL run (trainer_state.json and completions parquet files)
  // come back into the page next to a lab run; a bad file is refused naming its line.
  it("brings a verl and a TRL run back: charted next to a lab run, a verl sample in the inspector", async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(baseUrl);
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await page.getByTestId("tab-runs").click();
    const names = page.getByTestId("stored-run-name");
    const before = await names.count();
    await page
      .locator('.import-bundle input[type="file"]')
      .setInputFiles(await bundleFile("lab-arm", 0.03, []));
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(before + 1);
    await openStored(page, /lab-arm/);

    // A bad verl log: refused with its file and line; nothing stored.
    const bad = join(mkdtempSync(join(tmpdir(), "results-")), "metrics.jsonl");
    writeFileSync(bad, '{"step": 1, "data": {"a": 1}}\n{"step": 2, "data": [1]}\n');
    await page.getByTestId("import-results-files").setInputFiles(bad);
    await expect
      .poll(() => page.locator(".errors").textContent(), { timeout: 30_000 })
      .toContain('metrics.jsonl:2: "data" is an array, not an object of metrics');
    expect(await names.count()).toBe(before + 1);

    await page.getByTestId("import-results-folder").setInputFiles("results/fixtures/verl-run");
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(before + 2);
    const trl = "results/fixtures/trl-run/trl-out";
    await page
      .getByTestId("import-results-files")
      .setInputFiles([
        join(trl, "trainer_state.json"),
        ...[1, 2, 3].map((k) => join(trl, "completions", `completions_0000${k}.parquet`)),
      ]);
    await expect.poll(() => names.count(), { timeout: 60_000 }).toBe(before + 3);
    const stored = await names.allTextContents();
    const verlName = stored.find((n) => / verl ci-tiny$/.test(n)) ?? "";
    const trlName = stored.find((n) => / trl run$/.test(n)) ?? "";
    expect(verlName).toMatch(/^#\d+ verl ci-tiny$/);
    expect(trlName).toMatch(/^#\d+ trl run$/);
    // Never replayed: each says so, with no Resume or Export.
    for (const name of [verlName, trlName]) {
      const row = page.getByTestId("stored-run").filter({ hasText: name });
      expect(await row.getByTestId("not-replayable").textContent()).toMatch(
        /ran on (verl|trl): not replayable/,
      );
      expect(await row.getByRole("button", { name: /Resume|Restart|Export/ }).count()).toBe(0);
    }

    // The lab's charts draw the three runs on one axis: reward/mean is verl's critic/score/mean
    // and TRL's reward; the verl run's val/acc/hard (its data source lab/arithmetic/hard).
    const nameLab = (await page.getByTestId("run-name").filter({ hasText: "lab-arm" }).textContent()) ?? "";
    await page.getByTestId("tab-charts").click();
    const reward = page.getByTestId("chart-reward");
    await expect
      .poll(() => reward.getByTestId("legend-run").allTextContents(), { timeout: 30_000 })
      .toEqual([nameLab, verlName, trlName]);
    await page.getByTestId("add-chart").click();
    await page.getByTestId("chart-search").fill("acc/hard");
    await page.getByTestId("chart-option").first().click();
    const hard = page.getByTestId("chart-key:rl:val/acc/hard");
    await expect
      .poll(() => hard.getByTestId("legend-run").allTextContents(), { timeout: 30_000 })
      .toEqual([nameLab, verlName]);
    await page.screenshot({ path: "e2e/artifacts/results-back.png" });

    // The inspector shows a verl sample as text, and says there are no token masks.
    await page.getByTestId("tab-runs").click();
    await openStored(page, new RegExp(verlName.replace(/[.*+?^${}()|[\]\\#]/g, "\\$&")));
    await page.getByTestId("tab-inspector").click();
    const note = page.getByTestId("engine-note");
    await expect.poll(() => note.textContent(), { timeout: 30_000 }).toContain("no tokens, token masks");
    expect(await note.textContent()).toContain("not replayable here");
    const text = page.getByTestId("sample-text");
    await expect.poll(() => text.count(), { timeout: 30_000 }).toBe(8);
    expect(await text.first().textContent()).toContain("What is 12 + 7?");
    expect(await page.getByTestId("sample").first().getByTestId("sample-reward").textContent()).toMatch(
      /^[01]/,
    );
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
