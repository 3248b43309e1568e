// The left column: presets, derived numbers, and every RunConfig field generated from the
// schema defaults and FIELD_META, grouped, each with its default, range, help, paper and a
// live/restart badge; errors are named inline by dotted path. While a run goes, a live
// knob becomes an edit at the next step; a restart knob lights "New changes → restart".
import { useEffect, useMemo, useRef, useState } from "react";
import { getPath, type RunConfig } from "../config";
import { startRun } from "./bridge";
import {
  buildFieldSpecs,
  type FieldSpec,
  fieldForError,
  formatFieldValue,
  formErrors,
  fromSlider,
  groupFields,
  paramsText,
  pretrainedField,
  SLIDER_STEPS,
  type SliderScale,
  sliderScale,
  toSlider,
} from "./configModel";
import { commitField } from "./formActions";
import { MemoryPlanView, ModelPicker } from "./ModelPicker";
import { PresetPicker } from "./PresetPicker";
import { activeRun, isRunning, useLab } from "./store";

const SPECS = buildFieldSpecs();
const GROUPS = groupFields(SPECS);
// The long Algorithm group starts collapsed: a newcomer sees the run, task and rewards first.
const OPEN_GROUPS = new Set(["run", "task", "rewards"]);

function DerivedNumbers() {
  const config = useLab((s) => s.form.config) as RunConfig;
  if (!config?.model || !config.rl) return null;
  const rollouts = config.rl.prompts_per_step * config.rl.group_size;
  return (
    <div className="derived" data-testid="derived">
      <span>{paramsText(config)}</span>
      <span>{rollouts} rollouts/step</span>
      <span>≤{(rollouts * config.sampling.max_new_tokens).toLocaleString()} new tokens/step</span>
    </div>
  );
}

export function ConfigPanel() {
  const form = useLab((s) => s.form);
  const liveErrors = useLab((s) => s.liveErrors);
  const errors = useMemo(() => formErrors(form, SPECS), [form]);
  const errorsByField = useMemo(() => {
    const out: Record<string, string[]> = {};
    for (const [path, msg] of Object.entries(errors)) {
      const f = fieldForError(path, SPECS) ?? path;
      out[f] = [...(out[f] ?? []), path === f ? msg : `${path}: ${msg}`];
    }
    for (const [path, msg] of Object.entries(liveErrors))
      out[path] = [...(out[path] ?? []), `refused live: ${msg}`];
    return out;
  }, [errors, liveErrors]);
  const count = Object.keys(errors).length;
  return (
    <aside
      className="config-panel"
      id="config-panel"
      data-testid="config-panel"
      aria-label="Run configuration"
    >
      <button
        type="button"
        className="drawer-close"
        data-testid="drawer-close"
        onClick={() => useLab.setState({ drawer: false })}
      >
        × Close
      </button>
      <PresetPicker />
      <DerivedNumbers />
      <RestartNotice />
      {count > 0 && (
        <div className="banner banner-error" role="alert" data-testid="config-errors">
          {count} invalid {count === 1 ? "field" : "fields"}:{" "}
          {Object.entries(errors)
            .map(([p, m]) => `${p}: ${m}`)
            .join("; ")}
        </div>
      )}
      {GROUPS.map((g) => (
        <details key={g.group} className="config-group" open={OPEN_GROUPS.has(g.group)} data-group={g.group}>
          <summary>{g.title}</summary>
          {g.group === "model" && <ModelPicker />}
          {g.group === "model" && <MemoryPlanView />}
          {g.fields.map((spec) => (
            <ConfigField key={spec.path} spec={spec} errors={errorsByField[spec.path]} />
          ))}
        </details>
      ))}
    </aside>
  );
}

function rangeText(spec: FieldSpec): string {
  const { min, max } = spec.meta;
  if (min !== undefined && max !== undefined) return `[${min}, ${max}]`;
  if (min !== undefined) return `≥ ${min}`;
  if (max !== undefined) return `≤ ${max}`;
  return "";
}

function ConfigField({ spec, errors }: { spec: FieldSpec; errors?: string[] }) {
  const value = useLab((s) => getPath(s.form.config, spec.path));
  const pendingText = useLab((s) => s.form.pending[spec.path]);
  const presetValue = useLab((s) => getPath(s.presetConfig, spec.path));
  const running = useLab((s) => isRunning(activeRun(s)));
  const shown = pendingText ?? formatFieldValue(spec, value);
  const [text, setText] = useState(shown);
  useEffect(() => setText(shown), [shown]);
  const isPreset = JSON.stringify(value) === JSON.stringify(presetValue);
  const id = `field-${spec.path}`;
  return (
    <div
      className={`config-field${errors ? " invalid" : ""}`}
      data-testid="config-field"
      data-field={spec.path}
      data-live={spec.meta.live ? "1" : "0"}
    >
      <div className="field-head">
        <label htmlFor={id}>{spec.path.split(".").slice(1).join(".") || spec.path}</label>
        <span
          className={`badge ${spec.meta.live ? "badge-live" : "badge-restart"}`}
          title={spec.meta.live ? "Changes apply at the next step" : "Changing this needs a new run"}
        >
          {spec.meta.live ? "live" : "restart"}
        </span>
        <button
          type="button"
          className="reset-btn"
          disabled={isPreset}
          title={`Reset to the preset's value (${formatFieldValue(spec, presetValue) || "none"})`}
          onClick={() => commitField(spec, formatFieldValue(spec, presetValue))}
        >
          ↺
        </button>
      </div>
      <FieldInput spec={spec} id={id} text={text} setText={setText} value={value} />
      <div className="field-help">
        {spec.meta.help}
        <span className="muted">
          {" "}
          default {formatFieldValue(spec, spec.defaultValue) || "none"}
          {rangeText(spec) && ` · ${rangeText(spec)}`}
          {running && spec.meta.live && " · applies at the next step"}
        </span>
        {spec.meta.paper && <span className="paper"> · {spec.meta.paper}</span>}
      </div>
      {errors?.map((e) => (
        <div key={e} className="field-error" role="alert" data-testid="field-error">
          {e}
        </div>
      ))}
    </div>
  );
}

function FieldInput({
  spec,
  id,
  text,
  setText,
  value,
}: {
  spec: FieldSpec;
  id: string;
  text: string;
  setText: (t: string) => void;
  value: unknown;
}) {
  const common = { id, "data-path": spec.path };
  const arch = useLab((s) => pretrainedField(s.form.config as RunConfig, s.modelConfigs, spec.path));
  if (arch !== null)
    return (
      <input {...common} type="text" value={arch} readOnly title="From the pretrained model's config.json" />
    );
  if (spec.path === "model.sha256") {
    const hashes = Object.entries((value ?? {}) as Record<string, string>);
    return (
      <ul {...common} className="hash-list" data-testid="sha256-list">
        {hashes.length === 0 && <li className="muted">none (the model picker sets it for local files)</li>}
        {hashes.map(([file, h]) => (
          <li key={file} title={h}>
            {file} <code>{h.slice(0, 16)}…</code>
          </li>
        ))}
      </ul>
    );
  }
  if (spec.kind === "boolean") {
    return (
      <input
        {...common}
        type="checkbox"
        checked={value === true}
        onChange={(e) => commitField(spec, String(e.target.checked))}
      />
    );
  }
  if (spec.kind === "enum") {
    return (
      <select {...common} value={String(value)} onChange={(e) => commitField(spec, e.target.value)}>
        {spec.meta.options?.map((o) => (
          <option key={o} value={o} title={spec.meta.optionHelp?.[o]}>
            {o}
          </option>
        ))}
      </select>
    );
  }
  const commit = () => {
    // A field with a pending (refused) text commits even when the text is back to the stored
    // value: that clears its error (2.5 -> 2 into an integer field whose value stayed 2).
    const pending = useLab.getState().form.pending[spec.path] !== undefined;
    if (pending || text !== formatFieldValue(spec, value)) commitField(spec, text);
  };
  if (spec.kind === "text" || spec.kind === "json") {
    return (
      <textarea
        {...common}
        rows={spec.kind === "text" ? 4 : 2}
        value={text}
        spellCheck={false}
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
      />
    );
  }
  const input = (
    <input
      {...common}
      type="text"
      inputMode={spec.kind === "number" ? "decimal" : undefined}
      value={text}
      placeholder={spec.nullable ? "none" : undefined}
      onChange={(e) => setText(e.target.value)}
      onBlur={commit}
      onKeyDown={(e) => {
        if (e.key === "Enter") commit();
      }}
    />
  );
  const scale = sliderScale(spec);
  if (!scale) return input;
  return (
    <div className="field-slider">
      {input}
      <FieldSlider
        spec={spec}
        scale={scale}
        value={typeof value === "number" ? value : scale.min}
        setText={setText}
      />
    </div>
  );
}

/** The slider beside a number input; commits 120 ms after the last move. */
function FieldSlider({
  spec,
  scale,
  value,
  setText,
}: {
  spec: FieldSpec;
  scale: SliderScale;
  value: number;
  setText: (t: string) => void;
}) {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return (
    <input
      type="range"
      aria-label={`${spec.path} slider`}
      min={0}
      max={SLIDER_STEPS}
      value={toSlider(value, scale)}
      onChange={(e) => {
        const v = fromSlider(Number(e.target.value), scale, spec.integer);
        setText(String(v));
        clearTimeout(timer.current);
        timer.current = setTimeout(() => commitField(spec, String(v)), 120);
      }}
    />
  );
}

function RestartNotice() {
  const pending = useLab((s) => s.pendingRestart);
  const running = useLab((s) => isRunning(activeRun(s)));
  const [confirming, setConfirming] = useState(false);
  if (!running || pending.length === 0) return null;
  return (
    <div className="banner banner-warn" data-testid="restart-notice">
      New changes need a restart: {pending.join(", ")}.{" "}
      {confirming ? (
        <>
          Stop this run and start a new one?{" "}
          <button
            type="button"
            data-testid="restart-confirm"
            onClick={() => {
              setConfirming(false);
              void startRun(useLab.getState().form.config as RunConfig);
            }}
          >
            Restart
          </button>{" "}
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </>
      ) : (
        <button type="button" data-testid="restart-run" onClick={() => setConfirming(true)}>
          New changes → restart
        </button>
      )}
    </div>
  );
}
