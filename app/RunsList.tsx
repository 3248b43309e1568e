// Every run of the session: its colour, status, steps, what changed from the previous run
// (a diff of leaf paths), final metrics; open (inspector, try), overlay on the charts
// (compare), delete. The seeds of a multi-seed run sit under one group row (how many seeds
// have finished, the mean ± sd of the final metrics over them), in the session and among the
// stored runs (the group is stored with its seeds, so it survives a reload: "Open group"
// loads every seed, drawn as the mean with a band).
import { useEffect, useState } from "react";
import { stat } from "../config/aggregate";
import type { StoredRun } from "../workers/api";
import {
  deleteStoredGroup,
  deleteStoredRun,
  exportStoredRun,
  importBundleFile,
  importResultsFiles,
  openStoredGroup,
  openStoredRun,
  refreshStoredRuns,
  resumeStoredRun,
  storageUsage,
} from "./bridge";
import { fmtNum } from "./chartData";
import { formatDiff } from "./configModel";
import { deleteRun, isRunning, lastValues, type RunRecord, runName, useLab, withGroups } from "./store";

const FINAL_KEYS = ["reward/mean", "acc/mean", "val/acc", "tool/success_rate"];

export function RunsList() {
  return (
    <section className="runs" aria-label="Runs">
      <h3>This session</h3>
      <SessionRuns />
      <h3>Stored in this browser</h3>
      <StoredRuns />
    </section>
  );
}

function SessionRuns() {
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
            <th key={k} className="wide-col">
              {k}
            </th>
          ))}
          <th />
        </tr>
      </thead>
      <tbody>
        {withGroups([...runs].reverse()).flatMap(({ run: r, head: group }) => {
          const last = lastValues(r.rows);
          const lastRl = [...r.rows].reverse().find((x) => x.phase === "rl");
          const head = group ? <GroupRow key={`group:${group.group.id}`} members={group.members} /> : null;
          const row = (
            <tr
              key={r.id}
              data-testid="run-row"
              data-group={r.group?.id ?? ""}
              className={`${r.id === openId ? "open" : ""}${r.group ? " group-member" : ""}`}
            >
              <td>
                <span className="swatch" style={{ background: r.color }} />{" "}
                <span data-testid="run-name">{runName(r)}</span>{" "}
                <span className="muted">
                  {r.engine
                    ? `ran on ${r.engine.engine}: charts and samples only, not replayable`
                    : `${r.config.rl.advantage} · ${r.config.task.name} · seed ${r.config.seed}`}
                </span>
              </td>
              <td data-testid="run-status">{r.phase}</td>
              <td>{lastRl ? lastRl.step : "–"}</td>
              <td
                className="diff"
                title={r.diff
                  .map((d) => `${d.path}: ${JSON.stringify(d.from)} → ${JSON.stringify(d.to)}`)
                  .join("\n")}
              >
                {r.engine ? "–" : r.n === 1 ? "first run" : formatDiff(r.diff)}
              </td>
              {FINAL_KEYS.map((k) => (
                <td key={k} className="wide-col" data-testid="run-final" data-key={k}>
                  {last[k] === undefined ? "–" : fmtNum(last[k])}
                </td>
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
                  disabled={r.id === useLab.getState().activeId && isRunning(r)}
                  onClick={() => useLab.setState((s) => deleteRun(s, r.id))}
                  title="Delete from this session"
                >
                  Delete
                </button>
              </td>
            </tr>
          );
          return head ? [head, row] : [row];
        })}
      </tbody>
    </table>
  );
}

/** The final metrics of a group's seeds, as mean ± sd (the mean alone over one seed). */
function MeanCells({ finals }: { finals: Record<string, number>[] }) {
  return FINAL_KEYS.map((k) => {
    const vs = finals.map((f) => f[k]).filter((v): v is number => v !== undefined);
    const st = stat(vs);
    return (
      <td key={k} className="wide-col">
        {vs.length === 0 ? "–" : vs.length === 1 ? fmtNum(st.mean) : `${fmtNum(st.mean)} ± ${fmtNum(st.sd)}`}
      </td>
    );
  });
}

/** A multi-seed run's row: its name, seeds finished of all, final metrics as mean ± sd. */
function GroupRow({ members }: { members: RunRecord[] }) {
  const g = members[0].group;
  if (!g) return null;
  const done = members.filter((m) => m.phase === "done").length;
  const running = members.some((m) => isRunning(m));
  return (
    <tr className="group-head" data-testid="run-group" data-seeds={members.length}>
      <td>
        <span className="swatch" style={{ background: members[0].color }} /> {g.name}
      </td>
      <td>{running ? `seed ${members.length} of ${g.size}` : `${done} of ${g.size} seeds done`}</td>
      <td />
      <td className="muted">seeds one after another</td>
      <MeanCells finals={members.map((m) => lastValues(m.rows))} />
      <td />
    </tr>
  );
}

/** A stored multi-seed run's row: seeds stored of all, final metrics as mean ± sd; open or delete them all. */
function StoredGroupRow({ members, activeIds }: { members: StoredRun[]; activeIds: Set<string | null> }) {
  const g = members[0].group;
  if (!g) return null;
  const done = members.filter((m) => m.status === "done").length;
  return (
    <tr className="group-head" data-testid="stored-group" data-group={g.id} data-seeds={members.length}>
      <td>
        <span data-testid="stored-group-name">{g.name}</span>{" "}
        <span className="muted">
          seeds{" "}
          {members
            .map((m) => m.group?.seed ?? 0)
            .sort((a, b) => a - b)
            .join(", ")}
        </span>
      </td>
      <td>
        {members.length} of {g.size} seeds stored, {done} done
      </td>
      <td />
      <td className="wide-col" />
      <MeanCells finals={members.map((m) => m.summary.metrics)} />
      <td className="run-actions">
        <button
          type="button"
          data-testid="stored-group-open"
          onClick={() => void openStoredGroup([...members].reverse().map((m) => m.id))}
          title="Load every seed into the charts: their mean with a band"
        >
          Open group
        </button>
        <button
          type="button"
          disabled={members.some((m) => activeIds.has(m.id))}
          onClick={() => void deleteStoredGroup(g.id)}
          title="Delete the group and all its seeds from this browser"
        >
          Delete group
        </button>
      </td>
    </tr>
  );
}

function StoredRuns() {
  const stored = useLab((s) => s.stored);
  const runs = useLab((s) => s.runs);
  // Refresh when the list opens and whenever a session run changes phase (a run ends, starts).
  const phases = runs.map((r) => r.phase).join(",");
  const [usage, setUsage] = useState<string | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: phases is the trigger
  useEffect(() => {
    void refreshStoredRuns();
    void storageUsage().then(setUsage);
  }, [phases]);
  const activeIds = new Set(runs.filter((r) => isRunning(r)).map((r) => r.workerId));
  return (
    <>
      <div className="row runs-tab-imports">
        <label className="import-bundle">
          Import a run bundle{" "}
          <input
            type="file"
            accept=".gz,.json,application/gzip"
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (f) void importBundleFile(f);
              e.target.value = "";
            }}
          />
        </label>
        <ImportResults />
        {usage && <span className="muted">Storage: {usage}</span>}
      </div>
      {stored.length === 0 ? (
        <div className="panel-empty">No stored runs.</div>
      ) : (
        <StoredTable stored={stored} activeIds={activeIds} />
      )}
    </>
  );
}

/** A verl or TRL run's results: a folder (the export folder the run wrote into) or loose files. */
function ImportResults() {
  const pick = (e: React.ChangeEvent<HTMLInputElement>) => {
    const files = [...(e.target.files ?? [])];
    e.target.value = "";
    if (files.length > 0) void importResultsFiles(files);
  };
  return (
    <span
      className="import-results"
      title="verl: the file log (trainer.logger file), rollout dumps, config.yaml; TRL: trainer_state.json, completions/*.parquet (docs/SCALE-OUT.md)"
    >
      Import verl/TRL results: folder{" "}
      <input
        type="file"
        data-testid="import-results-folder"
        {...({ webkitdirectory: "" } as Record<string, string>)}
        onChange={pick}
      />{" "}
      or files <input type="file" multiple data-testid="import-results-files" onChange={pick} />
    </span>
  );
}

function StoredTable({ stored, activeIds }: { stored: StoredRun[]; activeIds: Set<string | null> }) {
  return (
    <table className="runs-list" data-testid="stored-runs">
      <thead>
        <tr>
          <th>Run</th>
          <th>Status</th>
          <th>Step</th>
          <th className="wide-col">Updated</th>
          {FINAL_KEYS.map((k) => (
            <th key={k} className="wide-col">
              {k}
            </th>
          ))}
          <th />
        </tr>
      </thead>
      <tbody>
        {withGroups(stored).flatMap(({ run: r, head }) => [
          ...(head
            ? [<StoredGroupRow key={`group:${head.group.id}`} members={head.members} activeIds={activeIds} />]
            : []),
          <tr
            key={r.id}
            data-testid="stored-run"
            data-group={r.group?.id ?? ""}
            className={r.group ? "group-member" : ""}
          >
            <td>
              <span data-testid="stored-run-name">{r.name}</span>{" "}
              <span className="muted">{r.source !== "local" ? `(${r.source})` : ""}</span>
              {r.engine && (
                <span
                  className="muted"
                  data-testid="not-replayable"
                  title="An engine's run has no seed-and-edit log the lab could replay and no checkpoint: no resume, replay, share link or bundle"
                >
                  {" "}
                  ran on {r.engine.engine}: not replayable
                </span>
              )}
            </td>
            <td data-testid="stored-run-status">{r.status}</td>
            <td>{r.summary.step ?? "–"}</td>
            <td className="wide-col">{new Date(r.updatedAt).toLocaleString()}</td>
            {FINAL_KEYS.map((k) => (
              <td key={k} className="wide-col">
                {r.summary.metrics[k] === undefined ? "–" : fmtNum(r.summary.metrics[k])}
              </td>
            ))}
            <td className="run-actions">
              <button
                type="button"
                onClick={() => void openStoredRun(r.id)}
                title="Load into the charts and inspector"
              >
                Open
              </button>
              {r.source === "local" && !activeIds.has(r.id) && r.status !== "done" && (
                <button
                  type="button"
                  data-testid="stored-run-resume"
                  onClick={() => void resumeStoredRun(r)}
                  title={
                    r.checkpoint
                      ? `Continue from its checkpoint at ${r.checkpoint.phase.toUpperCase()} step ${r.checkpoint.step}`
                      : "It has no checkpoint: it restarts from step 0"
                  }
                >
                  {r.checkpoint ? `Resume from step ${r.checkpoint.step}` : "Restart from step 0"}
                </button>
              )}
              {!r.engine && (
                <button
                  type="button"
                  onClick={() => void exportStoredRun(r.id, r.name)}
                  title="Download as a bundle file"
                >
                  Export
                </button>
              )}
              <button
                type="button"
                disabled={activeIds.has(r.id)}
                onClick={() => void deleteStoredRun(r.id)}
                title="Delete from this browser"
              >
                Delete
              </button>
            </td>
          </tr>,
        ])}
      </tbody>
    </table>
  );
}
