// Tests of the chart data model and the store's handling of rows and markers:
// `npx vitest run app/chartData.test.ts`.
import { describe, expect, it } from "vitest";
import { defaultRunConfig } from "../config";
import { mismatchMetrics, rolloutCorrection } from "../rl/update/sampler-mismatch";
import type { MetricsRow, RunEvent, SampleRecord } from "../workers/api";
import {
  baselineValue,
  buildChartData,
  CHARTS,
  chartCsv,
  chartLegend,
  chartMarkers,
  clusterMarkers,
  customChart,
  editLabel,
  emptyReason,
  fmtNum,
  type Marker,
  metricKeys,
  tickLabels,
} from "./chartData";
import { debiasedEma } from "./smoothing";
import {
  activeRun,
  addLoadedRun,
  addRun,
  applyIncoming,
  initialState,
  type LabState,
  lastValues,
  MAX_SAMPLE_STEPS,
} from "./store";

const reward = CHARTS.find((c) => c.id === "reward")!;
const sft = CHARTS.find((c) => c.id === "sft-loss")!;

function rl(step: number, extra: Record<string, number>): MetricsRow {
  return { step, phase: "rl", time: step, ...extra };
}

describe("buildChartData", () => {
  it("joins runs on one x with null gaps and keeps phases apart", () => {
    const a = [rl(0, { "reward/mean": 0.1 }), rl(1, { "reward/mean": 0.2 }), rl(2, { "reward/mean": 0.3 })];
    const b = [rl(1, { "reward/mean": 0.5 }), rl(3, { "reward/mean": 0.7 })];
    const sftRows: MetricsRow[] = [{ step: 0, phase: "sft", time: 0, loss: 4 }];
    const d = buildChartData(
      reward,
      [
        { id: "a", color: "#111111", current: false, rows: [...sftRows, ...a] },
        { id: "b", color: "#222222", current: true, rows: b },
      ],
      { smoothing: 0, buckets: 100 },
    );
    expect(d.x).toEqual([0, 1, 2, 3]);
    const aMean = d.series.find((s) => s.runId === "a" && s.key === "reward/mean")!;
    const bMean = d.series.find((s) => s.runId === "b" && s.key === "reward/mean")!;
    expect(aMean.raw).toEqual([0.1, 0.2, 0.3, null]);
    expect(bMean.raw).toEqual([null, 0.5, null, 0.7]);
    expect(bMean.current).toBe(true);
    expect(aMean.points).toBe(3);
    // No reward/std rows: no series for it.
    expect(d.series.some((s) => s.key === "reward/std")).toBe(false);
    const l = buildChartData(sft, [{ id: "a", color: "#111111", current: true, rows: [...sftRows, ...a] }], {
      smoothing: 0,
      buckets: 100,
    });
    expect(l.x).toEqual([0]);
    expect(l.series[0].raw).toEqual([4]);
  });

  it("smooths each run on its own points before joining and downsampling", () => {
    const n = 2000;
    const rows = Array.from({ length: n }, (_, i) => rl(i, { "reward/mean": i % 7 === 0 ? 1 : 0 }));
    const full = debiasedEma(
      rows.map((r) => r["reward/mean"] as number),
      0.9,
    );
    const d = buildChartData(reward, [{ id: "a", color: "#111111", current: true, rows }], {
      smoothing: 0.9,
      buckets: 50,
    });
    expect(d.x.length).toBeLessThan(n);
    expect(d.series[0].points).toBe(n);
    d.x.forEach((x, i) => {
      expect(d.series[0].smooth[i]).toBeCloseTo(full[x] as number, 12);
    });
    // the spikes survive downsampling
    expect(Math.max(...(d.series[0].raw as number[]))).toBe(1);
  });

  it("takes the untrained baseline from the current run's first point", () => {
    const rows = [rl(0, { "reward/mean": 0.2 }), rl(1, { "reward/mean": 0.5 })];
    const other = [rl(0, { "reward/mean": 0.9 })];
    const d = buildChartData(
      reward,
      [
        { id: "old", color: "#111111", current: false, rows: other },
        { id: "cur", color: "#222222", current: true, rows: [rl(0, {}), ...rows.slice(0)] },
      ],
      { smoothing: 0.6, buckets: 10 },
    );
    expect(baselineValue(reward, d)).toBe(0.2);
    expect(baselineValue(sft, d)).toBeNull();
  });

  it("skips non-finite and non-numeric values", () => {
    const rows = [rl(0, { "reward/mean": Number.NaN }), { ...rl(1, {}), "reward/mean": "x" } as MetricsRow];
    const d = buildChartData(reward, [{ id: "a", color: "#111111", current: true, rows }], {
      smoothing: 0,
      buckets: 10,
    });
    expect(d.series).toEqual([]);
  });
});

describe("markers", () => {
  it("labels edits with the old and new value and filters by run and phase", () => {
    expect(editLabel("rl.kl.coef", 0.05, 0.1)).toBe("kl_coef 0.05→0.1");
    expect(editLabel("rl.lr", 0.0003, 0.001)).toBe("lr 3e-4→0.001");
    const ms = [
      { runId: "a", step: 3, phase: "rl", kind: "edit" as const, label: "x", detail: "" },
      { runId: "a", step: 3, phase: "sft", kind: "skipped" as const, label: "y", detail: "" },
      { runId: "b", step: 4, phase: "rl", kind: "edit" as const, label: "z", detail: "" },
    ];
    expect(chartMarkers(reward, ms, new Set(["a"])).map((m) => m.label)).toEqual(["x"]);
    expect(chartMarkers(sft, ms, new Set(["a", "b"])).map((m) => m.label)).toEqual(["y"]);
  });

  it("formats numbers briefly", () => {
    expect(fmtNum(0.0003)).toBe("3e-4");
    expect(fmtNum(0.123456)).toBe("0.1235");
    expect(fmtNum(123456)).toBe("1.23e5");
    expect(fmtNum(0)).toBe("0");
  });
});

function sample(step: number): SampleRecord {
  return {
    step,
    groupId: "g",
    problemId: "p",
    bucket: "easy",
    answer: "1",
    promptTokens: [],
    tokens: [],
    mask: [],
    postTool: [],
    logprobs: [],
    entropy: [],
    advantages: [],
    reward: 0,
    rewardTerms: {},
    correct: false,
    toolCalls: [],
    finish: "stop",
    filter: "",
  };
}

describe("store: incoming rows, events and samples", () => {
  function withRun(): LabState {
    const s = initialState();
    return { ...s, ...addRun(s, "r1", defaultRunConfig()) };
  }

  it("turns an edit event into a labelled marker and updates the live config", () => {
    let s = withRun();
    const edit: RunEvent = {
      step: 5,
      phase: "rl",
      kind: "edit",
      message: "rl.lr = 0.001",
      edit: { phase: "rl", step: 5, path: "rl.lr", value: 0.001 },
    };
    s = {
      ...s,
      ...applyIncoming(s, "r1", {
        rows: [rl(5, { "actor/lr": 0.001 })],
        samples: [],
        events: [edit],
        progress: null,
      }),
    };
    const run = activeRun(s)!;
    expect(run.markers).toEqual([
      { runId: "r1", step: 5, phase: "rl", kind: "edit", label: "lr 3e-4→0.001", detail: "rl.lr = 0.001" },
    ]);
    expect(run.liveConfig.rl.lr).toBe(0.001);
    expect(run.config.rl.lr).toBe(0.0003);
    expect(lastValues(run.rows)["actor/lr"]).toBe(0.001);
  });

  it("marks skipped updates from events or from the row's event field, once", () => {
    let s = withRun();
    const ev: RunEvent = { step: 2, phase: "rl", kind: "skipped", message: "non-finite grad" };
    const row = { ...rl(2, {}), event: "non-finite grad" } as MetricsRow;
    s = { ...s, ...applyIncoming(s, "r1", { rows: [row], samples: [], events: [ev], progress: null }) };
    s = {
      ...s,
      ...applyIncoming(s, "r1", {
        rows: [{ ...rl(3, {}), event: "nan loss" } as MetricsRow],
        samples: [],
        events: [],
        progress: null,
      }),
    };
    expect(activeRun(s)!.markers.map((m) => [m.kind, m.step])).toEqual([
      ["skipped", 2],
      ["skipped", 3],
    ]);
  });

  it("keeps samples by step, capped, and records errors", () => {
    let s = withRun();
    const batches = Array.from({ length: MAX_SAMPLE_STEPS + 5 }, (_, i) => [sample(i)]);
    s = { ...s, ...applyIncoming(s, "r1", { rows: [], samples: batches, events: [], progress: null }) };
    const keys = [...activeRun(s)!.samples.keys()];
    expect(keys.length).toBe(MAX_SAMPLE_STEPS);
    expect(keys[keys.length - 1]).toBe(`rl:${MAX_SAMPLE_STEPS + 4}`);
    s = {
      ...s,
      ...applyIncoming(s, "r1", {
        rows: [],
        samples: [],
        events: [{ step: 9, phase: "rl", kind: "error", message: "reward threw" }],
        progress: null,
      }),
    };
    expect(activeRun(s)!.phase).toBe("error");
    expect(activeRun(s)!.error).toBe("reward threw");
  });

  it("diffs a new run against the previous one and caps the overlay", () => {
    let s = withRun();
    const c2 = defaultRunConfig();
    c2.rl.lr = 0.001;
    s = { ...s, ...addRun(s, "r2", c2) };
    expect(s.runs[1].diff).toEqual([{ path: "rl.lr", from: 0.0003, to: 0.001 }]);
    expect(s.runs[1].color).not.toBe(s.runs[0].color);
    for (let i = 3; i <= 8; i++) s = { ...s, ...addRun(s, `r${i}`, defaultRunConfig()) };
    expect(s.runs.filter((r) => r.visible).length).toBe(6);
    expect(s.runs[0].visible).toBe(false);
  });

  it("opens a stored run with its rows, samples and edit markers, without taking over the controls", () => {
    const s = withRun();
    const config = defaultRunConfig();
    const next = {
      ...s,
      ...addLoadedRun(s, {
        run: {
          id: "old",
          name: "yesterday",
          config,
          createdAt: 0,
          updatedAt: 0,
          status: "done",
          source: "local",
          summary: { rows: 2, metrics: {} },
        },
        edits: [],
        rows: [rl(0, { "reward/mean": 0.1 }), rl(1, { "reward/mean": 0.4 })],
        samples: [sample(0), sample(0), sample(1)],
        events: [
          {
            step: 1,
            phase: "rl",
            kind: "edit",
            message: "",
            edit: { phase: "rl", step: 1, path: "rl.kl.coef", value: 0.1 },
          },
        ],
      }),
    };
    expect(next.activeId).toBe("r1");
    expect(next.openId).toBe("stored:old");
    const run = next.runs.find((r) => r.id === "stored:old")!;
    expect(run).toMatchObject({ workerId: "old", label: "yesterday", phase: "done" });
    expect(run.rows).toHaveLength(2);
    expect(run.samples.get("rl:0")).toHaveLength(2);
    expect(run.markers.map((m) => m.label)).toEqual(["kl_coef 0→0.1"]);
  });
});

describe("groups, legend, markers, empty charts, CSV", () => {
  const g = (seed: number) => ({ id: "g1", name: "ci-tiny × 2 seeds", seed });
  const seed0 = [rl(0, { "reward/mean": 0.2 }), rl(1, { "reward/mean": 0.4 })];
  const seed1 = [rl(0, { "reward/mean": 0.4 })];

  it("draws a group as its mean with a band over the seeds that reached each step, and its seeds faint", () => {
    const runs = [
      { id: "s0", name: "#1 ci-tiny seed 5", color: "#111111", current: false, rows: seed0, group: g(5) },
      { id: "s1", name: "#2 ci-tiny seed 6", color: "#111111", current: true, rows: seed1, group: g(6) },
    ];
    const sd = buildChartData(reward, runs, { smoothing: 0, buckets: 100, band: "sd" });
    const mean = sd.series.find((s) => s.role === "mean" && s.key === "reward/mean")!;
    expect(mean.runId).toBe("group:g1");
    expect(mean.raw[0]).toBeCloseTo(0.3, 12);
    expect(mean.raw[1]).toBeCloseTo(0.4, 12);
    // sd of {0.2, 0.4} = 0.1414; one seed at step 1: sd 0
    expect(mean.band?.lo[0]).toBeCloseTo(0.3 - Math.SQRT2 * 0.1, 12);
    expect(mean.band?.hi[1]).toBeCloseTo(0.4, 12);
    expect(sd.series.filter((s) => s.role === "seed" && s.key === "reward/mean").length).toBe(2);
    const mm = buildChartData(reward, runs, { smoothing: 0, buckets: 100, band: "minmax" });
    const m2 = mm.series.find((s) => s.role === "mean" && s.key === "reward/mean")!;
    expect([m2.band?.lo[0], m2.band?.hi[0]]).toEqual([0.2, 0.4]);
    const legend = chartLegend(reward, sd);
    expect(legend.runs).toEqual([
      { id: "group:g1", name: "ci-tiny × 2 seeds", color: "#111111", current: true, seeds: 2 },
    ]);
    // A lone seed of a group is drawn as a run of its own.
    const one = buildChartData(reward, [runs[0]], { smoothing: 0, buckets: 100 });
    expect(one.series.every((s) => s.role === "run")).toBe(true);
  });

  it("names every run in the legend, keys with their dashes", () => {
    const d = buildChartData(
      reward,
      [
        { id: "a", name: "#1 quick-demo", color: "#111111", current: false, rows: seed0 },
        { id: "b", name: "#2 claim-mask-off", color: "#222222", current: true, rows: seed1 },
      ],
      { smoothing: 0, buckets: 100 },
    );
    const legend = chartLegend(reward, d);
    expect(legend.runs.map((r) => r.name)).toEqual(["#1 quick-demo", "#2 claim-mask-off"]);
    expect(legend.keys.map((k) => [k.label, k.dash])).toEqual([
      ["mean", undefined],
      ["std", [6, 4]],
    ]);
  });

  it("x by wall time: seconds since the run's first row", () => {
    const rows = [
      { step: 0, phase: "rl", time: 100, "reward/mean": 1 },
      { step: 1, phase: "rl", time: 112.5, "reward/mean": 2 },
    ] as MetricsRow[];
    const d = buildChartData(reward, [{ id: "a", color: "#111111", current: true, rows }], {
      smoothing: 0,
      buckets: 100,
      xAxis: "time",
    });
    expect(d.x).toEqual([0, 12.5]);
  });

  it("clusters markers closer than the gap into one '3 edits' and keeps them inside the chart", () => {
    const m = (step: number, label: string): Marker => ({
      runId: "a",
      step,
      phase: "rl",
      kind: "edit",
      label,
      detail: "",
    });
    const c = clusterMarkers(
      [
        { left: 10, marker: m(1, "lr 1e-3→5e-4") },
        { left: 20, marker: m(2, "kl_coef 0→0.1") },
        { left: 30, marker: m(3, "lr 5e-4→1e-3") },
        { left: 200, marker: m(9, "lr 1e-3→2e-3") },
        { left: 400, marker: m(20, "outside") },
      ],
      300,
    );
    expect(c.map((x) => [x.left, x.label])).toEqual([
      [20, "3 edits"],
      [200, "lr 1e-3→2e-3"],
    ]);
    expect(c[0].detail.split("\n")).toEqual([
      "step 1: lr 1e-3→5e-4",
      "step 2: kl_coef 0→0.1",
      "step 3: lr 5e-4→1e-3",
    ]);
  });

  it("says why a chart is empty", () => {
    const cfg = defaultRunConfig();
    const kl = CHARTS.find((c) => c.id === "kl")!;
    expect(emptyReason(kl, { ...cfg, rl: { ...cfg.rl, kl: { ...cfg.rl.kl, coef: 0 } } }, true)).toBe(
      "KL is off: rl.kl.coef = 0",
    );
    expect(emptyReason(kl, cfg, false)).toMatch(/^No run yet/);
    expect(emptyReason(CHARTS.find((c) => c.id === "kept")!, cfg, true)).toBe(
      "No filter: filters.list is empty",
    );
  });

  it("offers every numeric key of the rows, and writes a chart's rows as CSV", () => {
    const rows = [
      { step: 0, phase: "sft", time: 0, loss: 3 },
      { step: 0, phase: "rl", time: 1, "val/acc/hard": 0.25, note: "x" },
      { step: 1, phase: "rl", time: 3, "val/acc/hard": 0.5 },
    ] as MetricsRow[];
    expect(metricKeys([rows])).toEqual([
      { key: "loss", phase: "sft" },
      { key: "val/acc/hard", phase: "rl" },
    ]);
    const def = customChart("val/acc/hard", "rl");
    expect(def.rate).toBe(true);
    expect(chartCsv(def, [{ id: "a", name: "#1 a,b", color: "#111111", current: true, rows }])).toBe(
      'run,seed,key,phase,step,wall_s,value\n"#1 a,b",,val/acc/hard,rl,0,1,0.25\n"#1 a,b",,val/acc/hard,rl,1,3,0.5\n',
    );
  });
});

describe("the mismatch charts", () => {
  it("read the keys the RL step logs (rl/update/sampler-mismatch.ts)", () => {
    const keys = (id: string) => CHARTS.find((c) => c.id === id)!.keys.map((k) => k.key);
    const logged = {
      ...mismatchMetrics([[-1]], [[-1.1]], [[1]]),
      ...rolloutCorrection([[-1]], [[-1.1]], [[1]], {
        rollout_is: "token",
        rollout_is_threshold: 2,
        rollout_rs: "token",
        rollout_rs_threshold: null,
        rollout_rs_threshold_lower: null,
      }).metrics,
    };
    for (const k of [...keys("is-ratio"), ...keys("mismatch"), ...keys("clipfrac").slice(1)])
      expect(logged, k).toHaveProperty([k]);
  });
});

describe("tickLabels", () => {
  it("keeps 4 significant digits where they tell ticks apart, and adds digits where they do not", () => {
    expect(tickLabels([0, 0.5, 1, 1.5])).toEqual(["0", "0.5", "1", "1.5"]);
    expect(tickLabels([0.99995, 1, 1.00005])).toEqual(["0.99995", "1.00000", "1.00005"]);
    expect(tickLabels([0.9998, 0.9999, 1, 1.0001])).toEqual(["0.9998", "0.9999", "1.0000", "1.0001"]);
    expect(new Set(tickLabels([1.00001, 1.00002, 1.00003])).size).toBe(3);
  });
});
