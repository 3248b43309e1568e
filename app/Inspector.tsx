// The trajectory inspector: pick a step (follows the latest unless pinned); its sampled
// trajectories token by token, coloured by provenance (prompt / trained policy token /
// inserted tool output, hatched and never heat-coloured), with a per-token overlay
// (log-prob, entropy, advantage); GRPO groups side by side with reward terms, advantage,
// filter decision and tool calls with their sandbox results; hover or click a token for
// its values. Clicking a trajectory selects it for the reward editor's test. A step records up
// to 8 groups; GROUPS_SHOWN of them show at once ("2 of 8 groups"), groups with a learning
// signal (unequal rewards) first, and the person can pick others. A verl or TRL run's samples
// (results/) are text: prompt and response, no tokens or token masks, and the page says so.
import { useMemo, useState } from "react";
import type { SampleRecord } from "../workers/api";
import { fmtNum } from "./chartData";
import { inspectorStep, openRun, type RunRecord, useLab } from "./store";
import {
  groupSamples,
  type InspectorToken,
  inspectorTokens,
  matchesFilter,
  type Overlay,
  type OverlayScale,
  overlayScale,
  overlayValue,
  type SampleFilter,
  type SampleGroup,
  sampleAdvantage,
  tokenColour,
} from "./tokenModel";

/** Groups shown at once unless the person picks more. */
export const GROUPS_SHOWN = 2;

/** A step's name as the charts give it ("rl:3" is "step 3", counted from 0 before training). */
const stepLabel = (key: string) => key.replace(/^rl:/, "step ");

/** The default pick: groups with signal first, in step order, then zero-std ones. */
function defaultGroups(groups: readonly SampleGroup[]): string[] {
  return [...groups.filter((g) => !g.zeroStd), ...groups.filter((g) => g.zeroStd)]
    .slice(0, GROUPS_SHOWN)
    .map((g) => g.groupId);
}

type InspectorState = ReturnType<typeof useLab.getState>["inspector"];

function setInspector(patch: Partial<InspectorState>) {
  useLab.setState((s) => ({ inspector: { ...s.inspector, ...patch } }));
}

/** The inspected step's samples, those the filter shows, their groups and the groups picked. */
function useInspectedGroups(run: RunRecord | undefined, state: InspectorState) {
  const { steps, current } = useMemo(() => inspectorStep({ inspector: state }, run), [state, run]);
  const samples = useMemo(() => (current && run ? (run.samples.get(current) ?? []) : []), [current, run]);
  const scale = useMemo(() => overlayScale(samples, state.overlay), [samples, state.overlay]);
  const shown = samples.filter((s) =>
    matchesFilter(s, state.filter, Math.max(Math.abs(scale.min), Math.abs(scale.max))),
  );
  const allGroups = groupSamples(shown);
  const picked = state.groups?.filter((id) => allGroups.some((g) => g.groupId === id));
  const wanted = new Set(picked && picked.length > 0 ? picked : defaultGroups(allGroups));
  const groups = allGroups.filter((g) => wanted.has(g.groupId));
  const inStep = samples[0]?.groupsInStep ?? allGroups.length;
  return { steps, current, samples, scale, shown, allGroups, wanted, groups, inStep };
}

export function Inspector() {
  const run = useLab(openRun);
  const state = useLab((s) => s.inspector);
  const { steps, current, samples, scale, shown, allGroups, wanted, groups, inStep } = useInspectedGroups(
    run,
    state,
  );
  const [raw, setRaw] = useState(false);
  if (!run) return <div className="panel-empty">Start a run to see its trajectories.</div>;
  return (
    <section className="inspector" data-testid="inspector" aria-label="Trajectory inspector">
      <InspectorToolbar
        state={state}
        steps={steps}
        current={current}
        scale={scale}
        raw={raw}
        onToggleRaw={() => setRaw(!raw)}
      />
      {run.engine ? <EngineNote engine={run.engine} /> : <RoleLegend />}
      {samples.length === 0 && <div className="panel-empty">No trajectories yet (fast mode sends none).</div>}
      {allGroups.length > 0 && (
        <GroupPicker allGroups={allGroups} shownCount={groups.length} inStep={inStep} wanted={wanted} />
      )}
      {raw && <pre className="raw-json">{JSON.stringify(shown, null, 1)}</pre>}
      <div className="groups">
        {groups.map((g) => (
          <GroupCard key={g.groupId} group={g} samples={samples} stepKey={current ?? ""} scale={scale} />
        ))}
      </div>
    </section>
  );
}

/** The step, overlay and filter pickers, the overlay's legend and the raw-JSON toggle. */
function InspectorToolbar(props: {
  state: InspectorState;
  steps: readonly string[];
  current: string | null | undefined;
  scale: OverlayScale;
  raw: boolean;
  onToggleRaw: () => void;
}) {
  const { state, steps, current, scale, raw, onToggleRaw } = props;
  return (
    <div className="inspector-toolbar">
      <label>
        Step{" "}
        <select
          data-testid="inspector-step"
          value={state.pinnedStep ?? ""}
          onChange={(e) => setInspector({ pinnedStep: e.target.value || null, selected: null, groups: null })}
        >
          <option value="">latest{current && !state.pinnedStep ? ` (${stepLabel(current)})` : ""}</option>
          {steps.map((k) => (
            <option key={k} value={k}>
              {stepLabel(k)}
            </option>
          ))}
        </select>
      </label>
      <label>
        Colour by{" "}
        <select
          data-testid="inspector-overlay"
          value={state.overlay}
          onChange={(e) => setInspector({ overlay: e.target.value as Overlay })}
        >
          <option value="none">role only</option>
          <option value="logprob">log-prob</option>
          <option value="entropy">entropy</option>
          <option value="advantage">advantage</option>
          <option value="logratio">IS ratio (log, trainer/sampler)</option>
        </select>
      </label>
      <label>
        Show{" "}
        <select
          value={state.filter}
          onChange={(e) => setInspector({ filter: e.target.value as SampleFilter })}
        >
          <option value="all">all trajectories</option>
          <option value="failed-tools">failed tool calls</option>
          <option value="truncated">truncated</option>
          <option value="extreme-adv">extreme advantages</option>
        </select>
      </label>
      <OverlayLegend scale={scale} />
      <button type="button" onClick={onToggleRaw}>
        {raw ? "Hide JSON" : "Raw JSON"}
      </button>
    </div>
  );
}

/** "2 of 8 groups · 3 with signal" and a checkbox per recorded group. */
function GroupPicker(props: {
  allGroups: readonly SampleGroup[];
  shownCount: number;
  inStep: number;
  wanted: ReadonlySet<string>;
}) {
  const { allGroups, shownCount, inStep, wanted } = props;
  return (
    <div className="group-picker" data-testid="group-picker">
      <span data-testid="group-count">
        {shownCount} of {inStep} groups
        {inStep > allGroups.length ? ` (${allGroups.length} recorded)` : ""} ·{" "}
        {allGroups.filter((g) => !g.zeroStd).length} with signal
      </span>{" "}
      {allGroups.map((g) => (
        <label
          key={g.groupId}
          title={g.zeroStd ? "every reward equal: no learning signal" : "rewards differ"}
        >
          <input
            type="checkbox"
            data-testid="group-pick"
            data-group={g.groupId}
            data-signal={g.zeroStd ? "0" : "1"}
            checked={wanted.has(g.groupId)}
            onChange={(e) => {
              const next = new Set(wanted);
              if (e.target.checked) next.add(g.groupId);
              else next.delete(g.groupId);
              setInspector({ groups: [...next] });
            }}
          />
          {g.groupId}
          {g.zeroStd ? "" : " ●"}
        </label>
      ))}
    </div>
  );
}

/** One GRPO group: its head (zero std, filter decision) and its samples side by side. */
function GroupCard(props: {
  group: SampleGroup;
  samples: readonly SampleRecord[];
  stepKey: string;
  scale: OverlayScale;
}) {
  const { group: g, samples, stepKey, scale } = props;
  return (
    <div className="group" data-testid="sample-group" data-signal={g.zeroStd ? "0" : "1"}>
      <div className="group-head">
        group {g.groupId}
        {g.zeroStd && (
          <span className="badge badge-warn" title="Every reward equal: no learning signal">
            zero std
          </span>
        )}
        <span className={`badge filter-${g.filter || "kept"}`} data-testid="filter-decision">
          {g.filter || "kept"}
        </span>
      </div>
      <div className="group-samples">
        {g.samples.map((s) => (
          <SampleCard
            key={samples.indexOf(s)}
            sample={s}
            index={samples.indexOf(s)}
            stepKey={stepKey}
            scale={scale}
          />
        ))}
      </div>
    </div>
  );
}

/** What a verl or TRL run is in the lab: text samples, no replay; the files read and left out, its config. */
function EngineNote({ engine }: { engine: NonNullable<RunRecord["engine"]> }) {
  return (
    <div className="engine-note muted" data-testid="engine-note">
      Ran on {engine.engine}: its samples are the text the engine dumped (prompt and response), with no
      tokens, token masks, log-probs or per-token advantages. It is not replayable here: the lab has no seed
      or edit log of it and no checkpoint, so there is no resume, replay or share link.
      <details>
        <summary>Files read, left out, config</summary>
        <ul>
          {engine.files.map((f) => (
            <li key={f}>{f}</li>
          ))}
          {engine.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
        {engine.config && <pre className="raw-json">{JSON.stringify(engine.config, null, 1)}</pre>}
      </details>
    </div>
  );
}

function RoleLegend() {
  return (
    <div className="role-legend">
      <span className="token role-prompt">prompt</span>
      <span className="token role-policy">trained (policy)</span>
      <span className="token role-tool">tool output (not trained)</span>
    </div>
  );
}

function OverlayLegend({ scale }: { scale: OverlayScale }) {
  if (scale.overlay === "none") return null;
  const lo = tokenColour(scale.min, scale);
  const hi = tokenColour(scale.max, scale);
  return (
    <span className="overlay-legend">
      <span style={{ background: lo?.background, color: lo?.color }}>{fmtNum(scale.min)}</span>
      {scale.signed && <span style={{ background: "#fff", color: "#111" }}>0</span>}
      <span style={{ background: hi?.background, color: hi?.color }}>{fmtNum(scale.max)}</span>
    </span>
  );
}

function SampleCard({
  sample,
  index,
  stepKey,
  scale,
}: {
  sample: SampleRecord;
  index: number;
  stepKey: string;
  scale: OverlayScale;
}) {
  const selected = useLab(
    (s) => s.inspector.selected?.key === stepKey && s.inspector.selected.index === index,
  );
  const tokens = useMemo(() => inspectorTokens(sample), [sample]);
  const [locked, setLocked] = useState<InspectorToken | null>(null);
  const [hover, setHover] = useState<InspectorToken | null>(null);
  const adv = sampleAdvantage(sample);
  const detail = hover ?? locked;
  return (
    // biome-ignore lint/a11y/useSemanticElements: a card holding buttons and token spans
    <div
      className={`sample-card${selected ? " selected" : ""}${sample.correct ? " correct" : ""}`}
      data-testid="sample"
      data-filter={sample.filter}
      role="button"
      tabIndex={0}
      onClick={() =>
        useLab.setState((s) => ({ inspector: { ...s.inspector, selected: { key: stepKey, index } } }))
      }
      onKeyDown={(e) => {
        if (e.key === "Enter")
          useLab.setState((s) => ({ inspector: { ...s.inspector, selected: { key: stepKey, index } } }));
      }}
    >
      <div className="sample-head">
        {sample.text && sample.text.correct === undefined ? (
          <span className="muted">?</span>
        ) : (
          <span className={sample.correct ? "ok" : "bad"}>{sample.correct ? "✓" : "✗"}</span>
        )}
        <span>
          reward <b data-testid="sample-reward">{fmtNum(sample.reward)}</b>
        </span>
        {Object.entries(sample.rewardTerms).map(([k, v]) => (
          <span key={k} className="muted">
            {k} {fmtNum(v)}
          </span>
        ))}
        <span>adv {adv === null ? "–" : fmtNum(adv)}</span>
        <span className="muted">{sample.finish}</span>
        {sample.filter && <span className="badge">{sample.filter}</span>}
      </div>
      {sample.text && (
        <div className="tokens sample-text" data-testid="sample-text">
          <span className="token role-prompt">{sample.text.prompt}</span>
          <span className="token role-policy">{sample.text.response}</span>
        </div>
      )}
      {/* biome-ignore lint/a11y/noStaticElementInteractions: ends the hover preview only */}
      <div className="tokens" onMouseLeave={() => setHover(null)} hidden={sample.text !== undefined}>
        {tokens.map((t, i) => (
          <TokenSpan
            // biome-ignore lint/suspicious/noArrayIndexKey: tokens are positional
            key={i}
            token={t}
            scale={scale}
            locked={locked === t}
            onHover={setHover}
            onLock={(tok) => setLocked(locked === tok ? null : tok)}
          />
        ))}
      </div>
      {detail && <TokenDetail token={detail} tokens={tokens} overlay={scale.overlay} />}
      {sample.customError && (
        <div className="field-error" data-testid="sample-custom-error">
          custom reward failed (scored 0): {sample.customError}
        </div>
      )}
      {sample.toolCalls.map((c, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: calls are positional
        <div key={i} className={`tool-call ${c.ok ? "ok" : "bad"}`} data-testid="tool-call">
          <div>
            <b>tool call {i + 1}</b> <span className="badge">{c.status}</span>
            {!c.executed && <span className="badge badge-warn">not executed</span>}
          </div>
          <code>{c.raw}</code>
          <div className="muted">→</div>
          <code data-testid="tool-response">{c.response}</code>
        </div>
      ))}
    </div>
  );
}

function TokenSpan({
  token,
  scale,
  locked,
  onHover,
  onLock,
}: {
  token: InspectorToken;
  scale: OverlayScale;
  locked: boolean;
  onHover: (t: InspectorToken) => void;
  onLock: (t: InspectorToken) => void;
}) {
  const c = tokenColour(overlayValue(token, scale.overlay), scale);
  return (
    // biome-ignore lint/a11y/useSemanticElements: hundreds of inline tokens; spans keep the text flowing
    <span
      className={`token role-${token.role}${token.postTool ? " post-tool" : ""}${token.selected ? " picked" : ""}${locked ? " locked" : ""}`}
      data-testid="token"
      data-selected={token.selected ? 1 : undefined}
      data-mask={token.mask}
      data-role={token.role}
      role="button"
      tabIndex={-1}
      style={c ? { background: c.background, color: c.color } : undefined}
      data-heat={c ? "1" : undefined}
      onMouseEnter={() => onHover(token)}
      onClick={(e) => {
        e.stopPropagation();
        onLock(token);
      }}
      onKeyDown={(e) => {
        if (e.key === "Enter" || e.key === " ") onLock(token);
      }}
    >
      {token.display}
    </span>
  );
}

function TokenDetail({
  token,
  tokens,
  overlay,
}: {
  token: InspectorToken;
  tokens: InspectorToken[];
  overlay: Overlay;
}) {
  const i = tokens.indexOf(token);
  const prev = i > 0 ? tokens[i - 1].display : "";
  const row = (name: Overlay, label: string, v: number | null, extra = "") => (
    <span className={overlay === name ? "strong" : ""}>
      {label} {v === null ? "–" : fmtNum(v)}
      {extra}
    </span>
  );
  return (
    <div className="token-detail" data-testid="token-detail">
      <span>
        {prev}→<b>{token.display}</b> (id {token.id}, {token.role}
        {token.postTool ? ", post-tool" : ""})
      </span>
      {row(
        "logprob",
        "log-prob",
        token.logprob,
        token.logprob === null ? "" : ` (${(Math.exp(token.logprob) * 100).toFixed(1)}%)`,
      )}
      {row("entropy", "entropy", token.entropy)}
      {row("advantage", "advantage", token.advantage)}
      {row(
        "logratio",
        "IS ratio",
        token.logratio === null ? null : Math.exp(token.logratio),
        token.selected ? " · picked (Clip-Cov / KL-Cov / top-entropy)" : "",
      )}
    </div>
  );
}
