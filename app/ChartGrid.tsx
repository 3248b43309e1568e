// The centre of the lab: the toolbar (smoothing, x axis, band), the "add chart" picker over
// every key of the rows (search, add, pin), and the metric charts in labelled rows: pinned
// first, then objective, policy health, behaviour and the added charts; the SFT chart only
// when some run has an SFT phase. Below, the latest metrics row as a table.
import { useEffect, useMemo, useState } from "react";
import type { RunConfig } from "../config";
import { CHART_ROWS, CHARTS, type ChartDef, customChart, fmtNum, metricKeys } from "./chartData";
import { MetricChart } from "./MetricChart";
import { activeRun, type LabState, MAX_OVERLAY, useLab } from "./store";

/** Charts the person added and pinned survive a reload (localStorage). */
const CHART_PREFS_KEY = "lab:charts";

function useChartPrefs() {
  useEffect(() => {
    try {
      const saved = JSON.parse(localStorage.getItem(CHART_PREFS_KEY) ?? "null");
      if (saved && Array.isArray(saved.added) && Array.isArray(saved.pinned))
        useLab.setState({
          addedCharts: saved.added.filter((x: unknown) => typeof x === "string"),
          pinnedCharts: saved.pinned.filter((x: unknown) => typeof x === "string"),
        });
    } catch {}
    return useLab.subscribe((s, prev) => {
      if (s.addedCharts === prev.addedCharts && s.pinnedCharts === prev.pinnedCharts) return;
      try {
        localStorage.setItem(
          CHART_PREFS_KEY,
          JSON.stringify({ added: s.addedCharts, pinned: s.pinnedCharts }),
        );
      } catch {}
    });
  }, []);
}

/** Does any run on the charts (or, before one, the form's config) have an SFT phase? */
function hasSft(s: LabState): boolean {
  const shown = s.runs.filter((r) => r.visible);
  const ranSft = (c: RunConfig) => c.sft.steps > 0 && !c.sft.init_checkpoint;
  if (shown.length === 0) return ranSft(s.form.config as RunConfig);
  return shown.some(
    (r) => r.rows.some((x) => x.phase === "sft") || (r.rows.length === 0 && ranSft(r.config)),
  );
}

export function ChartGrid() {
  useChartPrefs();
  const fast = useLab((s) => s.fast);
  const added = useLab((s) => s.addedCharts);
  const pinned = useLab((s) => s.pinnedCharts);
  const sft = useLab(hasSft);
  const charts = useMemo(() => {
    const custom = added.map((a) => {
      const i = a.indexOf(":");
      return customChart(a.slice(i + 1), a.slice(0, i) === "sft" ? "sft" : "rl");
    });
    const all: ChartDef[] = [...CHARTS.filter((c) => c.phase !== "sft" || sft), ...custom];
    return all.map((c) => (pinned.includes(c.id) ? { ...c, row: "pinned" as const } : c));
  }, [added, pinned, sft]);
  return (
    <section className="chart-grid" aria-label="Metric charts" id="charts">
      <ChartToolbar />
      {fast && (
        <div className="banner banner-info">
          Fast mode: training without drawing. Charts catch up when you leave it.
        </div>
      )}
      {CHART_ROWS.map((row) => {
        const inRow = charts.filter((c) => c.row === row.row);
        if (inRow.length === 0) return null;
        return (
          <div key={row.row} className="chart-row" data-row={row.row}>
            <h3>{row.title}</h3>
            <div className="chart-row-charts">
              {inRow.map((c) => (
                <MetricChart key={c.id} def={c} />
              ))}
            </div>
          </div>
        );
      })}
      <LatestMetrics />
    </section>
  );
}

function ChartToolbar() {
  const smoothing = useLab((s) => s.smoothing);
  const xAxis = useLab((s) => s.xAxis);
  const band = useLab((s) => s.band);
  const runs = useLab((s) => s.runs);
  const hidden = runs.filter((r) => !r.visible).length;
  const grouped = runs.some((r) => r.visible && r.group);
  return (
    <div className="chart-toolbar">
      <label>
        Smoothing{" "}
        <input
          type="range"
          min={0}
          max={0.999}
          step={0.001}
          value={smoothing}
          data-testid="smoothing"
          onChange={(e) => useLab.setState({ smoothing: Number(e.target.value) })}
        />{" "}
        <output>{smoothing.toFixed(3)}</output>
      </label>
      <label>
        x{" "}
        <select
          data-testid="x-axis"
          value={xAxis}
          onChange={(e) => useLab.setState({ xAxis: e.target.value === "time" ? "time" : "step" })}
        >
          <option value="step">step</option>
          <option value="time">wall time</option>
        </select>
      </label>
      <label title="The band around a multi-seed group's mean">
        band{" "}
        <select
          data-testid="band-mode"
          value={band}
          disabled={!grouped}
          onChange={(e) => useLab.setState({ band: e.target.value === "minmax" ? "minmax" : "sd" })}
        >
          <option value="sd">mean ± sd</option>
          <option value="minmax">min–max</option>
        </select>
      </label>
      <ChartPicker />
      <span className="muted">
        Drag to zoom, double-click to reset. Raw values are the faint lines.
        {hidden > 0 &&
          ` Showing ${runs.length - hidden} of ${runs.length} runs (at most ${MAX_OVERLAY} overlaid).`}
      </span>
    </div>
  );
}

/** "Add chart": every numeric key in the rows of the session's runs, searchable. */
function ChartPicker() {
  const [open, setOpen] = useState(false);
  const [query, setQuery] = useState("");
  const runs = useLab((s) => s.runs);
  const added = useLab((s) => s.addedCharts);
  const keys = useMemo(() => metricKeys(runs.map((r) => r.rows)), [runs]);
  const q = query.trim().toLowerCase();
  const shown = keys.filter((k) => k.key.toLowerCase().includes(q));
  return (
    <div className="chart-picker">
      <button
        type="button"
        data-testid="add-chart"
        aria-expanded={open}
        onClick={() => setOpen((o) => !o)}
        title="Chart any metric the rows carry"
      >
        + Add chart
      </button>
      {open && (
        <div className="chart-picker-panel" data-testid="chart-picker">
          <input
            type="search"
            placeholder="search metrics…"
            data-testid="chart-search"
            value={query}
            // biome-ignore lint/a11y/noAutofocus: the panel opens for typing
            autoFocus
            onChange={(e) => setQuery(e.target.value)}
          />
          {keys.length === 0 && <div className="muted">No rows yet: the keys appear once a run reports.</div>}
          <ul>
            {shown.map(({ key, phase }) => {
              const id = `${phase}:${key}`;
              const builtIn = CHARTS.some((c) => c.phase === phase && c.keys.some((k) => k.key === key));
              const isAdded = added.includes(id);
              return (
                <li key={id}>
                  <button
                    type="button"
                    data-testid="chart-option"
                    data-key={key}
                    disabled={isAdded}
                    onClick={() => {
                      useLab.setState((s) => ({ addedCharts: [...s.addedCharts, id] }));
                      setOpen(false);
                      setQuery("");
                    }}
                  >
                    {key}
                  </button>
                  <span className="muted">
                    {" "}
                    {phase}
                    {builtIn ? " · on a chart" : ""}
                    {isAdded ? " · added" : ""}
                  </span>
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </div>
  );
}

/** The latest metrics row of the current run: every key with its value. */
function LatestMetrics() {
  const run = useLab(activeRun);
  const row = run?.rows[run.rows.length - 1];
  if (!row) return null;
  const entries = Object.entries(row).filter(([k]) => k !== "step" && k !== "phase");
  return (
    <details className="latest-row" open>
      <summary>
        Latest metrics: {row.phase} step {row.step}
      </summary>
      <table data-testid="latest-row" data-step={row.step} data-phase={row.phase}>
        <tbody>
          {entries.map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td data-testid={`metric-${k}`} data-value={typeof v === "number" ? v : undefined}>
                {typeof v === "number" ? fmtNum(v) : String(v)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
