// A minimal static file server on localhost for e2e pages built outside the app (WebGPU needs
// a secure context; http://localhost is one), and for the built lab as other static hosts serve
// it: under a sub-path (`/some/repo/`, as a project page), answering every path with the app's
// index.html (a host configured for single-page apps), or with a generic MIME type for `.wasm`.
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { extname, join, normalize } from "node:path";

const TYPES: Record<string, string> = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".safetensors": "application/octet-stream",
};

export interface ServeOptions {
  /** The folder's URL path, `/` (default) or e.g. `/some/repo/`; other paths are 404. */
  prefix?: string;
  /** Answer a path with no file with the folder's index.html and status 200, as SPA hosts do. */
  spa?: boolean;
  /** The content type of `.wasm` files (a host that does not know the type sends a generic one). */
  wasmType?: string;
}

export async function serveDir(
  dir: string,
  opts: ServeOptions = {},
): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const prefix = opts.prefix ?? "/";
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const pathname = decodeURIComponent(new URL(req.url ?? "/", "http://localhost").pathname);
    requests.push(pathname);
    if (!pathname.startsWith(prefix)) {
      res.writeHead(404).end("not found");
      return;
    }
    const path = normalize(pathname.slice(prefix.length - 1)).replace(/^(\.\.[/\\])+/, "");
    let file = join(dir, path);
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, "index.html");
    if (!existsSync(file)) {
      if (!opts.spa) {
        res.writeHead(404).end("not found");
        return;
      }
      file = join(dir, "index.html");
    }
    const ext = extname(file);
    const type =
      ext === ".wasm" && opts.wasmType ? opts.wasmType : (TYPES[ext] ?? "application/octet-stream");
    res.writeHead(200, { "content-type": type });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    url: `http://localhost:${port}${prefix}`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
