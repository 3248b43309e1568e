// The config panel's model, as pure functions (tested by app/configModel.test.ts): the
// fields generated from the RunConfig defaults and FIELD_META, grouped; parsing what a
// person types into a value; errors by dotted path (typing errors first, then the schema's);
// whether a change is a live edit or needs a restart; the diff between two configs; and
// the URL query that holds only what differs from the preset; the parameter count, from the
// model's own layout (model/config.ts), not a copy of it.
import {
  applyEdit,
  defaultRunConfig,
  type FieldGroup,
  type FieldMeta,
  fieldMeta,
  getPath,
  isIntegerField,
  leafPaths,
  type RunConfig,
  setPath,
  validateRunConfig,
} from "../config";
import { modelConfigOf, paramLayout } from "../model/config";

export type FieldKind = "number" | "boolean" | "enum" | "string" | "text" | "json";

export interface FieldSpec {
  path: string;
  group: FieldGroup;
  kind: FieldKind;
  nullable: boolean;
  integer: boolean;
  meta: FieldMeta;
  /** The schema default (the root default, not the preset's). */
  defaultValue: unknown;
}

export const GROUP_ORDER: { group: FieldGroup; title: string }[] = [
  { group: "run", title: "Run" },
  { group: "task", title: "Task & tools" },
  { group: "rewards", title: "Rewards" },
  { group: "algorithm", title: "Algorithm" },
  { group: "filters", title: "Filters" },
  { group: "sampling", title: "Sampling" },
  { group: "limits", title: "Tool limits" },
  { group: "model", title: "Model" },
  { group: "sft", title: "SFT cold start" },
];

/** Every editable leaf of the config, in schema order. */
export function buildFieldSpecs(defaults: RunConfig = defaultRunConfig()): FieldSpec[] {
  const specs: FieldSpec[] = [];
  for (const path of leafPaths(defaults)) {
    if (path === "version") continue;
    const meta = fieldMeta(path);
    if (!meta) continue;
    const v = getPath(defaults, path);
    let kind: FieldKind;
    let nullable = false;
    if (meta.options) kind = "enum";
    else if (path === "model.sha256") {
      // A record of file -> hash the model picker writes: JSON in links, a list in the panel.
      kind = "json";
      nullable = true;
    } else if (typeof v === "number") kind = "number";
    else if (typeof v === "boolean") kind = "boolean";
    else if (typeof v === "string") kind = path === "rewards.custom_js" ? "text" : "string";
    else if (v === null && (meta.min !== undefined || meta.max !== undefined)) {
      kind = "number";
      nullable = true;
    } else if (v === null && path !== "stop.target") {
      kind = "string";
      nullable = true;
    } else kind = "json";
    specs.push({
      path,
      group: meta.group,
      kind,
      nullable,
      integer: isIntegerField(path), // the schema says (z.int)
      meta,
      defaultValue: v,
    });
  }
  return specs;
}

export function groupFields(
  specs: readonly FieldSpec[],
): { group: FieldGroup; title: string; fields: FieldSpec[] }[] {
  return GROUP_ORDER.map((g) => ({ ...g, fields: specs.filter((s) => s.group === g.group) })).filter(
    (g) => g.fields.length > 0,
  );
}

export type ParsedInput = { ok: true; value: unknown } | { ok: false; error: string };

/** What a typed text means for a field. Range checks are left to the schema (one message source). */
export function parseFieldInput(spec: FieldSpec, text: string): ParsedInput {
  const t = text.trim();
  switch (spec.kind) {
    case "number": {
      if (t === "" && spec.nullable) return { ok: true, value: null };
      if (t === "") return { ok: false, error: "must be a number" };
      const v = Number(t);
      if (!Number.isFinite(v)) return { ok: false, error: "must be a number" };
      if (spec.integer && !Number.isInteger(v)) return { ok: false, error: "must be an integer" };
      return { ok: true, value: v };
    }
    case "boolean":
      if (t === "true" || t === "false") return { ok: true, value: t === "true" };
      return { ok: false, error: "must be true or false" };
    case "enum":
      if (spec.meta.options?.includes(t)) return { ok: true, value: t };
      return { ok: false, error: `must be one of ${spec.meta.options?.join(", ")}` };
    case "string":
      if (t === "" && spec.nullable) return { ok: true, value: null };
      return { ok: true, value: text };
    case "text":
      return { ok: true, value: text };
    case "json":
      try {
        return { ok: true, value: JSON.parse(t) };
      } catch (e) {
        return { ok: false, error: `not valid JSON (${(e as Error).message})` };
      }
  }
}

/** The text a field shows for a value. */
export function formatFieldValue(spec: FieldSpec, value: unknown): string {
  if (value === null || value === undefined) return "";
  if (spec.kind === "json") return JSON.stringify(value);
  return String(value);
}

/** The config panel's state: the config being edited plus texts that did not parse. */
export interface FormState {
  config: unknown;
  /** Raw texts of fields whose input does not parse (kept so the person can fix them). */
  pending: Record<string, string>;
}

/** Errors by dotted path: typing errors first, then the schema's (cross-field rules included). */
export function formErrors(state: FormState, specs: readonly FieldSpec[]): Record<string, string> {
  const errors: Record<string, string> = {};
  const byPath = new Map(specs.map((s) => [s.path, s]));
  for (const [path, text] of Object.entries(state.pending)) {
    const spec = byPath.get(path);
    if (!spec) continue;
    const r = parseFieldInput(spec, text);
    if (!r.ok) errors[path] = r.error;
  }
  const v = validateRunConfig(state.config);
  if (!v.ok) for (const e of v.errors) errors[e.path] ??= e.message;
  return errors;
}

/** The form after a person types `text` into a field: the config changes when it parses. */
export function typeIntoField(state: FormState, spec: FieldSpec, text: string): FormState {
  const r = parseFieldInput(spec, text);
  const pending = { ...state.pending };
  if (!r.ok) {
    pending[spec.path] = text;
    return { config: state.config, pending };
  }
  delete pending[spec.path];
  return { config: setPath(state.config, spec.path, r.value), pending };
}

/** The field a dotted error path belongs to (errors inside arrays or records go to their leaf). */
export function fieldForError(path: string, specs: readonly FieldSpec[]): string | undefined {
  let best: string | undefined;
  for (const s of specs)
    if ((path === s.path || path.startsWith(`${s.path}.`)) && (!best || s.path.length > best.length))
      best = s.path;
  return best;
}

export type ChangePlan =
  | { kind: "idle" }
  | { kind: "live"; path: string; value: unknown }
  | { kind: "live-invalid"; path: string; error: string }
  | { kind: "restart"; path: string };

/** What changing `path` to `value` means while a run goes with `runConfig` at `step`. */
export function planChange(runConfig: RunConfig | null, path: string, value: unknown, step = 0): ChangePlan {
  if (!runConfig) return { kind: "idle" };
  const meta = fieldMeta(path);
  if (!meta?.live) return { kind: "restart", path };
  const r = applyEdit(runConfig, { phase: "rl", step, path, value });
  if (!r.ok) return { kind: "live-invalid", path, error: r.error.replace(/^[^:]*: /, "") };
  return { kind: "live", path, value };
}

export interface ConfigChange {
  path: string;
  from: unknown;
  to: unknown;
}

/** Leaf paths whose values differ between two configs (arrays and records compare as JSON). */
export function configDiff(a: unknown, b: unknown): ConfigChange[] {
  const paths = new Set([...leafPaths(a), ...leafPaths(b)]);
  const out: ConfigChange[] = [];
  for (const p of paths) {
    if (p === "") continue;
    const from = getPath(a, p);
    const to = getPath(b, p);
    if (JSON.stringify(from) !== JSON.stringify(to)) out.push({ path: p, from, to });
  }
  return out;
}

function short(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(3)));
  const s = JSON.stringify(v) ?? "undefined";
  return s.length > 18 ? `${s.slice(0, 16)}…` : s;
}

/** The runs table's "Changes" column: `rl.lr 0.0003→0.001, rl.kl.coef 0→0.05`. */
export function formatDiff(changes: readonly ConfigChange[], max = 4): string {
  if (changes.length === 0) return "—";
  const parts = changes.slice(0, max).map((c) => `${c.path} ${short(c.from)}→${short(c.to)}`);
  if (changes.length > max) parts.push(`+${changes.length - max} more`);
  return parts.join(", ");
}

/**
 * A config from a URL query: `preset=<name>` picks the base, every other key is a dotted
 * path with a JSON (or bare string) value. The values are applied together (so related
 * values such as sft.steps and sft.warmup_steps validate as a whole); a key that is unknown
 * or named by a validation error keeps the preset's value, with a notice, as UI input would.
 */
export function applyQuery(
  base: RunConfig,
  search: string,
): { config: RunConfig; preset: string | null; notices: string[] } {
  const params = new URLSearchParams(search);
  const notices: string[] = [];
  const values = new Map<string, unknown>();
  for (const [key, raw] of params) {
    if (key === "preset" || key === "version" || key.startsWith("_")) continue;
    if (!fieldMeta(key)) {
      notices.push(`${key}: unknown field, ignored`);
      continue;
    }
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {}
    values.set(key, value);
  }
  for (let round = 0; round <= values.size; round++) {
    let config: unknown = base;
    try {
      for (const [k, v] of values) config = setPath(config, k, v);
    } catch (e) {
      notices.push(`URL values: ${(e as Error).message} (kept the preset)`);
      break;
    }
    const v = validateRunConfig(config);
    if (v.ok) return { config: v.config, preset: params.get("preset"), notices };
    // Drop the keys the errors name; if none is named, drop the last key and retry.
    const named = [...values.keys()].filter((k) =>
      v.errors.some((e) => e.path === k || e.path.startsWith(`${k}.`)),
    );
    const drop = named.length > 0 ? named : [...values.keys()].slice(-1);
    if (drop.length === 0) break;
    for (const k of drop) {
      const why = v.errors.filter((e) => e.path === k || e.path.startsWith(`${k}.`));
      const msg = why.length ? why.map((e) => `${e.path}: ${e.message}`).join("; ") : formatErrors(v.errors);
      notices.push(`${k}: ${msg} (kept the default)`);
      values.delete(k);
    }
  }
  return { config: base, preset: params.get("preset"), notices };
}

function formatErrors(errors: readonly { path: string; message: string }[]): string {
  return errors.map((e) => `${e.path}: ${e.message}`).join("; ");
}

/** The query for a config: only the leaves that differ from the preset's config. */
export function queryFor(config: RunConfig, presetConfig: RunConfig, preset: string | null): string {
  const params = new URLSearchParams();
  if (preset) params.set("preset", preset);
  for (const c of configDiff(presetConfig, config)) params.set(c.path, JSON.stringify(c.to));
  return params.toString();
}

/** A slider paired with a number input: linear over [min, max], or log-spaced for rates. */
export interface SliderScale {
  min: number;
  max: number;
  log: boolean;
}

const LOG_SLIDERS: Record<string, [number, number]> = {
  "rl.lr": [1e-6, 1e-1],
  "sft.lr": [1e-5, 1],
  "rl.kl.coef": [1e-4, 1],
};

export const SLIDER_STEPS = 1000;

export function sliderScale(spec: FieldSpec): SliderScale | null {
  if (spec.kind !== "number") return null;
  const log = LOG_SLIDERS[spec.path];
  if (log) return { min: log[0], max: log[1], log: true };
  const { min, max } = spec.meta;
  if (min === undefined || max === undefined || max - min > 1000) return null;
  return { min, max, log: false };
}

/** Slider position (0..SLIDER_STEPS) of a value; values below a log scale's floor sit at 0. */
export function toSlider(value: number, s: SliderScale): number {
  const t = s.log
    ? value <= s.min
      ? 0
      : Math.log(value / s.min) / Math.log(s.max / s.min)
    : (value - s.min) / (s.max - s.min || 1);
  return Math.round(Math.min(1, Math.max(0, t)) * SLIDER_STEPS);
}

/** The value at a slider position, rounded to 3 significant digits (log) or to the step. */
export function fromSlider(pos: number, s: SliderScale, integer = false): number {
  const t = Math.min(1, Math.max(0, pos / SLIDER_STEPS));
  const v = s.log ? s.min * (s.max / s.min) ** t : s.min + t * (s.max - s.min);
  if (integer) return Math.round(v);
  return Number(v.toPrecision(3));
}

/** Parameters of the config's model, counted from its layout; null when the model config is invalid. */
export function paramCountOf(config: RunConfig): number | null {
  try {
    return paramLayout(modelConfigOf(config)).count;
  } catch {
    return null;
  }
}

/** The panel's "≈0.82M params". */
export function paramsText(config: RunConfig): string {
  const n = paramCountOf(config);
  return n === null ? "? params" : `≈${(n / 1e6).toFixed(2)}M params`;
}

// The lab's architecture fields and what a Hugging Face config.json says for each.
const PRETRAINED_FIELDS: Record<string, (j: Record<string, unknown>) => unknown> = {
  "model.layers": (j) => j.num_hidden_layers,
  "model.d_model": (j) => j.hidden_size,
  "model.heads": (j) => j.num_attention_heads,
  "model.norm": () => "rmsnorm",
  "model.mlp": () => "swiglu",
  "model.positional": () => "rope",
  "model.tied_embeddings": (j) => j.tie_word_embeddings ?? false,
};

/**
 * With model.pretrained set, an architecture field does not apply: its value is read-only text
 * from the model's config.json (or a note while it is not read yet). Null for every other field.
 */
export function pretrainedField(
  config: RunConfig,
  modelConfigs: Record<string, unknown>,
  path: string,
): string | null {
  const p = config?.model?.pretrained;
  const read = PRETRAINED_FIELDS[path];
  if (!p || !read) return null;
  const json = modelConfigs[p] as Record<string, unknown> | undefined;
  return json ? `${String(read(json))} (config.json)` : "from the model's config.json";
}
