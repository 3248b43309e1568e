// Every run of the session: its colour, status, steps, what changed from the previous run
// (a diff of leaf paths), final metrics; open (inspector, try), overlay on the charts
// (compare), delete.
import { fmtNum } from "./chartData";
import { formatDiff } from "./configModel";
import { deleteRun, lastValues, useLab } from "./store";

const FINAL_KEYS = ["reward/mean", "acc/mean", "val/acc", "tool/success_rate"];

export function RunsList() {
  const runs = useLab((s) => s.runs);
  const openId = useLab((s) => s.openId);
  if (runs.length === 0) return <div className="panel-empty">No runs yet in this session.</div>;
  return (
    <table className="runs-list" data-testid="runs-list">
      <thead>
        <tr>
          <th>Run</th>
          <th>Status</th>
          <th>Steps</th>
          <th>Changes</th>
          {FINAL_KEYS.map((k) => (
            <th key={k}>{k}</th>
          ))}
          <th />
        </tr>
      </thead>
      <tbody>
        {[...runs].reverse().map((r) => {
          const last = lastValues(r.rows);
          const lastRl = [...r.rows].reverse().find((x) => x.phase === "rl");
          return (
            <tr key={r.id} data-testid="run-row" className={r.id === openId ? "open" : ""}>
              <td>
                <span className="swatch" style={{ background: r.color }} /> #{r.n}{" "}
                <span className="muted">
                  {r.config.rl.advantage} · {r.config.task.name} · seed {r.config.seed}
                </span>
              </td>
              <td>{r.phase}</td>
              <td>{lastRl ? lastRl.step : "–"}</td>
              <td
                className="diff"
                title={r.diff
                  .map((d) => `${d.path}: ${JSON.stringify(d.from)} → ${JSON.stringify(d.to)}`)
                  .join("\n")}
              >
                {r.n === 1 ? "first run" : formatDiff(r.diff)}
              </td>
              {FINAL_KEYS.map((k) => (
                <td key={k}>{last[k] === undefined ? "–" : fmtNum(last[k])}</td>
              ))}
              <td className="run-actions">
                <button
                  type="button"
                  onClick={() => useLab.setState({ openId: r.id })}
                  title="Inspect this run"
                >
                  Open
                </button>
                <label title="Overlay on the charts">
                  <input
                    type="checkbox"
                    checked={r.visible}
                    onChange={() =>
                      useLab.setState((s) => ({
                        runs: s.runs.map((x) => (x.id === r.id ? { ...x, visible: !x.visible } : x)),
                      }))
                    }
                  />{" "}
                  compare
                </label>
                <button
                  type="button"
                  disabled={r.id === useLab.getState().activeId && r.phase !== "done" && r.phase !== "error"}
                  onClick={() => useLab.setState((s) => deleteRun(s, r.id))}
                  title="Delete from this session"
                >
                  Delete
                </button>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
