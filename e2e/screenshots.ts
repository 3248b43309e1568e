// The README's screenshots, from real runs of the default demo (the quick-demo preset the page
// opens on), in Chromium through playwright-core (e2e/chromium.ts: /usr/bin/chromium or
// CHROME_PATH, WebGPU on SwiftShader here). It builds the app, serves dist/ on localhost, and:
//   config-panel.png  the page as it opens (the config panel beside the empty charts)
//   main.png          the charts after one run of the demo to its end
//   inspector.png     that run's last step in the trajectory inspector, a sample with a tool call
//   compare.png       the demo run again with another seed, both runs in every chart's legend
// Two runs of the demo take 15-35 minutes on a 2-core machine without a GPU.
// Run: `npm run screenshots` (`-- --no-build` serves the dist/ there is; `--out <dir>` writes
// elsewhere; `--query <overrides>` changes the demo, e.g. `--query stop.max_steps=1` to check this script).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { build, preview } from "vite";
import { launchChromium } from "./chromium";

const args = process.argv.slice(2);
const opt = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const OUT = opt("--out") ?? "docs/screenshots";
/** Config overrides in the page's URL (a check of this script: `--query stop.max_steps=1`). */
const QUERY = opt("--query");
/** The longest one run of the demo may take (minutes). */
const RUN_MINUTES = 40;
const SECOND_SEED = "201";

async function waitFor(what: string, ms: number, cond: () => Promise<boolean>) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`timed out after ${Math.round(ms / 1000)} s waiting for ${what}`);
}

/** Starts a run with the form as it is and waits for it to end (a run that fails is an error). */
async function runToEnd(page: Page, errors: string[], label: string) {
  const t0 = Date.now();
  const phase = () => page.getByTestId("progress").getAttribute("data-phase");
  await page.getByTestId("start").click();
  await waitFor(`${label} to start`, 60_000, async () =>
    ["loading", "sft", "rl"].includes((await phase()) ?? ""),
  );
  await waitFor(`${label} to end`, RUN_MINUTES * 60_000, async () => {
    if (errors.length) throw new Error(`${label}: page error: ${errors.join("; ")}`);
    const now = await phase();
    if (now === "error")
      throw new Error(`${label} failed: ${await page.getByTestId("progress").textContent()}`);
    return now === "done";
  });
  console.log(`${label}: ${((Date.now() - t0) / 60_000).toFixed(1)} min`);
}

async function atTop(page: Page) {
  await page.getByTestId("config-panel").evaluate((el) => {
    el.scrollTop = 0;
  });
  await page.evaluate(() => window.scrollTo(0, 0));
}

async function main() {
  if (!args.includes("--no-build")) await build({ configFile: "vite.config.ts", logLevel: "warn" });
  const server = await preview({ configFile: "vite.config.ts", preview: { port: 4329, open: false } });
  const url = server.resolvedUrls?.local[0]?.replace("127.0.0.1", "localhost");
  if (!url) throw new Error("vite preview did not report a local URL");
  mkdirSync(OUT, { recursive: true });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(QUERY ? `${url}?preset=quick-demo&${QUERY}` : url);
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await waitFor("the default preset", 30_000, async () =>
      (await page.evaluate(() => location.search)).includes("preset=quick-demo"),
    );
    await page.getByTestId("tab-charts").click();
    await atTop(page);
    await page.screenshot({ path: join(OUT, "config-panel.png") });

    await runToEnd(page, errors, "the demo run");
    await page.getByTestId("tab-charts").click();
    await atTop(page);
    await page.screenshot({ path: join(OUT, "main.png") });

    // The inspector at the last step, a sample whose trajectory called the calculator.
    await page.getByTestId("tab-inspector").click();
    await page.getByTestId("inspector").waitFor();
    await page.getByTestId("inspector-overlay").selectOption("advantage");
    const tool = page.locator('[data-testid="token"][data-role="tool"]');
    const sample = page.locator('[data-testid="sample"]', { has: tool }).first();
    if ((await sample.count()) > 0) await sample.click();
    await atTop(page);
    await page.screenshot({ path: join(OUT, "inspector.png") });

    // The same demo with another seed: two runs in every chart.
    const seed = page.locator('[data-path="seed"]');
    await seed.evaluate((el) => {
      const group = el.closest("details");
      if (group) group.open = true;
    });
    await seed.fill(SECOND_SEED);
    await seed.press("Tab");
    await runToEnd(page, errors, `the demo run with seed ${SECOND_SEED}`);
    await page.getByTestId("tab-charts").click();
    const legend = page.getByTestId("chart-reward").getByTestId("legend-run");
    await waitFor("both runs in the reward chart's legend", 30_000, async () => (await legend.count()) === 2);
    await atTop(page);
    await page.screenshot({ path: join(OUT, "compare.png") });
    if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
    console.log(`screenshots in ${OUT}/: config-panel.png main.png inspector.png compare.png`);
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
