// One metric chart (uPlot): every visible run's raw series drawn faintly behind its
// debiased-EMA line, the current run opaque and on top, edit and skipped-update markers
// as labelled vertical lines, a hover readout (step, run, raw, smoothed), a shared cursor,
// a log-y toggle and, for gradient norm and KL, an optional 5th-95th percentile range.
// Zoom survives streaming (setData(data, false) while zoomed); double-click resets it.
// It redraws only when on screen and not in fast mode.
import { useEffect, useMemo, useRef, useState } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import {
  baselineValue,
  buildChartData,
  type ChartData,
  type ChartDef,
  chartMarkers,
  fmtNum,
  type Marker,
} from "./chartData";
import { percentileRange } from "./smoothing";
import { openRun, type RunRecord, runName, useLab } from "./store";

const SYNC = uPlot.sync("lab-charts");

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
  }
  return [data.x, ...cols] as uPlot.AlignedData;
}

function seriesOpts(data: ChartData, runLabels: Map<string, string>): uPlot.Series[] {
  const out: uPlot.Series[] = [{ label: "step" }];
  for (const s of data.series) {
    const name = `${runLabels.get(s.runId) ?? s.runId} ${s.label}`;
    out.push({
      label: `${name} (raw)`,
      stroke: withAlpha(s.color, s.current ? 0.3 : 0.12),
      width: 1,
      spanGaps: true,
    });
    out.push({
      label: name,
      stroke: withAlpha(s.color, s.current ? 1 : 0.4),
      width: s.current ? 2 : 1.5,
      spanGaps: true,
      dash: s.key === s.label ? undefined : dashFor(s.key),
    });
  }
  return out;
}

// Second and third keys of a chart get dashes so they read apart in one colour.
function dashFor(key: string): number[] | undefined {
  if (/std|sampled|post_tool|calls_mean/.test(key)) return [6, 4];
  if (/val\/acc$/.test(key)) return [2, 3];
  return undefined;
}

function placeMarkers(u: uPlot, markers: readonly Marker[], layer: HTMLDivElement) {
  layer.replaceChildren();
  for (const m of markers) {
    const left = u.valToPos(m.step, "x");
    if (!Number.isFinite(left) || left < 0 || left > u.over.clientWidth) continue;
    const el = document.createElement("div");
    el.className = `chart-marker marker-${m.kind}`;
    el.style.left = `${left}px`;
    // Labels near the right edge open to the left of their line.
    if (left > u.over.clientWidth * 0.6) el.classList.add("label-left");
    el.dataset.testid = "chart-marker";
    el.dataset.kind = m.kind;
    el.dataset.step = String(m.step);
    el.title = `step ${m.step}: ${m.detail}`;
    const label = document.createElement("span");
    label.textContent = m.label;
    el.append(label);
    layer.append(el);
  }
}

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

export function MetricChart({ def }: { def: ChartDef }) {
  // In fast mode the charts hold the runs they last drew: no data work per incoming row.
  const frozen = useRef<RunRecord[]>([]);
  const runs = useLab((s) => {
    if (!s.fast) frozen.current = s.runs;
    return frozen.current;
  });
  const activeId = useLab((s) => s.activeId);
  const smoothing = useLab((s) => s.smoothing);
  const log = useLab((s) => !!s.logScale[def.id]);
  const clip = useLab((s) => !!s.outlierClip[def.id]);
  const fast = useLab((s) => s.fast);
  const theme = useLab((s) => s.theme);
  const holder = useRef<HTMLDivElement>(null);
  const readout = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const zoomed = useRef(false);
  const markerLayer = useRef<HTMLDivElement | null>(null);
  const markersRef = useRef<Marker[]>([]);
  const [visible, setVisible] = useState(true);
  const [width, setWidth] = useState(320);

  const visibleRuns = useMemo(() => runs.filter((r) => r.visible), [runs]);
  const currentId = activeId ?? runs[runs.length - 1]?.id;
  const data = useMemo(
    () =>
      buildChartData(
        def,
        visibleRuns.map((r) => ({ id: r.id, color: r.color, current: r.id === currentId, rows: r.rows })),
        { smoothing, buckets: Math.max(50, Math.floor(width / 2)) },
      ),
    [def, visibleRuns, currentId, smoothing, width],
  );
  const markers = useMemo(
    () =>
      chartMarkers(
        def,
        visibleRuns.flatMap((r) => r.markers),
        new Set(visibleRuns.map((r) => r.id)),
      ),
    [def, visibleRuns],
  );
  const runLabels = useMemo(() => new Map(runs.map((r) => [r.id, runName(r)])), [runs]);
  // The shape of the plot (series list, log) changes rarely; data changes every frame.
  const shapeKey = `${data.series.map((s) => `${s.runId}:${runLabels.get(s.runId)}:${s.key}:${s.current}`).join("|")}|${log}|${clip}|${theme}`;
  const currentSeries = data.series.filter((s) => s.current);
  const points = currentSeries.reduce((a, s) => a + s.points, 0);
  const keysWithPoints = currentSeries.map((s) => s.key).join(",");
  const present = useMemo(() => new Set(data.series.map((s) => s.key)), [data]);
  const lastSeen = useRef({ data, markers });
  lastSeen.current = { data, markers };

  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(Math.max(200, Math.floor(el.clientWidth))));
    ro.observe(el);
    const io = new IntersectionObserver((entries) => setVisible(entries.some((e) => e.isIntersecting)));
    io.observe(el);
    return () => {
      ro.disconnect();
      io.disconnect();
    };
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: rebuilt only when the shape changes
  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const { data: d } = lastSeen.current;
    const yRange: uPlot.Scale.Range = (_u, min, max) => {
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
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 170,
      legend: { show: false },
      cursor: { sync: { key: SYNC.key }, drag: { x: true, y: false }, y: false },
      scales: { x: { time: false }, y: { distr: log ? 3 : 1, range: log ? undefined : yRange } },
      axes: [
        {
          stroke: cssVar("--muted"),
          grid: { stroke: cssVar("--grid") },
          ticks: { stroke: cssVar("--grid") },
          // Steps are integers: no 0.5 ticks.
          incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000],
        },
        {
          stroke: cssVar("--muted"),
          grid: { stroke: cssVar("--grid") },
          ticks: { stroke: cssVar("--grid") },
          size: 52,
          values: (_u, splits) => splits.map((v) => fmtNum(v)),
        },
      ],
      series: seriesOpts(d, runLabels),
      hooks: {
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
            if (i === null || i === undefined) {
              out.textContent = "";
              return;
            }
            const { data: cur } = lastSeen.current;
            const step = cur.x[i];
            const lines = cur.series
              .map((s) => ({ s, raw: s.raw[i], sm: s.smooth[i] }))
              .filter((r) => r.raw !== null && r.raw !== undefined)
              .sort((a, b) => Number(b.s.current) - Number(a.s.current))
              .map(
                (r) =>
                  `${runLabels.get(r.s.runId) ?? ""} ${r.s.label}: ${fmtNum(r.raw)} (smoothed ${fmtNum(r.sm ?? Number.NaN)})`,
              );
            out.textContent = `step ${step} · ${lines.join(" · ")}${def.phase === "rl" ? " · click: inspect" : ""}`;
          },
        ],
      },
    };
    const u = new uPlot(opts, toAligned(d, log), el);
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
      if (def.phase !== "rl" || i === null || i === undefined || u.select.width > 0) return;
      pinInspectorStep(lastSeen.current.data.x[i]);
    };
    u.over.addEventListener("dblclick", onDbl);
    u.over.addEventListener("click", onClick);
    plot.current = u;
    zoomed.current = false;
    return () => {
      u.over.removeEventListener("dblclick", onDbl);
      u.over.removeEventListener("click", onClick);
      u.destroy();
      plot.current = null;
    };
  }, [shapeKey]);

  useEffect(() => {
    const u = plot.current;
    if (!u || !visible || fast) return;
    markersRef.current = markers;
    if (u.width !== width) u.setSize({ width, height: 170 });
    if (zoomed.current) {
      u.setData(toAligned(data, log), false);
      u.redraw();
    } else {
      u.setData(toAligned(data, log));
    }
  }, [data, markers, visible, fast, width, log]);

  const empty = data.series.length === 0;
  return (
    <figure
      className="chart"
      data-testid={`chart-${def.id}`}
      data-points={points}
      data-keys={keysWithPoints}
      data-markers={markers.length}
    >
      <figcaption>
        <span className="chart-title">{def.title}</span>
        {smoothing > 0 && <span className="badge">smoothed</span>}
        {clip && <span className="badge badge-warn">5–95% range</span>}
        <ChartLegend def={def} present={present} />
        <ChartToggles def={def} />
      </figcaption>
      <div className="chart-plot" ref={holder}>
        {empty && <div className="chart-empty">no points yet</div>}
      </div>
      <div className="chart-readout" ref={readout} data-testid="chart-readout" />
    </figure>
  );
}

function ChartLegend({ def, present }: { def: ChartDef; present: ReadonlySet<string> }) {
  return (
    <span className="chart-keys">
      {def.keys
        .filter((k) => !k.optional || present.has(k.key))
        .map((k) => (
          <span key={k.key} title={k.key}>
            {k.label}
          </span>
        ))}
    </span>
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
