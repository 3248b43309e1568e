// The Model section's picker and memory plan. A pretrained model by Hugging Face repo id and
// revision (its files and size shown before anything downloads; the download's progress bar;
// resumed where an interrupted one stopped; cached, so the second open makes no request), or
// local files / a folder; the cache's contents and a way to clear it. A run (or a link) naming a
// model that is not cached says so and offers the download; a model whose files the lab refuses
// (model/untrusted.ts: a hostile chat template, an absurd config) says which and why, and is not
// kept in the cache.
// The worker does all reading, hashing, checking and fetching (workers/model-cache.ts); the page
// holds no weights or tokenizer.
// The memory plan (model/memory-plan.ts) is recomputed as the config changes.
import { useCallback, useEffect, useMemo, useState } from "react";
import type { RunConfig } from "../config";
import {
  DEFAULT_LIMITS,
  formatBytes,
  hfModelConfig,
  type ModelSource,
  modelConfigOf,
  parseModelSource,
  planOfConfig,
  sourceFields,
  sourceLabel,
} from "../model/face";
import type { CacheEntry, DownloadProgress, ModelInfo } from "../workers/api";
import {
  addLocalModelFiles,
  clearModelCache,
  downloadHubModel,
  hubToken,
  listModelCache,
  loadAdapterLimits,
  modelInfoOf,
  setHubToken,
} from "./bridge";
import { setModelSource } from "./formActions";
import { choose } from "./PresetPicker";
import { loadPresetIndex, type PresetEntry, pretrainedConflict } from "./presets";
import { useLab } from "./store";

type DirHandle = {
  name: string;
  values(): AsyncIterable<{ kind: string; name: string; getFile?: () => Promise<File> }>;
};
const dirPicker = (globalThis as { showDirectoryPicker?: () => Promise<DirHandle> }).showDirectoryPicker;

/**
 * The name of files picked one by one (no folder to name them): config.json's `_name_or_path`
 * (its last part), else its model_type with "-model", else "picked-model".
 */
export async function pickedName(files: { path: string; blob: Blob }[]): Promise<string> {
  const cfg = files.find((f) => f.path === "config.json");
  try {
    const json = cfg ? (JSON.parse(await cfg.blob.text()) as Record<string, unknown>) : {};
    const named =
      typeof json._name_or_path === "string" ? json._name_or_path.split("/").filter(Boolean).pop() : "";
    if (named) return named;
    if (typeof json.model_type === "string") return `${json.model_type}-model`;
  } catch {}
  return "picked-model";
}

function useRunSource(): { source: ModelSource | null; error: string | null } {
  const model = useLab((s) => (s.form.config as RunConfig).model);
  return useMemo(() => {
    if (!model?.pretrained) return { source: null, error: null };
    try {
      return { source: parseModelSource(model.pretrained, model), error: null };
    } catch (err) {
      return { source: null, error: (err as Error).message };
    }
  }, [model]);
}

export function ModelPicker() {
  const { source, error: sourceError } = useRunSource();
  const [repo, setRepo] = useState("HuggingFaceTB/SmolLM2-135M-Instruct");
  const [revision, setRevision] = useState("main");
  const [info, setInfo] = useState<ModelInfo | null>(null);
  const [progress, setProgress] = useState<DownloadProgress | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [cache, setCache] = useState<CacheEntry[] | null>(null);
  const refreshCache = useCallback(
    () => listModelCache().then(setCache, (e: Error) => setError(e.message)),
    [],
  );
  const [runInfo, setRunInfo] = useRunInfo(source, setError);
  useEffect(() => void refreshCache(), [refreshCache]);

  const act = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
      void refreshCache();
    }
  };
  const hub = (): ModelSource & { kind: "hub" } => ({
    kind: "hub",
    repo: repo.trim(),
    revision: revision.trim() || "main",
  });
  const check = () => act(async () => setInfo(await modelInfoOf(hub())));
  const download = (s: ModelSource) =>
    act(async () => {
      setProgress(null);
      const got = await downloadHubModel(s, setProgress);
      setInfo(got);
      if (source && sourceLabel(source) === sourceLabel(s)) setRunInfo(got);
      else if (s.kind === "hub") setModelSource(sourceFields({ ...s, revision: got.commit ?? s.revision }));
    });
  const pickFiles = (name: string, files: { path: string; blob: Blob }[]) =>
    act(async () => {
      const s = await addLocalModelFiles(name, files);
      setModelSource(sourceFields(s));
    });

  return (
    <div className="model-picker" data-testid="model-picker">
      <PresetConflict />
      {sourceError && (
        <div className="field-error" role="alert">
          {sourceError}
        </div>
      )}
      {source && source.kind !== "folder" && (
        <RunModelState source={source} info={runInfo} busy={busy} onDownload={() => download(source)} />
      )}
      <div className="picker-row">
        <input
          aria-label="Hugging Face repo id"
          data-testid="hub-repo"
          value={repo}
          onChange={(e) => setRepo(e.target.value)}
          placeholder="owner/name"
        />
        <input
          aria-label="Revision"
          data-testid="hub-revision"
          value={revision}
          onChange={(e) => setRevision(e.target.value)}
          size={8}
        />
        <button type="button" data-testid="hub-check" disabled={busy} onClick={check}>
          Check size
        </button>
      </div>
      <HubTokenField />
      {info && (
        <HubInfo
          info={info}
          busy={busy}
          onUse={() => setModelSource(sourceFields({ ...hub(), revision: info.commit ?? hub().revision }))}
          onDownload={() => download(hub())}
        />
      )}
      {progress && <DownloadBar progress={progress} />}
      <LocalPickers onPick={(name, files) => void pickFiles(name, files)} />
      {error && (
        <div className="field-error" role="alert" data-testid="model-error">
          {error}
        </div>
      )}
      <ModelCacheList cache={cache} onClear={() => act(clearModelCache)} />
    </div>
  );
}

/**
 * What the lab knows of the run's own source (from a link, a recipe or this picker): cached, or
 * what is missing. A folder the page serves (public/models/...) has no info: its config.json is
 * fetched into the store, for the plan and the Model fields.
 */
function useRunInfo(source: ModelSource | null, setError: (e: string) => void) {
  const [runInfo, setRunInfo] = useState<ModelInfo | null>(null);
  useEffect(() => {
    setRunInfo(null);
    if (!source) return;
    if (source.kind === "folder") {
      const path = source.path;
      if (useLab.getState().modelConfigs[path] !== undefined) return;
      fetch(`${path.replace(/\/+$/, "")}/config.json`)
        .then((r) => (r.ok ? r.json() : undefined))
        .then((json) => {
          if (json !== undefined)
            useLab.setState((s) => ({ modelConfigs: { ...s.modelConfigs, [path]: json } }));
        })
        .catch(() => {});
      return;
    }
    modelInfoOf(source).then(setRunInfo, (e: Error) => setError(e.message));
  }, [source, setError]);
  return [runInfo, setRunInfo] as const;
}

/** A checked Hub model: its files and size, whether it is cached, and Use or Download. */
function HubInfo(props: { info: ModelInfo; busy: boolean; onUse: () => void; onDownload: () => void }) {
  const { info, busy } = props;
  return (
    <div className="picker-info" data-testid="hub-info">
      {info.label}: {info.files.length} files, {formatBytes(info.total)}
      {info.state.state === "cached"
        ? " (cached)"
        : info.state.state === "partial"
          ? " (partly downloaded)"
          : ""}
      {info.architecture && <span className="muted"> · {info.architecture}</span>}
      {info.refused && info.refused !== info.architecture && (
        <span className="field-error"> · refused: {info.refused}</span>
      )}{" "}
      {info.state.state === "cached" ? (
        <button type="button" data-testid="hub-use" onClick={props.onUse}>
          Use
        </button>
      ) : (
        <button type="button" data-testid="hub-download" disabled={busy} onClick={props.onDownload}>
          Download {formatBytes(info.total)}
        </button>
      )}
    </div>
  );
}

/** The download's progress bar and the file it is on. */
function DownloadBar({ progress }: { progress: DownloadProgress }) {
  return (
    <div className="picker-progress">
      <progress data-testid="hub-progress" value={progress.done} max={progress.total} />{" "}
      <span data-testid="hub-progress-text">
        {formatBytes(progress.done)} / {formatBytes(progress.total)} ({progress.file})
      </span>
    </div>
  );
}

type PickedFile = { path: string; blob: Blob };

/**
 * Local files, a folder by the file input, and a folder by the directory picker where the
 * browser has one; each pick is named (the folder's name, else pickedName) and handed to onPick.
 */
function LocalPickers({ onPick }: { onPick: (name: string, files: PickedFile[]) => void }) {
  const onFiles = async (list: FileList | null) => {
    if (!list?.length) return;
    const files = [...list].map((f) => ({ path: f.name, blob: f as Blob }));
    const rel = (list[0] as File & { webkitRelativePath?: string }).webkitRelativePath;
    onPick(rel ? rel.split("/")[0] : await pickedName(files), files);
  };
  const onDirectory = async () => {
    if (!dirPicker) return;
    const dir = await dirPicker();
    const files: PickedFile[] = [];
    for await (const e of dir.values())
      if (e.kind === "file" && e.getFile) files.push({ path: e.name, blob: await e.getFile() });
    onPick(dir.name, files);
  };
  return (
    <div className="picker-row">
      <label>
        Local files{" "}
        <input
          type="file"
          multiple
          data-testid="local-files"
          onChange={(e) => void onFiles(e.target.files)}
        />
      </label>
      <label>
        Folder{" "}
        <input
          type="file"
          data-testid="local-folder"
          onChange={(e) => void onFiles(e.target.files)}
          {...({ webkitdirectory: "" } as Record<string, string>)}
        />
      </label>
      {dirPicker && (
        <button type="button" onClick={() => void onDirectory()}>
          Choose folder…
        </button>
      )}
    </div>
  );
}

/** The model cache's entries and sizes, and a way to clear it. */
function ModelCacheList({ cache, onClear }: { cache: CacheEntry[] | null; onClear: () => void }) {
  return (
    <details className="model-cache" data-testid="model-cache">
      <summary>
        Model cache:{" "}
        {cache ? `${cache.length} models, ${formatBytes(cache.reduce((a, e) => a + e.bytes, 0))}` : "…"}
      </summary>
      <ul>
        {cache?.map((e) => (
          <li key={e.id} data-testid="cache-entry">
            {e.id} · {formatBytes(e.bytes)}
            {e.complete ? "" : " (incomplete)"}
          </li>
        ))}
      </ul>
      <button type="button" data-testid="cache-clear" onClick={onClear}>
        Clear the model cache
      </button>
    </details>
  );
}

/**
 * A pretrained model picked on a preset that cannot use it (one that starts from the lab's own
 * checkpoint): the reason at once, and the recipes made for pretrained models, each applied
 * with the picked model kept.
 */
function PresetConflict() {
  const config = useLab((s) => s.form.config) as RunConfig;
  const preset = useLab((s) => s.preset);
  const [offers, setOffers] = useState<PresetEntry[]>([]);
  const conflict = pretrainedConflict(config, preset);
  useEffect(() => {
    if (conflict && offers.length === 0)
      void loadPresetIndex().then(({ presets }) => setOffers(presets.filter((p) => p.pretrained)));
  }, [conflict, offers.length]);
  if (!conflict) return null;
  const keep = {
    pretrained: config.model.pretrained,
    revision: config.model.revision,
    sha256: config.model.sha256,
  };
  return (
    <div className="banner banner-error" role="alert" data-testid="preset-conflict">
      {conflict}.{" "}
      {offers.map((p) => (
        <button
          key={p.id}
          type="button"
          data-testid={`offer-${p.id}`}
          title={p.description}
          onClick={() => void choose(p).then(() => setModelSource(keep))}
        >
          Use {p.name}
        </button>
      ))}
    </div>
  );
}

function RunModelState({
  source,
  info,
  busy,
  onDownload,
}: {
  source: ModelSource;
  info: ModelInfo | null;
  busy: boolean;
  onDownload: () => void;
}) {
  if (!info) return <div className="picker-info">{sourceLabel(source)}: looking in the cache…</div>;
  // A refused model is no longer in the cache (the worker removes it): the reason stays said.
  if (info.refused)
    return (
      <div className="banner banner-error" role="alert" data-testid="run-model" data-state="refused">
        This run's model {info.label} is refused: <span data-testid="model-refused">{info.refused}</span>
      </div>
    );
  if (info.state.state === "cached")
    return (
      <div className="picker-info" data-testid="run-model" data-state="cached">
        This run's model {info.label} is cached ({formatBytes(info.total)}).
      </div>
    );
  if (source.kind === "local")
    return (
      <div className="banner banner-error" role="alert" data-testid="run-model" data-state="missing">
        This run's model {info.label} is not in this browser: pick its files (
        {(info.state.missing ?? []).join(", ")}).
      </div>
    );
  return (
    <div className="banner" role="alert" data-testid="run-model" data-state={info.state.state}>
      This run's model {info.label} is not downloaded ({formatBytes(info.total)}
      {info.state.state === "partial" ? ", partly downloaded" : ""}).{" "}
      <button type="button" data-testid="run-model-download" disabled={busy} onClick={onDownload}>
        Download {formatBytes(info.total)}
      </button>
    </div>
  );
}

/** The memory plan of the form's config, each term listed, as the person edits. */
export function MemoryPlanView() {
  const config = useLab((s) => s.form.config) as RunConfig;
  const configs = useLab((s) => s.modelConfigs);
  const limits = useLab((s) => s.adapterLimits);
  useEffect(() => void loadAdapterLimits().catch(() => {}), []);
  const plan = useMemo(() => {
    try {
      const p = config.model.pretrained;
      if (p) {
        const json = configs[p];
        if (json === undefined)
          return { note: `the plan needs ${p}'s config.json: check or pick the model above` };
        return {
          plan: planOfConfig(
            config,
            hfModelConfig(json, `${p}/config.json`, { context: config.model.context }),
            limits ?? DEFAULT_LIMITS,
          ),
        };
      }
      if (config.model.tokenizer)
        return { note: "the plan needs the tokenizer's vocabulary: it is shown once the run starts" };
      return { plan: planOfConfig(config, modelConfigOf(config), limits ?? DEFAULT_LIMITS) };
    } catch (err) {
      return { note: (err as Error).message };
    }
  }, [config, configs, limits]);
  if (!plan.plan)
    return (
      <div className="memory-plan muted" data-testid="memory-plan">
        Memory plan: {plan.note}
      </div>
    );
  const p = plan.plan;
  return (
    <div className="memory-plan" data-testid="memory-plan" data-fits={p.fits ? "1" : "0"}>
      <table>
        <tbody>
          {p.terms.map((t) => (
            <tr key={t.key} data-term={t.key} title={t.why}>
              <td>{t.label}</td>
              <td className="num">{formatBytes(t.bytes)}</td>
            </tr>
          ))}
          <tr className="total">
            <td>Total (budget {formatBytes(p.budget)})</td>
            <td className="num" data-testid="memory-total">
              {formatBytes(p.total)}
            </td>
          </tr>
        </tbody>
      </table>
      {p.notes.map((n) => (
        <div key={n} className="muted">
          {n}
        </div>
      ))}
      {!p.fits && (
        <div className="field-error" role="alert" data-testid="memory-refused">
          Does not fit: {p.problems.join("; ")}. Change: {p.advice.join("; ")}.
        </div>
      )}
    </div>
  );
}

/** The Hub token for gated and private models: kept in this browser only (app/bridge.ts hubToken). */
function HubTokenField() {
  const [token, setToken] = useState(() => hubToken() ?? "");
  return (
    <div className="picker-row">
      <input
        type="password"
        aria-label="Hub token"
        data-testid="hub-token"
        autoComplete="off"
        value={token}
        onChange={(e) => {
          setToken(e.target.value);
          setHubToken(e.target.value);
        }}
        placeholder="Hub token (gated/private models)"
        title="A Hugging Face read token (huggingface.co/settings/tokens): stored in this browser only, sent only to the Hub, never in a link, bundle or export"
      />
    </div>
  );
}
