// Share links: the URL hash carries the active run's config, seed and live edits (only
// non-default values, compressed and versioned by config/link.ts), kept current with
// history.replaceState as edits apply. Opening a link shows what it sets and offers Replay;
// a broken link shows a message naming what is wrong and the page goes on normally, and a hash
// that is no link at all (no "run=") says it was not understood. The hash this tab wrote for its
// own run is remembered in sessionStorage: after a reload it is not someone else's shared link
// (the resume banner, app/ResumeBanner.tsx, offers the interrupted run instead).
import { useEffect, useState } from "react";
import { type ConfigEdit, defaultRunConfig, type RunConfig } from "../config";
import { configDiff, decodeLink, encodeLink, hasLink } from "../config/link";
import { startRun } from "./bridge";
import { activeRun, useLab } from "./store";

type Opened =
  | { ok: true; config: RunConfig; edits: ConfigEdit[]; name?: string }
  | { ok: false; error: string; title: string };

/** sessionStorage key: the hash this tab last wrote for its own run. */
export const OWN_LINK_KEY = "lab:own-link";

function ownLink(): string | null {
  try {
    return sessionStorage.getItem(OWN_LINK_KEY);
  } catch {
    return null;
  }
}

function editsOf(events: readonly { kind: string; edit?: ConfigEdit }[]): ConfigEdit[] {
  return events.filter((e) => e.kind === "edit" && e.edit).map((e) => e.edit as ConfigEdit);
}

export function ShareLink() {
  const [opened, setOpened] = useState<Opened | null>(null);
  const [copied, setCopied] = useState("");
  const run = useLab(activeRun);
  const events = run?.events;
  const config = run?.config;

  useEffect(() => {
    const hash = window.location.hash;
    if (hash === "" || hash === "#") return;
    if (!hasLink(hash)) {
      setOpened({
        ok: false,
        title: "This link was not understood:",
        error: `the part after # (${JSON.stringify(hash.slice(1, 41))}${hash.length > 41 ? "…" : ""}) is not a lab link; a shared run's link has #run=v… after the address. The page opened with its own config.`,
      });
      return;
    }
    if (hash === ownLink()) return;
    decodeLink(hash).then((r) =>
      setOpened(
        r.ok
          ? { ok: true, config: r.config, edits: r.edits, name: r.name }
          : { ok: false, error: r.error, title: "This link cannot be opened:" },
      ),
    );
  }, []);

  // The URL follows the active run: its config and the edits applied so far.
  useEffect(() => {
    if (!config || !events) return;
    let live = true;
    encodeLink({ config, edits: editsOf(events) })
      .then((hash) => {
        if (!live) return;
        try {
          sessionStorage.setItem(OWN_LINK_KEY, hash);
        } catch {}
        if (window.location.hash !== hash)
          history.replaceState(null, "", `${window.location.pathname}${window.location.search}${hash}`);
      })
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [config, events]);

  async function copy() {
    if (!config || !events) return;
    const hash = await encodeLink({ config, edits: editsOf(events) });
    const url = `${window.location.origin}${window.location.pathname}${hash}`;
    try {
      await navigator.clipboard.writeText(url);
      setCopied("Link copied");
    } catch {
      setCopied(url);
    }
  }

  return (
    <>
      {opened && !opened.ok && (
        <div className="banner banner-error" role="alert" data-testid="link-error">
          <strong>{opened.title}</strong> {opened.error}{" "}
          <button type="button" onClick={() => setOpened(null)}>
            Dismiss
          </button>
        </div>
      )}
      {opened?.ok && (
        <div className="banner" data-testid="link-banner">
          <strong>Shared run{opened.name ? ` “${opened.name}”` : ""}:</strong>{" "}
          {Object.entries(configDiff(opened.config, defaultRunConfig()))
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(", ") || "the default config"}
          {opened.edits.length > 0 &&
            ` · ${opened.edits.length} live edit(s) at steps ${opened.edits.map((e) => e.step).join(", ")}`}{" "}
          <button
            type="button"
            data-testid="link-replay"
            onClick={() => {
              void startRun(opened.config, { edits: opened.edits, source: "link" });
              setOpened(null);
            }}
          >
            Replay
          </button>{" "}
          <button type="button" onClick={() => setOpened(null)}>
            Dismiss
          </button>
          <div className="muted" data-testid="link-determinism">
            A replay gives the same numbers on the same kind of adapter as the original run. On another GPU,
            driver or browser, sampling turns last-bit differences into other tokens within a step or two: the
            curves should agree in shape, not number for number.
          </div>
        </div>
      )}
      {run && (
        <div className="share-link">
          <button type="button" data-testid="share-link" onClick={() => void copy()}>
            Copy share link
          </button>{" "}
          <span className="muted">{copied}</span>
        </div>
      )}
    </>
  );
}
