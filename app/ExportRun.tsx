// "Export" for the active run (or the config in the form): downloads a zip of the same files
// `npm run export -- verl|trl` writes (export/index.ts; zip by export/zip.ts) and lists what
// does not carry over. The exporter is pure and loaded on demand, so it costs the page
// nothing until it is used. "PEFT adapter" / "HF model" download the run's latest weights in
// Hugging Face formats (app/bridge.ts downloadWeights; the worker builds the zip).
import { useState } from "react";
import type { RunConfig } from "../config";
import type { ChatTemplateFacts } from "../model/face";
import { downloadWeights } from "./bridge";
import { activeRun, downloadName, runName, useLab } from "./store";

type Status =
  | { kind: "idle" }
  | { kind: "done"; warnings: string[]; file: string }
  | { kind: "saved"; file: string }
  | { kind: "error"; error: string };

async function download(
  config: RunConfig,
  target: "verl" | "trl",
  name: string,
  events: readonly { chat?: ChatTemplateFacts }[],
): Promise<Status> {
  const [{ chatFactsOf, exportRun }, { zipFiles }] = await Promise.all([
    import("../export/index.ts"),
    import("../export/zip.ts"),
  ]);
  // A JS environment's module is described and reset by the environment engine (QuickJS).
  if (config.task.name === "env") await (await import("../tasks/env-api/engine.ts")).prepareEnvEngine();
  // What the run recorded when it loaded its model (whether its chat template renders tools).
  const exp = exportRun(config, { target, name, source: "the page", chat: chatFactsOf(events) });
  const file = downloadName(name, `-${target}.zip`);
  const url = URL.createObjectURL(new Blob([zipFiles(exp.files) as BlobPart], { type: "application/zip" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = file;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return { kind: "done", file, warnings: exp.warnings.map((w) => `${w.part}: ${w.why}`) };
}

export function ExportRun() {
  const run = useLab(activeRun);
  const form = useLab((s) => s.form.config) as RunConfig;
  const [status, setStatus] = useState<Status>({ kind: "idle" });
  const config = run?.liveConfig ?? form;
  // The run's name as the page shows it, or, before any run, the preset's.
  const preset = useLab((s) => s.preset);
  const name = run ? runName(run) : (preset ?? "custom");
  const go = (target: "verl" | "trl") =>
    download(config, target, name, run?.events ?? [])
      .then(setStatus)
      .catch((err: Error) => setStatus({ kind: "error", error: err.message }));
  return (
    <div className="export-run">
      <button
        type="button"
        data-testid="export-verl"
        onClick={() => void go("verl")}
        title="Download a verl config, tools, reward and data as a zip"
      >
        Export to verl
      </button>{" "}
      <button
        type="button"
        data-testid="export-trl"
        onClick={() => void go("trl")}
        title="Download a TRL GRPOTrainer script, reward and data as a zip"
      >
        Export to TRL
      </button>
      {run?.workerId && (
        <>
          {" "}
          {config.model.lora.rank > 0 && (
            <button
              type="button"
              data-testid="export-peft"
              onClick={() =>
                void downloadWeights(run.workerId!, "peft", name)
                  .then((file) => setStatus({ kind: "saved", file }))
                  .catch((err: Error) => setStatus({ kind: "error", error: err.message }))
              }
              title="Download the LoRA adapter as PEFT files (adapter_config.json, adapter_model.safetensors)"
            >
              PEFT adapter
            </button>
          )}{" "}
          <button
            type="button"
            data-testid="export-hf"
            onClick={() =>
              void downloadWeights(run.workerId!, "hf", name)
                .then((file) => setStatus({ kind: "saved", file }))
                .catch((err: Error) => setStatus({ kind: "error", error: err.message }))
            }
            title="Download the model (adapter merged) in the Hugging Face layout (config.json, model.safetensors)"
          >
            HF model
          </button>
        </>
      )}
      {status.kind === "error" && (
        <span className="muted" role="alert" data-testid="export-error">
          {" "}
          Cannot export: {status.error}
        </span>
      )}
      {status.kind === "saved" && (
        <span className="muted" data-testid="export-saved">
          {" "}
          Downloaded {status.file}
        </span>
      )}
      {status.kind === "done" && (
        <details data-testid="export-warnings">
          <summary>
            {status.file}: {status.warnings.length} part(s) do not carry over
          </summary>
          <ul>
            {status.warnings.map((w) => (
              <li key={w}>{w}</li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
