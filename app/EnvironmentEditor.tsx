// The Environment tab: write a task as a JavaScript environment (docs/ENVIRONMENTS.md) or start
// from a template, dry-run it (three episodes with its scripted policy, or a random one, in
// the worker's sandbox), see the episodes in the inspector before any training, and put it
// into the run config (task.name "env" with the source in task.options), so Start trains on it
// and a share link or bundle carries it. A syntax error or a throw comes back with its line,
// which the editor selects.
import { useRef, useState } from "react";
import type { RunConfig } from "../config";
import { ENV_API_VERSION, ENV_SOURCE_LINK_MAX } from "../config/task-options";
import { ENV_TEMPLATES } from "../tasks/env-api/templates";
import type { EnvDryRunResult } from "../workers/api";
import { envDryRun } from "./bridge";
import { addRun, applyIncoming, setRunPhase, setWorkerId, useLab } from "./store";

const BLANK = `export default {
  name: "my-env",
  reset(seed) {
    return { prompt: "say hi", state: {} };
  },
  check(state, episode) {
    return { success: episode.answer === "hi" };
  },
  policy() {
    return "<answer>hi</answer>";
  },
};
`;

/** The form's environment source, when its task is a JS environment. */
function formSource(config: RunConfig | undefined): string | null {
  const t = config?.task;
  if (t?.name !== "env") return null;
  const o = t.options as { source?: unknown; template?: unknown };
  if (typeof o.source === "string") return o.source;
  const tpl = ENV_TEMPLATES.find((x) => x.name === o.template);
  return tpl ? tpl.source : null;
}

let dryRuns = 0;

/** Selects (and focuses) line `line` of the textarea, where a syntax error or a throw points. */
function selectLine(el: HTMLTextAreaElement | null, line: number) {
  if (!el) return;
  const lines = el.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((a, l) => a + l.length + 1, 0);
  el.focus();
  el.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
}

type DryRunOk = Extract<EnvDryRunResult, { ok: true }>;
type DryRunFailed = Extract<EnvDryRunResult, { ok: false }>;

/** Opens a dry run's episodes in the inspector. */
function inspectDryRun(r: DryRunOk, config: RunConfig) {
  // The episodes as a run of their own (no training), so the inspector shows them token by token.
  const id = `dry-run:${++dryRuns}`;
  const active = useLab.getState().activeId;
  useLab.setState((s) => addRun(s, id, config));
  useLab.setState((s) =>
    applyIncoming(s, id, { rows: [], samples: [r.samples], events: [], progress: null }),
  );
  useLab.setState((s) => setWorkerId(s, id, "", `dry run ${dryRuns}: ${r.info.name}`));
  useLab.setState((s) => setRunPhase(s, id, "done"));
  // The controls keep driving the run they drove; the inspector opens the dry run.
  useLab.setState({ tab: "inspector", activeId: active, openId: id });
}

/** Puts the environment `source` into the form's run config, dropping pending task edits. */
function putEnvInForm(source: string) {
  const s = useLab.getState();
  const old = s.form.config as RunConfig;
  const task = {
    ...old.task,
    name: "env",
    template: "chatml-turns" as const,
    buckets: [],
    options: { api_version: ENV_API_VERSION, source },
  };
  const pending = Object.fromEntries(Object.entries(s.form.pending).filter(([k]) => !k.startsWith("task.")));
  useLab.setState({ form: { ...s.form, config: { ...old, task }, pending } });
}

export function EnvironmentEditor() {
  const config = useLab((s) => s.form.config) as RunConfig;
  // the draft lives in the store, so leaving the tab (which unmounts the editor) loses nothing
  const source = useLab((s) => s.envDraft) ?? formSource(config) ?? ENV_TEMPLATES[0].source;
  const setSource = (next: string) => useLab.setState({ envDraft: next });
  const [result, setResult] = useState<EnvDryRunResult | null>(null);
  const [busy, setBusy] = useState(false);
  const [applied, setApplied] = useState<string | null>(null);
  const area = useRef<HTMLTextAreaElement>(null);

  const run = async (): Promise<EnvDryRunResult> => {
    setBusy(true);
    const r = await envDryRun(source, config);
    setBusy(false);
    setResult(r);
    if (!r.ok && r.line) selectLine(area.current, r.line);
    return r;
  };

  const use = async () => {
    const r = await run();
    if (!r.ok) {
      setApplied("Not used: the environment fails its dry run. Fix it and try again.");
      return;
    }
    putEnvInForm(source);
    setApplied(`The run config's task is now ${r.info.name}: Start trains on it.`);
  };

  return (
    <section className="env-editor" data-testid="env-editor" aria-label="Environment">
      <p className="muted">
        An environment in JavaScript: its tools, <code>reset(seed)</code>, <code>step</code> for multi-turn
        episodes, and <code>check</code>, run in the QuickJS sandbox with a seeded Math.random and a virtual
        clock (API version {ENV_API_VERSION}; docs/ENVIRONMENTS.md has the types).
      </p>
      <TemplatePicker
        onPick={(next) => {
          setSource(next);
          setResult(null);
        }}
      />
      <textarea
        ref={area}
        data-testid="env-source"
        rows={18}
        spellCheck={false}
        value={source}
        onChange={(e) => setSource(e.target.value)}
      />
      <div className="muted" data-testid="env-size">
        {source.length.toLocaleString()} characters
        {source.length > ENV_SOURCE_LINK_MAX &&
          `: past the ${ENV_SOURCE_LINK_MAX.toLocaleString()} a share link is meant to carry; share the run's bundle (Runs) instead`}
      </div>
      <div className="row">
        <button type="button" data-testid="env-dry-run" disabled={busy} onClick={() => void run()}>
          {busy ? "Running…" : "Dry run (3 episodes)"}
        </button>
        <button type="button" data-testid="env-use" disabled={busy} onClick={() => void use()}>
          Use in the run config
        </button>
      </div>
      {applied && (
        <div className="muted" data-testid="env-applied">
          {applied}
        </div>
      )}
      {result && !result.ok && (
        <DryRunError result={result} onShowLine={(line) => selectLine(area.current, line)} />
      )}
      {result?.ok && <DryRunEpisodes result={result} onInspect={() => inspectDryRun(result, config)} />}
    </section>
  );
}

/** "Start from a template…": hands the chosen template's source (or a blank one) to `onPick`. */
function TemplatePicker({ onPick }: { onPick: (source: string) => void }) {
  return (
    <div className="row">
      <label>
        Start from{" "}
        <select
          data-testid="env-template"
          value=""
          onChange={(e) => {
            const t = ENV_TEMPLATES.find((x) => x.name === e.target.value);
            onPick(t ? t.source : BLANK);
          }}
        >
          <option value="">a template…</option>
          {ENV_TEMPLATES.map((t) => (
            <option key={t.name} value={t.name}>
              {t.title}
            </option>
          ))}
          <option value="blank">a blank environment</option>
        </select>
      </label>
    </div>
  );
}

/** A failed dry run's error, with a button that selects the line it points at. */
function DryRunError({ result, onShowLine }: { result: DryRunFailed; onShowLine: (line: number) => void }) {
  return (
    <div className="banner banner-error" role="alert" data-testid="env-error">
      {result.error}
      {result.line !== undefined && (
        <>
          {" "}
          <button type="button" onClick={() => onShowLine(result.line as number)}>
            Show line {result.line}
          </button>
        </>
      )}
    </div>
  );
}

/** A dry run's environment summary and its episodes as a table. */
function DryRunEpisodes({ result, onInspect }: { result: DryRunOk; onInspect: () => void }) {
  return (
    <div data-testid="env-result">
      <p>
        <strong>{result.info.name}</strong>: {result.info.multiTurn ? "multi-turn" : "single-turn"}, at most{" "}
        {result.info.maxTurns} turns
        {result.info.tools.length > 0 && `, tools ${result.info.tools.map((t) => t.name).join(", ")}`}
        {";"}
        played with {result.scripted ? "its scripted policy" : "a random policy (the module has no policy)"}.
      </p>
      <table className="env-episodes" data-testid="env-episodes">
        <thead>
          <tr>
            <th>seed</th>
            <th>turns</th>
            <th>rewards</th>
            <th>return</th>
            <th>success</th>
            <th>ended</th>
          </tr>
        </thead>
        <tbody>
          {result.episodes.map((e) => (
            <tr key={e.seed}>
              <td>{e.seed}</td>
              <td>{e.turns}</td>
              <td>{e.rewards.map((x) => +x.toFixed(3)).join(", ")}</td>
              <td>{+e.envReturn.toFixed(3)}</td>
              <td>{e.success ? "yes" : "no"}</td>
              <td>{e.error ?? e.ended ?? "done"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" data-testid="env-inspect" onClick={onInspect}>
        Show in the inspector
      </button>
    </div>
  );
}
