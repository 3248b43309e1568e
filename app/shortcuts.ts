// Keyboard shortcuts for run control: space pauses/resumes, s takes one step, Esc stops (or,
// while the config drawer is open, closes it), 1-6 switch tabs. Ignored while typing in an
// input, textarea, select or editable element (Esc on the open drawer excepted).
import { useEffect } from "react";
import type { RunConfig } from "../config";
import { pauseRun, resumeRun, stepRun, stopRun } from "./bridge";
import { activeRun, isRunning, useLab, type ViewSlice } from "./store";

const TABS: ViewSlice["tab"][] = ["charts", "inspector", "try", "reward", "runs", "environment"];

export function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

export function useShortcuts() {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      // Escape closes the config drawer first (also from a field in it), and stops nothing.
      if (e.key === "Escape" && useLab.getState().drawer) {
        useLab.setState({ drawer: false });
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
      const s = useLab.getState();
      const run = activeRun(s);
      if (e.key === " ") {
        if (!isRunning(run)) return;
        e.preventDefault();
        void (run?.phase === "paused" ? resumeRun() : pauseRun());
      } else if (e.key === "s") {
        if (run?.phase === "paused" || !isRunning(run)) void stepRun(s.form.config as RunConfig);
      } else if (e.key === "Escape") {
        if (isRunning(run)) void stopRun();
      } else if (/^[1-6]$/.test(e.key)) {
        useLab.setState({ tab: TABS[Number(e.key) - 1] });
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}
