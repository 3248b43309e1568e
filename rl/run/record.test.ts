// The run record's promise: config + seed + edits reproduce a run's rows, number for number
// (every key but time, timing/* and perf/*), whichever way it is replayed. rl/run/run-loop.ts owns
// the schedule; these tests drive it through the worker's wiring (workers/run-record.ts over a
// MemoryRunStore with RunStore's truncation rule) and the CLI's (cli/run.ts run folders), on
// the CPU model with the real sandbox:
// - the promise: SFT then RL, live edits in both phases, a crash and a resume in the middle,
//   then the link and the bundle replayed through both paths, one of them resumed again;
// - two reproductions of replay bugs (CLI one RL step late; SFT edits replayed in RL);
// - a property test over random edit logs and resume points;
// - a resume during VAPO value pretraining continues it (it does not start over);
// - wall-time checkpoints (checkpointSeconds) land mid-SFT too, and resume from there;
// - the committed fixtures of the older formats (bundle v1, link v1) decode and replay.
// Run: `npx vitest run --project unit rl/run/record.test.ts`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configFromLink, readBundle } from "../../cli/link";
import { openRunFolder, runToFolder } from "../../cli/run";
import {
  type ConfigEdit,
  defaultRunConfig,
  type EditPhase,
  mergeConfig,
  type RunConfig,
  recipeConfig,
} from "../../config";
import { decodeLink, encodeLink, sealLink } from "../../config/link";
import { CpuModel } from "../../model/cpu";
import { InProcessSandbox } from "../../sandbox/run-code";
import { createRng } from "../../tasks/rng";
import { MemoryRunStore, openStoredRun, recordingEvents } from "../../workers/run-record";
import { createTrainer } from "./build-trainer";
import { decodeBundle, encodeBundle } from "./run-bundle";
import { type RunEvents, RunLoop, type RunLoopOptions } from "./run-loop";
import type { MetricsRow } from "./trainer";

let sandbox: InProcessSandbox;
const dir = mkdtempSync(join(tmpdir(), "lab-record-"));
beforeAll(async () => {
  sandbox = await InProcessSandbox.create();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const deps = () => ({
  makeModel: async (mc: CpuModel["config"], w: Float32Array | undefined, seed: number) =>
    new CpuModel(mc, w, seed),
  sandbox,
  readFile: async (p: string): Promise<Uint8Array> => {
    throw new Error(`no file ${p} in this test`);
  },
  clock: () => 0,
});

function tiny(over: object = {}): RunConfig {
  return mergeConfig(
    mergeConfig(defaultRunConfig(), {
      seed: 21,
      model: { layers: 1, d_model: 16, heads: 2, context: 80 },
      sft: { steps: 4, batch: 4, warmup_steps: 1 },
      rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 2 },
      sampling: { max_new_tokens: 16 },
      task: { eval_size: 2, eval_every: 2 },
      stop: { max_steps: 4 },
      checkpoint_every: 2,
    }),
    over,
  );
}

/** A row as replay compares it: everything but time, timing/* and perf/*. */
const comparable = (rows: readonly MetricsRow[]) =>
  rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).filter(([k]) => k !== "time" && !k.startsWith("timing/") && !k.startsWith("perf/")),
    ),
  );

type LiveEdit = { phase: EditPhase; step: number; path: string; value: unknown };

/** The row after which a person's live edit for {phase, step} is made (it applies at that step). */
function madeAfter(row: MetricsRow, e: LiveEdit, c: RunConfig): boolean {
  if (row.phase === "rl" && row["reward/mean"] === undefined) return false; // the final evaluation
  if (e.phase === "sft") return row.phase === "sft" && row.step === e.step - 1;
  if (e.step === 0) return row.phase === "sft" && row.step === c.sft.steps - 1;
  return row.phase === "rl" && row.step === e.step - 1;
}

/**
 * The worker path: a run in the store (new, or resumed from its newest checkpoint), with live
 * edits made as rows arrive and an optional crash (stop) after a row. Returns the store's rows.
 */
async function workerRun(
  store: MemoryRunStore,
  start: { id: string; config?: RunConfig; edits?: ConfigEdit[] } | { resume: string },
  opts: { live?: LiveEdit[]; crashAfter?: (row: MetricsRow) => boolean } = {},
): Promise<void> {
  let config: RunConfig;
  let id: string;
  let edits: ConfigEdit[];
  let resume: RunLoopOptions["resume"];
  if ("resume" in start) {
    id = start.resume;
    ({ config, edits, resume } = await openStoredRun(store, id));
  } else {
    id = start.id;
    config = start.config!;
    edits = start.edits ?? [];
    await store.createRun({ id, name: id, config });
    for (const e of edits) await store.appendEdit(id, e);
  }
  const writes: Promise<void>[] = [];
  const record = recordingEvents(store, id, (w) => writes.push(w));
  const trainer = await createTrainer(config, deps());
  const live = [...(opts.live ?? [])];
  const loop: RunLoop = new RunLoop(
    trainer,
    {
      ...record,
      row(row) {
        record.row(row);
        for (const e of live.filter((x) => madeAfter(row, x, config))) loop.edit(e.path, e.value);
        if (opts.crashAfter?.(row)) loop.stop();
      },
    },
    { edits, resume },
  );
  for (const e of live.filter((x) => x.phase === "sft" && x.step === 0)) loop.edit(e.path, e.value);
  await loop.run();
  await Promise.all(writes);
}

/** The CLI path: a run folder from a config and edits (or resumed), optionally stopped after a row. */
async function cliRun(
  out: string,
  input: { config: RunConfig; edits: ConfigEdit[] } | "resume",
  crashAfter?: (row: MetricsRow) => boolean,
): Promise<MetricsRow[]> {
  const { config, edits, resume } = input === "resume" ? openRunFolder(out) : { ...input, resume: undefined };
  let loop: RunLoop | undefined;
  await runToFolder({
    config,
    edits,
    out,
    resume,
    ...deps(),
    on: {
      loop: (l) => {
        loop = l;
      },
      row: (row) => {
        if (crashAfter?.(row)) loop?.stop();
      },
    },
  });
  return readFileSync(join(out, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as MetricsRow);
}

const folder = (name: string) => {
  const d = join(dir, name);
  rmSync(d, { recursive: true, force: true });
  return d;
};

describe("the promise: a link or bundle replays the run", () => {
  it("SFT then RL, live edits in both phases, a crash and a resume: both paths give the same rows", async () => {
    const config = tiny({ rl: { kl: { coef: 0.05 } } });
    const live: LiveEdit[] = [
      { phase: "sft", step: 2, path: "sft.lr", value: 1e-3 }, // a live lr edit in SFT
      { phase: "rl", step: 1, path: "rl.clip_eps_high", value: 0.28 }, // a clip edit in RL
      { phase: "rl", step: 2, path: "rewards.terms.0.weight", value: 2 }, // a reward edit in RL
    ];
    // The run as a person makes it, uninterrupted: the reference.
    const store = new MemoryRunStore();
    await workerRun(store, { id: "straight", config }, { live });
    const straight = (await store.loadRun("straight"))!;
    expect(straight.edits).toEqual(live);
    const rows = comparable(straight.rows);
    expect(rows.filter((r) => r.phase === "sft")).toHaveLength(4);
    expect(rows.filter((r) => r.phase === "rl")).toHaveLength(5); // 4 steps + the final evaluation
    // The edits did something where they were made, and not before.
    expect(straight.rows[2]["actor/lr"]).not.toBe(straight.rows[1]["actor/lr"]);

    // The same run, crashed after RL step 2 (its last checkpoint {rl, 2}, saved before the
    // reward edit applied at the start of step 2) and resumed: the resume replays that edit
    // from the record and recomputes step 2.
    await workerRun(
      store,
      { id: "crashed", config },
      { live, crashAfter: (r) => r.phase === "rl" && r.step === 2 },
    );
    expect((await store.latestCheckpoint("crashed"))?.step).toBe(2);
    await workerRun(store, { resume: "crashed" });
    const resumed = (await store.loadRun("crashed"))!;
    expect(resumed.edits).toEqual(live);
    expect(comparable(resumed.rows)).toEqual(rows);

    // Its link and bundle, replayed through the worker path and the CLI path.
    const link = await decodeLink(await encodeLink({ config: resumed.run.config, edits: resumed.edits }));
    if (!link.ok) throw new Error(link.error);
    expect(link.edits).toEqual(live);
    await workerRun(store, { id: "from-link", config: link.config, edits: link.edits });
    expect(comparable((await store.loadRun("from-link"))!.rows)).toEqual(rows);

    const fromLink = await configFromLink(await encodeLink({ config, edits: resumed.edits }));
    expect(comparable(await cliRun(folder("cli-link"), fromLink))).toEqual(rows);

    const bundle = await readBundle(
      await encodeBundle({
        name: "crashed",
        createdAt: new Date(0).toISOString(),
        config: resumed.run.config,
        edits: resumed.edits,
        metrics: resumed.rows,
        samples: resumed.samples,
        events: resumed.events,
      }),
    );
    // The CLI replay of the bundle crashes in SFT (before its first checkpoint) and again in RL
    // after RL step 2 (checkpoint {rl, 2}); each resume continues from the folder.
    const out = folder("cli-bundle");
    await cliRun(out, bundle, (r) => r.phase === "sft" && r.step === 1);
    await cliRun(out, "resume", (r) => r.phase === "rl" && r.step === 2);
    expect(comparable(await cliRun(out, "resume"))).toEqual(rows);
    expect(comparable(bundle.metrics)).toEqual(rows);
  });
});

describe("reproductions of replay bugs", () => {
  it("a link whose custom reward calls Math.random and Date.now replays row for row", async () => {
    const config = tiny({
      sft: { steps: 0 },
      stop: { max_steps: 2 },
      rewards: { custom_js: "(x) => Math.random() + (Date.now() % 7)" },
    });
    const link = await configFromLink(await encodeLink({ config, edits: [] }));
    const a = await cliRun(folder("random-a"), link);
    const b = await cliRun(folder("random-b"), link);
    const custom = a.map((r) => r["reward/custom-js/mean"]).filter((v) => v !== undefined);
    expect(custom.length).toBeGreaterThan(0);
    // A real draw: not a constant, and different from step to step.
    expect(new Set(custom).size).toBe(custom.length);
    expect(comparable(b)).toEqual(comparable(a));
  });

  it("a checkpoint cut at any byte still resumes, from the one before, to the same rows", async () => {
    const config = tiny({ sft: { steps: 0 }, stop: { max_steps: 3 }, checkpoint_every: 1 });
    const ref = await cliRun(folder("cut-ref"), { config, edits: [] });
    const out = folder("cut");
    await cliRun(out, { config, edits: [] }, (row) => row.phase === "rl" && row.step === 2);
    const ck = join(out, "checkpoint.safetensors");
    const whole = readFileSync(ck);
    const before = readFileSync(join(out, "checkpoint.prev.safetensors"));
    const pointOf = (bytes: Uint8Array) => {
      writeFileSync(ck, bytes);
      return openRunFolder(out).resume?.at;
    };
    const newest = pointOf(whole);
    const previous = pointOf(before);
    expect(newest).not.toEqual(previous);
    // A kill mid-write left the temporary file cut: the whole checkpoint is used.
    writeFileSync(`${ck}.tmp`, whole.subarray(0, whole.length >> 1));
    expect(pointOf(whole)).toEqual(newest);
    // checkpoint.safetensors itself cut (written in place by an older CLI, or a disk that lost
    // its tail): the previous checkpoint is used, at every cut.
    const rng = createRng("cut");
    const cuts = [
      0,
      1,
      8,
      100,
      whole.length - 1,
      ...Array.from({ length: 5 }, () => rng.int(0, whole.length - 1)),
    ];
    for (const at of cuts) expect(pointOf(whole.subarray(0, at)), `cut at ${at}`).toEqual(previous);
    // And the run resumed from there ends with the uninterrupted run's rows.
    writeFileSync(ck, whole.subarray(0, whole.length >> 1));
    expect(comparable(await cliRun(out, "resume"))).toEqual(comparable(ref));
  });

  it("a recorded rl.lr edit at RL step 2 replays at RL step 2 through the CLI and the worker", async () => {
    const config = tiny({ sft: { steps: 0 } });
    const edits: ConfigEdit[] = [{ phase: "rl", step: 2, path: "rl.lr", value: 1e-5 }];
    const lrs = (rows: MetricsRow[]) =>
      rows.filter((r) => r.phase === "rl" && r["reward/mean"] !== undefined).map((r) => r["actor/lr"]);
    const link = await configFromLink(await encodeLink({ config, edits }));
    expect(lrs(await cliRun(folder("late-cli"), link))).toEqual([3e-4, 3e-4, 1e-5, 1e-5]);
    const store = new MemoryRunStore();
    await workerRun(store, { id: "late", config, edits: link.edits });
    expect(lrs((await store.loadRun("late"))!.rows)).toEqual([3e-4, 3e-4, 1e-5, 1e-5]);
  });

  it("an sft.lr edit at SFT step 2 replays in SFT, not at RL step 2 (link v2, and v1 by its rule)", async () => {
    const config = tiny({ sft: { warmup_steps: 0, schedule: "constant" } });
    const store = new MemoryRunStore();
    await workerRun(
      store,
      { id: "orig", config },
      { live: [{ phase: "sft", step: 2, path: "sft.lr", value: 1e-3 }] },
    );
    const orig = (await store.loadRun("orig"))!;
    const sftLr = (rows: MetricsRow[]) => rows.filter((r) => r.phase === "sft").map((r) => r["actor/lr"]);
    expect(sftLr(orig.rows)).toEqual([3e-3, 3e-3, 1e-3, 1e-3]);
    const v1 = await sealLink(
      { d: { "sft.warmup_steps": 0, "sft.schedule": "constant", seed: 21 }, e: [[2, "sft.lr", 1e-3]] },
      1,
    );
    const old = await decodeLink(v1);
    expect(old.ok && old.edits).toEqual([{ phase: "sft", step: 2, path: "sft.lr", value: 1e-3 }]);
    const replay = await cliRun(
      folder("sft-edit"),
      await configFromLink(await encodeLink({ config, edits: orig.edits })),
    );
    expect(comparable(replay)).toEqual(comparable(orig.rows));
    expect(
      replay
        .filter((r) => r.phase === "rl")
        .every((r) => r["actor/lr"] === undefined || r["actor/lr"] === 3e-4),
    ).toBe(true);
  });
});

// Live fields whose change shows in the rows, with values to draw from.
const EDITABLE: [path: string, phase: EditPhase, values: unknown[]][] = [
  ["sft.lr", "sft", [1e-3, 5e-3]],
  ["sft.grad_clip", "sft", [0.1, 0]],
  ["rl.lr", "rl", [1e-5, 1e-3]],
  ["rl.clip_eps_high", "rl", [0.28, 0.05]],
  ["rl.kl.coef", "rl", [0.1, 0]],
  ["rewards.terms.0.weight", "rl", [2, -1]],
  ["sampling.temperature", "rl", [0.5, 1.5]],
  ["rl.entropy_coef", "rl", [0.01]],
];

describe("property: replay from any resume point equals the original", () => {
  it("random edit logs (phase, step, field, value) and random resume points", async () => {
    const config = tiny({ sft: { steps: 3 }, stop: { max_steps: 3 }, checkpoint_every: 1 });
    const edit = fc
      .record({
        f: fc.nat(EDITABLE.length - 1),
        v: fc.nat(9),
        step: fc.nat(2),
        any: fc.boolean(), // an sft.* field edited during RL (and the reverse) is allowed too
      })
      .map(({ f, v, step, any }): LiveEdit => {
        const [path, phase, values] = EDITABLE[f];
        const p: EditPhase = any ? (phase === "sft" ? "rl" : "sft") : phase;
        return { phase: p, step, path, value: values[v % values.length] };
      });
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { maxLength: 4 }), fc.nat(100), async (live, pick) => {
        // The original: edits made live; every checkpoint kept.
        const cks: { phase: EditPhase; step: number; bytes: Uint8Array }[] = [];
        const rows: MetricsRow[] = [];
        const trainer = await createTrainer(config, deps());
        const loop: RunLoop = new RunLoop(trainer, {
          row(row) {
            rows.push(row);
            for (const e of live.filter((x) => madeAfter(row, x, config))) loop.edit(e.path, e.value);
          },
          checkpoint: (ck) => {
            cks.push(ck);
          },
        });
        for (const e of live.filter((x) => x.phase === "sft" && x.step === 0)) loop.edit(e.path, e.value);
        await loop.run();
        const log = loop.appliedEdits;
        expect(log.map((e) => `${e.phase}${e.step}`).sort()).toEqual(
          live.map((e) => `${e.phase}${e.step}`).sort(),
        );
        // The replay: from a random checkpoint, with the recorded log.
        const ck = cks[pick % cks.length];
        const replayed: MetricsRow[] = [];
        const on: RunEvents = { row: (r) => replayed.push(r) };
        const resume = { at: { phase: ck.phase, step: ck.step }, checkpoint: ck.bytes };
        await new RunLoop(await createTrainer(config, deps()), on, { edits: log, resume }).run();
        const kept = rows.filter((r) =>
          r.phase === ck.phase
            ? r.step < ck.step
            : ["sft", "value_pretrain", "rl"].indexOf(r.phase) <
              ["sft", "value_pretrain", "rl"].indexOf(ck.phase),
        );
        expect(comparable([...kept, ...replayed])).toEqual(comparable(rows));
      }),
      { numRuns: 12, seed: 16 },
    );
  }, 480_000);
});

describe("checkpointSeconds (the web worker's wall-time checkpoints)", () => {
  it("checkpoints in SFT and RL with checkpoint_every 0, and a mid-SFT resume gives the same rows", async () => {
    const config = tiny({ checkpoint_every: 0 });
    // Each step takes 10 s of the injected clock; a checkpoint is due 15 s after the last.
    let t = 0;
    const rows: MetricsRow[] = [];
    const cks: { phase: EditPhase; step: number; bytes: Uint8Array }[] = [];
    const on: RunEvents = {
      row: (r) => {
        rows.push(r);
        t += 10;
      },
      checkpoint: (ck) => {
        cks.push(ck);
      },
    };
    await new RunLoop(await createTrainer(config, deps()), on, { checkpointSeconds: 15, now: () => t }).run();
    expect(cks.map((c) => `${c.phase}:${c.step}`)).toEqual(["sft:2", "sft:4", "rl:2", "rl:4"]);
    const ck = cks[0];
    const replayed: MetricsRow[] = [];
    const resume = { at: { phase: ck.phase, step: ck.step }, checkpoint: ck.bytes };
    await new RunLoop(
      await createTrainer(config, deps()),
      { row: (r) => replayed.push(r) },
      { resume },
    ).run();
    const kept = rows.filter((r) => r.phase === "sft" && r.step < ck.step);
    expect(comparable([...kept, ...replayed])).toEqual(comparable(rows));
  }, 480_000);
});

describe("value pretraining", () => {
  it("is checkpointed: a resume during it continues at its step, with the same rows", async () => {
    const config = mergeConfig(recipeConfig("vapo"), {
      seed: 5,
      model: { layers: 1, d_model: 16, heads: 2, context: 80 },
      sft: { steps: 2, batch: 4, warmup_steps: 1 },
      rl: { prompts_per_step: 2, group_size: 2, epochs: 1, minibatches: 1, value_pretrain: { steps: 4 } },
      rewards: { custom_js: "(x) => x.text.charCodeAt(0) % 3" },
      sampling: { max_new_tokens: 16 },
      task: { eval_size: 2 },
      stop: { max_steps: 2 },
      checkpoint_every: 2,
    });
    const live: LiveEdit[] = [{ phase: "value_pretrain", step: 2, path: "rl.grad_clip", value: 0.01 }];
    const vpRow = (r: MetricsRow, step: number) => r.phase === "value_pretrain" && r.step === step;
    const store = new MemoryRunStore();
    await workerRun(store, { id: "straight", config });
    const straightRows = (await store.loadRun("straight"))!.rows;
    // The same run with a live edit during value pretraining (made after its step 1, applied
    // at step 2, after the checkpoint {value_pretrain, 2}), crashed after step 2, resumed:
    // steps 0 and 1 are kept, step 2 on recomputed with the edit replayed from the record.
    const edit = async (id: string, crash?: boolean) => {
      const writes: Promise<void>[] = [];
      const start = crash === undefined ? await openStoredRun(store, id) : undefined;
      if (!start) await store.createRun({ id, name: id, config });
      const record = recordingEvents(store, id, (w) => writes.push(w));
      const loop: RunLoop = new RunLoop(
        await createTrainer(config, deps()),
        {
          ...record,
          row(row) {
            record.row(row);
            if (vpRow(row, 1) && !start) loop.edit(live[0].path, live[0].value);
            if (crash && vpRow(row, 2)) loop.stop();
          },
        },
        start ? { edits: start.edits, resume: start.resume } : {},
      );
      await loop.run().catch(() => {});
      await Promise.all(writes);
      return start;
    };
    await edit("crashed", true);
    expect(await store.latestCheckpoint("crashed")).toMatchObject({ phase: "value_pretrain", step: 2 });
    const resumed = await edit("crashed");
    expect(resumed?.resume?.at).toEqual({ phase: "value_pretrain", step: 2 });
    expect(resumed?.kept.rows.filter((r) => r.phase === "value_pretrain").map((r) => r.step)).toEqual([0, 1]);
    const rows = (await store.loadRun("crashed"))!.rows;
    expect(rows.filter((r) => r.phase === "value_pretrain").map((r) => r.step)).toEqual([0, 1, 2, 3]);
    // Up to step 2 the rows are the straight run's; the edit (clip 0.01 on step 2's update)
    // shows in step 3's row (a row logs the critic as it was before its step).
    const vp = (rs: MetricsRow[]) => comparable(rs.filter((r) => r.phase === "value_pretrain"));
    expect(vp(rows).slice(0, 3)).toEqual(vp(straightRows).slice(0, 3));
    expect(vp(rows)[3]["critic/vf_loss"]).not.toEqual(vp(straightRows)[3]["critic/vf_loss"]);
    // And the whole run equals its uninterrupted replay from the record.
    const rec = (await store.loadRun("crashed"))!;
    expect(rec.edits).toEqual([{ ...live[0] }]);
    await workerRun(store, { id: "replay", config, edits: rec.edits });
    expect(comparable(rows)).toEqual(comparable((await store.loadRun("replay"))!.rows));
  });
});

/**
 * Rows of a run recorded by an older lab: the same rows, keys and learning rates (the schedule
 * decides those, exactly), other numbers within STYLE's tolerance, atol 1e-5 + rtol 1e-3: the
 * engine's float32 arithmetic may have been reordered since the fixture was made.
 */
/**
 * Metrics that labs after the committed fixtures log on every RL update: a replay of an older
 * fixture carries them too; every key the fixture recorded must still reproduce.
 */
const ADDED_SINCE_FIXTURES = new Set([
  "rollout/logprob_diff_mean",
  "rollout/logprob_diff_max",
  "rollout/is_ratio_mean",
  "rollout/is_ratio_min",
  "rollout/is_ratio_max",
  "rollout/trunc_dropped_frac",
  "groups/zero_std_frac_all_correct",
  "groups/zero_std_frac_all_wrong",
  "val/valid_call_rate",
  "val/valid_call_rate_sampled",
]);

function expectSameRun(got: readonly MetricsRow[], want: readonly MetricsRow[], added = new Set<string>()) {
  const drop = (rows: Record<string, unknown>[]) =>
    rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !added.has(k))));
  const [g, w] = [drop(comparable(got)), comparable(want)] as [MetricsRow[], MetricsRow[]];
  expect(g.map((r) => Object.keys(r).sort())).toEqual(w.map((r) => Object.keys(r).sort()));
  expect(g.map((r) => [r.phase, r.step, r["actor/lr"]])).toEqual(
    w.map((r) => [r.phase, r.step, r["actor/lr"]]),
  );
  const bad: string[] = [];
  g.forEach((r, i) => {
    for (const [k, v] of Object.entries(r)) {
      const ref = w[i][k];
      if (typeof v !== "number" || typeof ref !== "number") expect(v).toEqual(ref);
      else if (!(Math.abs(ref - v) <= 1e-5 + 1e-3 * Math.abs(ref)))
        bad.push(`${r.phase} ${r.step} ${k}: ${v} vs ${ref}`);
    }
  });
  expect(bad.slice(0, 5)).toEqual([]);
}

describe("older formats: the committed fixtures", () => {
  const fixture = (name: string) => readFileSync(new URL(`../../config/fixtures/${name}`, import.meta.url));

  it("bundle v1 decodes with each edit's phase from its event, and replays to its own metrics", async () => {
    const r = await decodeBundle(new Uint8Array(fixture("bundle-v1.lab-run.json")));
    if (!r.ok) throw new Error(r.error);
    expect(r.run.edits).toEqual([
      { phase: "sft", step: 2, path: "sft.lr", value: 1e-3 },
      { phase: "rl", step: 1, path: "rl.clip_eps_high", value: 0.28 },
      { phase: "rl", step: 2, path: "rl.lr", value: 1e-5 },
      { phase: "rl", step: 2, path: "rewards.terms.0.weight", value: 2 },
    ]);
    expectSameRun(await cliRun(folder("bundle-v1"), r.run), r.run.metrics, ADDED_SINCE_FIXTURES);
  });

  it("link v1 of the same run decodes by the migration rule and replays to the bundle's metrics", async () => {
    const b = await decodeBundle(new Uint8Array(fixture("bundle-v1.lab-run.json")));
    if (!b.ok) throw new Error(b.error);
    const link = await decodeLink(fixture("link-v1-run.txt").toString("utf8"));
    if (!link.ok) throw new Error(link.error);
    expect(link.version).toBe(1);
    expect(link.config).toEqual(b.run.config);
    expect(link.edits).toEqual(b.run.edits);
    const store = new MemoryRunStore();
    await workerRun(store, { id: "link-v1", config: link.config, edits: link.edits });
    expectSameRun((await store.loadRun("link-v1"))!.rows, b.run.metrics, ADDED_SINCE_FIXTURES);
  });
});
