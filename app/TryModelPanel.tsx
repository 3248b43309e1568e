// "Try the model": type a prompt, generate from the current weights (or the opened run's
// checkpoint) with the run's tools, and read the transcript with tool calls and results. The
// prompt starts as a held-out prompt of the run's own task (what it trains on); temperature
// must be in [0, 2] (0 = greedy), anything else is named and Generate waits.
import { useEffect, useState } from "react";
import type { RunConfig } from "../config";
import type { TryResult } from "../workers/api";
import { examplePrompt, tryModel } from "./bridge";
import { activeRun, openRun, useLab } from "./store";
import { inspectorTokens } from "./tokenModel";

export const MAX_TRY_TEMPERATURE = 2;

/** The temperature field's error, or null when `text` is a temperature in [0, 2]. */
export function temperatureError(text: string): string | null {
  const v = Number(text);
  if (text.trim() === "" || !Number.isFinite(v)) return "temperature must be a number";
  if (v < 0) return "temperature must be >= 0 (0 = greedy)";
  if (v > MAX_TRY_TEMPERATURE) return `temperature must be <= ${MAX_TRY_TEMPERATURE}`;
  return null;
}

export function TryModelPanel() {
  const [prompt, setPrompt] = useState("");
  const [tempText, setTempText] = useState("0");
  const tempError = temperatureError(tempText);
  const temperature = Number(tempText);
  const config = useLab((s) => (openRun(s) ?? activeRun(s))?.config ?? (s.form.config as RunConfig));
  // A prompt of the run's task until the person types their own.
  const [typed, setTyped] = useState(false);
  useEffect(() => {
    if (typed) return;
    let live = true;
    void examplePrompt(config).then((p) => {
      if (live && p) setPrompt(p);
    });
    return () => {
      live = false;
    };
  }, [config, typed]);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<TryResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const generate = async () => {
    setBusy(true);
    setError(null);
    try {
      setResult(await tryModel(prompt, temperature));
    } catch (err) {
      setError((err as Error).message);
      setResult(null);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="try-panel" data-testid="try-panel" aria-label="Try the model">
      <textarea
        data-testid="try-prompt"
        rows={3}
        value={prompt}
        onChange={(e) => {
          setTyped(true);
          setPrompt(e.target.value);
        }}
        placeholder="A prompt for the model"
      />
      <div className="row">
        <label>
          Temperature{" "}
          <input
            type="number"
            data-testid="try-temperature"
            min={0}
            max={MAX_TRY_TEMPERATURE}
            step={0.1}
            value={tempText}
            aria-invalid={tempError !== null}
            onChange={(e) => setTempText(e.target.value)}
          />
        </label>
        {tempError && (
          <span className="field-error" role="alert" data-testid="try-temperature-error">
            {tempError}
          </span>
        )}
        <button
          type="button"
          data-testid="try-generate"
          disabled={busy || !prompt.trim() || tempError !== null}
          onClick={() => void generate()}
        >
          {busy ? "Generating…" : "Generate"}
        </button>
        <span className="muted">0 = greedy</span>
      </div>
      {error && (
        <div className="banner banner-error" role="alert" data-testid="try-error">
          {error}
        </div>
      )}
      {result && <TryTranscript result={result} />}
    </section>
  );
}

function TryTranscript({ result }: { result: TryResult }) {
  const tokens = inspectorTokens({
    step: 0,
    groupId: "",
    problemId: "",
    bucket: "",
    answer: "",
    promptTokens: [],
    tokens: result.tokens,
    pieces: result.pieces,
    mask: result.mask,
    postTool: [],
    logprobs: [],
    entropy: [],
    advantages: [],
    reward: 0,
    rewardTerms: {},
    correct: false,
    toolCalls: [],
    finish: "",
    filter: "",
  });
  return (
    <div className="try-output" data-testid="try-output">
      <details className="try-rendered-prompt" data-testid="try-rendered-prompt">
        <summary>Rendered prompt ({result.promptPieces.length} tokens)</summary>
        <pre>{result.prompt}</pre>
      </details>
      <div className="tokens">
        {tokens.map((t, i) => (
          <span
            // biome-ignore lint/suspicious/noArrayIndexKey: tokens are positional
            key={i}
            className={`token role-${t.role}`}
            data-testid="token"
            data-mask={t.mask}
            data-role={t.role}
          >
            {t.display}
          </span>
        ))}
      </div>
      {result.toolCalls.map((c, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: calls are positional
        <div key={i} className={`tool-call ${c.ok ? "ok" : "bad"}`} data-testid="tool-call">
          <b>tool call {i + 1}</b> <span className="badge">{c.status}</span>
          <code>{c.raw}</code>
          <div className="muted">→</div>
          <code>{c.response}</code>
        </div>
      ))}
      <div data-testid="try-answer">
        Answer: <b>{result.answer ?? "(none)"}</b>
      </div>
    </div>
  );
}
