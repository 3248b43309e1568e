// The centre of the lab: the smoothing slider and the metric charts in three labelled rows
// (objective, policy health, behaviour), plus the latest metrics row as a table.
import { CHART_ROWS, CHARTS, fmtNum } from "./chartData";
import { MetricChart } from "./MetricChart";
import { activeRun, MAX_OVERLAY, useLab } from "./store";

export function ChartGrid() {
  const fast = useLab((s) => s.fast);
  return (
    <section className="chart-grid" aria-label="Metric charts">
      <ChartToolbar />
      {fast && (
        <div className="banner banner-info">
          Fast mode: training without drawing. Charts catch up when you leave it.
        </div>
      )}
      {CHART_ROWS.map((row) => (
        <div key={row.row} className="chart-row">
          <h3>{row.title}</h3>
          <div className="chart-row-charts">
            {CHARTS.filter((c) => c.row === row.row).map((c) => (
              <MetricChart key={c.id} def={c} />
            ))}
          </div>
        </div>
      ))}
      <LatestMetrics />
    </section>
  );
}

function ChartToolbar() {
  const smoothing = useLab((s) => s.smoothing);
  const runs = useLab((s) => s.runs);
  const hidden = runs.filter((r) => !r.visible).length;
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
      <span className="muted">
        Drag to zoom, double-click to reset. Raw values are the faint lines.
        {hidden > 0 &&
          ` Showing ${runs.length - hidden} of ${runs.length} runs (at most ${MAX_OVERLAY} overlaid).`}
      </span>
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
