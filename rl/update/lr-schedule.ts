// Learning-rate schedules: linear warm-up, then constant, linear or cosine decay to
// min_lr_ratio * lr at the last step. Used for SFT and RL alike.
// Tested by rl/update/lr-schedule.test.ts.

export interface LrSchedule {
  lr: number;
  warmupSteps: number;
  schedule: "constant" | "linear" | "cosine";
  minLrRatio: number;
  totalSteps: number;
}

/** The learning rate for 0-based step `step`. */
export function lrAt(step: number, s: LrSchedule): number {
  if (s.warmupSteps > 0 && step < s.warmupSteps) return (s.lr * (step + 1)) / s.warmupSteps;
  if (s.schedule === "constant") return s.lr;
  const span = Math.max(1, s.totalSteps - s.warmupSteps - 1);
  const progress = Math.min(1, Math.max(0, (step - s.warmupSteps) / span));
  const floor = s.lr * s.minLrRatio;
  const shape = s.schedule === "linear" ? 1 - progress : 0.5 * (1 + Math.cos(Math.PI * progress));
  return floor + (s.lr - floor) * shape;
}
