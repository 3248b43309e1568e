// One metric chart (uPlot): every visible run's raw series drawn faintly behind its
// debiased-EMA line (a sparse series, such as the held-out evaluations, as its points joined),
// the current run opaque and on top, a multi-seed group as its mean with a band and its seeds
// faint, a legend of runs (colour) and keys (dash) with their last values and the untrained
// level, edit and skipped-update
// markers as labelled vertical lines clustered so they never overprint ("3 edits", the list on
// hover), a hover readout (step, run, raw, smoothed), a shared cursor, units on the axes, x by
// step or wall time, PNG and CSV downloads, a log-y toggle and, for gradient norm and KL, an
// optional 5th-95th percentile range; an empty chart says why.
// Zoom survives streaming (setData(data, false) while zoomed); double-click resets it.
// It redraws only when on screen (or within half a screen of it) and not in fast mode; a chart
// scrolled into view is drawn before the frame that shows it.
import { type RefObject, useEffect, useMemo, useRef, useState } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { RunConfig } from "../config";
import {
  baselineValue,
  buildChartData,
  type ChartData,
  type ChartDef,
  chartCsv,
  chartLegend,
  chartMarkers,
  clusterMarkers,
  emptyReason,
  fmtNum,
  type Legend,
  type Marker,
  type RunSeriesInput,
  tickLabels,
  xOf,
} from "./chartData";
import { percentileRange } from "./smoothing";
import { activeRun, downloadName, openRun, type RunRecord, runName, useLab } from "./store";

const SYNC = uPlot.sync("lab-charts");
/** The y axis's least width (px): labels and ticks. */
const Y_AXIS_MIN = 52;
/** Charts within this many screen heights of the view are kept drawn. */
const NEAR_SCREEN = 0.5;

/** A marker placed on the x axis. */
type PlacedMarker = { x: number; marker: Marker };

interface Drawing {
  data: ChartData;
  markers: PlacedMarker[];
  width: number;
  log: boolean;
}
/** Whether what uPlot holds (`d`) is what the last render computed (`cur`). */
const sameDrawing = (d: Drawing | null, cur: Drawing) =>
  !!d && d.data === cur.data && d.markers === cur.markers && d.width === cur.width && d.log === cur.log;

/** Pins `step` in the inspector when the opened run has trajectories for it. */
function pinInspectorStep(step: number) {
  const key = `rl:${step}`;
  const run = openRun(useLab.getState());
  if (!run?.samples.has(key)) return;
  useLab.setState((s) => ({ inspector: { ...s.inspector, pinnedStep: key, selected: null } }));
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

function withAlpha(hex: string, alpha: number): string {
  const a = Math.round(alpha * 255)
    .toString(16)
    .padStart(2, "0");
  return `${hex}${a}`;
}

function toAligned(data: ChartData, log: boolean): uPlot.AlignedData {
  const fix = (ys: (number | null)[]) => (log ? ys.map((y) => (y !== null && y > 0 ? y : null)) : ys);
  const cols: (number | null)[][] = [];
  for (const s of data.series) {
    cols.push(fix(s.raw));
    cols.push(fix(s.smooth));
    if (s.band) {
      cols.push(fix(s.band.lo));
      cols.push(fix(s.band.hi));
    }
  }
  return [data.x, ...cols] as uPlot.AlignedData;
}

function seriesOpts(data: ChartData, xLabel: string): { series: uPlot.Series[]; bands: uPlot.Band[] } {
  const series: uPlot.Series[] = [{ label: xLabel }];
  const bands: uPlot.Band[] = [];
  for (const s of data.series) {
    const name = `${s.runName} ${s.label}`;
    const seed = s.role === "seed";
    series.push({
      label: `${name} (raw)`,
      stroke: withAlpha(s.color, seed ? 0 : s.current ? 0.3 : 0.12),
      width: 1,
      spanGaps: true,
      show: !seed,
    });
    series.push({
      label: name,
      stroke: withAlpha(s.color, seed ? 0.25 : s.current ? 1 : 0.4),
      width: seed ? 1 : s.current ? 2 : 1.5,
      spanGaps: true,
      dash: s.dash,
      // Evaluations are few: each measured point is marked on its line.
      ...(s.sparse && !seed
        ? { points: { show: true, size: 5, stroke: s.color, fill: withAlpha(s.color, s.current ? 1 : 0.4) } }
        : {}),
    });
    if (s.band) {
      const lo = series.length;
      series.push({ label: `${name} band low`, stroke: withAlpha(s.color, 0), width: 0, spanGaps: true });
      series.push({ label: `${name} band high`, stroke: withAlpha(s.color, 0), width: 0, spanGaps: true });
      bands.push({ series: [lo + 1, lo], fill: withAlpha(s.color, s.current ? 0.18 : 0.1) });
    }
  }
  return { series, bands };
}

function placeMarkers(u: uPlot, markers: readonly PlacedMarker[], layer: HTMLDivElement) {
  layer.replaceChildren();
  const width = u.over.clientWidth;
  const clusters = clusterMarkers(
    markers.map((m) => ({ left: u.valToPos(m.x, "x"), marker: m.marker })),
    width,
  );
  for (const c of clusters) {
    const el = document.createElement("div");
    const kind = c.markers.every((m) => m.kind === "skipped") ? "skipped" : "edit";
    el.className = `chart-marker marker-${kind}`;
    el.style.left = `${c.left}px`;
    // Labels near the right edge open to the left of their line, so they stay inside the chart.
    if (c.left > width * 0.5) el.classList.add("label-left");
    el.dataset.testid = "chart-marker";
    el.dataset.kind = kind;
    el.dataset.count = String(c.markers.length);
    el.dataset.step = String(c.markers[0].step);
    el.title = c.detail;
    const label = document.createElement("span");
    label.textContent = c.label;
    el.append(label);
    layer.append(el);
  }
}

function download(name: string, blob: Blob) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** "#3 quick-demo Accuracy.png": the current run's name (as the page shows it) and the chart's title. */
function fileName(def: ChartDef, legend: Legend, ext: string): string {
  const run = legend.runs.find((r) => r.current) ?? legend.runs[0];
  return downloadName(run ? `${run.name} ${def.title}` : def.title, ext);
}

/** The plot as a PNG: title, legend line and the canvas on the page's background. */
function downloadPng(u: uPlot, def: ChartDef, legend: Legend) {
  const src = u.ctx.canvas;
  const head = 40 * (src.width / u.width);
  const out = document.createElement("canvas");
  out.width = src.width;
  out.height = src.height + head;
  const ctx = out.getContext("2d");
  if (!ctx) return;
  const scale = src.width / u.width;
  ctx.fillStyle = cssVar("--bg");
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = cssVar("--fg");
  ctx.font = `${13 * scale}px sans-serif`;
  ctx.fillText(def.title, 8 * scale, 16 * scale);
  let x = 8 * scale;
  ctx.font = `${11 * scale}px sans-serif`;
  for (const r of legend.runs) {
    ctx.fillStyle = r.color;
    ctx.fillRect(x, 26 * scale, 10 * scale, 4 * scale);
    x += 14 * scale;
    ctx.fillStyle = cssVar("--fg");
    const text = legendRunText(r);
    ctx.fillText(text, x, 32 * scale);
    x += ctx.measureText(text).width + 12 * scale;
  }
  // The keys in their dashes, and the untrained level, after the runs.
  const keys = legend.keys.length > 1 || legend.runs.length === 0 ? legend.keys : [];
  const items = [
    ...keys.map((k) => ({ dash: k.dash, text: legendKeyText(k) })),
    ...(legend.untrained ? [{ dash: [4, 4], text: untrainedText(legend.untrained.value) }] : []),
  ];
  for (const it of items) {
    ctx.strokeStyle = cssVar("--fg");
    ctx.lineWidth = 1.5 * scale;
    ctx.setLineDash((it.dash ?? []).map((d) => d * scale));
    ctx.beginPath();
    ctx.moveTo(x, 28 * scale);
    ctx.lineTo(x + 18 * scale, 28 * scale);
    ctx.stroke();
    ctx.setLineDash([]);
    x += 22 * scale;
    ctx.fillStyle = cssVar("--fg");
    ctx.fillText(it.text, x, 32 * scale);
    x += ctx.measureText(it.text).width + 12 * scale;
  }
  ctx.drawImage(src, 0, head);
  out.toBlob((blob) => {
    if (blob) download(fileName(def, legend, ".png"), blob);
  }, "image/png");
}

const legendRunText = (r: Legend["runs"][number]) =>
  `${r.seeds ? `${r.name} (${r.seeds} seeds)` : r.name}${r.last !== undefined ? ` ${fmtNum(r.last)}` : ""}`;
const legendKeyText = (k: Legend["keys"][number]) =>
  `${k.label}${k.last !== undefined ? ` ${fmtNum(k.last)}` : ""}`;
const untrainedText = (v: number) => `untrained ${fmtNum(v)}`;

/** The untrained policy's level as a dashed horizontal line (as microGPT's "random guessing"). */
function drawBaseline(u: uPlot, y: number | null) {
  if (y === null) return;
  const pos = u.valToPos(y, "y", true);
  if (!Number.isFinite(pos) || pos < u.bbox.top || pos > u.bbox.top + u.bbox.height) return;
  const ctx = u.ctx;
  ctx.save();
  ctx.strokeStyle = cssVar("--muted");
  ctx.setLineDash([4, 4]);
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(u.bbox.left, pos);
  ctx.lineTo(u.bbox.left + u.bbox.width, pos);
  ctx.stroke();
  ctx.restore();
}

function seriesInputs(runs: readonly RunRecord[], currentId: string | undefined): RunSeriesInput[] {
  return runs.map((r) => ({
    id: r.id,
    name: runName(r),
    color: r.color,
    current:
      r.id === currentId ||
      (!!r.group && runs.some((x) => x.id === currentId && x.group?.id === r.group?.id)),
    rows: r.rows,
    ...(r.group ? { group: { id: r.group.id, name: r.group.name, seed: r.group.seed } } : {}),
  }));
}

/** The store's settings one chart draws with. */
function useChartView(def: ChartDef) {
  // In fast mode the charts hold the runs they last drew: no data work per incoming row.
  const frozen = useRef<RunRecord[]>([]);
  const runs = useLab((s) => {
    if (!s.fast) frozen.current = s.runs;
    return frozen.current;
  });
  const activeId = useLab((s) => s.activeId);
  const smoothing = useLab((s) => s.smoothing);
  const xAxis = useLab((s) => s.xAxis);
  const bandMode = useLab((s) => s.band);
  const log = useLab((s) => !!s.logScale[def.id]);
  const clip = useLab((s) => !!s.outlierClip[def.id]);
  const fast = useLab((s) => s.fast);
  const theme = useLab((s) => s.theme);
  const formConfig = useLab((s) => activeRun(s)?.liveConfig ?? (s.form.config as RunConfig));
  return { runs, activeId, smoothing, xAxis, bandMode, log, clip, fast, theme, formConfig };
}
type ChartView = ReturnType<typeof useChartView>;

/** The visible runs' series, markers and legend for this chart at the plot's width. */
function useChartData(def: ChartDef, view: ChartView, width: number) {
  const { runs, activeId, smoothing, xAxis, bandMode } = view;
  const visibleRuns = useMemo(() => runs.filter((r) => r.visible), [runs]);
  const currentId = activeId ?? runs[runs.length - 1]?.id;
  const inputs = useMemo(() => seriesInputs(visibleRuns, currentId), [visibleRuns, currentId]);
  const data = useMemo(
    () =>
      buildChartData(def, inputs, {
        smoothing,
        buckets: Math.max(50, Math.floor(width / 2)),
        xAxis,
        band: bandMode,
      }),
    [def, inputs, smoothing, width, xAxis, bandMode],
  );
  const markers = useMemo(() => {
    const byId = new Map(visibleRuns.map((r) => [r.id, r]));
    return chartMarkers(
      def,
      visibleRuns.flatMap((r) => r.markers),
      new Set(byId.keys()),
    ).flatMap((m) => {
      const x = xOf(byId.get(m.runId)?.rows ?? [], m.phase || def.phase, m.step, xAxis);
      return x === null ? [] : [{ x, marker: m }];
    });
  }, [def, visibleRuns, xAxis]);
  const legend = useMemo(() => chartLegend(def, data), [def, data]);
  const xLabel = xAxis === "time" ? "wall time (s)" : def.phase === "sft" ? "SFT step" : "RL step";
  return { visibleRuns, inputs, data, markers, legend, xLabel };
}

/** What the figure's data attributes say about the drawing (tests and DOM readers read them). */
function figureStats(data: ChartData) {
  const currentSeries = data.series.filter((s) => s.current && s.role !== "seed");
  return {
    points: currentSeries.reduce((a, s) => a + s.points, 0),
    keysWithPoints: [...new Set(currentSeries.map((s) => s.key))].join(","),
    bands: data.series.filter((s) => s.band).length,
    // Where each of the current run's bold lines ends, as drawn (tests read it beside the legend).
    ends: JSON.stringify(
      Object.fromEntries(
        currentSeries.map((s) => [s.key, [...s.smooth].reverse().find((v) => v !== null) ?? null]),
      ),
    ),
    seedRuns: new Set(data.series.filter((s) => s.role === "seed").map((s) => s.runId)).size,
  };
}

/** The shape of the plot (series list, log): it changes rarely, the data every frame. */
function shapeKeyOf(data: ChartData, view: ChartView): string {
  const series = data.series.map((s) => `${s.runId}:${s.runName}:${s.key}:${s.current}:${s.role}`);
  return `${series.join("|")}|${view.log}|${view.clip}|${view.theme}|${view.xAxis}`;
}

/** What the last render computed, read by uPlot's hooks and the draw calls. */
interface Seen {
  data: ChartData;
  markers: PlacedMarker[];
  legend: Legend;
  width: number;
  log: boolean;
  fast: boolean;
}

/** The mutable state a plot's hooks and listeners share with the component. */
interface PlotRefs {
  readout: RefObject<HTMLDivElement | null>;
  zoomed: RefObject<boolean>;
  markerLayer: RefObject<HTMLDivElement | null>;
  markersRef: RefObject<PlacedMarker[]>;
  lastSeen: RefObject<Seen>;
}

/** What the plot is built with; a change to any of these rebuilds it (they make the shape key). */
interface PlotShape {
  def: ChartDef;
  log: boolean;
  clip: boolean;
  xLabel: string;
  xAxis: ChartView["xAxis"];
}

/** The y range: the 5th-95th percentile when clipped, rates from 0, a little padding. */
function yRangeOf(d: ChartData, { def, log, clip }: PlotShape): uPlot.Scale.Range {
  return (_u, min, max) => {
    if (clip) {
      const r = percentileRange(d.series.flatMap((s) => s.raw));
      if (r) return [r[0], r[1] > r[0] ? r[1] : r[0] + 1];
    }
    if (min === null || max === null || !Number.isFinite(min)) return [0, 1];
    const lo = def.rate && !log && min >= 0 ? 0 : min;
    const hi = max > lo ? max : lo + (Math.abs(lo) || 1);
    const pad = log ? 0 : (hi - lo) * 0.05;
    return [log ? lo : lo - (lo === 0 ? 0 : pad), hi + pad];
  };
}

const AXIS_FONT = "11px system-ui, sans-serif";

function xAxisOpts(xLabel: string): uPlot.Axis {
  return {
    stroke: cssVar("--muted"),
    grid: { stroke: cssVar("--grid") },
    ticks: { stroke: cssVar("--grid") },
    label: xLabel,
    labelSize: 16,
    labelFont: AXIS_FONT,
    // Steps are integers: no 0.5 ticks.
    incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000],
  };
}

/**
 * The y axis's width: wide enough for the longest tick label (near 1 the importance ratio's read
 * "1.000005": a fixed 52 px cut their first digits); measured with the axis's own font.
 */
function yAxisSize(el: HTMLElement): uPlot.Axis.Size {
  return (u, values, axisIdx, cycleNum) => {
    const axis = u.axes[axisIdx] as uPlot.Axis & { _size?: number; font?: unknown };
    if (cycleNum > 1 && axis._size) return axis._size;
    const longest = (values ?? []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
    const font = Array.isArray(axis.font) ? String(axis.font[0]) : String(axis.font ?? "");
    if (font) u.ctx.font = font;
    const text = Math.ceil(u.ctx.measureText(longest).width / uPlot.pxRatio);
    const size = Math.max(Y_AXIS_MIN, text + (axis.ticks?.size ?? 10) + (axis.gap ?? 5) + 2);
    const fig = el.closest("figure");
    if (fig) {
      fig.dataset.yLabelWidth = String(text);
      fig.dataset.yAxisSize = String(size);
    }
    return size;
  };
}

function yAxisOpts(el: HTMLElement, def: ChartDef): uPlot.Axis {
  return {
    stroke: cssVar("--muted"),
    grid: { stroke: cssVar("--grid") },
    ticks: { stroke: cssVar("--grid") },
    size: yAxisSize(el),
    label: def.unit,
    labelSize: def.unit ? 16 : 0,
    labelFont: AXIS_FONT,
    values: (_u, splits) => {
      const labels = tickLabels(splits);
      // On the figure, for tests and for people reading the DOM (the axis is a canvas).
      const fig = el.closest("figure");
      if (fig) fig.dataset.yLabels = labels.join("|");
      return labels;
    },
  };
}

/** The hover readout at data index `i`: step, then each line's raw, smoothed and band values. */
function readoutText(cur: ChartData, i: number, def: ChartDef, xAxis: PlotShape["xAxis"]): string {
  const at = cur.x[i];
  const lines = cur.series
    .filter((s) => s.role !== "seed")
    .map((s) => ({ s, raw: s.raw[i], sm: s.smooth[i] }))
    .filter((r) => r.raw !== null && r.raw !== undefined)
    .sort((a, b) => Number(b.s.current) - Number(a.s.current))
    .map((r) => {
      const band = r.s.band
        ? ` ${bandModeText()} ${fmtNum(r.s.band.lo[i] ?? Number.NaN)}..${fmtNum(r.s.band.hi[i] ?? Number.NaN)}`
        : "";
      const sm = r.s.sparse ? "" : ` (smoothed ${fmtNum(r.sm ?? Number.NaN)})`;
      return `${r.s.runName} ${r.s.label}: ${fmtNum(r.raw)}${sm}${band}`;
    });
  const where = xAxis === "time" ? `${fmtNum(at)} s` : `step ${at}`;
  return `${where} · ${lines.join(" · ")}${def.phase === "rl" && xAxis === "step" ? " · click: inspect" : ""}`;
}

function plotHooks(el: HTMLElement, { def, xAxis }: PlotShape, refs: PlotRefs): uPlot.Hooks.Arrays {
  const { readout, zoomed, markerLayer, markersRef, lastSeen } = refs;
  return {
    // The visible x range, on the figure, for tests and for people reading the DOM.
    setScale: [
      (u, key) => {
        const fig = el.closest("figure");
        if (key !== "x" || !fig) return;
        fig.dataset.xmin = String(u.scales.x.min);
        fig.dataset.xmax = String(u.scales.x.max);
        fig.dataset.zoomed = zoomed.current ? "1" : "0";
      },
    ],
    // The last x uPlot was given, on the figure: beside data-x-last (the data's), it says
    // whether the canvas shows the newest data (tests of off-screen charts read it).
    setData: [
      (u) => {
        const fig = el.closest("figure");
        if (fig) fig.dataset.drawnXLast = String(u.data[0].at(-1) ?? "");
      },
    ],
    setSelect: [
      (u) => {
        if (u.select.width > 0) zoomed.current = true;
      },
    ],
    draw: [
      (u) => {
        if (markerLayer.current) placeMarkers(u, markersRef.current, markerLayer.current);
        drawBaseline(u, baselineValue(def, lastSeen.current.data));
      },
    ],
    setCursor: [
      (u) => {
        const out = readout.current;
        const i = u.cursor.idx;
        if (!out) return;
        out.textContent =
          i === null || i === undefined ? "" : readoutText(lastSeen.current.data, i, def, xAxis);
      },
    ],
  };
}

function plotOptions(el: HTMLElement, shape: PlotShape, refs: PlotRefs): uPlot.Options {
  const { def, log, xLabel } = shape;
  const d = refs.lastSeen.current.data;
  const { series, bands } = seriesOpts(d, xLabel);
  return {
    width: Math.max(200, el.clientWidth),
    height: 190,
    legend: { show: false },
    cursor: { sync: { key: SYNC.key }, drag: { x: true, y: false }, y: false },
    scales: { x: { time: false }, y: { distr: log ? 3 : 1, range: log ? undefined : yRangeOf(d, shape) } },
    bands,
    axes: [xAxisOpts(xLabel), yAxisOpts(el, def)],
    series,
    hooks: plotHooks(el, shape, refs),
  };
}

/**
 * Builds the plot in `el` with its marker layer, double-click (zoom reset) and click (pin the
 * step in the inspector) listeners; returns the plot and what tears it down.
 */
function createPlot(el: HTMLElement, shape: PlotShape, refs: PlotRefs) {
  const { def, log, xAxis } = shape;
  const { zoomed, markerLayer, markersRef, lastSeen } = refs;
  const u = new uPlot(plotOptions(el, shape, refs), toAligned(lastSeen.current.data, log), el);
  const layer = document.createElement("div");
  layer.className = "marker-layer";
  u.over.append(layer);
  markerLayer.current = layer;
  markersRef.current = lastSeen.current.markers;
  placeMarkers(u, markersRef.current, layer);
  const onDbl = () => {
    zoomed.current = false;
    const fig = el.closest("figure");
    if (fig) fig.dataset.zoomed = "0";
  };
  // A click (not a drag) on an RL chart pins that step in the trajectory inspector.
  const onClick = () => {
    const i = u.cursor.idx;
    if (def.phase !== "rl" || xAxis !== "step" || i === null || i === undefined || u.select.width > 0) return;
    pinInspectorStep(lastSeen.current.data.x[i]);
  };
  u.over.addEventListener("dblclick", onDbl);
  u.over.addEventListener("click", onClick);
  const destroy = () => {
    u.over.removeEventListener("dblclick", onDbl);
    u.over.removeEventListener("click", onClick);
    u.destroy();
  };
  return { u, destroy };
}

/**
 * Keeps the plot's width and on-screen state in step with `holder`.
 * Off-screen charts are not drawn (setData costs a canvas redraw per row). A chart coming on
 * screen must not show what it held when it left (or the step-0 point it was created with):
 * an IntersectionObserver's callback and the React effect it leads to run only after the frame
 * that shows the chart is painted (seconds later on a busy page). So the observer's margin keeps
 * charts within half a screen of the view drawn, and a scroll that brings a stale chart into
 * view draws it in the scroll event, which the browser dispatches before that frame's paint.
 */
function useOnScreen(
  holder: RefObject<HTMLDivElement | null>,
  setWidth: (w: number) => void,
  setVisible: (on: boolean) => void,
  drawRef: RefObject<() => void>,
  isStale: RefObject<() => boolean>,
) {
  // biome-ignore lint/correctness/useExhaustiveDependencies: set up once; reads the rest through refs
  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(Math.max(200, Math.floor(el.clientWidth))));
    ro.observe(el);
    const io = new IntersectionObserver(
      (entries) => {
        const on = entries.at(-1)?.isIntersecting ?? false;
        if (on) drawRef.current();
        setVisible(on);
      },
      { rootMargin: `${NEAR_SCREEN * 100}% 0px` },
    );
    io.observe(el);
    const onScroll = () => {
      if (!isStale.current()) return;
      const r = el.getBoundingClientRect();
      const margin = window.innerHeight * NEAR_SCREEN;
      if (r.bottom > -margin && r.top < window.innerHeight + margin && r.width > 0) drawRef.current();
    };
    document.addEventListener("scroll", onScroll, { capture: true, passive: true });
    return () => {
      ro.disconnect();
      io.disconnect();
      document.removeEventListener("scroll", onScroll, { capture: true });
    };
  }, []);
}

/**
 * The uPlot instance behind one chart: rebuilt when `shapeKey` changes, given the newest data
 * when on screen and not in fast mode, zoom kept across streaming.
 */
function useUplot(seen: Seen, shape: PlotShape, shapeKey: string, setWidth: (w: number) => void) {
  const holder = useRef<HTMLDivElement>(null);
  const readout = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const zoomed = useRef(false);
  const markerLayer = useRef<HTMLDivElement | null>(null);
  const markersRef = useRef<PlacedMarker[]>([]);
  const [visible, setVisible] = useState(true);
  const lastSeen = useRef(seen);
  lastSeen.current = seen;
  /** What uPlot was last given. */
  const drawn = useRef<Seen | null>(null);

  /** Gives uPlot the newest data (from the last render) unless it has it already. */
  const draw = () => {
    const u = plot.current;
    const cur = lastSeen.current;
    if (!u || cur.fast || sameDrawing(drawn.current, lastSeen.current)) return;
    drawn.current = cur;
    markersRef.current = cur.markers;
    if (u.width !== cur.width) u.setSize({ width: cur.width, height: 190 });
    if (zoomed.current) {
      u.setData(toAligned(cur.data, cur.log), false);
      u.redraw();
    } else {
      u.setData(toAligned(cur.data, cur.log));
    }
  };
  const drawRef = useRef(draw);
  drawRef.current = draw;
  const isStale = useRef(
    () => !!plot.current && !lastSeen.current.fast && !sameDrawing(drawn.current, lastSeen.current),
  );
  useOnScreen(holder, setWidth, setVisible, drawRef, isStale);

  // biome-ignore lint/correctness/useExhaustiveDependencies: rebuilt only when the shape changes
  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const { u, destroy } = createPlot(el, shape, { readout, zoomed, markerLayer, markersRef, lastSeen });
    plot.current = u;
    drawn.current = { ...lastSeen.current, width: u.width };
    zoomed.current = false;
    return () => {
      destroy();
      plot.current = null;
    };
  }, [shapeKey]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: draw reads these through lastSeen
  useEffect(() => {
    if (visible) draw();
  }, [seen.data, seen.markers, visible, seen.fast, seen.width, seen.log]);

  const png = () => plot.current && downloadPng(plot.current, shape.def, lastSeen.current.legend);
  return { holder, readout, png };
}

export function MetricChart({ def }: { def: ChartDef }) {
  const [width, setWidth] = useState(320);
  const view = useChartView(def);
  const { visibleRuns, inputs, data, markers, legend, xLabel } = useChartData(def, view, width);
  const { log, clip, fast, xAxis } = view;
  const { holder, readout, png } = useUplot(
    { data, markers, legend, width, log, fast },
    { def, log, clip, xLabel, xAxis },
    shapeKeyOf(data, view),
    setWidth,
  );
  const { points, keysWithPoints, bands, ends, seedRuns } = figureStats(data);
  const empty = data.series.length === 0;
  const csv = () =>
    download(fileName(def, legend, ".csv"), new Blob([chartCsv(def, inputs)], { type: "text/csv" }));
  return (
    <figure
      className="chart"
      data-testid={`chart-${def.id}`}
      data-points={points}
      data-keys={keysWithPoints}
      data-markers={markers.length}
      data-bands={bands}
      data-seed-runs={seedRuns}
      data-x-label={xLabel}
      data-x-last={data.x.at(-1) ?? ""}
      data-ends={ends}
      data-unit={def.unit ?? ""}
    >
      <ChartCaption def={def} smoothed={view.smoothing > 0} clip={clip} empty={empty} png={png} csv={csv} />
      <ChartLegend legend={legend} />
      <div className="chart-plot" ref={holder}>
        {empty && (
          <div className="chart-empty" data-testid="chart-empty">
            {emptyReason(def, view.formConfig, visibleRuns.length > 0)}
          </div>
        )}
      </div>
      <div className="chart-readout" ref={readout} data-testid="chart-readout" />
    </figure>
  );
}

/** The title, its badges and toggles, and the download, pin and remove buttons. */
function ChartCaption(props: {
  def: ChartDef;
  smoothed: boolean;
  clip: boolean;
  empty: boolean;
  png: () => void;
  csv: () => void;
}) {
  const { def, smoothed, clip, empty, png, csv } = props;
  return (
    <figcaption>
      <span className="chart-title" title={def.keys.map((k) => k.key).join(", ")}>
        {def.title}
      </span>
      {smoothed && <span className="badge">smoothed</span>}
      {clip && <span className="badge badge-warn">5–95% range</span>}
      <span className="chart-controls">
        <ChartToggles def={def} />
        <span className="chart-actions">
          <button
            type="button"
            data-testid="chart-png"
            title="Download this chart as PNG"
            disabled={empty}
            onClick={png}
          >
            PNG
          </button>
          <button
            type="button"
            data-testid="chart-csv"
            title="Download this chart's data as CSV"
            disabled={empty}
            onClick={csv}
          >
            CSV
          </button>
          <PinButton id={def.id} />
          {def.custom && <RemoveButton id={def.id} />}
        </span>
      </span>
    </figcaption>
  );
}

function bandModeText(): string {
  return useLab.getState().band === "sd" ? "±sd" : "min..max";
}

function DashSample({ color, dash }: { color: string; dash?: number[] }) {
  return (
    <svg width="22" height="8" aria-hidden="true" className="legend-line">
      <line x1="1" y1="4" x2="21" y2="4" stroke={color} strokeWidth="2" strokeDasharray={dash?.join(" ")} />
    </svg>
  );
}

/** Runs in their colours (a group with its seed count), keys in their dashes. */
function ChartLegend({ legend }: { legend: Legend }) {
  return (
    <div className="chart-legend" data-testid="chart-legend">
      {legend.runs.map((r) => (
        <span
          key={r.id}
          className={`legend-run${r.current ? " current" : ""}`}
          data-testid="legend-run"
          data-seeds={r.seeds ?? ""}
        >
          <span className="swatch" style={{ background: r.color }} />
          <span className="legend-name">
            {r.name}
            {r.seeds ? <span className="muted"> · mean of {r.seeds} seeds</span> : null}
          </span>
          {r.last !== undefined ? (
            <span className="legend-last" data-testid="legend-last" title="last value">
              {" "}
              {fmtNum(r.last)}
            </span>
          ) : null}
        </span>
      ))}
      {(legend.keys.length > 1 || legend.runs.length === 0) &&
        legend.keys.map((k) => (
          <span key={k.key} className="legend-key" title={k.key} data-testid="legend-key" data-key={k.key}>
            <DashSample color="currentColor" dash={k.dash} />
            <span className="legend-label">{k.label}</span>
            {k.last !== undefined ? (
              <span
                className="legend-last"
                data-testid="legend-last"
                title={`last ${k.key} of the current run`}
              >
                {" "}
                {fmtNum(k.last)}
              </span>
            ) : null}
          </span>
        ))}
      {legend.untrained && (
        <span
          className="legend-key legend-untrained"
          data-testid="legend-untrained"
          title={`${legend.untrained.key} before training (step 0): the dashed line`}
        >
          <DashSample color="var(--muted)" dash={[4, 4]} />
          {untrainedText(legend.untrained.value)}
        </span>
      )}
    </div>
  );
}

function PinButton({ id }: { id: string }) {
  const pinned = useLab((s) => s.pinnedCharts.includes(id));
  return (
    <button
      type="button"
      data-testid="chart-pin"
      aria-pressed={pinned}
      title={pinned ? "Unpin" : "Pin to the top"}
      onClick={() =>
        useLab.setState((s) => ({
          pinnedCharts: pinned ? s.pinnedCharts.filter((x) => x !== id) : [...s.pinnedCharts, id],
        }))
      }
    >
      {pinned ? "★" : "☆"}
    </button>
  );
}

function RemoveButton({ id }: { id: string }) {
  return (
    <button
      type="button"
      data-testid="chart-remove"
      title="Remove this chart"
      onClick={() =>
        useLab.setState((s) => ({
          addedCharts: s.addedCharts.filter((x) => `key:${x}` !== id),
          pinnedCharts: s.pinnedCharts.filter((x) => x !== id),
        }))
      }
    >
      ×
    </button>
  );
}

function ChartToggles({ def }: { def: ChartDef }) {
  const log = useLab((s) => !!s.logScale[def.id]);
  const clip = useLab((s) => !!s.outlierClip[def.id]);
  return (
    <span className="chart-toggles">
      <label title="Logarithmic y axis">
        <input
          type="checkbox"
          checked={log}
          onChange={() => useLab.setState((s) => ({ logScale: { ...s.logScale, [def.id]: !log } }))}
        />
        log
      </label>
      {def.outliers && (
        <label title="Limit the y range to the 5th-95th percentile">
          <input
            type="checkbox"
            checked={clip}
            onChange={() => useLab.setState((s) => ({ outlierClip: { ...s.outlierClip, [def.id]: !clip } }))}
          />
          5–95%
        </label>
      )}
    </span>
  );
}
