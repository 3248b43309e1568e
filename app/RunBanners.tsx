// Banners about runs that need the person's attention:
// - ResumeBanner: on load, a stored run the previous page left running (a reload, a closed
//   tab) is marked interrupted by the worker and offered here: "Resume #N from step K" from
//   its newest checkpoint, or, without one, a restart from step 0 that says so; its stored rows
//   are drawn in the charts before the person decides.
// - RewardErrorBanner: the active run's custom JS reward threw during the latest step that
//   ran it (reward/custom_error_rate > 0): how often, at which step, the first message.
import { useEffect, useState } from "react";
import type { InterruptedRun } from "../workers/api";
import { interruptedRuns, openStoredRun, refreshStoredRuns, resumeStoredRun } from "./bridge";
import { activeRun, canTrain, useLab } from "./store";

export function ResumeBanner() {
  const [found, setFound] = useState<InterruptedRun[]>([]);
  const trainable = useLab(canTrain);
  useEffect(() => {
    void interruptedRuns().then((runs) => {
      setFound(runs);
      if (runs.length === 0) return;
      void refreshStoredRuns();
      // The charts draw the offered run's stored rows at once, not only after Resume (a resumed
      // run replaces this opened copy).
      void openStoredRun(runs[0].run.id);
    });
  }, []);
  const first = found[0];
  if (!first) return null;
  const { run, checkpoint: ck } = first;
  const at = ck ? `${ck.phase === "rl" ? "" : `${ck.phase.toUpperCase()} `}step ${ck.step}` : "step 0";
  const lastStep = run.summary.step;
  return (
    <div className="banner" data-testid="resume-banner">
      <strong>{run.name} was interrupted</strong> (its page was reloaded or closed while it ran
      {/* Steps as the charts number them, from 0: the last one drawn, the first one to redo. */}
      {lastStep === undefined ? "" : `, after step ${lastStep}`}).{" "}
      {ck
        ? `Its last checkpoint is before ${at}; that step and those after it are recomputed.`
        : "It has no checkpoint (checkpoint_every is 0), so it restarts from step 0."}{" "}
      <button
        type="button"
        data-testid="resume-interrupted"
        disabled={!trainable}
        onClick={() => {
          setFound([]);
          void resumeStoredRun(run);
        }}
      >
        {ck ? `Resume ${run.name} from ${at}` : `Restart ${run.name} from step 0`}
      </button>{" "}
      <button type="button" onClick={() => setFound([])}>
        Dismiss
      </button>
      {found.length > 1 && <span className="muted"> ({found.length - 1} more in the Runs tab)</span>}
    </div>
  );
}

export function RewardErrorBanner() {
  const last = useLab((s) => {
    const rows = activeRun(s)?.rows ?? [];
    for (let i = rows.length - 1; i >= 0; i--)
      if (rows[i].phase === "rl" && typeof rows[i]["reward/custom_error_rate"] === "number") return rows[i];
    return undefined;
  });
  const rate = last?.["reward/custom_error_rate"];
  if (!last || typeof rate !== "number" || rate <= 0) return null;
  const msg = last["reward/custom_error"];
  return (
    <div className="banner banner-error" role="alert" data-testid="reward-error-banner">
      <strong>
        The custom reward failed on {Math.round(rate * 100)}% of trajectories at step {last.step}
      </strong>
      {typeof msg === "string" ? `: ${msg}` : ""}. Those scored 0 from it; the run goes on.{" "}
      <button type="button" onClick={() => useLab.setState({ tab: "reward" })}>
        Open the reward editor
      </button>
    </div>
  );
}
