// e2e: RunStore on Chromium's real IndexedDB. A tiny page (e2e/persist-page.ts, bundled here by
// vite's build() and served from node:http on localhost) creates a run, appends rows, samples,
// events, edits and checkpoints; the page reloads and reads them back; resume truncation,
// the sample and checkpoint bounds, bundle export/import and share links run in the browser;
// and with the origin's quota cut to a few MB (CDP Storage.overrideQuotaForOrigin) the oldest
// samples are pruned and then StorageFullError names the problem; a store made before groups
// (version 1) opens with its runs unchanged, and multi-seed groups keep their members.
// Run: `E2E_SKIP_BUILD=1 npx vitest run --project e2e e2e/persist`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recipeConfig } from "../config";
import type { MetricsRow, SampleRecord } from "../rl/run/trainer";
import { launchChromium } from "./chromium";
import type { LabPage } from "./persist-page";

declare global {
  interface Window {
    lab: LabPage;
  }
}

let dir: string;
let server: Server;
let baseUrl: string;
let browser: Browser;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lab-persist-"));
  await build({
    configFile: false,
    logLevel: "warn",
    root: resolve("."),
    build: {
      outDir: dir,
      emptyOutDir: true,
      minify: false,
      target: "es2022",
      lib: { entry: resolve("e2e/persist-page.ts"), formats: ["es"], fileName: () => "persist.js" },
    },
  });
  writeFileSync(
    join(dir, "index.html"),
    '<!doctype html><meta charset="utf-8"><title>loading</title><script type="module" src="./persist.js"></script>',
  );
  server = createServer((req, res) => {
    const name = (req.url ?? "/").split("?")[0].replace(/^\/+/, "") || "index.html";
    try {
      const body = readFileSync(join(dir, name.replace(/\.\./g, "")));
      res.writeHead(200, { "content-type": name.endsWith(".js") ? "text/javascript" : "text/html" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, r));
  baseUrl = `http://localhost:${(server.address() as AddressInfo).port}/`;
  browser = await launchChromium({ webgpu: false });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function openPage(page: Page) {
  await page.goto(baseUrl);
  await page.waitForFunction(() => document.title === "persist test page ready");
}

const config = recipeConfig("demo", { seed: 9 });

function rows(): MetricsRow[] {
  const out: MetricsRow[] = [];
  for (let s = 0; s < 10; s++) out.push({ step: s, phase: "sft", time: s, loss: 3 - s / 10 });
  for (let s = 0; s < 20; s++)
    out.push({ step: s, phase: "rl", time: 10 + s, "reward/mean": s / 20, event: "" });
  return out;
}

function sample(step: number, i: number): SampleRecord {
  return {
    step,
    groupId: `g${i}`,
    problemId: `p${step}`,
    bucket: "easy",
    answer: `${step * i}`,
    promptTokens: [1, 2],
    tokens: [3, 4, 5, 6],
    mask: [1, 1, 0, 1],
    postTool: [0, 0, 0, 1],
    logprobs: [-1, -2, 0, -0.5],
    entropy: [],
    advantages: [0.1, 0.1, 0, 0.1],
    reward: 1,
    rewardTerms: { correctness: 1 },
    correct: true,
    toolCalls: [],
    finish: "answer",
    filter: "kept",
  };
}

describe("RunStore in Chromium", () => {
  it("keeps a run across a reload, bounds samples and checkpoints, truncates for resume", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await openPage(page);
    const samples = Array.from({ length: 20 }, (_, s) => [sample(s, 0), sample(s, 1)]);
    const runId = await page.evaluate(
      async ({ config, rows, samples }) => {
        const store = await window.lab.openRunStore("lab-e2e", { keepSampleSteps: 5 });
        const run = await store.createRun({ name: "e2e run", config });
        for (const row of rows) await store.appendRow(run.id, row);
        for (const step of samples) await store.appendSamples(run.id, step);
        await store.appendEdit(run.id, { phase: "rl", step: 12, path: "rl.lr", value: 0.0001 });
        await store.appendEvent(run.id, { step: 12, phase: "rl", kind: "edit", message: "rl.lr = 0.0001" });
        await store.appendEvent(run.id, { step: 17, phase: "rl", kind: "skipped", message: "nan" });
        for (const step of [5, 10, 15]) {
          await store.saveCheckpoint(run.id, { phase: "rl", step, bytes: new Uint8Array(1000).fill(step) });
        }
        store.close();
        return run.id;
      },
      { config, rows: rows(), samples },
    );

    await page.reload();
    await page.waitForFunction(() => document.title === "persist test page ready");
    const back = await page.evaluate(async (runId) => {
      const store = await window.lab.openRunStore("lab-e2e");
      const runs = await store.listRuns();
      const loaded = await store.loadRun(runId);
      const ck = await store.latestCheckpoint(runId);
      const nCheckpoints = await store.db.count("checkpoints");
      store.close();
      return {
        runs: runs.map((r) => r.id),
        summary: loaded?.run.summary,
        rows: loaded?.rows,
        sampleSteps: loaded?.samples.map((s) => s.step),
        edits: loaded?.edits,
        events: loaded?.events.map((e) => e.kind),
        ck: ck && { phase: ck.phase, step: ck.step, first: ck.bytes[0], len: ck.bytes.length },
        nCheckpoints,
      };
    }, runId);
    expect(back.runs).toContain(runId);
    expect(back.rows).toEqual(rows()); // every row, in run order (sft before rl)
    expect(back.summary).toMatchObject({ phase: "rl", step: 19, rows: 30 });
    expect(back.summary?.metrics["reward/mean"]).toBe(19 / 20);
    expect(back.sampleSteps).toEqual([15, 15, 16, 16, 17, 17, 18, 18, 19, 19]); // the last 5 steps
    expect(back.edits).toEqual([{ phase: "rl", step: 12, path: "rl.lr", value: 0.0001 }]);
    expect(back.events).toEqual(["edit", "skipped"]);
    expect(back.ck).toEqual({ phase: "rl", step: 15, first: 15, len: 1000 });
    expect(back.nCheckpoints).toBe(2); // the last two per run

    // Resume from the checkpoint at rl step 15: rows 0..14 stay, later ones are dropped.
    const after = await page.evaluate(async (runId) => {
      const store = await window.lab.openRunStore("lab-e2e");
      await store.truncateAfter(runId, "rl", 15);
      const loaded = await store.loadRun(runId);
      const ck = await store.latestCheckpoint(runId);
      store.close();
      return {
        rows: loaded?.rows.map((r) => `${r.phase}${r.step}`),
        samples: loaded?.samples.length,
        events: loaded?.events.map((e) => e.kind),
        edits: loaded?.edits.length,
        summary: loaded?.run.summary,
        ck: ck?.step,
      };
    }, runId);
    expect(after.rows).toHaveLength(25);
    expect(after.rows?.at(-1)).toBe("rl14");
    expect(after.samples).toBe(0);
    expect(after.events).toEqual(["edit"]);
    expect(after.edits).toBe(1);
    expect(after.summary).toMatchObject({ phase: "rl", step: 14, rows: 25 });
    expect(after.ck).toBe(15);
    await context.close();
  });

  it("exports a run as a bundle and imports it back, and share links decode, in the browser", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await openPage(page);
    const out = await page.evaluate(
      async ({ config, rows }) => {
        const { lab } = window;
        const store = await lab.openRunStore("lab-e2e-bundle");
        const run = await store.createRun({ name: "to export", config });
        for (const row of rows) await store.appendRow(run.id, row);
        await store.saveCheckpoint(run.id, { phase: "rl", step: 20, bytes: new Uint8Array([1, 2, 3]) });
        const data = await store.exportRun(run.id);
        const bytes = await lab.encodeBundle(data!);
        const decoded = await lab.decodeBundle(bytes);
        if (!decoded.ok) return { error: decoded.error };
        const imported = await store.importRun(decoded.run);
        const loaded = await store.loadRun(imported.id);
        const bad = await lab.decodeBundle(bytes.subarray(0, bytes.length - 9));
        const link = await lab.encodeLink({
          config,
          edits: [{ phase: "rl", step: 3, path: "rl.lr", value: 0.0002 }],
          name: "x",
        });
        const fromLink = await lab.decodeLink(`${location.origin}/${link}`);
        const broken = await lab.decodeLink(`${location.origin}/${link.slice(0, -3)}`);
        store.close();
        return {
          sameRows: JSON.stringify(loaded?.rows) === JSON.stringify(rows),
          source: loaded?.run.source,
          status: loaded?.run.status,
          runs: (await (await lab.openRunStore("lab-e2e-bundle")).listRuns()).length,
          bad: bad.ok ? "" : bad.error,
          linkOk: fromLink.ok && JSON.stringify(fromLink.config) === JSON.stringify(config),
          broken: broken.ok ? "" : broken.error,
        };
      },
      { config, rows: rows() },
    );
    expect(out).toEqual({
      sameRows: true,
      source: "bundle",
      status: "imported",
      runs: 2,
      bad: expect.stringMatching(/^truncated or corrupt file/),
      linkOk: true,
      broken: expect.stringMatching(/^truncated link/),
    });
    await context.close();
  });

  it("when the quota is hit, prunes the oldest samples once, then says clearly that storage is full", async () => {
    // Chromium here ignores CDP Storage.overrideQuotaForOrigin (the estimate stays ~10 GB), so
    // the quota error is injected: IDBObjectStore.put throws QuotaExceededError, as the browser
    // does, for the next N puts. The pruning, the retry and the message run for real.
    const context = await browser.newContext();
    const page = await context.newPage();
    await openPage(page);
    const steps = Array.from({ length: 8 }, (_, s) => [sample(s, 0), sample(s, 1)]);
    const out = await page.evaluate(
      async ({ config, steps }) => {
        const { lab } = window;
        const g = globalThis as unknown as { failPuts: number };
        g.failPuts = 0;
        const put = IDBObjectStore.prototype.put;
        IDBObjectStore.prototype.put = function (this: IDBObjectStore, ...args: Parameters<typeof put>) {
          if (g.failPuts > 0) {
            g.failPuts--;
            throw new DOMException("The quota has been exceeded.", "QuotaExceededError");
          }
          return put.apply(this, args);
        };
        const store = await lab.openRunStore("lab-e2e-quota", { keepSampleSteps: 1000 });
        const run = await store.createRun({ name: "quota", config });
        for (const s of steps.slice(0, 7)) await store.appendSamples(run.id, s);
        g.failPuts = 1; // the next write hits the quota once: prune, retry, succeed
        await store.appendSamples(run.id, steps[7]);
        const loaded = await store.loadRun(run.id);
        const kept = [...new Set(loaded?.samples.map((s) => s.step))];
        g.failPuts = 2; // still full after pruning: StorageFullError
        let full = "";
        try {
          await store.saveCheckpoint(run.id, { phase: "rl", step: 8, bytes: new Uint8Array(64) });
        } catch (e) {
          full = `${(e as Error).name}: ${(e as Error).message}`;
        }
        const ck = await store.latestCheckpoint(run.id);
        const usage = await store.usage();
        const persisted = await lab.requestPersistence();
        store.close();
        return { kept, full, ck: ck?.step ?? null, usage, persisted: typeof persisted };
      },
      { config, steps },
    );
    // 7 steps stored, then the oldest half (4) pruned before step 7 was written.
    expect(out.kept).toEqual([4, 5, 6, 7]);
    expect(out.full).toMatch(
      /^StorageFullError: Browser storage is full: this lab uses [\d.]+ MB of its [\d.]+ MB quota/,
    );
    expect(out.ck).toBeNull(); // the failed write left nothing half-written
    expect(out.usage.quota).toBeGreaterThan(0);
    expect(typeof out.usage.persisted).toBe("boolean");
    expect(out.persisted).toBe("boolean");
    await context.close();
  });

  it("opens a store made before groups unchanged, then keeps multi-seed groups with their runs", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await openPage(page);
    const out = await page.evaluate(async (config) => {
      // A version-1 store, as labs before groups made it: the six stores and one run.
      await new Promise<void>((resolve, reject) => {
        const req = indexedDB.open("lab-v1", 1);
        req.onupgradeneeded = () => {
          const db = req.result;
          db.createObjectStore("runs", { keyPath: "id" });
          db.createObjectStore("edits", { autoIncrement: true }).createIndex("byRun", "runId");
          db.createObjectStore("events", { autoIncrement: true }).createIndex("byRun", "runId");
          db.createObjectStore("metrics", { keyPath: ["runId", "rank", "step"] });
          db.createObjectStore("samples", { keyPath: ["runId", "rank", "step", "index"] });
          db.createObjectStore("checkpoints", { keyPath: ["runId", "rank", "step"] });
          const summary = { phase: "rl", step: 0, rows: 1, metrics: { "reward/mean": 0.5 } };
          const run = { id: "old", name: "#1 old", config, createdAt: 1, updatedAt: 1, status: "done" };
          req.transaction?.objectStore("runs").put({ ...run, source: "local", summary });
          req.transaction?.objectStore("metrics").put({
            runId: "old",
            rank: 2,
            step: 0,
            row: { step: 0, phase: "rl", time: 0, "reward/mean": 0.5 },
          });
        };
        req.onsuccess = () => {
          req.result.close();
          resolve();
        };
        req.onerror = () => reject(req.error);
      });
      const store = await window.lab.openRunStore("lab-v1");
      const version = store.db.version;
      const old = await store.loadRun("old");
      const before = { runs: (await store.listRuns()).map((r) => r.name), groups: await store.listGroups() };
      const ref = (seed: number) => ({ id: "g1", name: "demo × 3 seeds (1–3)", seed, firstSeed: 1, size: 3 });
      for (const seed of [1, 2, 3])
        await store.createRun({ id: `s${seed}`, name: `seed ${seed}`, config, group: ref(seed) });
      const members = (await store.listGroups())[0]?.members;
      const loaded = (await store.loadRun("s2"))?.group;
      await store.deleteRun("s1");
      const afterDelete = (await store.listGroups())[0]?.members.map((m) => m.runId);
      await store.deleteGroup("g1");
      const end = { runs: (await store.listRuns()).map((r) => r.id), groups: await store.listGroups() };
      store.close();
      return {
        version,
        old: { rows: old?.rows.length, group: old?.group ?? null },
        before,
        members,
        loaded,
        afterDelete,
        end,
      };
    }, config);
    expect(out.version).toBe(2);
    expect(out.old).toEqual({ rows: 1, group: null });
    expect(out.before).toEqual({ runs: ["#1 old"], groups: [] });
    expect(out.members).toEqual([
      { runId: "s1", seed: 1 },
      { runId: "s2", seed: 2 },
      { runId: "s3", seed: 3 },
    ]);
    expect(out.loaded).toEqual({ id: "g1", name: "demo × 3 seeds (1–3)", seed: 2, firstSeed: 1, size: 3 });
    expect(out.afterDelete).toEqual(["s2", "s3"]);
    expect(out.end).toEqual({ runs: ["old"], groups: [] });
    await context.close();
  });
});
