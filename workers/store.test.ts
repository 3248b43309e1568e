// RunStore's pure policy in Node (no IndexedDB here): summaries, sample and checkpoint bounds,
// the quota prune plan, checkpoint coverage, quota-error detection, multi-seed group records
// (joining, leaving, each member's place; MemoryRunStore keeps them the same way). The IndexedDB path runs in
// Chromium: e2e/persist.e2e.test.ts. Run: `npx vitest run workers/store`.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { defaultRunConfig } from "../config";
import type { MetricsRow } from "../rl/run/trainer";
import { MemoryRunStore } from "./run-record";
import {
  addGroupMember,
  checkpointsToDrop,
  emptySummary,
  groupRefs,
  isAfterCheckpoint,
  isQuotaError,
  newRunMeta,
  openRunStore,
  phaseRank,
  quotaPrunePlan,
  type RunGroupRef,
  removeGroupMember,
  type StepKey,
  StorageFullError,
  sampleStepsToPrune,
  updateSummary,
} from "./store";

describe("run summary", () => {
  it("keeps the last value of each metric and the furthest step, without time, timing or perf", () => {
    const rows: MetricsRow[] = [
      { step: 0, phase: "sft", time: 1, loss: 3 },
      { step: 1, phase: "sft", time: 2, loss: 2 },
      { step: 0, phase: "rl", time: 3, "reward/mean": 0.1, "timing/rollout_s": 5, "perf/tokens_per_s": 9 },
      { step: 1, phase: "rl", time: 4, "reward/mean": 0.4, event: "x" },
    ];
    const s = rows.reduce(updateSummary, emptySummary());
    expect(s).toEqual({ phase: "rl", step: 1, rows: 4, metrics: { loss: 2, "reward/mean": 0.4 } });
  });
});

describe("multi-seed groups", () => {
  const ref = (seed: number): RunGroupRef => ({
    id: "g1",
    name: "ci-tiny × 3 seeds (5–7)",
    seed,
    firstSeed: 5,
    size: 3,
  });

  it("seeds join their group in start order; a member that joins again keeps one place", () => {
    const a = addGroupMember(undefined, ref(5), "r5", 100);
    expect(a).toEqual({
      id: "g1",
      name: "ci-tiny × 3 seeds (5–7)",
      firstSeed: 5,
      size: 3,
      members: [{ runId: "r5", seed: 5 }],
      createdAt: 100,
    });
    const b = addGroupMember(a, ref(6), "r6", 200);
    expect(b.members).toEqual([
      { runId: "r5", seed: 5 },
      { runId: "r6", seed: 6 },
    ]);
    expect(b.createdAt).toBe(100);
    expect(addGroupMember(b, ref(6), "r6").members).toHaveLength(2);
    expect(a.members).toHaveLength(1); // not changed in place
    expect(() => addGroupMember(b, { ...ref(7), id: "g2" }, "r7")).toThrow(/joins group g2, not g1/);
  });

  it("a member leaves its group; the group goes with its last member", () => {
    const g = addGroupMember(addGroupMember(undefined, ref(5), "r5"), ref(6), "r6");
    const left = removeGroupMember(g, "r5");
    expect(left?.members).toEqual([{ runId: "r6", seed: 6 }]);
    expect(removeGroupMember(g, "nobody")?.members).toHaveLength(2);
    expect(left && removeGroupMember(left, "r6")).toBeUndefined();
  });

  it("each member's place: its seed of the group's size", () => {
    const g = addGroupMember(addGroupMember(undefined, ref(5), "r5"), ref(6), "r6");
    const refs = groupRefs([g]);
    expect(refs.get("r6")).toEqual(ref(6));
    expect(refs.get("r5")?.seed).toBe(5);
    expect(refs.has("other")).toBe(false);
  });

  it("MemoryRunStore stores a seed's group with it; a run without one loads without one", async () => {
    const store = new MemoryRunStore();
    const config = defaultRunConfig();
    await store.createRun({ id: "r5", name: "#1 seed 5", config, group: ref(5) });
    await store.createRun({ id: "r6", name: "#2 seed 6", config, group: ref(6) });
    await store.createRun({ id: "solo", name: "#3", config });
    expect((await store.loadRun("r6"))?.group).toEqual(ref(6));
    expect((await store.loadRun("r5"))?.group?.seed).toBe(5);
    expect(await store.loadRun("solo")).not.toHaveProperty("group");
  });

  it("a new run's record: running, local, an empty summary unless told otherwise", () => {
    const config = defaultRunConfig();
    expect(newRunMeta({ id: "a", name: "n", config }, 7)).toEqual({
      id: "a",
      name: "n",
      config,
      createdAt: 7,
      updatedAt: 7,
      status: "running",
      source: "local",
      summary: { rows: 0, metrics: {} },
    });
    const b = newRunMeta({ name: "n", config, createdAt: 1, status: "imported", source: "bundle" }, 7);
    expect([b.createdAt, b.updatedAt, b.status, b.source]).toEqual([1, 7, "imported", "bundle"]);
    expect(b.id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("bounds", () => {
  it("samples: only the newest K steps stay, in run order across phases", () => {
    const steps: StepKey[] = [
      [2, 3],
      [0, 9],
      [2, 1],
      [2, 3],
      [2, 2],
      [2, 0],
    ];
    expect(sampleStepsToPrune(steps, 2)).toEqual([
      [0, 9],
      [2, 0],
      [2, 1],
    ]);
    expect(sampleStepsToPrune(steps, 10)).toEqual([]);
    expect(sampleStepsToPrune(steps, 0)).toHaveLength(5);
  });

  it("checkpoints: the last 2 per run stay (property)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.nat(2), fc.nat(50)), { selector: (k) => `${k}` }), (keys) => {
        const drop = checkpointsToDrop(keys as StepKey[]);
        expect(drop).toHaveLength(Math.max(0, keys.length - 2));
        const kept = keys.filter((k) => !drop.some((d) => d[0] === k[0] && d[1] === k[1]));
        for (const d of drop)
          for (const k of kept) expect(d[0] < k[0] || (d[0] === k[0] && d[1] < k[1])).toBe(true);
      }),
    );
  });

  it("quota: the oldest runs' oldest steps go first, half of them and at least one", () => {
    const steps = [
      { runId: "new", createdAt: 200, rank: 2, step: 0 },
      { runId: "old", createdAt: 100, rank: 2, step: 5 },
      { runId: "old", createdAt: 100, rank: 2, step: 4 },
      { runId: "old", createdAt: 100, rank: 2, step: 4 },
      { runId: "new", createdAt: 200, rank: 2, step: 1 },
    ];
    expect(quotaPrunePlan(steps)).toEqual([
      { runId: "old", rank: 2, step: 4 },
      { runId: "old", rank: 2, step: 5 },
    ]);
    expect(quotaPrunePlan(steps.slice(0, 1), 0.1)).toHaveLength(1);
    expect(quotaPrunePlan([])).toEqual([]);
  });
});

describe("resume coverage", () => {
  it("a checkpoint {phase, step: n} covers rows 0..n-1 of its phase and all earlier phases", () => {
    const ck = { phase: "rl" as const, step: 10 };
    expect(isAfterCheckpoint("sft", 500, ck)).toBe(false);
    expect(isAfterCheckpoint("value_pretrain", 3, ck)).toBe(false);
    expect(isAfterCheckpoint("rl", 9, ck)).toBe(false);
    expect(isAfterCheckpoint("rl", 10, ck)).toBe(true);
    expect(isAfterCheckpoint("paused", 11, ck)).toBe(true); // runner phases other than sft count as rl
    const sft = { phase: "sft" as const, step: 600 };
    expect(isAfterCheckpoint("sft", 599, sft)).toBe(false);
    expect(isAfterCheckpoint("value_pretrain", 0, sft)).toBe(true);
    expect(phaseRank("rl")).toBeGreaterThan(phaseRank("value_pretrain"));
  });
});

describe("quota errors", () => {
  it("are recognised directly or as the transaction's abort cause", () => {
    const quota = new DOMException("full", "QuotaExceededError");
    expect(isQuotaError(quota)).toBe(true);
    expect(isQuotaError(new DOMException("aborted", "AbortError"), { error: quota })).toBe(true);
    expect(isQuotaError(new DOMException("aborted", "AbortError"), { error: null })).toBe(false);
    expect(isQuotaError(new Error("no run x"))).toBe(false);
    expect(isQuotaError(null)).toBe(false);
  });

  it("StorageFullError says how full and what to do", () => {
    const e = new StorageFullError({ usage: 49_500_000, quota: 50_000_000, persisted: false });
    expect(e.message).toMatch(/storage is full: this lab uses 49\.5 MB of its 50\.0 MB quota/);
    expect(e.message).toMatch(/Delete old runs or export them/);
  });

  it("opening without IndexedDB is a clear error", async () => {
    await expect(openRunStore("x")).rejects.toThrow(/IndexedDB is not available/);
  });
});
