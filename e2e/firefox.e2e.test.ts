// e2e: the lab in Firefox, the second WebGPU implementation its users have (wgpu; its WGSL is
// compiled by Naga, not Tint, and it has no `subgroups`, so the kernel plan drops every subgroup
// entry: what no Chromium spec runs). Skipped, saying so, where the machine has no Firefox
// (.ci/run installs firefox-esr).
// - Always: with WebGPU off (Firefox ESR's default on Linux) the banner names the pref to set.
// - On request (LAB_E2E_FIREFOX_RUN=1): the built app's default recipe (quick-demo from its SFT
//   checkpoint) shortened to 2 RL steps with a 20-problem evaluation: the trainer worker, the
//   QuickJS sandbox's nested workers, the run store in IndexedDB and every kernel of an RL step.
//   Not on every commit: in 3 of about 45 runs here, Firefox ESR 153 stayed at "building the model"
//   for good (a known hang, not yet understood; the test reports it as such), which would make CI
//   fail at random.
import type { Browser, Page } from "puppeteer-core";
import { afterAll, describe, expect, inject, it } from "vitest";
import { FIREFOX_HINT, findFirefox, launchFirefox } from "./firefox";

const baseUrl = inject("baseUrl");
const firefox = findFirefox();
if (!firefox) console.warn(`e2e/firefox.e2e.test.ts skipped: no Firefox on this machine. ${FIREFOX_HINT}`);

const SHORT = ["stop.max_steps=2", "task.eval_size=20", "checkpoint_every=0"].join("&");
const el = (id: string) => `[data-testid="${id}"]`;

const browsers: Browser[] = [];
afterAll(async () => {
  await Promise.all(browsers.map((b) => b.close()));
});

const text = (page: Page, id: string) => page.$eval(el(id), (e) => e.textContent ?? "").catch(() => "");
const attr = (page: Page, id: string, name: string) =>
  page.$eval(el(id), (e, n) => e.getAttribute(n), name).catch(() => null);

/** Polls until `done` says so; fails naming the app's error or, at the limit, what the page was doing. */
async function until(page: Page, what: string, limitMs: number, done: () => Promise<boolean>) {
  const t0 = Date.now();
  while (Date.now() - t0 < limitMs) {
    const err = await page.$$eval(el("app-error"), (es) => es.map((e) => e.textContent ?? ""));
    if (err.length) throw new Error(`${what}: the app says ${err.join("; ")}`);
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(
    `${what}: not within ${limitMs / 1000} s; progress ${await attr(page, "progress", "data-phase")}: "${await text(page, "progress-activity")}"`,
  );
}

describe.skipIf(!firefox)("Firefox", () => {
  it.runIf(process.env.LAB_E2E_FIREFOX_RUN === "1")(
    "runs the default recipe's RL steps on a device without subgroups",
    async (ctx) => {
      const browser = await launchFirefox(firefox as string);
      browsers.push(browser);
      const page = await browser.newPage();
      const pageErrors: string[] = [];
      page.on("pageerror", (e) => pageErrors.push(String(e)));
      await page.goto(`${baseUrl}?preset=quick-demo&${SHORT}`);
      await page.waitForSelector(`${el("kernel-plan")}, ${el("webgpu-banner")}`, { timeout: 60_000 });
      // Firefox's wgpu needs a Vulkan driver; where there is none (no GPU, no lavapipe) this
      // machine cannot run the spec, which says so rather than failing on the machine
      const banner = await text(page, "webgpu-banner");
      if (/no GPU adapter was found/.test(banner)) {
        console.warn(
          `e2e/firefox.e2e.test.ts: Firefox finds no adapter here (${banner}); install a Vulkan driver (Debian: mesa-vulkan-drivers)`,
        );
        ctx.skip("Firefox finds no WebGPU adapter on this machine");
      }
      // wgpu offers no `subgroups`: the plan says which entries it dropped and why
      const plan = await text(page, "kernel-plan");
      expect(plan).toMatch(/reductions workgroup/);
      expect(plan).toMatch(/dropped: .*\(no subgroups\)/);
      expect(await page.$eval(el("preset-picker"), (e) => (e as HTMLSelectElement).value)).toBe("quick-demo");
      await until(page, "Start enabled", 60_000, () =>
        page.$eval(el("start"), (e) => !(e as HTMLButtonElement).disabled).catch(() => false),
      );
      await page.click(el("start"));
      await until(
        page,
        "the run to its end",
        240_000,
        async () => (await attr(page, "progress", "data-phase")) === "done",
      );
      expect(await attr(page, "latest-row", "data-step")).toBe("2");
      // the final evaluation's row: greedy held-out accuracy and calls that ran in the sandbox
      const metric = async (k: string) => Number(await attr(page, `metric-${k}`, "data-value"));
      const acc = await metric("val/acc");
      expect(acc).toBeGreaterThanOrEqual(0);
      expect(acc).toBeLessThanOrEqual(1);
      expect(await metric("val/tool_call_rate")).toBeGreaterThan(0);
      expect(await metric("val/valid_call_rate")).toBeGreaterThan(0);
      expect(pageErrors).toEqual([]);
    },
    360_000,
  );

  it("says how to turn WebGPU on where Firefox has it off (Linux ESR's default)", async () => {
    const browser = await launchFirefox(firefox as string, { webgpu: false });
    browsers.push(browser);
    const page = await browser.newPage();
    await page.goto(baseUrl);
    await page.waitForSelector(el("webgpu-banner"), { timeout: 60_000 });
    expect(await text(page, "webgpu-banner")).toMatch(/WebGPU is unavailable.*dom\.webgpu\.enabled/s);
  }, 120_000);
});
