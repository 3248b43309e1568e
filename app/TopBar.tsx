// The top strip: title, GPU adapter, run controls (start, pause/resume, step, stop, reset,
// fast mode), the progress bar (phase, step, ETA, tokens/s, activity) and the stop rule.
import type { RunConfig } from "../config";
import { pauseRun, resetRun, resumeRun, setFastMode, startRun, stepRun, stopRun } from "./bridge";
import { fmtNum } from "./chartData";
import { GpuPanel } from "./GpuPanel";
import { activeRun, isRunning, useLab } from "./store";
import { ThemeToggle } from "./ThemeToggle";

export function TopBar() {
  return (
    <header className="topbar">
      <h1>Agentic RL Lab</h1>
      <RunControls />
      <RunProgressBar />
      <div className="topbar-right">
        <ThemeToggle />
        <GpuPanel />
      </div>
    </header>
  );
}

function formConfig(): RunConfig {
  return useLab.getState().form.config as RunConfig;
}

export function RunControls() {
  const run = useLab(activeRun);
  const fast = useLab((s) => s.fast);
  const phase = run?.phase ?? "idle";
  const running = isRunning(run);
  const paused = phase === "paused";
  return (
    <div className="run-controls" role="toolbar" aria-label="Run controls">
      <button
        type="button"
        data-testid="start"
        onClick={() => void startRun(formConfig())}
        title="Start a new run"
      >
        {running ? "Restart" : "Start"}
      </button>
      {running && !paused && (
        <button type="button" data-testid="pause" onClick={() => void pauseRun()} title="Pause (space)">
          Pause
        </button>
      )}
      {running && paused && (
        <button type="button" data-testid="resume" onClick={() => void resumeRun()} title="Resume (space)">
          Resume
        </button>
      )}
      <button
        type="button"
        data-testid="step"
        onClick={() => void stepRun(formConfig())}
        disabled={running && !paused}
        title="One rollout + update, then pause (s)"
      >
        Step
      </button>
      <button
        type="button"
        data-testid="stop"
        onClick={() => void stopRun()}
        disabled={!running}
        title="Stop (Esc)"
      >
        Stop
      </button>
      <button
        type="button"
        data-testid="reset"
        onClick={() => void resetRun()}
        disabled={!run}
        title="Stop and clear the current run"
      >
        Reset
      </button>
      <label className="fast-toggle" title="Train without drawing charts or sending samples">
        <input
          type="checkbox"
          data-testid="fast"
          checked={fast}
          onChange={(e) => void setFastMode(e.target.checked)}
        />{" "}
        Fast
      </label>
    </div>
  );
}

function fmtTime(s: number): string {
  if (!Number.isFinite(s) || s < 0) return "–";
  if (s < 60) return `${Math.round(s)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${String(Math.round(s % 60)).padStart(2, "0")}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

export function RunProgressBar() {
  const run = useLab(activeRun);
  const p = run?.progress;
  const phase = run?.phase ?? "idle";
  const cfg = run?.liveConfig;
  const frac = p && p.total > 0 ? Math.min(1, p.step / p.total) : 0;
  const target = cfg?.stop.target;
  return (
    <div className="progress" data-testid="progress" data-phase={phase} data-step={p?.step ?? ""}>
      <div className="progress-track">
        <div className="progress-fill" style={{ width: `${(frac * 100).toFixed(1)}%` }} />
      </div>
      <div className="progress-text">
        <span className={`phase phase-${phase}`} data-testid="run-phase">
          {phase}
        </span>
        {p && (
          <>
            {" "}
            step <span data-testid="progress-step">{p.step}</span>/{p.total} · {p.activity} · ETA{" "}
            {fmtTime(p.eta)} · {fmtNum(Math.round(p.tokensPerS))} tok/s · {fmtTime(p.elapsed)}
          </>
        )}
        {cfg && (
          <span className="muted" data-testid="stop-rule">
            {" "}
            · stops at {cfg.stop.max_steps} RL steps
            {target ? ` or ${target.key} ≥ ${target.value}` : ""}
          </span>
        )}
        {run?.error && (
          <span className="field-error" role="alert">
            {" "}
            {run.error}
          </span>
        )}
      </div>
    </div>
  );
}
