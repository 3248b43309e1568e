// The top strip: title, GPU adapter, run controls (start, pause/resume, step, stop, reset,
// fast mode), the progress bar (phase, step, ETA, tokens/s, activity) and the stop rule.
import { useEffect, useMemo, useState } from "react";
import type { RunConfig } from "../config";
import { pauseRun, resetRun, resumeRun, setFastMode, startSeeds, stepRun, stopRun } from "./bridge";
import { fmtNum } from "./chartData";
import {
  estimateSeconds,
  loadStepTimes,
  measureStepTimes,
  PLAN_TITLE,
  planText,
  type StepTimes,
  saveStepTimes,
} from "./estimate";
import { GpuPanel } from "./GpuPanel";
import { pretrainedConflict } from "./presets";
import { ShareButton } from "./ShareLink";
import { activeRun, canTrain, isRunning, useLab } from "./store";
import { ThemeToggle } from "./ThemeToggle";

export function TopBar() {
  return (
    <header className="topbar">
      <h1>Agentic RL Lab</h1>
      <RunControls />
      <RunProgressBar />
      <div className="topbar-right">
        <ShareButton />
        <ThemeToggle />
        <GpuPanel />
      </div>
      <StartPlan />
    </header>
  );
}

/**
 * What Start will do and about how long it takes here: step times measured by this session's
 * runs on this adapter (else the last ones remembered for it).
 */
function StartPlan() {
  const config = useLab((s) => s.form.config) as RunConfig;
  const gpu = useLab((s) => s.gpu);
  const runs = useLab((s) => s.runs);
  const adapter = gpu?.ok
    ? gpu.adapter.description || `${gpu.adapter.vendor} ${gpu.adapter.architecture}`
    : "";
  const times = useMemo(() => {
    const merged: StepTimes = { ...loadStepTimes(adapter) };
    for (const r of runs) {
      if (r.id.startsWith("stored:") || r.engine) continue;
      const m = measureStepTimes(r.rows, r.config, r.progress?.loadS);
      for (const k of ["rlPerRollout", "sftPerExample", "evalPerProblem", "startS"] as const)
        if (m[k] !== undefined) merged[k] = m[k];
    }
    return merged;
  }, [runs, adapter]);
  useEffect(() => {
    if (adapter && Object.values(times).some((v) => v !== undefined)) saveStepTimes(adapter, times);
  }, [adapter, times]);
  const preset = useLab((s) => s.preset);
  if (!config?.rl || !gpu?.ok) return null;
  return (
    <div
      className="start-plan"
      data-testid="start-plan"
      data-seconds={estimateSeconds(config, times) ?? ""}
      title={PLAN_TITLE}
    >
      {pretrainedConflict(config, preset) ?? planText(config, times)}
    </div>
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
  const gpu = useLab((s) => s.gpu);
  const conflict = useLab((s) => pretrainedConflict(s.form.config as RunConfig, s.preset));
  const trainable = canTrain({ gpu }) && !conflict;
  const noGpu =
    conflict ?? (gpu && !gpu.ok ? "Training needs WebGPU, which this browser does not offer" : undefined);
  return (
    <div className="run-controls" role="toolbar" aria-label="Run controls">
      <button
        type="button"
        data-testid="start"
        onClick={() => void startSeeds(formConfig())}
        disabled={!trainable}
        title={noGpu ?? (gpu ? "Start a new run" : "Looking for a GPU…")}
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
        disabled={!trainable || (running && !paused)}
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

/** Seconds since the run started, ticking between the worker's pushes while the run trains. */
function useElapsed(p: { elapsed: number } | null | undefined, at: number, ticking: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!ticking) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [ticking]);
  if (!p) return 0;
  return ticking ? p.elapsed + Math.max(0, now - at) / 1000 : p.elapsed;
}

// The bar counts steps done; the charts and the inspector number a step from 0, the untrained
// policy's: after k steps the newest reward point is step k - 1 and the weights are step k's.
const STEPS_DONE_TITLE =
  "Steps done in this phase. Charts and inspector number steps from 0 (before training): after k steps done, the newest reward point is at step k - 1 and the held-out evaluation of the weights now is drawn at step k.";

export function RunProgressBar() {
  const run = useLab(activeRun);
  const p = run?.progress;
  const phase = run?.phase ?? "idle";
  const ticking = phase === "loading" || phase === "sft" || phase === "rl";
  const elapsed = useElapsed(p, run?.progressAt ?? 0, ticking);
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
            <span title={STEPS_DONE_TITLE}>
              <span data-testid="progress-step">{p.step}</span>/
              <span data-testid="progress-total">{p.total}</span> steps
            </span>{" "}
            ·{" "}
            {ticking && (
              <>
                <span data-testid="progress-activity">
                  {phase === "loading" ? (p.loading ?? "preparing the run") : p.activity}
                </span>{" "}
                ·{" "}
              </>
            )}
            <span data-testid="progress-eta">ETA {ticking || phase === "paused" ? fmtTime(p.eta) : "–"}</span>{" "}
            · {Number.isFinite(p.tokensPerS) ? fmtNum(Math.round(p.tokensPerS)) : "–"} tok/s ·{" "}
            <span data-testid="progress-elapsed">{fmtTime(elapsed)}</span>
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
