// e2e: the presets as a newcomer meets them, on the server `npm start` runs (vite preview: a
// missing file is a 404), in one browser page. Start is pressed on every preset whose model ships
// in the repository (public/models: lab-llama-calculator, claim-toolrl-llama, claim-otc-llama;
// their -exact arms share model, task and loss family), each on a shortened config until its
// first RL step; smollm2-calculator (a Hub model) reaches its download offer through the fake Hub
// (e2e/fake-hub.ts); qwen-calculator (its folder is not in the repository) says which file is not
// found on this server. Then the built dist/ folder as other static hosts serve it: under a
// sub-path, answering every path with the app's index.html, `.wasm` as a generic type: the share
// link carries that host's address, lab-llama-calculator reaches its first step and a custom
// reward runs in the QuickJS sandbox.
// Run: `npx vitest run --project e2e e2e/presets.e2e.test.ts`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "./chromium";
import { fakeHub } from "./fake-hub";
import { serveDir } from "./static-server";

const baseUrl = inject("baseUrl");
const HUB = "https://huggingface.co";
// One RL step of one prompt x 2 samples, no held-out evaluation: what every preset shares.
const SHORT = [
  "rl.prompts_per_step=1",
  "rl.group_size=2",
  "rl.minibatches=1",
  "rl.epochs=1",
  "task.eval_size=0",
  "sampling.max_new_tokens=12",
  "stop.max_steps=1",
  "checkpoint_every=0",
].join("&");

let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
const hubRequests: string[] = [];
const times: Record<string, number> = {};

beforeAll(async () => {
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  // SmolLM2's repo on the fake Hub, holding the lab's own model files (only the listing is read).
  const dir = "public/models/lab-llama";
  const files = Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))]));
  const handle = fakeHub(
    {
      "HuggingFaceTB/SmolLM2-135M-Instruct": {
        commit: "0123456789abcdef0123456789abcdef01234567",
        files,
        lfs: ["model.safetensors"],
      },
    },
    { hubUrl: HUB },
  );
  await context.route(`${HUB}/**`, async (route) => {
    const req = route.request();
    hubRequests.push(`${req.method()} ${new URL(req.url()).pathname}`);
    const out = handle({ method: req.method(), url: req.url(), headers: await req.allHeaders() });
    return route.fulfill({
      status: out.status,
      headers: out.headers,
      body: out.body ? Buffer.from(out.body) : undefined,
    });
  });
  page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
}, 120_000);

afterAll(async () => {
  console.log(`presets e2e: seconds to the first step ${JSON.stringify(times)}`);
  await browser?.close();
});

const recipeModel = (preset: string): string =>
  JSON.parse(readFileSync(`public/recipes/${preset}.json`, "utf8")).config.model.pretrained;

async function open(url: string): Promise<void> {
  await page.goto(url);
  await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
  await expect.poll(() => page.getByTestId("preset-picker").inputValue(), { timeout: 30_000 }).not.toBe("");
}

/**
 * Start, then wait for the first RL row (or fail with the page's error); the next page load ends
 * the run. Returns what the progress bar said it was doing, in order.
 */
async function firstStep(what: string): Promise<string[]> {
  await expect.poll(() => page.getByTestId("config-errors").count(), { timeout: 30_000 }).toBe(0);
  await expect.poll(() => page.getByTestId("start").isEnabled(), { timeout: 60_000 }).toBe(true);
  // Every text the progress bar's activity shows, as it changes (loading takes a few seconds).
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { activitySeen: string[] }).activitySeen = seen;
    new MutationObserver(() => {
      const t = document.querySelector('[data-testid="progress-activity"]')?.textContent ?? "";
      if (t && seen.at(-1) !== t) seen.push(t);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const t0 = Date.now();
  await page.getByTestId("start").click();
  await expect
    .poll(
      async () => {
        const err = await page.getByTestId("app-error").allTextContents();
        if (err.length) throw new Error(`${what}: ${err.join("; ")}`);
        return page.getByTestId("latest-row").getAttribute("data-phase");
      },
      { timeout: 420_000, interval: 500 },
    )
    .toBe("rl");
  times[what] = Math.round((Date.now() - t0) / 1000);
  return page.evaluate(() => (window as unknown as { activitySeen: string[] }).activitySeen);
}

describe("every preset that can start does", () => {
  it("the presets whose model ships in the repository reach their first RL step", async () => {
    for (const preset of ["lab-llama-calculator", "claim-toolrl-llama", "claim-otc-llama"]) {
      await open(`${baseUrl}?preset=${preset}&${SHORT}`);
      expect(await page.getByTestId("preset-picker").inputValue()).toBe(preset);
      const said = await firstStep(preset);
      // Loading says what it is doing, naming the model folder's files (the page draws at most
      // one text a frame, so some quick ones are never shown).
      const model = recipeModel(preset);
      expect(
        said.some((t) => t.startsWith(`fetching ${model}/`) || t.startsWith(`read ${model}/`)),
        `${preset}: ${JSON.stringify(said)}`,
      ).toBe(true);
      expect(
        said.every((t) => t !== "loading"),
        JSON.stringify(said),
      ).toBe(true);
    }
    expect(pageErrors).toEqual([]);
  }, 1_300_000);

  it("smollm2-calculator offers its download; qwen-calculator names the file this server lacks", async () => {
    await open(`${baseUrl}?preset=smollm2-calculator`);
    const state = page.getByTestId("run-model");
    await expect.poll(() => state.getAttribute("data-state"), { timeout: 60_000 }).toBe("missing");
    expect(await state.textContent()).toMatch(
      /hf:HuggingFaceTB\/SmolLM2-135M-Instruct.* is not downloaded \(/,
    );
    expect(await page.getByTestId("run-model-download").textContent()).toMatch(/^Download \d/);
    expect(hubRequests.some((r) => r.startsWith("GET /api/models/HuggingFaceTB/SmolLM2-135M-Instruct"))).toBe(
      true,
    );

    await open(`${baseUrl}?preset=qwen-calculator&${SHORT}`);
    await expect.poll(() => page.getByTestId("start").isEnabled(), { timeout: 60_000 }).toBe(true);
    await page.getByTestId("start").click();
    await expect
      .poll(() => page.getByTestId("app-error").allTextContents(), { timeout: 120_000 })
      .toEqual([expect.stringMatching(/models\/Qwen2\.5-0\.5B-Instruct\/[\w.]+: not found on this server/)]);
    expect(await page.getByTestId("app-error").textContent()).not.toMatch(/not valid JSON|<!doctype/i);
    expect(pageErrors).toEqual([]);
  }, 300_000);

  // The default run to its end (minutes on a software GPU, so only on request:
  // LAB_E2E_DEFAULT_RUN=1): Start's estimate against the run's wall time, printed, not asserted.
  it.runIf(process.env.LAB_E2E_DEFAULT_RUN === "1")(
    "the default run: Start's estimate against its wall time",
    async () => {
      await open(`${baseUrl}?preset=quick-demo`);
      const plan = page.getByTestId("start-plan");
      const t0 = Date.now();
      await page.getByTestId("start").click();
      // The forecast once a step and an evaluation beyond step 0 are measured (the one at step 5).
      await expect
        .poll(async () => Number((await page.getByTestId("latest-row").getAttribute("data-step")) ?? -1), {
          timeout: 1_500_000,
          interval: 1000,
        })
        .toBeGreaterThanOrEqual(6);
      const forecast = Number(await plan.getAttribute("data-seconds"));
      const forecastText = await plan.textContent();
      await expect
        .poll(() => page.getByTestId("progress").getAttribute("data-phase"), {
          timeout: 1_500_000,
          interval: 1000,
        })
        .toBe("done");
      const wall = (Date.now() - t0) / 1000;
      const after = Number(await plan.getAttribute("data-seconds"));
      const valAcc = await page.getByTestId("chart-accuracy").getAttribute("data-ends");
      console.log(
        `default run: wall ${wall.toFixed(0)} s; estimate at step 6 ${forecast.toFixed(0)} s (ratio ${(forecast / wall).toFixed(2)}): "${forecastText}"; estimate by Start after the run ${after.toFixed(0)} s (ratio ${(after / wall).toFixed(2)}); line ends ${valAcc}`,
      );
      expect(forecast).toBeGreaterThan(0);
      expect(pageErrors).toEqual([]);
    },
    1_800_000,
  );

  it("dist/ from a sub-path of a host that serves the app for every path and .wasm as a generic type", async () => {
    const host = await serveDir("dist", {
      prefix: "/some/repo/",
      spa: true,
      wasmType: "application/octet-stream",
    });
    try {
      // The host answers a missing file with the app (status 200): the lab still tells.
      const res = await fetch(`${host.url}models/lab-llama/model.safetensors.index.json`);
      expect([res.status, (await res.text()).slice(0, 15).toLowerCase()]).toEqual([200, "<!doctype html>"]);
      await open(`${host.url}?preset=lab-llama-calculator&${SHORT}`);
      await firstStep("lab-llama-calculator from dist/ on an SPA host");
      // The share link is this host's address, sub-path included.
      await page.getByTestId("share-link").click();
      await page.getByTestId("share-copied").waitFor({ timeout: 30_000 });
      const link = await page.evaluate(() => navigator.clipboard.readText());
      expect(link.startsWith(`${host.url}#`) || link.startsWith(`${host.url}index.html#`), link).toBe(true);
      expect(host.requests).toContain("/some/repo/models/lab-llama/model.safetensors.index.json");
      expect(host.requests.some((r) => r.endsWith(".wasm"))).toBe(true);
      // A custom reward on the step's trajectory: QuickJS runs from the generic-typed .wasm.
      await page.getByTestId("tab-reward").click();
      await page.getByTestId("reward-source").fill("function reward(x) { return 0.25; }");
      await page.getByTestId("reward-test").click();
      await expect
        .poll(() => page.getByTestId("reward-test-result").textContent(), { timeout: 60_000 })
        .toBe("Reward: 0.25");
      expect(pageErrors).toEqual([]);
    } finally {
      await host.close();
    }
  }, 600_000);
});
