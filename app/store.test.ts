// The store's reducers for run names and phases (app/store.ts), and the try panel's
// temperature check: one name per run (the worker's), a stopped run stays stopped while its
// last step reports in, a stored run opens under its stored name and status (and in its
// multi-seed group), a runs table puts a group's seeds under one head, and a temperature
// outside [0, 2] is named.
import { describe, expect, it } from "vitest";
import { defaultRunConfig } from "../config";
import type { LoadedRun, RunProgress } from "../workers/api";
import {
  addLoadedRun,
  addRun,
  applyIncoming,
  dropFixedErrors,
  initialState,
  type LabState,
  pushError,
  type RunGroup,
  runName,
  setWorkerId,
  withGroups,
} from "./store";
import { temperatureError } from "./TryModelPanel";

const progress = (phase: RunProgress["phase"]): RunProgress => ({
  runId: "w1",
  phase,
  step: 1,
  total: 4,
  elapsed: 3,
  eta: Number.NaN,
  tokensPerS: Number.NaN,
  activity: "rollout",
});

function started(): LabState {
  let s = initialState();
  s = { ...s, ...addRun(s, "local-1", defaultRunConfig()) };
  return { ...s, ...setWorkerId(s, "local-1", "w1", "#7 ci-tiny") };
}

describe("run names", () => {
  it("uses the worker's name once it comes, the session number before", () => {
    const s = initialState();
    const before = { ...s, ...addRun(s, "local-1", defaultRunConfig()) };
    expect(runName(before.runs[0])).toBe("#1");
    expect(runName(started().runs[0])).toBe("#7 ci-tiny");
  });

  it("opens a stored run under its stored name; an interrupted one is stopped, not done", () => {
    const loaded = (status: LoadedRun["run"]["status"]): LoadedRun => ({
      run: {
        id: "w9",
        name: "#9 quick-demo",
        config: defaultRunConfig(),
        createdAt: 0,
        updatedAt: 0,
        status,
        source: "local",
        summary: { rows: 0, metrics: {} },
      },
      edits: [],
      rows: [],
      samples: [],
      events: [],
    });
    const s = initialState();
    const a = { ...s, ...addLoadedRun(s, loaded("interrupted")) };
    expect(runName(a.runs[0])).toBe("#9 quick-demo");
    expect(a.runs[0].phase).toBe("stopped");
    const b = { ...s, ...addLoadedRun(s, loaded("done")) };
    expect(b.runs[0].phase).toBe("done");
  });
});

describe("multi-seed groups after a reload", () => {
  const g = (seed: number, id = "g1"): RunGroup => ({
    id,
    name: "ci-tiny × 2 seeds (5–6)",
    seed,
    firstSeed: 5,
    size: 2,
  });

  it("a stored seed opens in its group, sharing the colour of the seed opened before it", () => {
    const loaded = (id: string, group?: RunGroup): LoadedRun => ({
      run: {
        id,
        name: `#1 ${id}`,
        config: defaultRunConfig(),
        createdAt: 0,
        updatedAt: 0,
        status: "done",
        source: "local",
        summary: { rows: 0, metrics: {} },
      },
      ...(group ? { group } : {}),
      edits: [],
      rows: [],
      samples: [],
      events: [],
    });
    let s = initialState();
    s = { ...s, ...addLoadedRun(s, loaded("a", g(5))) };
    s = { ...s, ...addLoadedRun(s, loaded("b", g(6))) };
    s = { ...s, ...addLoadedRun(s, loaded("c")) };
    expect(s.runs.map((r) => r.group?.seed)).toEqual([5, 6, undefined]);
    expect(s.runs[1].color).toBe(s.runs[0].color);
    expect(s.runs[2].color).not.toBe(s.runs[0].color);
  });

  it("a runs table puts a group's members together under one head, at its first member's place", () => {
    const runs = [
      { id: "x" },
      { id: "s6", group: g(6) },
      { id: "y" },
      { id: "s5", group: g(5) },
      { id: "t1", group: g(1, "g2") },
    ];
    const rows = withGroups(runs);
    expect(rows.map((r) => r.run.id)).toEqual(["x", "s6", "s5", "y", "t1"]);
    expect(rows.map((r) => r.head?.members.map((m) => m.id))).toEqual([
      undefined,
      ["s6", "s5"],
      undefined,
      undefined,
      ["t1"],
    ]);
    expect(rows[1].head?.group.id).toBe("g1");
    expect(withGroups([])).toEqual([]);
  });
});

describe("phases", () => {
  it("keeps a stopped run stopped while the step in flight reports progress", () => {
    let s = started();
    s = { ...s, runs: s.runs.map((r) => ({ ...r, phase: "stopped" as const })) };
    const inc = { rows: [], samples: [], events: [], progress: progress("rl") };
    const next = { ...s, ...applyIncoming(s, "local-1", inc) };
    expect(next.runs[0].phase).toBe("stopped");
    expect(next.runs[0].progressAt).toBeGreaterThan(0);
  });

  it("follows the worker's phase otherwise", () => {
    const s = started();
    const inc = { rows: [], samples: [], events: [], progress: progress("rl") };
    expect(applyIncoming(s, "local-1", inc).runs?.[0].phase).toBe("rl");
  });
});

describe("error banners", () => {
  it("shows a message once however often it comes", () => {
    let s = initialState();
    for (let i = 0; i < 3; i++) s = { ...s, ...pushError(s, "Training needs WebGPU") };
    s = { ...s, ...pushError(s, "another") };
    expect(s.errors).toEqual(["Training needs WebGPU", "another"]);
  });

  it("drops a Start refusal once its cause is fixed in the form, and keeps the others", () => {
    const bad = defaultRunConfig();
    bad.sft.warmup_steps = bad.sft.steps + 1;
    let s: LabState = { ...initialState(), form: { config: bad, pending: {} } };
    s = { ...s, ...pushError(s, "Config is invalid: sft.warmup_steps: must be <= sft.steps") };
    s = { ...s, ...pushError(s, "another") };
    expect(dropFixedErrors(s)).toBeNull();
    s = { ...s, form: { config: defaultRunConfig(), pending: {} } };
    expect(dropFixedErrors(s)).toEqual({ errors: ["another"] });
  });
});

describe("try the model: temperature", () => {
  it("accepts [0, 2] and names anything else", () => {
    for (const ok of ["0", "0.7", "2"]) expect(temperatureError(ok)).toBeNull();
    expect(temperatureError("-1")).toMatch(/>= 0/);
    expect(temperatureError("2.5")).toMatch(/<= 2/);
    expect(temperatureError("")).toMatch(/number/);
    expect(temperatureError("warm")).toMatch(/number/);
  });
});

describe("multi-seed groups", () => {
  it("the seeds of a group share the first seed's colour; other runs take the next colour", () => {
    const group = { id: "g", name: "ci-tiny × 2 seeds (5–6)", firstSeed: 5, size: 2 };
    let s = initialState();
    s = { ...s, ...addRun(s, "a", defaultRunConfig(), { ...group, seed: 5 }) };
    s = { ...s, ...addRun(s, "b", defaultRunConfig(), { ...group, seed: 6 }) };
    s = { ...s, ...addRun(s, "c", defaultRunConfig()) };
    expect(s.runs.map((r) => r.color)).toEqual([s.runs[0].color, s.runs[0].color, "#16a34a"]);
    expect(s.runs.map((r) => r.group?.seed)).toEqual([5, 6, undefined]);
  });
});
