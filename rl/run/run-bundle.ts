// Run bundles: one file that carries a whole run to another browser or to the CLI: its config,
// edits, metrics rows, sampled trajectories, events and optionally its weights (a safetensors
// checkpoint, base64 in the JSON). The file is gzip-compressed JSON (CompressionStream "gzip",
// so `gunzip` or any JSON tool reads it; suggested name `<run>.lab-run.json.gz`); plain JSON
// is read too. decodeBundle never throws: a bad file is {ok: false, error} naming what is wrong
// (not gzip/JSON, not a bundle, unknown version, config field, metrics[i].time, samples[i].tokens,
// weights). Config goes through parseRunConfig, so bundles of older config versions migrate.
// Tests: `npx vitest run rl/run/run-bundle` (round trip, named errors, 1000 mutated bundles).
import {
  applyEdits,
  type ConfigEdit,
  EDIT_PHASES,
  type EditPhase,
  parseRunConfig,
  type RunConfig,
  withEditPhase,
} from "../../config";
import {
  base64ToBytes,
  bytesToBase64,
  InflateLimitError,
  jsonNesting,
  MAX_JSON_NESTING,
  pump,
} from "../../config/link";
import { loadCheckpoint } from "../../model/checkpoint";
import type { RunEvents } from "./run-loop";
import type { MetricsRow, SampleRecord } from "./trainer";

export const BUNDLE_FORMAT = "agentic-rl-lab/bundle";
export const BUNDLE_VERSION = 2;
/** Decompressed bundles above this are refused, whatever their compressed size. */
const MAX_BUNDLE_BYTES = 1 << 30;
/**
 * Below MAX_BUNDLE_BYTES a bundle may inflate to INFLATE_FLOOR or to INFLATE_RATIO times its
 * compressed size, whichever is larger. Real bundles inflate 1-4x (base64 weights about 1x, rows
 * about 4x); deflate can reach about 1000x, so a 1 MiB bomb stops at 64 MiB instead of 1 GiB.
 */
const INFLATE_RATIO = 64;
const INFLATE_FLOOR = 64 << 20;

/** How far the gzip `bytes` may inflate before the bundle is refused. */
export function inflateCap(compressedBytes: number): number {
  return Math.min(MAX_BUNDLE_BYTES, Math.max(INFLATE_FLOOR, INFLATE_RATIO * compressedBytes));
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** The refusal for a gzip that inflates past `cap`. */
function bombError(bytes: Uint8Array, cap: number): string {
  return (
    `the gzip file inflates past ${mib(cap)}: a bundle of ${mib(bytes.length)} may inflate to at most ` +
    `${mib(cap)} (${INFLATE_RATIO}x its size, at least ${mib(INFLATE_FLOOR)}, at most ${mib(MAX_BUNDLE_BYTES)}); ` +
    "a gzip bomb, or not a bundle"
  );
}

/** One run event as the runner reports it (workers/api.ts RunEvent has the same shape). */
export type RunEventRecord = Parameters<NonNullable<RunEvents["event"]>>[0];
const EVENT_KINDS: readonly RunEventRecord["kind"][] = [
  "edit",
  "edit-refused",
  "skipped",
  "paused",
  "stopped",
  "error",
  "info",
];
const PHASES: readonly MetricsRow["phase"][] = ["sft", "value_pretrain", "rl"];

export interface RunBundle {
  name: string;
  /** ISO 8601 time the run started (or the bundle was made). */
  createdAt: string;
  config: RunConfig;
  edits: ConfigEdit[];
  metrics: MetricsRow[];
  samples: SampleRecord[];
  events: RunEventRecord[];
  /** A safetensors checkpoint (model/checkpoint.ts saveCheckpoint), when exported with weights. */
  weights?: Uint8Array;
}

export type BundleResult = { ok: true; run: RunBundle } | { ok: false; error: string };

/** The bundle's JSON object (weights as base64), before compression. */
export function bundleJson(run: RunBundle): Record<string, unknown> {
  const out: Record<string, unknown> = {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    name: run.name,
    createdAt: run.createdAt,
    config: run.config,
    edits: run.edits,
    metrics: run.metrics,
    samples: run.samples,
    events: run.events,
  };
  if (run.weights) out.weights = bytesToBase64(run.weights);
  return out;
}

/** The bundle file's bytes: gzip-compressed JSON, or plain JSON with `{compress: false}`. */
export async function encodeBundle(run: RunBundle, opts: { compress?: boolean } = {}): Promise<Uint8Array> {
  const json = new TextEncoder().encode(JSON.stringify(bundleJson(run)));
  return opts.compress === false ? json : pump(json, new CompressionStream("gzip"), Number.MAX_SAFE_INTEGER);
}

/** A file name for the bundle: the run name made safe, with the `.lab-run.json.gz` suffix. */
export function bundleFileName(run: Pick<RunBundle, "name">, compressed = true): string {
  const slug = run.name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "run";
  return `${slug}.lab-run.json${compressed ? ".gz" : ""}`;
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** True when the bytes look like a bundle (gzip, or JSON naming the bundle format); a cheap sniff for the CLI. */
export function looksLikeBundle(bytes: Uint8Array): boolean {
  if (isGzip(bytes)) return true;
  const head = new TextDecoder().decode(bytes.subarray(0, 200));
  return head.includes(`"${BUNDLE_FORMAT}"`);
}

// ---------------------------------------------------------------------------------------------
// validation: each check returns an error message or null

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
const isNum = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isStep = (x: unknown): x is number => isNum(x) && Number.isInteger(x) && x >= 0;
/** Per-token float arrays: JSON writes NaN as null, so null is a missing value, not an error. */
const isNumList = (x: unknown) => Array.isArray(x) && x.every((v) => v === null || typeof v === "number");
const isIntList = (x: unknown) =>
  Array.isArray(x) && x.every((v) => typeof v === "number" && Number.isInteger(v));

function checkRow(row: unknown, at: string): string | null {
  if (!isObj(row)) return `${at}: must be an object`;
  if (!isStep(row.step)) return `${at}.step: must be a non-negative integer`;
  if (!PHASES.includes(row.phase as MetricsRow["phase"]))
    return `${at}.phase: must be one of ${PHASES.join(", ")}`;
  if (!isNum(row.time)) return `${at}.time: must be a finite number`;
  for (const [k, v] of Object.entries(row)) {
    if (v !== null && typeof v !== "number" && typeof v !== "string") {
      return `${at}.${k}: must be a number or a string`;
    }
  }
  return null;
}

const SAMPLE_FIELDS: [string, (x: unknown) => boolean, string][] = [
  ["step", isStep, "a non-negative integer"],
  ["groupId", (x) => typeof x === "string", "a string"],
  ["problemId", (x) => typeof x === "string", "a string"],
  ["bucket", (x) => typeof x === "string", "a string"],
  ["answer", (x) => typeof x === "string", "a string"],
  ["promptTokens", isIntList, "a list of integer token ids"],
  ["tokens", isIntList, "a list of integer token ids"],
  ["mask", isNumList, "a list of numbers"],
  ["postTool", isNumList, "a list of numbers"],
  ["logprobs", isNumList, "a list of numbers"],
  ["entropy", isNumList, "a list of numbers"],
  ["advantages", isNumList, "a list of numbers"],
  ["reward", (x) => x === null || typeof x === "number", "a number"],
  [
    "rewardTerms",
    (x) => isObj(x) && Object.values(x).every((v) => v === null || typeof v === "number"),
    "an object of numbers",
  ],
  ["correct", (x) => typeof x === "boolean", "true or false"],
  ["finish", (x) => typeof x === "string", "a string"],
  ["filter", (x) => typeof x === "string", "a string"],
];
const TOOL_CALL_FIELDS: [string, string][] = [
  ["raw", "string"],
  ["response", "string"],
  ["ok", "boolean"],
  ["status", "string"],
  ["executed", "boolean"],
  ["responseStart", "number"],
  ["responseEnd", "number"],
];

function checkSample(s: unknown, at: string): string | null {
  if (!isObj(s)) return `${at}: must be an object`;
  for (const [k, ok, what] of SAMPLE_FIELDS) if (!ok(s[k])) return `${at}.${k}: must be ${what}`;
  // Token pieces (the inspector's text) are optional: older runs and bundles have none.
  for (const [k, ids] of [
    ["promptPieces", s.promptTokens],
    ["pieces", s.tokens],
  ] as const) {
    const p = s[k];
    if (p === undefined) continue;
    if (!Array.isArray(p) || !p.every((x) => typeof x === "string") || p.length !== (ids as unknown[]).length)
      return `${at}.${k}: must be a list of strings, one per token`;
  }
  if (s.padId !== undefined && !Number.isInteger(s.padId)) return `${at}.padId: must be an integer`;
  if (!Array.isArray(s.toolCalls)) return `${at}.toolCalls: must be a list`;
  for (const [i, c] of s.toolCalls.entries()) {
    if (!isObj(c)) return `${at}.toolCalls[${i}]: must be an object`;
    for (const [k, type] of TOOL_CALL_FIELDS) {
      if (typeof c[k] !== type) return `${at}.toolCalls[${i}].${k}: must be a ${type}`;
    }
  }
  return null;
}

function checkEvent(e: unknown, at: string): string | null {
  if (!isObj(e)) return `${at}: must be an object`;
  if (!isStep(e.step)) return `${at}.step: must be a non-negative integer`;
  if (typeof e.phase !== "string") return `${at}.phase: must be a string`;
  if (!EVENT_KINDS.includes(e.kind as RunEventRecord["kind"])) {
    return `${at}.kind: must be one of ${EVENT_KINDS.join(", ")}`;
  }
  if (typeof e.message !== "string") return `${at}.message: must be a string`;
  if (e.edit !== undefined && !(isObj(e.edit) && isStep(e.edit.step) && typeof e.edit.path === "string")) {
    return `${at}.edit: must be {step, path, value}`;
  }
  if (e.chat !== undefined && !(isObj(e.chat) && typeof e.chat.renders_tools === "boolean")) {
    return `${at}.chat: must be {renders_tools: boolean}`;
  }
  return null;
}

function checkList(x: unknown, name: string, each: (v: unknown, at: string) => string | null): string | null {
  if (!Array.isArray(x)) return `${name}: must be a list`;
  for (let i = 0; i < x.length; i++) {
    const err = each(x[i], `${name}[${i}]`);
    if (err) return err;
  }
  return null;
}

const TOP_KEYS = new Set([
  "format",
  "version",
  "name",
  "createdAt",
  "config",
  "edits",
  "metrics",
  "samples",
  "events",
  "weights",
]);

function validate(json: unknown): BundleResult {
  const fail = (error: string): BundleResult => ({ ok: false, error });
  if (!isObj(json)) return fail("the JSON is not an object");
  if (json.format !== BUNDLE_FORMAT) {
    return fail(`format is ${JSON.stringify(json.format) ?? "missing"}, not "${BUNDLE_FORMAT}"`);
  }
  if (!(isStep(json.version) && json.version >= 1 && json.version <= BUNDLE_VERSION)) {
    return fail(
      `unknown bundle version ${JSON.stringify(json.version)} (this lab reads version ${BUNDLE_VERSION}; the file may come from a newer lab)`,
    );
  }
  for (const k of Object.keys(json)) if (!TOP_KEYS.has(k)) return fail(`${k}: unknown field`);
  if (typeof json.name !== "string") return fail("name: must be a string");
  if (typeof json.createdAt !== "string" || Number.isNaN(Date.parse(json.createdAt))) {
    return fail("createdAt: must be an ISO date string");
  }
  const parsed = parseRunConfig(json.config);
  if (!parsed.ok) {
    const e = parsed.errors[0];
    return fail(
      `config.${e.path}: ${e.message}${parsed.errors.length > 1 ? ` (and ${parsed.errors.length - 1} more)` : ""}`,
    );
  }
  const v1 = json.version === 1;
  const editsErr = checkList(json.edits, "edits", (e, at) =>
    isObj(e) &&
    isStep(e.step) &&
    typeof e.path === "string" &&
    "value" in e &&
    (v1 || EDIT_PHASES.includes(e.phase as EditPhase))
      ? null
      : `${at}: must be {${v1 ? "" : `phase (${EDIT_PHASES.join(" | ")}), `}step, path, value}`,
  );
  if (editsErr) return fail(editsErr);
  const eventsErr = checkList(json.events, "events", checkEvent);
  if (eventsErr) return fail(eventsErr);
  const edits = v1
    ? phasedEdits(json.edits as ConfigEdit[], json.events as RunEventRecord[])
    : (json.edits as Obj[]).map((e) => withEditPhase(e as ConfigEdit));
  const applied = applyEdits(parsed.config, edits);
  if (!applied.ok) return fail(`edits: ${applied.error}`);
  const err =
    checkList(json.metrics, "metrics", checkRow) ??
    checkList(json.samples, "samples", checkSample) ??
    checkList(json.events, "events", checkEvent);
  if (err) return fail(err);
  // JSON has no NaN: a null metric is one that was not computed, so it is dropped.
  const metrics = (json.metrics as Obj[]).map(
    (r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null)) as MetricsRow,
  );
  const run: RunBundle = {
    name: json.name,
    createdAt: json.createdAt,
    config: parsed.config,
    edits,
    metrics,
    samples: json.samples as SampleRecord[],
    // A version-1 event's edit has no phase of its own: the event's phase is the edit's.
    events: (json.events as RunEventRecord[]).map((e) =>
      e.edit && !EDIT_PHASES.includes(e.edit.phase)
        ? {
            ...e,
            edit: withEditPhase({
              ...e.edit,
              phase: EDIT_PHASES.includes(e.phase as EditPhase) ? e.phase : undefined,
            }),
          }
        : e,
    ),
  };
  if (json.weights !== undefined) {
    if (typeof json.weights !== "string") return fail("weights: must be a base64 string");
    try {
      run.weights = base64ToBytes(json.weights);
    } catch (e) {
      return fail(`weights: not base64 (${(e as Error).message})`);
    }
    const wErr = checkWeights(run.weights, parsed.config);
    if (wErr) return fail(`weights: ${wErr}`);
  }
  return { ok: true, run };
}

/**
 * Edits of an older record (bundle version 1, runs stored by older labs) with their phases: an
 * edit that has one keeps it; otherwise the phase of the "edit" event that recorded it, else
 * legacyEditPhase.
 */
export function phasedEdits(
  edits: readonly { step: number; path: string; value: unknown; phase?: unknown }[],
  events: readonly RunEventRecord[],
): ConfigEdit[] {
  const used = new Set<number>();
  return edits.map((e) => {
    if (EDIT_PHASES.includes(e.phase as EditPhase)) return withEditPhase(e);
    const same = (x: RunEventRecord) =>
      x.kind === "edit" &&
      x.edit?.step === e.step &&
      x.edit?.path === e.path &&
      JSON.stringify(x.edit?.value) === JSON.stringify(e.value);
    const i = events.findIndex((x, k) => !used.has(k) && same(x));
    if (i >= 0) used.add(i);
    const phase = i >= 0 && EDIT_PHASES.includes(events[i].phase as EditPhase) ? events[i].phase : undefined;
    return withEditPhase({ step: e.step as number, path: e.path as string, value: e.value, phase });
  });
}

/**
 * The checkpoint must load and its model shape must be the config's: config.model's fields for
 * the lab's own model; for a pretrained one (whose shape is its config.json's, not in the
 * bundle) the run's context, the one shape field the config sets.
 */
function checkWeights(bytes: Uint8Array, config: RunConfig): string | null {
  let ck: ReturnType<typeof loadCheckpoint>;
  try {
    ck = loadCheckpoint(bytes);
  } catch (e) {
    return `not a valid safetensors checkpoint (${(e as Error).message})`;
  }
  const m = config.model;
  if (m.pretrained !== null)
    return ck.config.context === m.context
      ? null
      : `the checkpoint's context ${ck.config.context} is not model.context ${m.context} (model.pretrained ${m.pretrained})`;
  const want = `${m.layers} layers, d_model ${m.d_model}, ${m.heads} heads, context ${m.context}`;
  const got = `${ck.config.layers} layers, d_model ${ck.config.dModel}, ${ck.config.heads} heads, context ${ck.config.context}`;
  return want === got ? null : `the checkpoint's model (${got}) is not config.model (${want})`;
}

/**
 * Reads a bundle file (gzip or plain JSON). Never throws: a bad file is {ok: false, error}
 * naming what is wrong.
 */
export async function decodeBundle(bytes: Uint8Array): Promise<BundleResult> {
  try {
    if (!(bytes instanceof Uint8Array) || bytes.length === 0) return { ok: false, error: "empty file" };
    let raw = bytes;
    if (isGzip(bytes)) {
      // Not the gzip trailer's size: it may lie, and a cut file's last bytes are not a trailer.
      const cap = inflateCap(bytes.length);
      try {
        raw = await pump(bytes, new DecompressionStream("gzip"), cap);
      } catch (e) {
        if (e instanceof InflateLimitError) return { ok: false, error: bombError(bytes, cap) };
        return {
          ok: false,
          error: `truncated or corrupt file: cannot decompress it (${(e as Error).message})`,
        };
      }
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
    } catch {
      // Random bytes gzipped decompress fine: say what the file was, then what is wrong.
      const what =
        raw === bytes ? "the file is neither gzip nor UTF-8 text" : "the gzip file holds no UTF-8 text";
      return { ok: false, error: `${what} (a bundle is gzipped JSON, .lab-run.json.gz)` };
    }
    let json: unknown;
    const depth = jsonNesting(text);
    if (depth > MAX_JSON_NESTING)
      return {
        ok: false,
        error: `its values nest ${depth} levels deep; a bundle's nest at most ${MAX_JSON_NESTING}`,
      };
    try {
      json = JSON.parse(text);
    } catch (e) {
      return {
        ok: false,
        error: `not valid JSON (${(e as Error).message.slice(0, 120)})`,
      };
    }
    return validate(json);
  } catch (e) {
    // Nothing above should throw; this keeps the promise from ever rejecting.
    return { ok: false, error: `unreadable bundle: ${e instanceof Error ? e.message : String(e)}` };
  }
}
