// Committing a config field: update the form, and while a run goes, edit it live (a live
// knob, applied at the next step) or ask for a restart (a restart knob). Shared by the
// config panel and the reward editor.
import { getPath, type RunConfig } from "../config";
import { editLive } from "./bridge";
import { type FieldSpec, planChange, typeIntoField } from "./configModel";
import { activeRun, isRunning, useLab } from "./store";

export function commitField(spec: FieldSpec, text: string) {
  const state = useLab.getState();
  const form = typeIntoField(state.form, spec, text);
  const liveErrors = { ...state.liveErrors };
  delete liveErrors[spec.path];
  let pendingRestart = state.pendingRestart.filter((p) => p !== spec.path);
  const run = activeRun(state);
  if (isRunning(run) && run && !(spec.path in form.pending)) {
    const value = getPath(form.config, spec.path);
    if (JSON.stringify(value) !== JSON.stringify(getPath(run.liveConfig, spec.path))) {
      const lastStep = run.rows[run.rows.length - 1]?.step ?? 0;
      const plan = planChange(run.liveConfig, spec.path, value, lastStep);
      if (plan.kind === "live") void editLive(plan.path, plan.value);
      else if (plan.kind === "live-invalid") liveErrors[spec.path] = plan.error;
      else if (plan.kind === "restart") pendingRestart = [...pendingRestart, spec.path];
    }
  }
  useLab.setState({ form, liveErrors, pendingRestart });
}

/** The picker's model source into the form: model.pretrained, model.revision and model.sha256 replaced together. */
export function setModelSource(fields: Pick<RunConfig["model"], "pretrained" | "revision" | "sha256">) {
  const state = useLab.getState();
  const old = state.form.config as RunConfig;
  const config = { ...old, model: { ...old.model, ...fields } };
  const pending = { ...state.form.pending };
  for (const k of ["pretrained", "revision", "sha256"]) delete pending[`model.${k}`];
  const pendingRestart = isRunning(activeRun(state))
    ? [...new Set([...state.pendingRestart, "model.pretrained"])]
    : state.pendingRestart;
  useLab.setState({ form: { ...state.form, config, pending }, pendingRestart });
}
