// Share links: a run's config, seed and edit events in the URL hash, so that opening the link
// shows the config and can replay the run. Format (one hash parameter, base64url and dots only,
// so nothing is percent-encoded and a link survives chat apps):
//
//   #run=v<link version>.<payload length>.<crc32 of the payload, 8 hex>.<payload>
//   payload = base64url(deflate-raw(JSON {d: {<dotted leaf path>: value}, e?: [edit...], n?: name}))
//   edit    = [phase, step, path, value]   (link version 2, the current one)
//           | [step, path, value]          (link version 1)
//
// `d` holds only the leaves that differ from the defaults of the link's config version (a
// leaf-path diff, arrays and free-form records are one leaf each), so a default config is a tiny
// link. The declared length tells a truncated link from a tampered one (crc mismatch).
// LINK_FORMATS maps a link version to its config version and edit shape: decoding rebuilds the
// config from that config version's defaults (LINK_DEFAULTS), then parseRunConfig migrates it
// forward (config/migrate.ts), and EDIT_MIGRATIONS[k] renames edit paths of config version k.
// Version 1 edits carry no phase; the migration rule (legacyEditPhase in config/edit.ts) is:
// an edit of an `sft.*` field is SFT's (its step an SFT step), any other edit is RL's.
// A new config version: freeze today's defaultRunConfig() into LINK_DEFAULTS[k] (as JSON), add
// MIGRATIONS[k] in migrate.ts and, if paths moved, EDIT_MIGRATIONS[k] here; the committed
// fixtures config/fixtures/link-v1.txt and link-v1-run.txt must keep decoding.
// Budget: every named recipe with 10 edits encodes in <= LINK_BUDGET_CHARS (2000) characters.
// decodeLink never throws: every failure is {ok: false, error} naming what is wrong.
// A leaf module (imports only config/ and web-standard APIs). Tests: `npx vitest run config/link`.

import DEFAULTS_V1 from "./defaults-v1.json" with { type: "json" };
import {
  applyEdits,
  type ConfigEdit,
  EDIT_PHASES,
  type EditPhase,
  getPath,
  setPath,
  withEditPhase,
} from "./edit.ts";
import { leafPaths } from "./meta.ts";
import { parseRunConfig } from "./migrate.ts";
import {
  CONFIG_VERSION,
  defaultRunConfig,
  issuesToErrors,
  type RunConfig,
  RunConfigSchema,
} from "./schema.ts";

/** Longest link (hash fragment) the lab promises for a recipe with 10 edits. Tested. */
export const LINK_BUDGET_CHARS = 2000;
/** The hash parameter that carries a run. */
export const LINK_PARAM = "run";
/** Decompressed payloads above this are refused (a deflate bomb in a link). */
const MAX_JSON_BYTES = 1 << 20;
const MAX_LINK_CHARS = 1 << 20;

export interface LinkInput {
  config: RunConfig;
  edits?: readonly ConfigEdit[];
  name?: string;
}

/** The link version encodeLink writes. */
export const LINK_VERSION = 2;

/** Each link version: the config version its diff is against, and whether edits carry a phase. */
export const LINK_FORMATS: Record<number, { config: number; phases: boolean }> = {
  1: { config: 1, phases: false },
  2: { config: CONFIG_VERSION, phases: true },
};

export type LinkResult =
  | { ok: true; config: RunConfig; edits: ConfigEdit[]; version: number; name?: string }
  | { ok: false; error: string };

type Raw = Record<string, unknown>;

/**
 * The full default config of each config version a link may be against. The current version uses the live defaults;
 * an older version must be a frozen copy of that version's defaults (plain JSON), because a
 * link stores only the differences from them.
 */
export const LINK_DEFAULTS: Record<number, () => Raw> = {
  1: () => structuredClone(DEFAULTS_V1) as Raw,
  [CONFIG_VERSION]: () => defaultRunConfig() as unknown as Raw,
};

/** EDIT_MIGRATIONS[k] turns an edit of config version k into version k+1 (null drops it). */
export const EDIT_MIGRATIONS: Record<number, (e: ConfigEdit) => ConfigEdit | null> = {};

// ---------------------------------------------------------------------------------------------
// bytes: base64url, crc32, deflate-raw

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64_INDEX = (() => {
  const t = new Int16Array(128).fill(-1);
  for (let i = 0; i < 64; i++) {
    t[B64.charCodeAt(i)] = i;
    t[B64URL.charCodeAt(i)] = i;
  }
  return t;
})();

/** Base64 of bytes; `url` uses the URL alphabet (- _) without padding. */
export function bytesToBase64(bytes: Uint8Array, url = false): string {
  const abc = url ? B64URL : B64;
  const parts: string[] = [];
  let chunk = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const left = bytes.length - i;
    chunk += abc[(n >> 18) & 63] + abc[(n >> 12) & 63];
    chunk += left > 1 ? abc[(n >> 6) & 63] : url ? "" : "=";
    chunk += left > 2 ? abc[n & 63] : url ? "" : "=";
    if (chunk.length >= 8192) {
      parts.push(chunk);
      chunk = "";
    }
  }
  parts.push(chunk);
  return parts.join("");
}

/** Bytes of a base64 or base64url string (padding optional). Throws naming the first bad character. */
export function base64ToBytes(text: string): Uint8Array {
  let end = text.length;
  while (end > 0 && text[end - 1] === "=") end--;
  if (end % 4 === 1) throw new Error(`base64 of impossible length ${end}`);
  const out = new Uint8Array(Math.floor((end * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? B64_INDEX[c] : -1;
    if (v < 0) throw new Error(`invalid base64 character ${JSON.stringify(text[i])} at position ${i}`);
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 255;
    }
  }
  return out;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE, as zip/png) of bytes or of a string's UTF-8 bytes. */
export function crc32(data: Uint8Array | string): number {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 255] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** How deep a link's or a bundle's JSON may nest: configs nest a few levels; more is not a run. */
export const MAX_JSON_NESTING = 64;

/**
 * The deepest nesting of arrays and objects in JSON text, read without parsing it (strings
 * skipped), so a value nested thousands deep is refused before any recursive reader sees it.
 */
export function jsonNesting(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) max = Math.max(max, ++depth);
    else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/** What `pump` throws when a stream's output passes its limit (a bomb, told apart from corrupt data). */
export class InflateLimitError extends Error {}

/** Pushes bytes through a (de)compression stream; more than maxBytes out is an InflateLimitError. */
export async function pump(
  bytes: Uint8Array,
  stream: CompressionStream | DecompressionStream,
  maxBytes: number,
): Promise<Uint8Array> {
  const writer = stream.writable.getWriter();
  // Errors surface on the reader; the writer's promises would otherwise be unhandled rejections.
  writer.write(bytes as Uint8Array<ArrayBuffer>).catch(() => {});
  writer.close().catch(() => {});
  const reader = stream.readable.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      reader.cancel().catch(() => {});
      throw new InflateLimitError(`more than ${maxBytes} bytes after decompression`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export function deflateRaw(bytes: Uint8Array): Promise<Uint8Array> {
  return pump(bytes, new CompressionStream("deflate-raw"), Number.MAX_SAFE_INTEGER);
}

/** Inflates; rejects on corrupt data or when the output passes maxBytes. */
export function inflateRaw(bytes: Uint8Array, maxBytes = MAX_JSON_BYTES): Promise<Uint8Array> {
  return pump(bytes, new DecompressionStream("deflate-raw"), maxBytes);
}

// ---------------------------------------------------------------------------------------------
// encode

function isPlainObject(x: unknown): x is Raw {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** Leaf paths (dotted) whose values differ between `config` and `base`, with their values. */
export function configDiff(config: unknown, base: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of leafPaths(config)) {
    if (path === "version") continue;
    const v = getPath(config, path);
    if (JSON.stringify(v) !== JSON.stringify(getPath(base, path))) out[path] = v;
  }
  return out;
}

/**
 * The hash fragment ("#run=v1....") of a run: its config (only non-default leaves; the seed is
 * a leaf), its edits and an optional name. Throws when the config or an edit is invalid, so a
 * link that cannot be opened is never made.
 */
export async function encodeLink(input: LinkInput): Promise<string> {
  const parsed = RunConfigSchema.safeParse(input.config);
  if (!parsed.success) {
    const why = issuesToErrors(parsed.error.issues).map((e) => `${e.path}: ${e.message}`);
    throw new Error(`encodeLink: invalid config (${why.join("; ")})`);
  }
  const edits = input.edits ?? [];
  const checked = applyEdits(parsed.data, edits);
  if (!checked.ok) throw new Error(`encodeLink: invalid edit (${checked.error})`);
  const payload: Raw = { d: configDiff(parsed.data, LINK_DEFAULTS[CONFIG_VERSION]()) };
  if (edits.length) payload.e = edits.map((e) => [e.phase, e.step, e.path, e.value]);
  if (input.name) payload.n = input.name;
  return sealLink(payload);
}

/**
 * The envelope around any JSON payload: compress, base64url, length and checksum. encodeLink
 * uses it for LINK_VERSION; tests and future migrations use it to make links of other versions
 * or with hand-made payloads. It does not validate the payload.
 */
export async function sealLink(payload: unknown, version = LINK_VERSION): Promise<string> {
  const packed = bytesToBase64(await deflateRaw(new TextEncoder().encode(JSON.stringify(payload))), true);
  const crc = crc32(packed).toString(16).padStart(8, "0");
  return `#${LINK_PARAM}=v${version}.${packed.length}.${crc}.${packed}`;
}

/** A full URL for the link: `base` (e.g. location.href) with its hash replaced. */
export async function shareUrl(input: LinkInput, base: string): Promise<string> {
  const i = base.indexOf("#");
  return (i < 0 ? base : base.slice(0, i)) + (await encodeLink(input));
}

// ---------------------------------------------------------------------------------------------
// decode

type Step<T> = { ok: true; value: T } | { ok: false; error: string };
const fail = (error: string): { ok: false; error: string } => ({ ok: false, error });

/** Finds the `run=` value in a full URL, a "#..." hash, or the bare "run=..." text. */
function findParam(input: string): Step<string> {
  const text = input.trim();
  if (text.length > MAX_LINK_CHARS) return fail(`not a lab link: ${text.length} characters is far too long`);
  const hash = text.includes("#") ? text.slice(text.indexOf("#") + 1) : text;
  for (const part of hash.split("&")) {
    if (part.startsWith(`${LINK_PARAM}=`)) return { ok: true, value: part.slice(LINK_PARAM.length + 1) };
  }
  return fail(`not a lab link: it has no "#${LINK_PARAM}=" part`);
}

interface Envelope {
  version: number;
  payload: string;
}

function parseEnvelope(value: string): Step<Envelope> {
  const m = /^v(\d{1,6})(?:\.|$)/.exec(value);
  if (!m) {
    return fail(
      value === "" || value === "v"
        ? `truncated link: nothing after "${LINK_PARAM}="`
        : `not a lab link: "${LINK_PARAM}=" must be followed by v<version>, not ${JSON.stringify(value.slice(0, 12))}`,
    );
  }
  const version = Number(m[1]);
  if (version < 1 || version > LINK_VERSION || !LINK_FORMATS[version]) {
    return fail(
      `unknown link version ${version} (this lab opens versions 1..${LINK_VERSION}; the link may come from a newer lab)`,
    );
  }
  const parts = value.split(".");
  if (parts.length < 4)
    return fail(`truncated link: the header v${version}.<length>.<checksum>. is incomplete`);
  if (parts.length > 4) return fail("damaged link: unexpected '.' inside the payload");
  const [, lenText, crcText, payload] = parts;
  if (!/^\d{1,7}$/.test(lenText))
    return fail(`damaged link: payload length ${JSON.stringify(lenText)} is not a number`);
  if (!/^[0-9a-f]{8}$/.test(crcText)) {
    return crcText.length < 8 && payload === ""
      ? fail("truncated link: the checksum is cut short")
      : fail(`damaged link: checksum ${JSON.stringify(crcText)} is not 8 hex digits`);
  }
  const declared = Number(lenText);
  const bad = /[^A-Za-z0-9_-]/.exec(payload);
  if (bad) return fail(`damaged link: character ${JSON.stringify(bad[0])} at payload position ${bad.index}`);
  if (payload.length < declared) {
    return fail(
      `truncated link: the payload has ${payload.length} of its ${declared} characters (copy the whole link)`,
    );
  }
  if (payload.length > declared) {
    return fail(`damaged link: the payload has ${payload.length - declared} more characters than declared`);
  }
  if (crc32(payload) !== Number.parseInt(crcText, 16)) {
    return fail("checksum mismatch: the link was changed or damaged after it was made");
  }
  return { ok: true, value: { version, payload } };
}

const SAFE_SEGMENT = /^[A-Za-z0-9_]+$/;
const FORBIDDEN = new Set(["__proto__", "prototype", "constructor"]);

function checkPath(path: unknown): string | null {
  if (typeof path !== "string" || path === "") return "a path must be a non-empty string";
  for (const seg of path.split(".")) {
    if (!SAFE_SEGMENT.test(seg) || FORBIDDEN.has(seg)) return `bad path ${JSON.stringify(path)}`;
  }
  return null;
}

/** The payload's JSON to {raw config of its version, edits, name}; shape errors name the part. */
function readPayload(json: unknown, version: number): Step<{ raw: Raw; edits: ConfigEdit[]; name?: string }> {
  if (!isPlainObject(json)) return fail("invalid link payload: not an object");
  for (const k of Object.keys(json)) {
    if (!["d", "e", "n"].includes(k)) return fail(`invalid link payload: unknown part ${JSON.stringify(k)}`);
  }
  const { d, e, n } = json;
  if (!isPlainObject(d)) return fail("invalid link payload: the config diff (d) is not an object");
  if (n !== undefined && typeof n !== "string")
    return fail("invalid link payload: the name (n) is not a string");
  if (e !== undefined && !Array.isArray(e)) return fail("invalid link payload: the edits (e) are not a list");
  const format = LINK_FORMATS[version];
  let raw: Raw = { ...LINK_DEFAULTS[format.config](), version: format.config };
  for (const [path, value] of Object.entries(d)) {
    const bad = checkPath(path);
    if (bad) return fail(`invalid field ${path}: ${bad}`);
    if (path === "version") return fail("invalid field version: the version belongs in the link header");
    try {
      raw = setPath(raw, path, value);
    } catch (err) {
      return fail(`invalid field ${path}: ${(err as Error).message}`);
    }
  }
  const edits: ConfigEdit[] = [];
  const shape = format.phases ? "[phase, step, path, value]" : "[step, path, value]";
  for (const [i, item] of (e ?? []).entries()) {
    if (!Array.isArray(item) || item.length !== (format.phases ? 4 : 3))
      return fail(`invalid edit ${i}: not ${shape}`);
    const [phase, step, path, value] = (format.phases ? item : [undefined, ...item]) as unknown[];
    if (format.phases && !EDIT_PHASES.includes(phase as EditPhase)) {
      return fail(
        `invalid edit ${i}: phase ${JSON.stringify(phase)} is not one of ${EDIT_PHASES.join(", ")}`,
      );
    }
    if (typeof step !== "number" || !Number.isInteger(step) || step < 0) {
      return fail(`invalid edit ${i}: step ${JSON.stringify(step)} is not a non-negative integer`);
    }
    const bad = checkPath(path);
    if (bad) return fail(`invalid edit ${i}: ${bad}`);
    // Version 1 has no phase: legacyEditPhase (sft.* is SFT's, the rest RL's).
    edits.push(withEditPhase({ phase, step, path: path as string, value }));
  }
  return { ok: true, value: { raw, edits, name: n as string | undefined } };
}

function migrateEdits(edits: ConfigEdit[], from: number): ConfigEdit[] {
  let out = edits;
  for (let k = from; k < CONFIG_VERSION; k++) {
    const step = EDIT_MIGRATIONS[k];
    if (step) out = out.map(step).filter((x): x is ConfigEdit => x !== null);
  }
  return out;
}

async function decodeSteps(input: string): Promise<LinkResult> {
  const param = findParam(input);
  if (!param.ok) return param;
  const env = parseEnvelope(param.value);
  if (!env.ok) return env;
  const { version, payload } = env.value;
  let text: string;
  try {
    const bytes = await inflateRaw(base64ToBytes(payload));
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (err) {
    return fail(`corrupt link payload: cannot decompress it (${(err as Error).message})`);
  }
  const depth = jsonNesting(text);
  if (depth > MAX_JSON_NESTING)
    return fail(
      `corrupt link payload: its values nest ${depth} levels deep; a link's nest at most ${MAX_JSON_NESTING}`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail("corrupt link payload: the decompressed text is not JSON");
  }
  const body = readPayload(json, version);
  if (!body.ok) return body;
  const parsed = parseRunConfig(body.value.raw);
  if (!parsed.ok) {
    const first = parsed.errors[0];
    const more = parsed.errors.length > 1 ? ` (and ${parsed.errors.length - 1} more)` : "";
    return fail(`invalid field ${first.path}: ${first.message}${more}`);
  }
  const edits = migrateEdits(body.value.edits, LINK_FORMATS[version].config);
  const applied = applyEdits(parsed.config, edits);
  if (!applied.ok) {
    const i = firstBadEdit(parsed.config, edits);
    const e = edits[i];
    return fail(`invalid edit ${i} (${e.phase} step ${e.step}, ${e.path}): ${applied.error}`);
  }
  const out: LinkResult = { ok: true, config: parsed.config, edits, version };
  if (body.value.name !== undefined) out.name = body.value.name;
  return out;
}

function firstBadEdit(config: RunConfig, edits: ConfigEdit[]): number {
  for (let i = 1; i <= edits.length; i++) if (!applyEdits(config, edits.slice(0, i)).ok) return i - 1;
  return edits.length - 1;
}

/**
 * Reads a share link: a full URL, its "#..." hash, or the bare "run=..." text. Never throws;
 * a bad link is {ok: false, error} with a message naming what is wrong (not a lab link,
 * truncated, checksum mismatch, unknown version N, invalid field <path>: ..., invalid edit i).
 */
export async function decodeLink(hashOrUrl: string): Promise<LinkResult> {
  try {
    if (typeof hashOrUrl !== "string") return fail("not a lab link: not text");
    return await decodeSteps(hashOrUrl);
  } catch (err) {
    // Nothing above should throw; this keeps the promise from ever rejecting.
    return fail(`unreadable link: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** True when the text carries a lab link (a "run=" hash parameter), valid or not. */
export function hasLink(hashOrUrl: string): boolean {
  return findParam(hashOrUrl).ok;
}
