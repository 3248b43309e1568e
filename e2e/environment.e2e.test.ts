// e2e: a JavaScript environment written in the page (one WebGPU browser for the spec).
// An environment written from scratch in the Environment tab (not a template): a syntax error
// comes back with its line; the dry run plays three episodes and shows them in the inspector;
// "Use in the run config" makes it the run's task; two RL steps run; the run's share link,
// opened in a fresh browser context, replays with the same reward rows.
// Run: `npx vite build && E2E_SKIP_BUILD=1 npx vitest run --project e2e e2e/environment.e2e.test.ts`.
import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "./chromium";

const baseUrl = inject("baseUrl");
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const SOURCE = `export default {
  name: "secret-word",
  maxTurns: 2,
  tools: [
    {
      name: "word",
      description: "The secret word.",
      parameters: { type: "object", properties: {} },
      run(args, state) {
        return state.word;
      },
    },
  ],
  reset(seed) {
    const words = ["ant", "bee", "cat", "dog", "elk", "fox"];
    return { prompt: "word " + seed + "?", state: { word: words[Math.floor(Math.random() * words.length)] } };
  },
  check(state, episode) {
    return { success: episode.answer === state.word };
  },
  policy(state, episode) {
    if (episode.calls.length === 0) return '<tool_call>{"name":"word","arguments":{}}</tool_call>';
    return "<answer>" + episode.calls[0].result + "</answer>";
  },
};
`;

// A tiny model from scratch, no SFT: two RL steps of one prompt x two episodes.
const QUERY =
  "?model.layers=1&model.d_model=16&model.heads=2&model.context=160&sft.steps=0&sft.init_checkpoint=null&rl.prompts_per_step=1" +
  "&rl.group_size=2&rl.epochs=1&rl.minibatches=1&sampling.max_new_tokens=12&task.eval_size=1&task.eval_every=0&stop.max_steps=2";

/** Waits for the run to end; a run that fails says why (the progress line) instead of timing out. */
async function waitDone(page: Page) {
  await page.waitForFunction(
    () => {
      const phase = document.querySelector('[data-testid="progress"]')?.getAttribute("data-phase");
      return phase === "done" || phase === "error";
    },
    null,
    { timeout: 400_000 },
  );
  const progress = page.getByTestId("progress");
  expect(await progress.getAttribute("data-phase"), (await progress.textContent()) ?? "").toBe("done");
}

/** The reward chart's CSV without the wall-clock column: run-independent rows. */
async function rewardRows(page: Page): Promise<string[]> {
  await page.getByTestId("tab-charts").click();
  const chart = page.getByTestId("chart-reward");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    chart.getByTestId("chart-csv").click(),
  ]);
  const lines = readFileSync((await download.path()) as string, "utf8")
    .trim()
    .split("\n");
  // run,seed,key,phase,step,wall_s,value -> key,phase,step,value (the run's name differs).
  return lines.slice(1).map((l) => {
    const c = l.split(",");
    return [c[2], c[3], c[4], c[6]].join(",");
  });
}

describe("a JS environment written in the page", () => {
  it("dry-runs, trains two RL steps, and replays from its link with the same rows", async () => {
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${baseUrl}${QUERY}`);
    await page.getByTestId("adapter-info").waitFor({ timeout: 60_000 });
    await page.getByTestId("tab-environment").click();
    const editor = page.getByTestId("env-source");

    // A syntax error is reported with its line.
    await editor.fill('export default {\n  name: "x",,\n};\n');
    await page.getByTestId("env-dry-run").click();
    await expect
      .poll(() => page.getByTestId("env-error").textContent(), { timeout: 60_000 })
      .toMatch(/line 2/);

    // The environment from scratch: three scripted episodes, each a success.
    await editor.fill(SOURCE);
    await page.getByTestId("env-dry-run").click();
    const rows = page.getByTestId("env-episodes").locator("tbody tr");
    await expect.poll(() => rows.count(), { timeout: 60_000 }).toBe(3);
    for (const row of await rows.all()) expect(await row.locator("td").nth(4).textContent()).toBe("yes");
    // In the inspector before any training: the episodes' tokens, the tool call among them.
    await page.getByTestId("env-inspect").click();
    const inspector = page.getByTestId("inspector");
    await inspector.waitFor({ timeout: 30_000 });
    await expect.poll(() => inspector.textContent(), { timeout: 30_000 }).toContain("tool_call");

    await page.getByTestId("tab-environment").click();
    await page.getByTestId("env-use").click();
    await expect
      .poll(() => page.getByTestId("env-applied").textContent(), { timeout: 60_000 })
      .toContain("secret-word");
    await expect.poll(() => page.getByTestId("start").isEnabled(), { timeout: 30_000 }).toBe(true);
    await page.getByTestId("start").click();
    await waitDone(page);
    expect(await page.getByTestId("progress-step").textContent()).toBe("2");
    const first = await rewardRows(page);
    expect(first.length).toBeGreaterThanOrEqual(2);
    // The share link is the run's URL (the page keeps it current; Copy share link writes the same).
    const link = await page.evaluate(() => location.href);
    expect(link).toMatch(/#run=v/);
    expect(errors).toEqual([]);
    await context.close();

    // A fresh context: the link alone brings the environment and replays the run.
    const fresh = await browser.newContext({ acceptDownloads: true });
    const replay = await fresh.newPage();
    await replay.goto(link);
    await replay.getByTestId("link-banner").waitFor({ timeout: 60_000 });
    expect(await replay.getByTestId("link-banner").textContent()).toContain(`task.name="env"`);
    await replay.getByTestId("link-replay").click();
    await waitDone(replay);
    expect(await rewardRows(replay)).toEqual(first);
    await fresh.close();
  });
});
