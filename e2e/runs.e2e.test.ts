// e2e: runs that survive and travel, through the bare harness page (e2e/harness)
// and the trainer worker in real Chromium with WebGPU (SwiftShader): reload mid-run and resume
// from the last IndexedDB checkpoint with no lost rows; a share link with a live edit replayed
// in a fresh browser context gives the same metrics rows; a destroyed GPUDevice resumes the
// run; bundle export/import and corrupted bundles; the weights download built in the worker; and a browser without WebGPU still imports
// and opens a stored run while training says why it is disabled.
// Run: `E2E_SKIP_BUILD=1 npx vitest run --project e2e e2e/runs.e2e.test.ts`.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConfigEdit, defaultRunConfig, mergeConfig, type RunConfig } from "../config";
import type { GpuStatus, LoadedRun, MetricsRow, RunEvent, RunProgress, StoredRun } from "../workers/api";
import { launchChromium } from "./chromium";
import { serveHarness } from "./harness-server";

/** What e2e/harness/main.ts puts on globalThis.runsLab (evaluate() callbacks reach it as window.runsLab). */
interface Harness {
  collected: {
    rows: MetricsRow[];
    events: RunEvent[];
    progress: RunProgress[];
    rowsBeforeProgress: number;
    rowsAtEvent: number[];
  };
  trainer: {
    gpuStatus(): Promise<GpuStatus>;
    edit(path: string, value: unknown): Promise<void>;
    loseDevice(): Promise<void>;
    listRuns(): Promise<StoredRun[]>;
    loadRun(id: string): Promise<LoadedRun>;
    exportWeights(id: string, kind: "peft" | "hf"): Promise<Blob>;
  };
  checkpointKeys(runId: string): Promise<[number, number][]>;
  startRun(
    config: RunConfig,
    options?: { edits?: ConfigEdit[]; source?: string },
  ): Promise<{ runId: string }>;
  resumeRun(runId: string): Promise<{ runId: string }>;
  encodeLink(config: RunConfig, edits: ConfigEdit[]): Promise<string>;
  decodeLink(
    link: string,
  ): Promise<{ ok: true; config: RunConfig; edits: ConfigEdit[] } | { ok: false; error: string }>;
  exportBundleBytes(runId: string, weights?: boolean): Promise<number[]>;
  importBytes(
    bytes: number[] | null,
    mutate?: "truncate" | "flip",
  ): Promise<{ ok: true; id: string; name: string; status: string } | { ok: false; error: string }>;
}
declare global {
  interface Window {
    runsLab: Harness;
  }
}

const RL_PHASE_RANK = 2;
const SFT_STEPS = 2;

function tinyConfig(maxSteps: number): RunConfig {
  return mergeConfig(defaultRunConfig(), {
    seed: 5,
    model: { layers: 1, d_model: 16, heads: 2, context: 80 },
    sft: { steps: SFT_STEPS, batch: 4, warmup_steps: 1 },
    rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1 },
    sampling: { max_new_tokens: 16 },
    task: { eval_size: 2, eval_every: 0 },
    stop: { max_steps: maxSteps },
    checkpoint_every: 1,
  });
}

/** A row without the keys deterministic replay does not promise: time, timing/*, perf/*. */
function strip(row: MetricsRow): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(row).filter(([k]) => k !== "time" && !k.startsWith("timing/") && !k.startsWith("perf/")),
  );
}

const key = (r: MetricsRow) => `${r.phase}:${r.step}`;
/** The (phase:step) sequence a complete run of the tiny config has (the last RL row is the final evaluation). */
function fullSequence(maxSteps: number): string[] {
  return [
    ...Array.from({ length: SFT_STEPS }, (_, i) => `sft:${i}`),
    ...Array.from({ length: maxSteps + 1 }, (_, i) => `rl:${i}`),
  ];
}

let browser: Browser;
let server: { url: string; close(): Promise<void> };
let ctx: BrowserContext;
/** A finished run in `ctx`'s IndexedDB (from the resume test), for the bundle tests. */
let finished: { runId: string; rows: MetricsRow[] } | undefined;
let bundle: number[] | undefined;

async function openHarness(c: BrowserContext | Browser): Promise<Page> {
  const page = await c.newPage();
  page.on("pageerror", (e) => console.error("pageerror", e.message));
  await page.goto(server.url);
  await page.waitForFunction(() => document.getElementById("status")?.textContent === "ready");
  return page;
}

const rlRows = (p: Page) =>
  p.evaluate(() => window.runsLab.collected.rows.filter((r) => r.phase === "rl").length);

async function waitDone(page: Page, timeout = 120_000): Promise<void> {
  await page.waitForFunction(
    () =>
      window.runsLab.collected.progress.some((p) => p.phase === "done") ||
      window.runsLab.collected.events.some((e) => e.kind === "error"),
    null,
    { timeout },
  );
  const errors = await page.evaluate(() => window.runsLab.collected.events.filter((e) => e.kind === "error"));
  expect(errors).toEqual([]);
}

beforeAll(async () => {
  server = await serveHarness();
  browser = await launchChromium();
  ctx = await browser.newContext();
}, 180_000);

afterAll(async () => {
  await ctx?.close();
  await browser?.close();
  await server?.close();
});

describe("runs survive and travel", () => {
  it("resumes after a reload from the last checkpoint with no lost rows, then completes", async () => {
    const maxSteps = 4;
    const page = await openHarness(ctx);
    const { runId } = await page.evaluate((c) => window.runsLab.startRun(c), tinyConfig(maxSteps));
    await page.waitForFunction(
      () => window.runsLab.collected.rows.filter((r) => r.phase === "rl").length >= 2,
      null,
      {
        timeout: 120_000,
      },
    );
    const seen = await page.evaluate(() => window.runsLab.collected.rows);
    await page.reload();
    await page.waitForFunction(() => document.getElementById("status")?.textContent === "ready");
    // What the store kept when the page went: the rows seen, and any the worker wrote between that
    // read and the reload (on a busy machine the reload takes a while), so nothing here depends on
    // how long it took.
    const before = (await page.evaluate((id) => window.runsLab.trainer.loadRun(id), runId)).rows;
    expect(before.slice(0, seen.length)).toEqual(seen);

    // The newest RL checkpoint the store holds: rows of RL steps < k are covered by it.
    const keys = await page.evaluate((id) => window.runsLab.checkpointKeys(id), runId);
    const k = Math.max(...keys.filter(([rank]) => rank === RL_PHASE_RANK).map(([, step]) => step));
    // Two RL rows were seen, and the runner awaits the step-1 checkpoint before RL step 1 runs;
    // a checkpoint is never ahead of the rows stored.
    expect(k).toBeGreaterThanOrEqual(1);
    expect(before.filter((r) => r.phase === "rl").length).toBeGreaterThanOrEqual(k);

    await page.evaluate((id) => window.runsLab.resumeRun(id), runId);
    await waitDone(page);
    const got = await page.evaluate(() => window.runsLab.collected);
    expect(got.rowsBeforeProgress).toBeGreaterThan(0);
    const replayed = got.rows.slice(0, got.rowsBeforeProgress);
    const covered = before.filter((r) => r.phase !== "rl" || r.step < k);
    // Every row up to the checkpoint comes back from the store, unchanged (time keys included).
    expect(replayed).toEqual(covered);
    // Training continues at the checkpoint's step and runs to max_steps: each step once, in order.
    expect(got.rows.slice(got.rowsBeforeProgress).map(key)[0]).toBe(`rl:${k}`);
    expect(got.rows.map(key)).toEqual(fullSequence(maxSteps));
    const stored = await page.evaluate((id) => window.runsLab.trainer.loadRun(id), runId);
    expect(stored.rows.map(key)).toEqual(fullSequence(maxSteps));
    expect(stored.rows.slice(0, covered.length).map(strip)).toEqual(covered.map(strip));
    expect(stored.run.status).toBe("done");
    finished = { runId, rows: stored.rows };
    await page.close();
  }, 150_000);

  it("replays a share link with a live edit in a fresh context to the same metrics rows", async () => {
    const maxSteps = 3;
    const page = await openHarness(ctx);
    const config = tinyConfig(maxSteps);
    const { runId } = await page.evaluate((c) => window.runsLab.startRun(c), config);
    await page.waitForFunction(() => window.runsLab.collected.rows.some((r) => r.phase === "rl"), null, {
      timeout: 120_000,
    });
    await page.evaluate(() => window.runsLab.trainer.edit("rl.lr", 0.02));
    await waitDone(page);
    const original = await page.evaluate(() => window.runsLab.collected.rows);
    const stored = await page.evaluate((id) => window.runsLab.trainer.loadRun(id), runId);
    expect(stored.edits).toHaveLength(1);
    expect(stored.edits[0]).toMatchObject({ path: "rl.lr", value: 0.02 });
    expect(stored.edits[0].step).toBeGreaterThanOrEqual(1);
    expect(stored.edits[0].step).toBeLessThan(maxSteps);
    const link = await page.evaluate(([c, e]) => window.runsLab.encodeLink(c, e), [
      config,
      stored.edits,
    ] as const);
    await page.close();

    const fresh = await browser.newContext();
    try {
      const p2 = await openHarness(fresh);
      const decoded = await p2.evaluate((l) => window.runsLab.decodeLink(l), link);
      if (!decoded.ok) throw new Error(`link did not decode: ${decoded.error}`);
      expect(decoded.config).toEqual(config);
      expect(decoded.edits).toEqual(stored.edits);
      expect(await p2.evaluate(() => window.runsLab.trainer.listRuns())).toEqual([]);
      await p2.evaluate(([c, e]) => window.runsLab.startRun(c, { edits: e, source: "link" }), [
        decoded.config,
        decoded.edits,
      ] as const);
      await waitDone(p2);
      const replay = await p2.evaluate(() => window.runsLab.collected);
      expect(replay.events.filter((e) => e.kind === "edit").map((e) => e.edit)).toEqual(stored.edits);
      expect(replay.rows.map(key)).toEqual(fullSequence(maxSteps));
      expect(replay.rows.map(key)).toEqual(original.map(key));
      // Row by row, so a difference names its step.
      for (let i = 0; i < original.length; i++) {
        expect({ at: key(replay.rows[i]), ...strip(replay.rows[i]) }).toEqual({
          at: key(original[i]),
          ...strip(original[i]),
        });
      }
    } finally {
      await fresh.close();
    }
  }, 240_000);

  it("resumes the run from its last checkpoint after the GPU device is lost", async () => {
    const maxSteps = 4;
    const page = await openHarness(ctx);
    const { runId } = await page.evaluate((c) => window.runsLab.startRun(c), tinyConfig(maxSteps));
    await page.waitForFunction(() => window.runsLab.collected.rows.some((r) => r.phase === "rl"), null, {
      timeout: 120_000,
    });
    expect(await rlRows(page)).toBeLessThan(maxSteps);
    await page.evaluate(() => window.runsLab.trainer.loseDevice());
    await page.waitForFunction(
      () =>
        window.runsLab.collected.events.some(
          (e) => (e.kind === "info" && /device lost/i.test(e.message)) || e.kind === "error",
        ),
      null,
      { timeout: 30_000 },
    );
    await waitDone(page);
    const got = await page.evaluate(() => window.runsLab.collected);
    const info = got.events.findIndex((e) => e.kind === "info" && /device lost/i.test(e.message));
    const after = got.rows.slice(got.rowsAtEvent[info]);
    // After the loss, the kept rows are replayed and training goes on to max_steps on a new device.
    expect(after.filter((r) => r.phase === "rl").length).toBeGreaterThan(0);
    expect(after.at(-1)).toMatchObject({ phase: "rl", step: maxSteps });
    const stored = await page.evaluate((id) => window.runsLab.trainer.loadRun(id), runId);
    expect(stored.rows.map(key)).toEqual(fullSequence(maxSteps));
    expect(stored.run.status).toBe("done");
    await page.close();
  }, 150_000);

  it("exports a run as a bundle, imports it as a stored run, and refuses corrupted bundles clearly", async () => {
    if (!finished) throw new Error("needs the finished run of the resume test");
    const { runId, rows } = finished;
    const page = await openHarness(ctx);
    bundle = await page.evaluate((id) => window.runsLab.exportBundleBytes(id, true), runId);
    expect(bundle.length).toBeGreaterThan(100);
    const imported = await page.evaluate(() => window.runsLab.importBytes(null));
    if (!imported.ok) throw new Error(`import failed: ${imported.error}`);
    expect(imported.id).not.toBe(runId);
    expect(imported.status).toBe("imported");
    const listed = await page.evaluate(() => window.runsLab.trainer.listRuns());
    expect(listed.find((r) => r.id === imported.id)).toMatchObject({ source: "bundle" });
    const loaded = await page.evaluate((id) => window.runsLab.trainer.loadRun(id), imported.id);
    expect(loaded.rows).toEqual(rows);

    const runsBefore = listed.length;
    for (const mutate of ["truncate", "flip"] as const) {
      const bad = await page.evaluate((m) => window.runsLab.importBytes(null, m), mutate);
      expect(bad.ok, mutate).toBe(false);
      if (!bad.ok) expect(bad.error, mutate).toMatch(/^not a run bundle: .*(truncated|corrupt|not valid)/);
    }
    const junk = await page.evaluate(() =>
      window.runsLab.importBytes(Array.from(new TextEncoder().encode("hello"))),
    );
    expect(junk).toEqual({ ok: false, error: expect.stringMatching(/^not a run bundle: not valid JSON/) });
    // Random bytes gzipped: named as a gzip without text, and "not a run bundle" said once.
    const gzNoise = await page.evaluate(async () => {
      const noise = new Uint8Array(256).map((_, i) => (i * 151 + 7) & 0xff);
      const s = new Blob([noise]).stream().pipeThrough(new CompressionStream("gzip"));
      return window.runsLab.importBytes(Array.from(new Uint8Array(await new Response(s).arrayBuffer())));
    });
    expect(gzNoise).toEqual({
      ok: false,
      error: expect.stringMatching(/^not a run bundle: the gzip file holds no UTF-8 text/),
    });
    for (const r of [junk, gzNoise]) if (!r.ok) expect(r.error.match(/run bundle/g)).toHaveLength(1);
    // The worker is still alive and nothing half-imported was stored.
    expect(await page.evaluate(() => window.runsLab.trainer.listRuns())).toHaveLength(runsBefore);

    // The weights download: the worker builds the zip from the stored checkpoint, the page gets one Blob.
    const zip = await page.evaluate(async (id) => {
      const blob = await window.runsLab.trainer.exportWeights(id, "hf");
      return { type: blob.type, bytes: Array.from(new Uint8Array(await blob.arrayBuffer())) };
    }, runId);
    expect(zip.type).toBe("application/zip");
    const file = join(mkdtempSync(join(tmpdir(), "weights-e2e-")), "hf.zip");
    writeFileSync(file, Uint8Array.from(zip.bytes));
    const read =
      "import zipfile,sys,json; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print(json.dumps(z.namelist()))";
    expect(JSON.parse(execFileSync("python3", ["-c", read, file], { encoding: "utf8" }))).toEqual([
      "config.json",
      "model.safetensors",
    ]);
    const peft = await page.evaluate(async (id) => {
      try {
        await window.runsLab.trainer.exportWeights(id, "peft");
        return null;
      } catch (err) {
        return (err as Error).message;
      }
    }, runId);
    expect(peft).toContain("model.lora.rank 0");
    await page.close();
  }, 60_000);

  it("opens an imported bundle read-only in a browser without WebGPU, and says why training is off", async () => {
    if (!bundle || !finished) throw new Error("needs the bundle of the export test");
    const noGpu = await launchChromium({ webgpu: false });
    try {
      const page = await openHarness(noGpu);
      const status = await page.evaluate(() => window.runsLab.trainer.gpuStatus());
      expect(status.ok).toBe(false);
      if (!status.ok) {
        expect(status.reason).toMatch(/^(no-api|no-adapter)$/);
        expect(status.message).toMatch(/WebGPU/i);
      }
      const imported = await page.evaluate((b) => window.runsLab.importBytes(b), bundle);
      if (!imported.ok) throw new Error(`import failed: ${imported.error}`);
      const loaded = await page.evaluate((id) => window.runsLab.trainer.loadRun(id), imported.id);
      expect(loaded.rows).toEqual(finished.rows);
      expect(loaded.run.status).toBe("imported");
      // Training refuses with the WebGPU message and leaves no stray run behind.
      const err = await page.evaluate(async (c) => {
        try {
          await window.runsLab.startRun(c);
          return null;
        } catch (e) {
          return (e as Error).message;
        }
      }, tinyConfig(1));
      expect(err).toMatch(/WebGPU/i);
      expect((await page.evaluate(() => window.runsLab.trainer.listRuns())).map((r) => r.id)).toEqual([
        imported.id,
      ]);
    } finally {
      await noGpu.close();
    }
  }, 60_000);
});
