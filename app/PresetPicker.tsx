// The presets picker: recipes from public/recipes/ and config/'s algorithm recipes. On load
// it picks the URL's `preset` (default quick-demo) and applies the URL's dotted-path values
// over it; afterwards the URL holds only what differs from the preset (replaceState).
import { useEffect, useState } from "react";
import type { RunConfig } from "../config";
import type { RecipeContrast } from "../config/recipe-file";
import { startSeeds } from "./bridge";
import { applyQuery, queryFor } from "./configModel";
import { claimParts, loadPresetIndex, type PresetEntry, presetConfig, presetRecipe } from "./presets";
import { canTrain, pushError, useLab } from "./store";

const DEFAULT_PRESET = "quick-demo";

// Notices that outlive a preset change (e.g. recipe files unavailable).
let baseNotices: string[] = [];

let contrastOf: (c: RecipeContrast | null) => void = () => {};

/** Puts a preset into the form (and the URL's values over it, on load). */
export async function choose(p: PresetEntry, search = "", extra: string[] = []): Promise<void> {
  try {
    const { config: base, contrast } = await presetRecipe(p);
    contrastOf(contrast ?? null);
    const { config, notices } = applyQuery(base, search);
    useLab.setState({
      preset: p.id,
      presetConfig: base,
      form: { config, pending: {} },
      liveErrors: {},
      notices: [...baseNotices, ...extra, ...notices],
    });
  } catch (err) {
    useLab.setState((s) => pushError(s, (err as Error).message));
  }
}

function useUrlSync() {
  const config = useLab((s) => s.form.config) as RunConfig;
  const presetCfg = useLab((s) => s.presetConfig);
  const preset = useLab((s) => s.preset);
  useEffect(() => {
    if (!preset) return;
    const q = queryFor(config, presetCfg, preset);
    const keep = new URLSearchParams(window.location.search);
    const view = [...keep].filter(([k]) => k.startsWith("_"));
    const params = new URLSearchParams(q);
    for (const [k, v] of view) params.set(k, v);
    const next = `?${params.toString()}`;
    // The hash (a share link) is kept: dropping it would lose the link on the next reload.
    if (next !== window.location.search)
      history.replaceState(null, "", `${window.location.pathname}${next}${window.location.hash}`);
  }, [config, presetCfg, preset]);
}

export function PresetPicker() {
  const [presets, setPresets] = useState<PresetEntry[]>([]);
  const [contrast, setContrast] = useState<RecipeContrast | null>(null);
  contrastOf = setContrast;
  const preset = useLab((s) => s.preset);
  const notices = useLab((s) => s.notices);
  useUrlSync();
  useEffect(() => {
    let live = true;
    loadPresetIndex().then(({ presets: list, notice }) => {
      if (!live) return;
      setPresets(list);
      baseNotices = notice ? [notice] : [];
      const search = window.location.search;
      const wanted = new URLSearchParams(search).get("preset") ?? DEFAULT_PRESET;
      const found = list.find((x) => x.id === wanted);
      const p = found ?? list.find((x) => x.id === DEFAULT_PRESET) ?? list[0];
      const extra =
        found || !p
          ? []
          : [`preset: no preset named "${wanted}", opened "${p.id}" (the picker lists the presets)`];
      if (p) void choose(p, search, extra);
    });
    return () => {
      live = false;
    };
  }, []);
  const current = presets.find((p) => p.id === preset);
  return (
    <div className="preset-picker">
      <label>
        Preset{" "}
        <select
          data-testid="preset-picker"
          value={preset ?? ""}
          onChange={(e) => {
            const p = presets.find((x) => x.id === e.target.value);
            if (p) void choose(p);
          }}
        >
          {!preset && <option value="">loading…</option>}
          <optgroup label="Recipes">
            {presets
              .filter((p) => p.source === "recipes")
              .map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
          </optgroup>
          <optgroup label="Algorithms">
            {presets
              .filter((p) => p.source === "algorithm")
              .map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
          </optgroup>
        </select>
      </label>
      {current && contrast ? (
        <ClaimBox entry={current} contrast={contrast} presets={presets} />
      ) : (
        current?.description && <p className="muted">{current.description}</p>
      )}
      {notices.map((n) => (
        <div key={n} className="notice" data-testid="config-notice">
          {n}
        </div>
      ))}
    </div>
  );
}

/**
 * A claim preset: what the paper found, what to watch, what to compare with (the baseline of its
 * declared contrast, the paired arm) and what this arm changes; a button starts the paired arm
 * with the form's seed and seeds, so the two arms pair seed for seed.
 */
function ClaimBox({
  entry,
  contrast,
  presets,
}: {
  entry: PresetEntry;
  contrast: RecipeContrast;
  presets: PresetEntry[];
}) {
  const parts = claimParts(entry.description);
  const trainable = useLab(canTrain);
  const baseline = presets.find((p) => p.file === contrast.baseline);
  const baseName = baseline?.name ?? contrast.baseline.replace(/\.json$/, "");
  async function startPaired() {
    if (!baseline) return;
    try {
      const form = useLab.getState().form.config as RunConfig;
      const config = await presetConfig(baseline);
      await startSeeds({ ...config, seed: form.seed, seeds: form.seeds }, { name: baseline.name });
    } catch (err) {
      useLab.setState((s) => pushError(s, `${contrast.baseline}: ${(err as Error).message}`));
    }
  }
  return (
    <div className="claim" data-testid="claim">
      {parts ? (
        <p>
          <strong>The paper found</strong> ({parts.source}): {parts.claim}
        </p>
      ) : (
        <p className="muted">{entry.description}</p>
      )}
      <p data-testid="claim-compare">
        <strong>Compare with</strong> {baseName}: this arm changes {contrast.changes.join(", ")}.
        {parts?.watch ? ` Watch: ${parts.watch}.` : ""}
      </p>
      {contrast.why && <p className="muted">{contrast.why}</p>}
      <p className="muted">
        Run both arms with the same seeds (seeds ≥ 3: one seed is an anecdote), then compare them on the
        charts.
      </p>
      <button
        type="button"
        data-testid="start-paired"
        disabled={!baseline || !trainable}
        onClick={() => void startPaired()}
        title={`Start ${baseName} with this form's seed and seeds`}
      >
        Start the paired arm: {baseName}
      </button>
    </div>
  );
}
