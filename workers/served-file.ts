// Files the lab reads from the server that serves it (recipes, checkpoints, model folders),
// checked for what they are, not only for a 2xx status. Static hosts answer a missing file in
// two ways: a 404, or the app's own index.html with status 200 (hosts that serve the app for
// every path). Both read here as "not found on this server", naming the path, so an optional
// file (a model's shard index) that is not there is simply absent, and a required one is named.
// A JSON file must parse and a safetensors file must open with its header. Pure (the trainer
// worker and the page both use it); tested by workers/served-file.test.ts.

/** A file the server does not have: a 404 or 410, or a web page where a data file was asked for. */
export class NotOnServerError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path}: not found on this server (${why})`);
    this.name = "NotOnServerError";
  }
}

const HTML_START = /^\s*<(!doctype\s+html|html[\s>]|head[\s>]|body[\s>]|script[\s>]|meta[\s>])/i;

/** Whether bytes open like a web page (only the first few hundred bytes are looked at). */
export function looksLikeHtml(bytes: Uint8Array): boolean {
  const head = new TextDecoder().decode(bytes.subarray(0, 256)).replace(/^\uFEFF/, "");
  return HTML_START.test(head);
}

function isHtmlPath(path: string): boolean {
  return /\.html?$/i.test(path.split(/[?#]/)[0]);
}

/**
 * What the server sent for `path`, checked: throws NotOnServerError for a missing file (a 404 or
 * 410, or a web page in place of a data file), an Error naming the path for any other status, a
 * JSON file that does not parse or a safetensors file without its header.
 */
export function checkServedFile(path: string, res: { status: number }, bytes: Uint8Array): Uint8Array {
  if (res.status === 404 || res.status === 410) throw new NotOnServerError(path, `HTTP ${res.status}`);
  if (res.status < 200 || res.status > 299)
    throw new Error(`${path}: the server answered HTTP ${res.status}`);
  if (!isHtmlPath(path) && looksLikeHtml(bytes))
    throw new NotOnServerError(path, "the server sent a web page in its place");
  const clean = path.split(/[?#]/)[0].toLowerCase();
  if (clean.endsWith(".json")) {
    try {
      JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      throw new Error(`${path}: not valid JSON (${(e as Error).message})`);
    }
  } else if (clean.endsWith(".safetensors")) {
    const why = safetensorsHeaderProblem(bytes);
    if (why) throw new Error(`${path}: not a safetensors file (${why})`);
  }
  return bytes;
}

/** Why bytes are not a safetensors file (8-byte little-endian header length, then a JSON object), or null. */
export function safetensorsHeaderProblem(bytes: Uint8Array): string | null {
  if (bytes.length < 10) return `${bytes.length} bytes, no header`;
  const n = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (n < 2n || n > BigInt(bytes.length - 8))
    return `header length ${n} does not fit its ${bytes.length} bytes`;
  if (bytes[8] !== 0x7b) return "its header is not a JSON object";
  return null;
}

/**
 * Fetches `path` relative to `base` (the folder the app is served from) and checks it. The
 * URL's own path goes in the message too when it differs (a sub-path host: `/some/repo/...`).
 */
export async function fetchServedFile(
  path: string,
  base: string | URL,
  fetchImpl: typeof fetch = fetch,
): Promise<Uint8Array> {
  const clean = path.replace(/^\/+/, "");
  const url = new URL(clean, base);
  let res: Response;
  try {
    res = await fetchImpl(url);
  } catch (e) {
    throw new Error(`${clean}: could not be fetched from ${url.pathname} (${(e as Error).message})`);
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  return checkServedFile(clean, res, bytes);
}

/** Text of a served file (recipes, a model folder's config.json), checked as above. */
export async function fetchServedText(
  path: string,
  base: string | URL,
  fetchImpl: typeof fetch = fetch,
): Promise<string> {
  return new TextDecoder().decode(await fetchServedFile(path, base, fetchImpl));
}
