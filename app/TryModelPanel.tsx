// "Try the model": type a prompt, generate from the current weights (or the opened run's
// checkpoint) with the run's tools, and read the transcript with tool calls and results.
import { useState } from "react";
import type { TryResult } from "../workers/api";
import { tryModel } from "./bridge";
import { inspectorTokens } from "./tokenModel";

export function TryModelPanel() {
  const [prompt, setPrompt] = useState("What is 347*29?");
  const [temperature, setTemperature] = useState(0);
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
        onChange={(e) => setPrompt(e.target.value)}
        placeholder="A prompt for the model"
      />
      <div className="row">
        <label>
          Temperature{" "}
          <input
            type="number"
            min={0}
            max={2}
            step={0.1}
            value={temperature}
            onChange={(e) => setTemperature(Number(e.target.value))}
          />
        </label>
        <button
          type="button"
          data-testid="try-generate"
          disabled={busy || !prompt.trim()}
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
