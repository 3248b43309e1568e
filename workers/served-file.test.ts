// Served files checked for what they are: a 404 and an SPA host's index.html both read as "not
// found on this server"; JSON must parse, safetensors must have a header.
import { describe, expect, it } from "vitest";
import { checkServedFile, fetchServedFile, looksLikeHtml, NotOnServerError } from "./served-file";

const enc = (s: string) => new TextEncoder().encode(s);
const INDEX_HTML = enc('<!doctype html>\n<html lang="en"><head><meta charset="utf-8"></head></html>');

function safetensors(header: object, data = 4): Uint8Array {
  const h = enc(JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  return out;
}

describe("served files", () => {
  it("reads a 404 and a web page in place of a data file as not found, naming the path", () => {
    const path = "models/lab-llama/model.safetensors.index.json";
    expect(() => checkServedFile(path, { status: 404 }, enc("not found"))).toThrow(
      new NotOnServerError(path, "HTTP 404"),
    );
    expect(() => checkServedFile(path, { status: 200 }, INDEX_HTML)).toThrow(
      `${path}: not found on this server (the server sent a web page in its place)`,
    );
    expect(() => checkServedFile("checkpoints/x.safetensors", { status: 200 }, INDEX_HTML)).toThrow(
      NotOnServerError,
    );
    expect(() => checkServedFile("models/m/tokenizer.json", { status: 500 }, enc("{}"))).toThrow(
      "models/m/tokenizer.json: the server answered HTTP 500",
    );
    // An HTML file asked for as such is what it is.
    expect(checkServedFile("docs/page.html", { status: 200 }, INDEX_HTML)).toBe(INDEX_HTML);
    expect(looksLikeHtml(enc("\uFEFF  <HTML>"))).toBe(true);
    expect(looksLikeHtml(enc('{"a": "<html>"}'))).toBe(false);
  });

  it("checks JSON parses and safetensors open with their header", () => {
    expect(() => checkServedFile("recipes/a.json", { status: 200 }, enc("{oops"))).toThrow(
      /^recipes\/a\.json: not valid JSON/,
    );
    expect(checkServedFile("recipes/a.json", { status: 200 }, enc('{"a": 1}')).length).toBe(8);
    const good = safetensors({ w: { dtype: "F32", shape: [1], data_offsets: [0, 4] } });
    expect(checkServedFile("models/m/model.safetensors", { status: 200 }, good)).toBe(good);
    expect(() => checkServedFile("models/m/model.safetensors", { status: 200 }, enc("ab"))).toThrow(
      "models/m/model.safetensors: not a safetensors file (2 bytes, no header)",
    );
    const long = good.slice();
    new DataView(long.buffer).setBigUint64(0, 1n << 40n, true);
    expect(() => checkServedFile("m.safetensors", { status: 200 }, long)).toThrow(/header length/);
    const notJson = good.slice();
    notJson[8] = 0x5b;
    expect(() => checkServedFile("m.safetensors", { status: 200 }, notJson)).toThrow(/not a JSON object/);
  });

  it("fetches relative to the app's folder (a sub-path host too)", async () => {
    const asked: string[] = [];
    const fake = (async (url: URL) => {
      asked.push(url.pathname);
      return url.pathname.endsWith("config.json")
        ? new Response('{"x":1}', { status: 200 })
        : new Response(INDEX_HTML, { status: 200, headers: { "content-type": "text/html" } });
    }) as unknown as typeof fetch;
    const base = "http://localhost:8080/some/repo/";
    expect((await fetchServedFile("/models/m/config.json", base, fake)).length).toBe(7);
    await expect(fetchServedFile("models/m/model.safetensors.index.json", base, fake)).rejects.toThrow(
      "models/m/model.safetensors.index.json: not found on this server",
    );
    expect(asked).toEqual([
      "/some/repo/models/m/config.json",
      "/some/repo/models/m/model.safetensors.index.json",
    ]);
  });
});
