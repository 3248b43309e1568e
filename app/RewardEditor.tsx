// The reward editor: the weight of each reward term (a live edit of
// rewards.terms.<i>.weight while a run goes) and a JS reward function (rewards.custom_js)
// with "test on this trajectory" (the inspector's selected sample, run in the sandbox)
// and "apply to the run", which tests the code first (on that trajectory, or an empty one
// before any run) and refuses code that fails; once applied it is a live edit of
// rewards.custom_js. Failures during the run show in app/RewardErrorBanner.tsx.
import { useState } from "react";
import type { RunConfig } from "../config";
import type { RewardTestResult, SampleRecord } from "../workers/api";
import { editLive, testReward } from "./bridge";
import { fmtNum } from "./chartData";
import { buildFieldSpecs } from "./configModel";
import { commitField } from "./formActions";
import { activeRun, inspectorStep, isRunning, openRun, useLab } from "./store";

const EXAMPLE = `// reward(x, options) -> number, run in the sandbox per trajectory.
// x: { text, answerText, correct, toolCalls: [{ name, args, ok }], responseLength, maxLength, step, totalSteps }
function reward(x) {
  return x.correct && x.toolCalls.every((c) => c.ok) ? 0.1 * x.toolCalls.length : 0;
}`;

const SPECS = buildFieldSpecs();

/** What Apply tests on before any trajectory exists: an empty completion. */
const EMPTY_SAMPLE: SampleRecord = {
  step: 0,
  groupId: "",
  problemId: "",
  bucket: "",
  answer: "",
  promptTokens: [],
  tokens: [],
  mask: [],
  postTool: [],
  logprobs: [],
  entropy: [],
  advantages: [],
  reward: 0,
  rewardTerms: {},
  correct: false,
  toolCalls: [],
  finish: "stop",
  filter: "",
};

function selectedSample(): SampleRecord | null {
  const s = useLab.getState();
  const run = openRun(s);
  const sel = s.inspector.selected;
  const { current } = inspectorStep(s, run);
  if (sel && run) return run.samples.get(sel.key)?.[sel.index] ?? null;
  if (current && run) return run.samples.get(current)?.[0] ?? null;
  return null;
}

export function RewardEditor() {
  const config = useLab((s) => s.form.config) as RunConfig;
  const running = useLab((s) => isRunning(activeRun(s)));
  const hasSelection = useLab((s) => s.inspector.selected !== null);
  const terms = config?.rewards?.terms ?? [];
  const [source, setSource] = useState(config?.rewards?.custom_js || EXAMPLE);
  const [result, setResult] = useState<RewardTestResult | null>(null);
  const [testing, setTesting] = useState(false);
  const [applied, setApplied] = useState<{ ok: boolean; text: string } | null>(null);
  const runTest = async () => {
    const sample = selectedSample();
    if (!sample) {
      setResult({ ok: false, error: "No trajectory to test on: start a run and pick one in the inspector." });
      return;
    }
    setTesting(true);
    setResult(await testReward(source, sample));
    setTesting(false);
  };
  const apply = async () => {
    const spec = SPECS.find((s) => s.path === "rewards.custom_js");
    if (!spec) return;
    const sample = selectedSample();
    setTesting(true);
    const r = await testReward(source, sample ?? EMPTY_SAMPLE);
    setTesting(false);
    setResult(r);
    if (!r.ok) {
      const on = sample ? `the ${hasSelection ? "selected" : "latest"} trajectory` : "an empty completion";
      setApplied({ ok: false, text: `Not applied: it fails on ${on}. Fix it and apply again.` });
      return;
    }
    commitField(spec, source);
    setApplied({
      ok: true,
      text: running
        ? "Sent as a live edit; it applies at the next step."
        : "Set in the config for the next run.",
    });
  };
  return (
    <section className="reward-editor" data-testid="reward-editor" aria-label="Reward editor">
      <h3>Reward terms</h3>
      <table className="terms">
        <tbody>
          {terms.map((t, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a term is addressed by its index (rewards.terms.<i>)
            <TermRow key={i} index={i} name={t.name} weight={t.weight} running={running} />
          ))}
        </tbody>
      </table>
      <h3>Custom JS reward</h3>
      <p className="muted">
        Runs in the QuickJS sandbox on each trajectory; its value times rewards.custom_js_weight is added to
        the reward.
      </p>
      <textarea
        data-testid="reward-source"
        rows={8}
        spellCheck={false}
        value={source}
        onChange={(e) => setSource(e.target.value)}
      />
      <div className="row">
        <button type="button" data-testid="reward-test" disabled={testing} onClick={() => void runTest()}>
          {testing ? "Testing…" : `Test on ${hasSelection ? "the selected" : "the latest"} trajectory`}
        </button>
        <button type="button" data-testid="reward-apply" disabled={testing} onClick={() => void apply()}>
          Apply to the run
        </button>
      </div>
      {result && (
        <div
          className={`banner ${result.ok ? "banner-info" : "banner-error"}`}
          data-testid="reward-test-result"
          data-ok={result.ok ? "1" : "0"}
        >
          {result.ok ? `Reward: ${fmtNum(result.value)}` : `Error: ${result.error}`}
        </div>
      )}
      {applied && (
        <div
          className={applied.ok ? "muted" : "field-error"}
          data-testid="reward-applied"
          data-ok={applied.ok ? "1" : "0"}
        >
          {applied.text}
        </div>
      )}
    </section>
  );
}

function TermRow({
  index,
  name,
  weight,
  running,
}: {
  index: number;
  name: string;
  weight: number;
  running: boolean;
}) {
  const [text, setText] = useState(String(weight));
  const [error, setError] = useState<string | null>(null);
  const commit = () => {
    const v = Number(text);
    if (text.trim() === "" || !Number.isFinite(v)) {
      setError("must be a number");
      return;
    }
    setError(null);
    const path = `rewards.terms.${index}.weight`;
    useLab.setState((s) => {
      const cfg = structuredClone(s.form.config) as RunConfig;
      cfg.rewards.terms[index].weight = v;
      return { form: { ...s.form, config: cfg } };
    });
    if (running) void editLive(path, v);
  };
  return (
    <tr data-testid="reward-term">
      <th>{name}</th>
      <td>
        <input
          type="text"
          inputMode="decimal"
          value={text}
          data-path={`rewards.terms.${index}.weight`}
          onChange={(e) => setText(e.target.value)}
          onBlur={commit}
          onKeyDown={(e) => {
            if (e.key === "Enter") commit();
          }}
        />
        <span className="badge badge-live">live</span>
        {error && <span className="field-error">{error}</span>}
      </td>
    </tr>
  );
}
