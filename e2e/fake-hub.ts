// A fake Hugging Face Hub that answers the way the official client (@huggingface/hub, as
// model/hub.ts calls it) expects: its endpoints, and the headers it reads. One handler, two
// transports: a Node HTTP server (model/source.test.ts) and Playwright's context.route
// (e2e/model.e2e.test.ts). What it models of the real Hub:
//   GET /api/models/<repo>/revision/<rev>?expand=...   only the expanded fields (with _id and id):
//       no "sha" unless expand=sha is asked; rev is a branch or the commit (else 404 RevisionNotFound)
//   GET /api/models/<repo>/tree/<rev>[/<dir>]?recursive=&expand=   a JSON list of {type, oid, size,
//       path, lfs?: {oid (SHA-256), size, pointerSize}, xetHash?}, paged by a Link header (rel="next")
//   GET /<repo>/resolve/<rev>/<path>   Range -> 206 with Content-Range and an ETag (X-Linked-ETag and
//       X-Linked-Size for an LFS file); with Accept: application/vnd.xet-fileinfo+json an Xet file
//       answers its file info (X-Xet-Hash, X-Linked-Size, Link rel="xet-auth" / "xet-reconstruction-info");
//       an LFS file redirects (302) to a file CDN on another origin when `cdnUrl` is given (the CDN
//       answers X-Cache: "Hit from cloudfront", as the Hub's does); a missing file is 404 with
//       X-Error-Code: EntryNotFound
//   access: an unknown or private repo is 401 RepoNotFound without a token (404 with one that
//       cannot see it); a gated repo's info and listing are public, its files 401 without a token
//       and 403 with one that has no access
//   CORS: any origin; the preflight allows Authorization, Range and Accept; the headers the client
//       reads (Content-Range, ETag, X-Linked-*, X-Xet-Hash, Link, X-Error-Code, X-Cache) are exposed.
import { createHash } from "node:crypto";

export interface FakeRepo {
  commit: string;
  /** The branch that points at `commit` (default "main"). */
  branch?: string;
  files: Record<string, Uint8Array>;
  gated?: "manual" | "auto";
  private?: boolean;
  /** Tokens that may read a gated or private repo's files. */
  tokens?: string[];
  /** Files stored with LFS (listed with lfs.oid, the SHA-256) and those of them stored with Xet. */
  lfs?: string[];
  xet?: string[];
}

export interface FakeRequest {
  method: string;
  url: string;
  /** Lowercase names. */
  headers: Record<string, string | undefined>;
}

export interface FakeResponse {
  status: number;
  headers: Record<string, string>;
  body?: Uint8Array;
}

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": "authorization, range, accept, content-type",
  "access-control-expose-headers":
    "content-range, etag, x-linked-etag, x-linked-size, x-xet-hash, link, x-error-code, x-request-id, x-cache",
};

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
/** A git blob's id: SHA-1 of "blob <size>\0" and the bytes. */
const gitOid = (b: Uint8Array) => createHash("sha1").update(`blob ${b.length}\0`).update(b).digest("hex");
/** Not the real Xet merkle hash (BLAKE3 over chunks): a distinct 64-hex content hash stands in for it. */
export const fakeXetHash = (b: Uint8Array) => createHash("sha256").update("xet:").update(b).digest("hex");

/** The handler of a fake Hub at `hubUrl` (and its file CDN at `cdnUrl`), serving `repos` by id. */
export function fakeHub(
  repos: Record<string, FakeRepo>,
  opts: { hubUrl: string; cdnUrl?: string; pageSize?: number },
): (req: FakeRequest) => FakeResponse {
  const pageSize = opts.pageSize ?? 3;
  const json = (status: number, body: unknown, extra: Record<string, string> = {}): FakeResponse => ({
    status,
    headers: { ...CORS, "content-type": "application/json; charset=utf-8", ...extra },
    body: new TextEncoder().encode(JSON.stringify(body)),
  });
  const error = (status: number, code: string, message: string) =>
    json(status, { error: message }, { "x-error-code": code });
  const bytes = (
    body: Uint8Array,
    range: string | undefined,
    extra: Record<string, string>,
  ): FakeResponse => {
    const r = /^bytes=(\d+)-(\d+)$/.exec(range ?? "");
    if (!r) return { status: 200, headers: { ...CORS, ...extra }, body };
    const a = Number(r[1]);
    const b = Math.min(Number(r[2]), body.length - 1);
    if (a > b) return { status: 416, headers: { ...CORS, "content-range": `bytes */${body.length}` } };
    return {
      status: 206,
      headers: { ...CORS, ...extra, "content-range": `bytes ${a}-${b}/${body.length}` },
      body: body.subarray(a, b + 1),
    };
  };
  const token = (req: FakeRequest) => /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
  const mayRead = (repo: FakeRepo, req: FakeRequest) =>
    (!repo.gated && !repo.private) || (repo.tokens ?? []).includes(token(req) ?? "");
  /** The repo at a revision, or the error the Hub gives; `files` says whether its files are asked for. */
  const find = (id: string, rev: string, req: FakeRequest, files: boolean) => {
    const repo = repos[id];
    if (!repo || (repo.private && !mayRead(repo, req)))
      return token(req)
        ? error(404, "RepoNotFound", "Repository not found")
        : error(401, "RepoNotFound", "Invalid username or password.");
    if (files && !mayRead(repo, req))
      return token(req)
        ? error(
            403,
            "GatedRepo",
            `Access to model ${id} is restricted and you are not in the authorized list.`,
          )
        : error(
            401,
            "GatedRepo",
            `Access to model ${id} is restricted. You must be authenticated to access it.`,
          );
    if (rev !== repo.commit && rev !== (repo.branch ?? "main"))
      return error(404, "RevisionNotFound", `Invalid rev id: ${rev}`);
    return repo;
  };
  const byHash = new Map<string, Uint8Array>();
  for (const repo of Object.values(repos))
    for (const [path, b] of Object.entries(repo.files))
      if (repo.lfs?.includes(path)) byHash.set(sha256(b), b);

  return (req) => {
    const url = new URL(req.url);
    if (req.method === "OPTIONS") return { status: 204, headers: CORS };
    if (req.method !== "GET" && req.method !== "HEAD") return error(405, "MethodNotAllowed", req.method);

    // The file CDN: LFS objects by SHA-256, no token needed (the link the Hub gave is the pass).
    if (opts.cdnUrl && url.origin === new URL(opts.cdnUrl).origin) {
      const b = byHash.get(url.pathname.split("/").pop() ?? "");
      if (!b) return error(404, "EntryNotFound", "no such object");
      return bytes(b, req.headers.range, { etag: `"${sha256(b)}"`, "x-cache": "Hit from cloudfront" });
    }

    let m = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(url.pathname);
    if (m) {
      const rev = decodeURIComponent(m[2]);
      const repo = find(m[1], rev, req, false);
      if ("status" in repo) return repo;
      const full: Record<string, unknown> = {
        _id: `fake-${m[1]}`,
        id: m[1],
        sha: repo.commit,
        private: repo.private ?? false,
        gated: repo.gated ?? false,
        pipeline_tag: "text-generation",
        downloads: 0,
        likes: 0,
        lastModified: "2026-01-01T00:00:00.000Z",
        siblings: Object.keys(repo.files).map((rfilename) => ({ rfilename })),
      };
      const expand = url.searchParams.getAll("expand");
      if (!expand.length) return json(200, full);
      return json(
        200,
        Object.fromEntries(
          Object.entries(full).filter(([k]) => k === "_id" || k === "id" || expand.includes(k)),
        ),
      );
    }

    m = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)(?:\/(.*))?$/.exec(url.pathname);
    if (m) {
      const repo = find(m[1], decodeURIComponent(m[2]), req, false);
      if ("status" in repo) return repo;
      const dir = m[3] ? `${m[3]}/` : "";
      const recursive = url.searchParams.get("recursive") === "true";
      const entries: Record<string, unknown>[] = [];
      const dirs = new Set<string>();
      for (const [path, b] of Object.entries(repo.files)) {
        if (!path.startsWith(dir)) continue;
        const rest = path.slice(dir.length).split("/");
        for (let i = 1; i < rest.length && (recursive || i === 1); i++)
          dirs.add(dir + rest.slice(0, i).join("/"));
        if (rest.length > 1 && !recursive) continue;
        const lfs = repo.lfs?.includes(path);
        entries.push({
          type: "file",
          oid: gitOid(
            lfs
              ? new TextEncoder().encode(
                  `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(b)}\nsize ${b.length}\n`,
                )
              : b,
          ),
          size: b.length,
          path,
          ...(lfs ? { lfs: { oid: sha256(b), size: b.length, pointerSize: 134 } } : {}),
          ...(repo.xet?.includes(path) ? { xetHash: fakeXetHash(b) } : {}),
        });
      }
      for (const d of dirs)
        entries.push({ type: "directory", oid: gitOid(new TextEncoder().encode(d)), size: 0, path: d });
      const cursor = Number(url.searchParams.get("cursor") ?? 0);
      const page = entries.slice(cursor, cursor + pageSize);
      const next = new URL(url);
      next.searchParams.set("cursor", String(cursor + pageSize));
      return json(
        200,
        page,
        cursor + pageSize < entries.length ? { link: `<${next.href}>; rel="next"` } : {},
      );
    }

    m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (m) {
      const repo = find(m[1], decodeURIComponent(m[2]), req, true);
      if ("status" in repo) return repo;
      const path = m[3];
      const b = repo.files[path];
      if (!b) return error(404, "EntryNotFound", `${path} does not exist on "${m[2]}"`);
      const lfs = repo.lfs?.includes(path);
      const etag: Record<string, string> = lfs
        ? { "x-linked-etag": `"${sha256(b)}"`, "x-linked-size": String(b.length) }
        : { etag: `"${gitOid(b)}"` };
      const commit = { "x-repo-commit": repo.commit };
      if (
        repo.xet?.includes(path) &&
        (req.headers.accept ?? "").includes("application/vnd.xet-fileinfo+json")
      ) {
        const hash = fakeXetHash(b);
        return json(
          200,
          { hash, refreshUrl: `${opts.hubUrl}/api/models/${m[1]}/xet-read-token/${repo.commit}` },
          {
            ...etag,
            ...commit,
            "content-type": "application/vnd.xet-fileinfo+json",
            "x-xet-hash": hash,
            link: `<${opts.hubUrl}/api/models/${m[1]}/xet-read-token/${repo.commit}>; rel="xet-auth", <https://cas-server.example/v1/reconstructions/${hash}>; rel="xet-reconstruction-info"`,
          },
        );
      }
      if (lfs && opts.cdnUrl)
        return {
          status: 302,
          headers: { ...CORS, ...etag, ...commit, location: `${opts.cdnUrl}/repos/${sha256(b)}` },
        };
      return bytes(b, req.headers.range, { ...etag, ...commit });
    }
    return error(404, "NotFound", `no route for ${url.pathname}`);
  };
}
